// Learns when a monitored thread exits: one pidfd per watched thread
// (PIDFD_THREAD, Linux 6.9) in an epoll set, and one thread that waits on it
// and reports each exit once. Before 6.9 a pidfd names a whole process:
// exact for a main thread; another thread is looked for every 100 ms as
// well (tgkill with signal 0), so that its exit is not missed while its
// process lives on (Debian 12's kernel is 6.1).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "pmu/result.h"

namespace pfmfs::fs {

class ThreadWatcher {
 public:
  using ExitFn = std::function<void(pid_t tid)>;

  // `on_exit` runs on the watcher's thread (or in watch() for a thread that is
  // already gone) with no watcher lock held. thread_pidfds = false behaves
  // as on a kernel without PIDFD_THREAD (for tests on a newer one).
  explicit ThreadWatcher(ExitFn on_exit, bool thread_pidfds = true);
  ~ThreadWatcher();  // stop()
  ThreadWatcher(const ThreadWatcher&) = delete;
  ThreadWatcher& operator=(const ThreadWatcher&) = delete;

  // Counted: each watch() wants one unwatch() unless the thread exits first.
  void watch(pid_t tid) EXCLUDES(mutex_);
  void unwatch(pid_t tid) EXCLUDES(mutex_);
  std::size_t watched() const EXCLUDES(mutex_);

  // Stops the thread and joins it, after the on_exit it may be in: no exit is
  // reported from it again (watch still reports a thread already gone).
  // Idempotent.
  void stop() EXCLUDES(join_mutex_, mutex_);

 private:
  struct Entry {
    int fd = -1;
    unsigned refs = 0;
    pid_t polled_tgid = 0;  // fd is its process's: the thread is looked for (tgkill)
  };
  int openPidfd(pid_t tid, pid_t& polled_tgid) const;
  void run() EXCLUDES(mutex_);
  std::vector<pid_t> takeGoneLocked() REQUIRES(mutex_);  // polled threads that are gone, unwatched

  ExitFn on_exit_;
  const bool thread_pidfds_;
  int poll_ms_ = -1;  // epoll_wait's timeout: kPollMs where some thread may be polled
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: tells run() to finish
  // Nothing of ours is called with it held but logLimited (LogLimiter's
  // mutex, a leaf).
  mutable Mutex mutex_;
  std::map<pid_t, Entry> entries_ GUARDED_BY(mutex_);
  Mutex join_mutex_ ACQUIRED_BEFORE(mutex_);  // serialises stop()
  std::thread thread_;
};

}  // namespace pfmfs::fs
