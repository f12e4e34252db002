// Learns when a monitored thread exits, without polling /proc: one pidfd per
// watched thread (PIDFD_THREAD where the kernel has it) in an epoll set, and
// one thread that waits on it and reports each exit once.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "pmu/result.h"

namespace pfmfs::fs {

class ThreadWatcher {
 public:
  using ExitFn = std::function<void(pid_t tid)>;

  // `on_exit` runs on the watcher's thread (or in watch() for a thread that is
  // already gone) with no watcher lock held.
  explicit ThreadWatcher(ExitFn on_exit);
  ~ThreadWatcher();  // stop()
  ThreadWatcher(const ThreadWatcher&) = delete;
  ThreadWatcher& operator=(const ThreadWatcher&) = delete;

  // Counted: each watch() wants one unwatch() unless the thread exits first.
  void watch(pid_t tid);
  void unwatch(pid_t tid);
  std::size_t watched() const;

  // Stops the thread and joins it, after the on_exit it may be in: no exit is
  // reported from it again (watch still reports a thread already gone).
  // Idempotent.
  void stop();

 private:
  struct Entry {
    int fd = -1;
    unsigned refs = 0;
  };
  static int openPidfd(pid_t tid);
  void run();

  ExitFn on_exit_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: tells run() to finish
  mutable std::mutex mutex_;  // guards entries_ (a leaf: nothing is called while held)
  std::map<pid_t, Entry> entries_;
  std::mutex join_mutex_;  // serialises stop()
  std::thread thread_;
};

}  // namespace pfmfs::fs
