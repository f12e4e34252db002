// The x86 backend's one thread: it reads the records pfmfs_helper.ko queues
// on the device (overflow interrupts, thread exits, children created) and
// hands each to the target it concerns, then tells that target's listener.
//
// Listeners are held weakly and called with no lock held, so a target may be
// detached (and its session destroyed) at any moment, even from inside a call.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/x86/helper_device.h"

namespace pfmfs::pmu::x86 {

struct Family;

// What the reader knows of one attached target, shared with the target.
struct Watch {
  std::weak_ptr<TargetListener> listener;
  std::uint64_t attached_ns = 0;  // records stamped before this belong to an earlier attachment
  Mutex mutex;                    // a leaf
  std::deque<pfmfs_helper_record> overflows GUARDED_BY(mutex);
  // The module froze the target's counters at an interrupt (GLOBAL_CTRL 0)
  // and they stay frozen until the backend enables them again.
  std::atomic<bool> frozen{false};
  // The module reported the thread's exit at its last switch-out, with
  // its CPU time there (stored before `exited`).
  std::atomic<bool> exited{false};
  std::atomic<std::uint64_t> exit_cpu_ns{0};
  // Set before the watch is shared: the tree of an inheriting thread target
  // it belongs to, and whether the module attached it at its creation.
  std::shared_ptr<Family> family;
  bool child = false;
};

// The threads an inheriting target follows (flags inherit): the module
// attaches each child at its creation (PFMFS_HELPER_ATTACH_INHERIT), the
// reader learns of it from its FORK record and keeps it here until the
// engine adopts it (X86Target::adoptChild), and queues the tree's news for
// the engine (takeChildEvents).
struct Family {
  struct Born {
    std::shared_ptr<Watch> watch;
    std::uint64_t tag = 0;  // the module's template it started with
  };
  // Before RecordReader::mutex_ (the reader watches a child with it held).
  Mutex mutex;
  std::vector<ChildEvent> events GUARDED_BY(mutex);
  std::map<pid_t, Born> born GUARDED_BY(mutex);  // attached by the module, not adopted yet
  bool closed GUARDED_BY(mutex) = false;         // the target let go: a child attached now is let go at once
};

class RecordReader {
 public:
  // `device` must outlive the reader.
  static Result<std::unique_ptr<RecordReader>> create(HelperDevice& device);
  ~RecordReader();  // stop()
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  void watch(const Target& target, std::shared_ptr<Watch> w) EXCLUDES(mutex_);
  void unwatch(const Target& target) EXCLUDES(mutex_);
  // The target of a family lets go: its children not adopted yet are
  // detached, and so is any child whose FORK record comes later.
  void closeFamily(Family& family) EXCLUDES(mutex_);

  // Stops the thread and joins it: when it returns, no listener is in a call
  // and none is called again; records the module queues from then on stay
  // unread. The caller must hold no lock a listener takes. Idempotent.
  void stop() EXCLUDES(stop_mutex_, mutex_);

  // Records the module dropped because the ring was full.
  std::uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

 private:
  RecordReader(HelperDevice& device, Fd wake);
  void run() EXCLUDES(mutex_);
  // Queues one record on its target; returns the listener to call, if any.
  std::shared_ptr<Watch> route(const pfmfs_helper_record& r) EXCLUDES(mutex_);
  // A FORK record: the child goes to its parent's family, or is let go.
  std::shared_ptr<Watch> routeFork(const pfmfs_helper_record& r) EXCLUDES(mutex_);

  using Key = std::pair<int, int>;  // (TargetKind, id)
  HelperDevice& device_;
  Fd wake_;      // eventfd: stop
  Mutex mutex_;  // a leaf: never held while a listener runs
  std::map<Key, std::shared_ptr<Watch>> watches_ GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> lost_{0};
  Mutex stop_mutex_ ACQUIRED_BEFORE(mutex_);  // serialises stop()
  std::thread thread_;
};

}  // namespace pfmfs::pmu::x86
