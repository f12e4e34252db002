// A thread that runs jobs on request: the target of the backend tests.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tests/support/cpu_time.h"

namespace pfmfs::testing {

// A thread that runs jobs on request and reports its tid: the target of the
// real-clock tests. It blocks between jobs, so its CPU time stands still;
// run() returns a moment before it blocks: waitOffCpu(tid()) (cpu_time.h)
// waits for that, where a reading of its CPU time must be exact. A new
// Worker is already blocked: nothing it does later falls into a count
// the test starts after making it.
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [this] { return tid_ != 0; });
    }
    waitOffCpu(tid_);
  }
  ~Worker() {
    {
      std::lock_guard l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  pid_t tid() const { return tid_; }

  // Runs `job` on the worker and waits until it is done.
  void run(std::function<void()> job) {
    std::unique_lock l(mu_);
    job_ = std::move(job);
    cv_.notify_all();
    cv_.wait(l, [this] { return !job_; });
  }

  void exitAndJoin() {
    {
      std::lock_guard l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run() {
    std::unique_lock l(mu_);
    tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
    cv_.notify_all();
    while (true) {
      cv_.wait(l, [this] { return quit_ || job_; });
      if (quit_) return;
      auto job = std::move(job_);
      l.unlock();
      job();
      l.lock();
      job_ = nullptr;
      cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  pid_t tid_ = 0;
  bool quit_ = false;
  std::thread thread_;
};

}  // namespace pfmfs::testing
