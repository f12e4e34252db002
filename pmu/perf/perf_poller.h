// The perf backend's one thread: it waits with epoll on the ring-buffer event
// of every attached target and tells that target's listener when the kernel
// wrote an overflow record (EPOLLIN) or the target went away (EPOLLHUP: the
// monitored thread exited).
//
// Listeners are held weakly and called with no lock held, so a target may be
// detached (and its session destroyed) at any moment, even from inside a call.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "pmu/backend.h"
#include "pmu/perf/perf_event.h"
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
  ~Poller();  // stops and joins the thread
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Watches `fd` until unwatch(key). Returns the key.
  Result<std::uint64_t> watch(int fd, std::shared_ptr<Watch> w);
  void unwatch(std::uint64_t key);

 private:
  Poller(Fd epoll, Fd wake);
  void run();

  struct Entry {
    int fd;
    std::shared_ptr<Watch> watch;
  };

  Fd epoll_;
  Fd wake_;  // eventfd: stop
  std::mutex mutex_;  // guards entries_ and next_key_; never held while a listener runs
  std::map<std::uint64_t, Entry> entries_;
  std::uint64_t next_key_ = 1;  // 0 is the wake eventfd
  std::thread thread_;
};

}  // namespace pfmfs::pmu::perf
