// /proc and /sys readers for thread and CPU facts.
#include "pmu/host_info.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace pfmfs::pmu {

std::string readSmallFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

Result<ThreadIds> threadIds(pid_t tid) {
  if (tid <= 0) return err(ESRCH, "no thread {}", tid);
  // /proc/TID works for every thread id, not only for process leaders.
  errno = 0;
  std::string status = readSmallFile(fmt::format("/proc/{}/status", tid));
  if (status.empty()) {
    int e = errno;
    if (e == EMFILE || e == ENFILE)
      return err(e, "cannot read /proc/{}/status: {}: the daemon is out of file descriptors", tid, std::strerror(e));
    return err(ESRCH, "no thread {}", tid);
  }
  ThreadIds ids;
  bool have_tgid = false, have_uid = false;
  for (std::size_t pos = 0; pos < status.size();) {
    std::size_t end = status.find('\n', pos);
    if (end == std::string::npos) end = status.size();
    std::string line = status.substr(pos, end - pos);
    unsigned long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "Tgid: %lu", &a) == 1) {
      ids.tgid = static_cast<pid_t>(a);
      have_tgid = true;
    } else if (std::sscanf(line.c_str(), "Uid: %lu %lu", &a, &b) == 2) {
      ids.uid = static_cast<uid_t>(a);
      ids.euid = static_cast<uid_t>(b);
      have_uid = true;
    }
    pos = end + 1;
  }
  if (!have_tgid || !have_uid) return err(ESRCH, "no thread {}", tid);
  return ids;
}

std::vector<int> onlineCpus() {
  std::vector<int> out;
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  for (int cpu = 0; cpu < n; ++cpu)
    if (cpuOnline(cpu)) out.push_back(cpu);
  return out;
}

bool cpuOnline(int cpu) {
  if (cpu < 0) return false;
  // A list like "0-3,6,8-9".
  std::string list = readSmallFile("/sys/devices/system/cpu/online");
  const char* p = list.c_str();
  while (*p) {
    char* end = nullptr;
    long lo = std::strtol(p, &end, 10);
    if (end == p) break;
    long hi = lo;
    p = end;
    if (*p == '-') {
      hi = std::strtol(p + 1, &end, 10);
      p = end;
    }
    if (cpu >= lo && cpu <= hi) return true;
    if (*p == ',')
      ++p;
    else
      break;
  }
  return false;
}

std::uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::optional<ThreadCpuTime> ThreadCpuTime::open(pid_t tid) {
  if (tid <= 0) return std::nullopt;
  Fd fd(::open(fmt::format("/proc/{}/schedstat", tid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  return ThreadCpuTime(std::move(fd));
}

std::optional<std::uint64_t> ThreadCpuTime::read() const {
  char buf[128];
  ssize_t n = ::pread(fd_.get(), buf, sizeof buf - 1, 0);
  if (n <= 0) return std::nullopt;  // the thread has been reaped
  buf[n] = '\0';
  return std::strtoull(buf, nullptr, 10);
}

}  // namespace pfmfs::pmu
