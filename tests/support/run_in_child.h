// Runs a test body in a forked child with a time limit, so that a hang (a
// spinning or deadlocked engine) fails one test instead of stalling the suite.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <thread>

namespace pfmfs::testing {

// The child's exit status (128 + signal if it died of one), -1 if it had to be
// killed at `limit`, -2 if fork failed. Call it only while this process runs
// no other thread.
inline int runInChild(const std::function<int()>& body, std::chrono::milliseconds limit) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return -2;
  if (pid == 0) ::_exit(body());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

}  // namespace pfmfs::testing
