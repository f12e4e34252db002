// pfmfsd's FUSE loop: worker threads that take requests from /dev/fuse and
// answer every request they take.
//
// libfuse's multi-threaded loop, once told to end, drops a request that a
// worker took from /dev/fuse a moment too late (fuse_session_receive_buf
// returns 0 for it once the session has exited; the loop returns before
// processing it; or the worker is cancelled inside read(2) after the read
// completed). The kernel keeps such a request open until the unmount
// fails it with ECONNABORTED: a reader blocked on `messages` when SIGINT came
// got that instead of its end of file (pfmfsd(8)), in 3 runs of 60 on a
// loaded machine. Here stop() only keeps workers from taking more; the
// request in hand is always answered, and drain() answers the rest queued
// in the kernel.
//
// Workers block in read(2) on the device, as libfuse's do: the kernel wakes
// one reader per request, on the CPU the client leaves. (Waiting in epoll
// instead made a read of a PMD 20 to 30 us slower, two to three times the
// whole.) Only a request, the connection's end or a signal ends a blocked
// read. stop() uses a signal, SIGUSR1, which every thread blocks but a
// worker inside its read: a busy worker is never interrupted, and one
// that took a request as the signal came still returns it. The signal can
// also come just before the read begins, so run() sends it again every
// 10 ms until every worker has ended.
#pragma once

#include <fuse_lowlevel.h>

#include <atomic>
#include <condition_variable>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "pmu/result.h"

namespace pfmfs::fs {

class RequestLoop {
 public:
  // libfuse's own ceiling on its workers (fuse_loop_cfg_create's
  // max_threads). No worker waits for a reader (message_waiters.h), so ten
  // are only needed while backend calls are slow.
  static constexpr unsigned kDefaultWorkers = 10;

  // Blocks SIGUSR1 in the calling thread, and so in every thread it starts
  // afterwards, and makes it interrupt a worker's read. Call it before any
  // thread exists.
  static void blockWakeSignal();

  // For a mounted session. workers >= 1.
  explicit RequestLoop(fuse_session* se, unsigned workers = kDefaultWorkers);
  RequestLoop(const RequestLoop&) = delete;
  RequestLoop& operator=(const RequestLoop&) = delete;

  // Serves until stop(), or until the connection ends (unmounted, or
  // aborted through /sys/fs/fuse/connections): OK then, or the error of a
  // read of the device that failed otherwise (or of a thread not started).
  // Every thread it starts has ended when it returns. Once.
  Status run() EXCLUDES(mutex_);
  // From any thread, at any time, more than once; does not wait. run()
  // returns once every worker has answered the request it holds.
  void stop() EXCLUDES(mutex_);
  // After run(): answers what is still queued in the kernel, without
  // waiting for more.
  void drain();

 private:
  void work() EXCLUDES(mutex_);
  void end(int error) EXCLUDES(mutex_);  // a worker saw the connection end, or failed

  fuse_session* const se_;
  const unsigned workers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  Mutex mutex_;                           // a leaf
  std::condition_variable changed_;       // stopping_ set, or a worker ended
  unsigned live_ GUARDED_BY(mutex_) = 0;  // workers that have not ended
  int error_ GUARDED_BY(mutex_) = 0;      // the first failed read's -errno
};

}  // namespace pfmfs::fs
