// A backend's perf_event thread (perf's for its targets, the sim's for the
// task trackers that watch its threads): it waits with epoll on the
// ring-buffer event of every watched target and tells that target's listener
// when the kernel wrote a record (EPOLLIN) or the target went away (EPOLLHUP:
// the monitored thread exited).
//
// Listeners are held weakly and called with no lock held, so a target may be
// detached (and its session destroyed) at any moment, even from inside a call.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "base/mutex.h"
#include "pmu/backend.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

// What the poller knows of one target, shared with the target.
struct Watch {
  std::weak_ptr<TargetListener> listener;
  std::atomic<bool> hup{false};  // the kernel said the event's task is gone
};

class Poller {
 public:
  static Result<std::unique_ptr<Poller>> create();
  ~Poller();  // stop()
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Watches `fd` until unwatch(key). Returns the key.
  Result<std::uint64_t> watch(int fd, std::shared_ptr<Watch> w) EXCLUDES(mutex_);
  void unwatch(std::uint64_t key) EXCLUDES(mutex_);

  // Stops the thread and joins it: when it returns, no listener is in a call
  // and none is called again (watch and unwatch still work, and serve no one).
  // A listener call under way ends first, so the caller must hold no lock a
  // listener takes. Idempotent.
  void stop() EXCLUDES(stop_mutex_, mutex_);

 private:
  Poller(Fd epoll, Fd wake);
  void run() EXCLUDES(mutex_);

  struct Entry {
    int fd;
    std::shared_ptr<Watch> watch;
  };

  Fd epoll_;
  Fd wake_;      // eventfd: stop
  Mutex mutex_;  // a leaf: never held while a listener runs
  std::map<std::uint64_t, Entry> entries_ GUARDED_BY(mutex_);
  std::uint64_t next_key_ GUARDED_BY(mutex_) = 1;  // 0 is the wake eventfd
  Mutex stop_mutex_ ACQUIRED_BEFORE(mutex_);       // serialises stop()
  std::thread thread_;
};

}  // namespace pfmfs::pmu::perf
