// Following a thread's children on perf (Target::inherit,
// Inheritance::Aggregate): the target's descendants count in inherited
// copies of its events, which the kernel creates at each fork and whose
// final counts it writes into the target's ring buffer as each child exits.
//
// perf refuses to mmap an inherited per-task event, but redirects one
// (SET_OUTPUT) into the ring buffer of a non-inherited event of the same task:
// the target's anchor. Into it go
//   - the tree clock: task-clock with inherit and task. A read is the CPU
//     time of the whole followed tree (the target, its live descendants,
//     those that exited, also after the target exited); `task` makes the
//     kernel write PERF_RECORD_FORK and PERF_RECORD_EXIT for every thread
//     the tree creates and ends. Always enabled: the kernel writes those
//     records only for an enabled event.
//   - per set, a tree group: the set's events again, inherited with
//     inherit_stat, counting only (the target's own group samples and is not
//     inherited). inherit_stat keeps each child's counts its own where the
//     scheduler swaps the contexts of two clones instead of switching. It is
//     enabled and disabled with the own group; the ioctls on the target's
//     events reach every child's copy, so the children switch sets with the
//     target. At a child's exit the kernel writes its EXIT, then one
//     PERF_RECORD_READ per inherited event it carried: the final count, named
//     by the target's event's PERF_EVENT_IOC_ID.
// A child carries the events that existed when it was created. Closing an
// event (a set reprogrammed) frees the live children's copies without a READ.
// Children's overflows are not reported (their events do not sample).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/perf/child_sampler.h"
#include "pmu/perf/perf_models.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

class Poller;
struct Watch;

// The children of one target, from the task records of its ring buffer, in
// ring order; no syscalls, so that tests can feed it the orders the kernel
// rarely produces.
//
// Each child expects one READ for every inherited counter event alive when
// its FORK was taken, and is reported Exited once they have all come. The
// exiting child writes them right after its EXIT, so a take may see the EXIT
// before all of them: the child then waits until they come, or the events
// they would name are closed, or it is clear they will not: the kernel
// writes them before the task becomes a zombie (do_exit calls
// perf_event_exit_task before exit_notify), so for a child seen finished
// (a zombie, or reaped) at the start of a take, what the take drains is all
// there will be. A fork racing a reprogram (the child carries events other
// than those expected) ends that way. kReadWaitNs bounds the wait where it
// cannot be seen (the tid reused).
//
// A child is incomplete (ChildCounts::complete false) when an event it
// carries is closed (its copy is freed without a READ), when events are
// opened while it lives (it does not carry them), or when records were lost.
// A take: beginTake, then the records (add, in ring order; also between
// takes), then take.
class ChildLedger {
 public:
  static constexpr std::uint64_t kReadWaitNs = 1'000'000'000;
  // Whether a thread has finished its exit: a zombie, or reaped.
  using Finished = std::function<bool(pid_t tid)>;

  // `target`: the followed thread, whose own records are skipped; counts go
  // by PMD slot of a description with `pmd_slots` PMDs.
  ChildLedger(pid_t target, std::size_t pmd_slots) : target_(target), pmd_slots_(pmd_slots) {}

  // An inherited counter event of `set`, counting into PMD `slot`, was opened
  // (its target's PERF_EVENT_IOC_ID), or closed.
  void opened(std::uint64_t id, std::uint16_t set, std::size_t slot);
  void closed(std::uint64_t id);
  // The kernel dropped records (PERF_RECORD_LOST): any child's may be among them.
  void lost();
  // One task record; `now_ns` is the monotonic time it was taken.
  void add(const TaskRecord& r, std::uint64_t now_ns);
  // Before the ring is drained: notes the children whose READs can no longer
  // come (finished, or waiting since kReadWaitNs before now_ns); after a loss
  // also those whose EXIT may have been lost (finished, never seen exiting).
  void beginTake(const Finished& finished, std::uint64_t now_ns);
  // After it is drained: gives those up, and appends what happened since the
  // last call, oldest first.
  void take(std::vector<ChildEvent>& out);

  std::size_t tracked() const { return children_.size(); }  // live, or exited and waiting for READs

 private:
  struct Child {
    pid_t pid = 0;
    pid_t parent_tid = 0;
    std::set<std::uint64_t> expected;  // READs still to come
    ChildCounts counts;
    bool exited = false;          // its EXIT (or a READ) was taken
    std::uint64_t exited_at = 0;  // when
    bool give_up = false;         // beginTake: nothing more will come
  };

  void exited(pid_t tid, Child& c, std::uint64_t now_ns);
  void finish(pid_t tid);  // reports the child Exited and forgets it

  const pid_t target_;
  const std::size_t pmd_slots_;
  std::map<std::uint64_t, std::pair<std::uint16_t, std::size_t>> events_;  // alive: id -> set, slot
  std::map<pid_t, Child> children_;
  std::vector<ChildEvent> ready_;
  bool lost_ = false;  // records were lost: a child's EXIT may never come
};

// One event of a tree group.
struct TreeEvent {
  std::size_t slot = 0;  // PMD slot in the description
  CounterEvent event;
  Fd fd;
  std::uint64_t id = 0;  // PERF_EVENT_IOC_ID: names it in the children's READs
};

// The inherited events of one thread target: the tree clock, each set's tree
// group, the bookkeeping of the children. The target's ring buffer (its
// anchor's) is read by its owner, which hands the task records to ledger().
class TreeFollower {
 public:
  // Opens the tree clock on `tid`, into the ring buffer of `anchor_fd`, and
  // watches it with `poller`: the anchor hangs up when the target exits, the
  // tree clock only once the whole tree has, and children's records go on
  // coming in between.
  static Result<std::unique_ptr<TreeFollower>> open(pid_t tid, int anchor_fd, const PmuDescription& desc,
                                                    Poller& poller, std::weak_ptr<TargetListener> listener);
  ~TreeFollower();
  TreeFollower(const TreeFollower&) = delete;
  TreeFollower& operator=(const TreeFollower&) = delete;

  // Whether `set`'s tree group counts exactly `wanted` (slot, event), in order.
  bool has(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted) const;
  // Makes `set`'s tree group count `wanted`, disabled: reopens it if its
  // events changed. The owner takes the records written so far first, so
  // that the ledger knows which children were created before the change.
  // `periods` (by slot, or empty): a sampling session's PMDs that sample
  // the children too (child_sampler.h), with the period each copy re-arms
  // itself with; taken when the set's events are first opened.
  Status put(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted,
             std::span<const std::uint64_t> periods = {});
  // The set and slot of child-sampling event `id`, if it is one.
  std::optional<std::pair<std::uint16_t, std::size_t>> sampledBy(std::uint64_t id) const;
  // The children's samples written since the last call (ChildSampler).
  void takeSamples(std::vector<OverflowRecord>& out);
  void enable(std::uint16_t set);
  void disable(std::uint16_t set);

  // The CPU time of the whole followed tree, in ns.
  Result<std::uint64_t> timeNs();

  ChildLedger& ledger() { return ledger_; }
  // ChildLedger::beginTake with /proc's view of the children.
  void beginTake(std::uint64_t now_ns);

 private:
  TreeFollower(pid_t tid, int anchor_fd, const PmuDescription& desc, Poller& poller);
  void close(std::vector<TreeEvent>& group);

  const pid_t tid_;
  const PmuDescription& desc_;
  const int anchor_fd_;
  Poller& poller_;
  Fd clock_;
  std::shared_ptr<Watch> watch_;
  std::uint64_t watch_key_ = 0;
  std::map<std::uint16_t, std::vector<TreeEvent>> groups_;  // by set; the first event leads
  ChildLedger ledger_;
  std::unique_ptr<ChildSampler> sampler_;  // a sampling session's
};

}  // namespace pfmfs::pmu::perf
