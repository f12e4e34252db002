#include "idle_connections.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <fmt/core.h>

#include "bench_harness.h"

namespace libpfm_bench {

namespace {

constexpr uid_t kNobody = 65534;

// The child: never returns. Holds its connections until SIGKILL.
[[noreturn]] void hold(const std::string& name, int n, int ready) {
  // Nothing of the bench's but the pipe: a copy of a libpfm descriptor
  // would keep its session alive after the bench closed it.
  if (::dup2(ready, 3) != 3 || ::close_range(4, ~0U, 0) != 0) ::_exit(5);
  ready = 3;
  if (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) ::_exit(2);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  for (int i = 0; i < n; ++i) {
    const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), len) != 0) ::_exit(3);
  }
  const char byte = 'r';
  if (::write(ready, &byte, 1) != 1) ::_exit(4);
  for (;;) ::pause();
}

}  // namespace

IdleConnections::IdleConnections(const std::string& name, int n) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) bench::fail(fmt::format("pipe2: {}", bench::errnoText(errno)));
  pid_ = ::fork();
  if (pid_ < 0) bench::fail(fmt::format("fork: {}", bench::errnoText(errno)));
  if (pid_ == 0) hold(name, n, p[1]);
  ::close(p[1]);
  char byte = 0;
  const ssize_t got = ::read(p[0], &byte, 1);
  ::close(p[0]);
  if (got != 1) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    bench::fail(fmt::format("the idle connections' holder ended before connecting {} times (status {:#x})", n, status));
  }
}

IdleConnections::~IdleConnections() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::string fastPathName(const std::string& info) {
  const std::string key = " fastpath=@";
  const std::size_t at = info.find(key);
  if (at == std::string::npos) bench::fail(fmt::format("pmu/info: no fastpath= in \"{}\"", info));
  const std::size_t begin = at + key.size();
  return info.substr(begin, info.find_first_of(" \n", begin) - begin);
}

}  // namespace libpfm_bench
