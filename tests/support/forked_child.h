// A process forked by a test, in step with it through two pipes: the child
// waits for the test's go() where it says so, and reports numbers back. The
// tests of inheritance order what a child does against what they check this
// way, without sleeping.
//
// The constructor returns once the child runs its body: a sanitizer's
// runtime has then made whatever thread of its own it makes in a forked
// child (TSan's background thread is started in fork's child half, which may
// run after the parent's fork has returned). A test that loads a session
// with inherit on the child right away would otherwise follow that thread,
// on some runs, as a child it created.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>

namespace pfmfs::testing {

// What the child's body uses. Async-signal-safe only: the test process may
// run other threads (a backend's poller) when it forks.
struct ChildIo {
  int go_fd = -1;
  int report_fd = -1;
  // Waits for the test's next go(); false if the test went away.
  bool awaitGo() const {
    char c;
    return ::read(go_fd, &c, 1) == 1;
  }
  void report(std::uint64_t v) const { (void)!::write(report_fd, &v, sizeof v); }
};

class ForkedChild {
 public:
  // Forks; the child runs body(io) at once and exits with its result.
  explicit ForkedChild(const std::function<int(const ChildIo&)>& body) {
    int go[2], rep[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return;
    if (::pipe2(rep, O_CLOEXEC) != 0) {
      ::close(go[0]);
      ::close(go[1]);
      return;
    }
    std::fflush(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(go[1]);
      ::close(rep[0]);
      if (::write(rep[1], "r", 1) != 1) ::_exit(125);
      ::_exit(body(ChildIo{go[0], rep[1]}));
    }
    ::close(go[0]);
    ::close(rep[1]);
    go_ = go[1];
    report_ = rep[0];
    if (pid_ < 0) return;
    char ready = 0;
    if (::read(report_, &ready, 1) != 1 || ready != 'r') {  // it died before its body
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      reaped_ = true;
      ready_ = false;
    }
  }
  ~ForkedChild() {
    if (go_ >= 0) ::close(go_);
    if (report_ >= 0) ::close(report_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ForkedChild(const ForkedChild&) = delete;
  ForkedChild& operator=(const ForkedChild&) = delete;

  pid_t pid() const { return pid_; }
  bool ok() const { return pid_ > 0 && ready_; }
  void go() { (void)!::write(go_, "g", 1); }
  // The child's next report; nullopt if it exited first.
  std::optional<std::uint64_t> report() {
    std::uint64_t v = 0;
    if (::read(report_, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return std::nullopt;
    return v;
  }
  // Reaps it: its exit status, 128 + signal if a signal ended it.
  int wait() {
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
  int report_ = -1;
  bool reaped_ = false;
  bool ready_ = true;
};

}  // namespace pfmfs::testing
