// What a session following children (flags inherit, pfmfs(5) INHERITANCE)
// keeps beside the threads it drives: which control a child was created
// under, the children a backend counts itself, how many children's results
// were added or not, and the image the backend starts new children with.
//
// The threads themselves (the target and every adopted child) are
// DrivenThreads in Session::threads_; Session moves them through time and
// decides, with generation(), whether an exited child's counts are merged.
// This class holds no lock: it is part of the session's state, guarded by
// the session's mutex (session_children.cpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "pmu/backend.h"

namespace pfmfs::session {

// The control a backend starts children with (pmu::TargetPmu::setChildImage):
// the active set, its PMC image, each used PMD at its initial value, and
// whether the session counts.
struct ChildImage {
  std::uint16_t set = 0;
  std::vector<std::uint64_t> pmcs, pmd_bits;
  pmu::RegMask pmds = 0;
  bool counting = false;
  bool operator==(const ChildImage&) const = default;
};

class Inheritance {
 public:
  // A load or a PMC write: children created from now on count under a new
  // control; those created before are no longer merged when they exit
  // (perfctr's rule: counts of another configuration would mix).
  void controlChanged() { ++generation_; }
  std::uint64_t generation() const { return generation_; }

  // At every load: the target is there, nothing is told to the backend yet.
  void loaded() {
    target_exited_ = false;
    controlChanged();
    image_told_.reset();
  }

  // The target exited while children are still followed; the session goes
  // on until the last of them exits.
  void targetExited() { target_exited_ = true; }
  bool hasTargetExited() const { return target_exited_; }

  // Children a backend counts itself (Aggregate, perf): their tid and the
  // control they were created under.
  void aggregateCreated(pid_t tid) { aggregate_[tid] = generation_; }
  // One of them exited: whether it was created under the present control;
  // nothing if it was not known (created before the load, or its news lost).
  std::optional<bool> aggregateExited(pid_t tid);
  std::size_t aggregateCount() const { return aggregate_.size(); }

  // Figures across loads: children whose counts were added to the session's
  // children counts, and those whose were not.
  void merged() { ++merged_; }
  void dropped(std::uint64_t n = 1) { dropped_ += n; }
  std::uint64_t mergedCount() const { return merged_; }
  std::uint64_t droppedCount() const { return dropped_; }

  // Unload with `adopted` children still followed: their counts are not
  // final, so every child followed (adopted or aggregate) is dropped.
  void dropAll(std::size_t adopted) {
    dropped(adopted + aggregate_.size());
    aggregate_.clear();
    target_exited_ = false;
  }

  // The child image, told to the backend only when it changed: the session
  // fills draft(), then tellIfChanged() says whether to tell the backend
  // (and the draft becomes what was told). The draft keeps its capacity, so
  // that a warm session allocates nothing at the end of an operation.
  ChildImage& draft() { return draft_; }
  // The image to tell the backend, or null if the backend has it already.
  const ChildImage* tellIfChanged();
  // The backend did not take it (or the session unloaded): the next
  // operation tells it again.
  void forgetTold() { image_told_.reset(); }

  // The session is retired: what it holds is released.
  void release();

 private:
  std::uint64_t generation_ = 0;
  bool target_exited_ = false;
  std::map<pid_t, std::uint64_t> aggregate_;  // tid -> generation at creation
  std::uint64_t merged_ = 0;
  std::uint64_t dropped_ = 0;
  std::optional<ChildImage> image_told_;
  ChildImage draft_;
};

}  // namespace pfmfs::session
