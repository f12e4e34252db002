// SIGINT, SIGTERM and SIGHUP end pfmfsd, in an order of its own: every
// session is destroyed first, so that readers blocked on `messages` get
// their end of file (pfmfsd(8)), and only then does the FUSE loop end.
//
// libfuse's own handlers end the loop at once by a flag, and a worker that
// has just taken a request from /dev/fuse when the flag is set drops it:
// the read it carried then failed with ECONNABORTED at the unmount (under
// load, seen in 2 of 8 runs on x86). Here every thread blocks the three
// signals and one thread of ours takes them (sigwaitinfo), so nothing is
// interrupted at a random point.
#pragma once

#include <pthread.h>

#include <atomic>
#include <functional>
#include <thread>

namespace pfmfs::fs {

class StopSignals {
 public:
  // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every
  // thread it starts afterwards. Call it before any thread exists.
  static void blockInThisThread();

  // Starts the thread that takes them: `on_stop(signal)` runs there, once.
  explicit StopSignals(std::function<void(int)> on_stop);
  ~StopSignals();  // stops the thread (if no signal came) and joins it
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void run();

  std::function<void(int)> on_stop_;
  std::atomic<bool> quitting_{false};
  std::thread thread_;
};

// Ends libfuse's loop from another thread: sets the session's exit flag and
// interrupts the thread that runs the loop (`loop_thread`, asleep on a
// semaphore that only a signal or a finished worker wakes).
class LoopWaker {
 public:
  // In the loop's thread, before the loop: SIGUSR1 with a handler that does
  // nothing, unblocked there, so that it interrupts the wait.
  static void prepareThisThread();
  static void wake(pthread_t loop_thread);
};

}  // namespace pfmfs::fs
