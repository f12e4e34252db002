// The command pfmstat measures, forked and held before its exec (command.h).
#include "pfmstat/command.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {

int statusOf(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return kExitRun;
}

// Searched in the parent: the child must not run anything new between its
// release and its exec (below).
std::string resolveCommand(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string full = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0) return full;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return {};
}

// A command, forked and stopped before its exec until release(): what is
// loaded on it then counts from the command's first instruction, as perf
// stat's enable_on_exec does. Between the SIGCONT and the exec the child
// runs only code it ran before it stopped (prctl, execv, tried once on a
// path that does not exist), so it takes no page fault in user mode there:
// a count of page faults is the command's own (tests/integration/progs/
// stop_exec.c does the same for test_perf).
Command::Command(const std::vector<std::string>& argv, const sigset_t& original_mask) : name_(argv[0]) {
  std::string path = resolveCommand(argv[0]);
  if (path.empty()) {
    std::fprintf(stderr, "pfmstat: cannot run '%s': %s\n", name_.c_str(), std::strerror(ENOENT));
    failed_status_ = 127;
    return;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char none[] = "/nonexistent/pfmstat-warm-up";
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) throw RunError(fmt::format("pipe: {}", std::strerror(errno)));
  pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw RunError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid_ == 0) {
    ::close(err[0]);
    ::sigprocmask(SIG_SETMASK, &original_mask, nullptr);
    // Killed with pfmstat while it waits, so that it never runs uncounted.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExitRun);
    ::execv(none, args.data());  // fails: execv's code is now mapped
    ::raise(SIGSTOP);
    ::prctl(PR_SET_PDEATHSIG, 0);  // the command outlives pfmstat, as under perf
    ::execv(path.c_str(), args.data());
    int e = errno;
    (void)!::write(err[1], &e, sizeof e);
    ::_exit(e == ENOENT ? 127 : 126);
  }
  ::close(err[1]);
  err_ = err[0];
  int st = 0;
  while (::waitpid(pid_, &st, WUNTRACED) < 0 && errno == EINTR) {
  }
  if (!WIFSTOPPED(st)) {
    reaped_ = true;
    status_ = statusOf(st);
    throw RunError(fmt::format("'{}' ended before it could run", name_));
  }
}

Command::~Command() {
  if (err_ >= 0) ::close(err_);
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
}

bool Command::release() {
  ::kill(pid_, SIGCONT);
  int e = 0;
  ssize_t n;
  do {
    n = ::read(err_, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  ::close(err_);
  err_ = -1;
  if (n == static_cast<ssize_t>(sizeof e)) {
    std::fprintf(stderr, "pfmstat: cannot run '%s': %s\n", name_.c_str(), std::strerror(e));
    return false;
  }
  return true;
}

std::optional<int> Command::poll() {
  int st;
  if (reaped_) return status_;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    reaped_ = true;
    status_ = statusOf(st);
    return status_;
  }
  return std::nullopt;
}

int Command::waitEnd() {
  while (!poll()) {
    int st;
    if (::waitpid(pid_, &st, 0) == pid_) {
      reaped_ = true;
      status_ = statusOf(st);
    }
  }
  return status_;
}

void Command::signal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

}  // namespace pfmstat
