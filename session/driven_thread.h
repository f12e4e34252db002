// One thread whose counters run with a session's: the target, thread 0 of
// the session's threads, or a child it follows (flags inherit, an Adopt
// backend: session_children.cpp). Each has its own PMU while loaded, and its
// own 64-bit value of every PMD of every set: the one store of PMD values.
// session_time.cpp drives them all alike; the rules that tell the target
// from a child (which values a read shows, whose reset the set records) are
// the session's.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "pmu/backend.h"

namespace pfmfs::session {

struct ThreadPmd {
  // The 64-bit value. While its set is on the thread's hardware only the bits
  // above the counter's width are current: the hardware holds the rest
  // (docs/design.md, "64-bit emulation").
  std::uint64_t value = 0;
  std::uint64_t sampled_hw = 0;  // no-interrupt backends: hardware bits at the last sample
  // A child's events, for merging when it exits: resets cut its count into
  // segments; `events` holds those before `segment_start`, the value at the
  // last reset.
  std::uint64_t segment_start = 0;
  std::uint64_t events = 0;
  // The value the counter counts from: the last reset or write (a sample's
  // last_reset_val, pfmfs(5) SAMPLING).
  std::uint64_t period_start = 0;
};

class DrivenThread {
 public:
  // The values of `set`, one per PMD slot; zeros for a set the thread has
  // not held a value of yet.
  std::vector<ThreadPmd>& pmds(std::uint16_t set, std::size_t slots) {
    // Most lookups ask for the set asked last (the active one): it is kept,
    // and std::map's nodes stay where they are until erased.
    if (!last_ || last_set_ != set) {
      last_ = &sets_[set];
      last_set_ = set;
    }
    if (last_->size() != slots) last_->resize(slots);
    return *last_;
  }
  // A deleted set, or a session's state released: its values go.
  void forgetSet(std::uint16_t set) {
    sets_.erase(set);
    if (last_set_ == set) last_ = nullptr;
  }
  void forgetSets() {
    sets_.clear();
    last_ = nullptr;
  }

  std::unique_ptr<pmu::TargetPmu> pmu;  // while loaded (the target) or followed (a child)
  pid_t pid = 0;                        // 0 for a cpu target
  pid_t tid = 0;
  std::uint64_t serial = 0;      // the session's name for it: 0 is the target, children count up
  std::uint64_t generation = 0;  // a child: the session's control generation when it was created
  std::uint64_t origin = 0;      // a child, manual clock: the session time it was created at (its time 0)
  std::uint64_t last_time = 0;   // real clock with children: its time at the last catch-up
  bool held = false;             // notify_block: held until restart

 private:
  std::map<std::uint16_t, std::vector<ThreadPmd>> sets_;
  std::vector<ThreadPmd>* last_ = nullptr;  // sets_[last_set_]
  std::uint16_t last_set_ = 0;
};

}  // namespace pfmfs::session
