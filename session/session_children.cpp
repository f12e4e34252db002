// Inheritance (flags inherit, pfmfs(5) INHERITANCE, perfctr's semantics): the children
// a thread target creates after the load, and theirs, count with the
// session's control and fresh counts; when one exits, what it counted is
// added to the session's children counts, unless the session was
// reprogrammed (a PMC write) since it was created.
//
// Two ways, chosen by the backend:
// - Adopt (sim, x86): each child gets a PMU of its own, a DrivenThread
//   after the target in threads_, driven by session_time.cpp exactly like the target: set switches, stop,
//   masking and overflows apply to every followed thread at once.
// - Aggregate (perf): the kernel's inherited events count the children and
//   switch with the target's; the backend reports each child's final counts.
//
// What is kept about children beside the threads (control generations, the
// Aggregate children, merged and dropped figures, the child image) is the
// Inheritance collaborator's (inheritance.h); this file moves the threads.
#include <fmt/format.h>

#include "session/engine.h"
#include "session/saturating.h"
#include "session/session.h"

namespace pfmfs::session {

using pmu::regBit;

void Session::drainChildEvents() {
  if (!loaded() || !flags_.inherit || mode_ != Mode::Thread) return;
  child_events_.clear();
  target().pmu->takeChildEvents(child_events_);
  for (const pmu::ChildEvent& e : child_events_) {
    if (!loaded()) break;
    if (e.kind == pmu::ChildEvent::Kind::Created) {
      if (aggregate_) {
        inheritance_.aggregateCreated(e.tid);
      } else {
        adoptFollower(e);
      }
      continue;
    }
    if (aggregate_) {
      aggregateExited(e);
      continue;
    }
    for (std::size_t i = 1; i < threads_.size(); ++i) {
      if (threads_[i]->tid != e.tid) continue;
      finishFollower(i, e.final_time_ns);
      break;
    }
  }
  child_events_.clear();
  // The target went first: the session ends with its last child.
  if (loaded() && inheritance_.hasTargetExited() && !followingChildren()) unloadLocked(true);
}

// A child starts with the control of the moment (the active set, its PMCs)
// and fresh counts: each PMD at the value last written to it.
void Session::adoptFollower(const pmu::ChildEvent& e) {
  std::shared_ptr<pmu::TargetListener> listener(shared_from_this(), static_cast<pmu::TargetListener*>(this));
  auto adopted = target().pmu->adoptChild(e.tid, listener);
  if (!adopted) {
    // Nothing of it will be counted: say so in the figures.
    inheritance_.dropped();
    return;
  }
  auto f = std::make_unique<DrivenThread>();
  f->pid = e.pid;
  f->tid = e.tid;
  f->pmu = std::move(*adopted);
  f->serial = next_serial_++;
  f->generation = inheritance_.generation();
  // Lockstep (manual clock): its time 0 is the session's now. Tree clock: its
  // whole CPU time since its creation is the session's.
  f->origin = treeClock() ? 0 : target().pmu->timeNs();
  f->last_time = 0;
  for (auto& [id, set] : sets_) {
    std::vector<ThreadPmd>& pmds = valuesOf(*f, set);
    for (std::size_t slot = 0; slot < pmds.size(); ++slot)
      pmds[slot].value = pmds[slot].segment_start = pmds[slot].period_start = set.pmd(slot).initial;
  }
  if (!treeClock()) f->pmu->advanceTo(0);
  if (Status st = programActive(*f); !st) {
    inheritance_.dropped();
    return;
  }
  if (counting()) f->pmu->enable();
  threads_.push_back(std::move(f));
}

// A follower exited: its last counts are read, then merged or dropped.
void Session::finishFollower(std::size_t i, std::optional<std::uint64_t> final_time_ns) {
  DrivenThread& f = *threads_[i];
  f.pmu->childExited(final_time_ns);
  if (treeClock()) {
    // Its last moments are the session's time too.
    tree_now_ = saturatingAdd(tree_now_, catchUpThread(f));
    accountTo(tree_now_);
  }
  if (!loaded()) return;
  takeOverflowInSkid(f);
  if (counting() && !interrupts_) sampleThread(f);
  f.pmu->disable();
  if (counting()) foldActive(f);
  if (f.held) f.pmu->hold(false);
  if (f.generation == inheritance_.generation()) {
    for (auto& [id, set] : sets_) {
      const std::vector<ThreadPmd>& pmds = valuesOf(f, set);
      for (std::size_t slot = 0; slot < pmds.size(); ++slot) {
        std::uint64_t events = saturatingAdd(pmds[slot].events, pmds[slot].value - pmds[slot].segment_start);
        set.pmd(slot).children = saturatingAdd(set.pmd(slot).children, events);
      }
    }
    inheritance_.merged();
  } else {
    inheritance_.dropped();
  }
  if (pending_thread_ == f.serial) pending_resets_ = 0;
  threads_.erase(threads_.begin() + static_cast<std::ptrdiff_t>(i));
}

void Session::aggregateExited(const pmu::ChildEvent& e) {
  std::optional<bool> same_control = inheritance_.aggregateExited(e.tid);
  if (!same_control) return;  // created before the load, or its news lost
  if (!*same_control || !e.counts || !e.counts->complete) {
    inheritance_.dropped();
    return;
  }
  for (const auto& [id, events] : e.counts->by_set) {
    EventSet* set = findSet(id);
    if (!set) continue;
    for (std::size_t slot = 0; slot < events.size() && slot < set->pmdCount(); ++slot)
      set->pmd(slot).children = saturatingAdd(set->pmd(slot).children, events[slot]);
  }
  inheritance_.merged();
}

// The target exited. Without followed children that ends the session (an
// `end` message); with them it goes on until the last one exits.
void Session::targetExitedLocked() {
  if (inheritance_.hasTargetExited()) return;
  if (!flags_.inherit || !followingChildren()) return unloadLocked(true);
  catchUpNow();
  if (!loaded()) return;
  if (!aggregate_) {
    // Its own counts are final; its PMU stays only as the children's source
    // of news (and, under the manual clock, the session's clock).
    DrivenThread& t = target();
    takeOverflowInSkid(t);
    if (counting() && !interrupts_) sampleThread(t);
    t.pmu->disable();
    if (counting()) foldActive(t);
    if (t.held) t.pmu->hold(false);
    t.held = false;
    if (pending_thread_ == t.serial) pending_resets_ = 0;
  }
  inheritance_.targetExited();
}

// Aggregate: the backend needs every set's events in place before children
// are created, so that each child carries all of them.
Status Session::prepareSets() {
  if (!aggregate_ || !flags_.inherit || !loaded()) return {};
  std::vector<std::vector<std::uint64_t>> pmcs, bits;
  std::vector<pmu::SetImage> images;
  pmcs.reserve(sets_.size());
  bits.reserve(sets_.size());
  for (auto& [id, s] : sets_) {
    auto& pc = pmcs.emplace_back(desc_.pmcs.size());
    auto& pd = bits.emplace_back(desc_.pmds.size());
    for (std::size_t slot = 0; slot < pc.size(); ++slot) pc[slot] = s.hardwarePmc(slot, interrupts_);
    const std::vector<ThreadPmd>& values = valuesOf(target(), s);
    for (std::size_t slot = 0; slot < pd.size(); ++slot) pd[slot] = values[slot].value & desc_.pmds[slot].widthMask();
    images.push_back(pmu::SetImage{id, pc, s.usedPmds(), pd});
  }
  return target().pmu->prepareSets(images);
}

// Children that a backend starts at their creation (setChildImage) get the
// control of the moment: the active set, each PMD at its initial value, and
// whether the session counts. Told only when it changed.
Status Session::publishChildImage() {
  if (!loaded() || !flags_.inherit || aggregate_ || mode_ != Mode::Thread) {
    inheritance_.forgetTold();
    return {};
  }
  // Built in a scratch image that keeps its capacity: this runs at the end
  // of every operation that changes the session or brings it to the present
  // (reads of counts too), and allocates nothing once warm.
  EventSet& s = activeSet();
  ChildImage& img = inheritance_.draft();
  img.set = s.id();
  img.pmcs.resize(desc_.pmcs.size());
  img.pmd_bits.resize(desc_.pmds.size());
  for (std::size_t slot = 0; slot < img.pmcs.size(); ++slot) img.pmcs[slot] = s.hardwarePmc(slot, interrupts_);
  for (std::size_t slot = 0; slot < img.pmd_bits.size(); ++slot)
    img.pmd_bits[slot] = s.pmd(slot).initial & desc_.pmds[slot].widthMask();
  img.pmds = s.usedPmds();
  img.counting = counting();
  const ChildImage* told = inheritance_.tellIfChanged();
  if (!told) return {};
  Status st =
      target().pmu->setChildImage(pmu::SetImage{told->set, told->pmcs, told->pmds, told->pmd_bits}, told->counting);
  // Not told: the next operation tells it again.
  if (!st) inheritance_.forgetTold();
  return st;
}

// Unload with children still followed: they are let go, their counts
// unfinished and not merged.
void Session::dropFollowers() {
  inheritance_.dropAll(followedThreads());
  for (std::size_t i = 1; i < threads_.size(); ++i) threads_[i]->pmu->disable();
  threads_.resize(1);
}

}  // namespace pfmfs::session
