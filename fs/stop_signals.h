// SIGINT, SIGTERM and SIGHUP end pfmfsd, in an order of its own: every
// session is destroyed first, so that readers blocked on `messages` get
// their end of file (pfmfsd(8)), and only then does the FUSE loop end.
//
// libfuse's own handlers end the loop at once by a flag, whichever thread
// the signal interrupts. Here every thread blocks the three signals and one
// thread of ours takes them (sigwaitinfo), so nothing is interrupted at a
// random point; it then stops the RequestLoop (request_loop.h), which
// answers every request it took.
#pragma once

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

}  // namespace pfmfs::fs
