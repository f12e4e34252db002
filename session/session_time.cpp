// A session's time: catching its threads up to the present one event at a
// time (set switches, overflow interrupts, samples), time accounting, 64-bit
// emulation on hardware overflows, overflow processing (messages, masking,
// resets) and set switching. The threads are the target and, with inherit,
// the children it is followed into (session_children.cpp); every set switch,
// stop and mask applies to all of them at once. The rest of Session is in
// session.cpp, session_sets_reads.cpp and session_registers.cpp.
#include <algorithm>
#include <bit>

#include <fmt/format.h>

#include "session/engine.h"
#include "session/saturating.h"
#include "session/session.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

// ---- threads -----------------------------------------------------------------------

bool Session::anyHeld() const {
  for (const auto& t : threads_)
    if (t->held) return true;
  return false;
}

void Session::releaseHolds() {
  for (auto& t : threads_) {
    if (t->held && t->pmu) t->pmu->hold(false);
    t->held = false;
  }
}

// Real clock with an Adopt backend and inherit: the threads run on their own
// CPU time, and the session's time is the sum of theirs (tree time), so that
// a shell waiting for its children still switches sets while they run.
bool Session::treeClock() const {
  return flags_.inherit && mode_ == Mode::Thread && !aggregate_ && engine_.backend().clock() == pmu::ClockKind::Real;
}

// ---- time, overflows, switching ---------------------------------------------------

void Session::catchUp() {
  if (!loaded()) return;
  drainChildEvents();
  if (!loaded()) return;
  catchUpNow();
  // A backend that notices its target is gone (the sim's real clock reading a
  // reaped thread's CPU time, perf's hangup) ends the target's part. News of
  // children it created just before it went came first: they are followed.
  if (loaded() && !inheritance_.hasTargetExited() && target().pmu->gone()) {
    drainChildEvents();
    if (loaded() && !inheritance_.hasTargetExited()) targetExitedLocked();
  }
}

void Session::catchUpNow() {
  if (!loaded()) return;
  if (treeClock()) {
    catchUpTree();
  } else {
    catchUpTo(target().pmu->timeNs());
  }
}

// Lockstep: every thread is on the session's time, the target's (under the
// manual clock, followers at that time minus their creation). Moves them to
// t_end one event at a time: the next set switch, the next overflow
// interrupt, the next sample, whichever is first. For the sim this replays
// every event at its exact instant; hardware backends reach the present in
// one step.
void Session::catchUpTo(std::uint64_t t_end) {
  const std::uint64_t period = engine_.backend().samplingPeriodNs();
  while (loaded()) {
    std::uint64_t t_next = t_end;
    if (counting()) {
      const SwitchSpec& sw = activeSet().switch_spec;
      if (sw.on_time) {
        std::uint64_t timeout = effectiveTimeout(sw);
        t_next = std::min(t_next, saturatingAdd(counted_to_, timeout > set_elapsed_ ? timeout - set_elapsed_ : 0));
      }
      t_next = std::min(t_next, interrupts_ ? nextOverflowAll() : saturatingAdd(last_sample_, period));
    }
    std::uint64_t t = advanceAll(t_next);
    accountTo(t);
    drainOverflows();
    if (counting() && !interrupts_ && t >= saturatingAdd(last_sample_, period)) sampleActive();
    switchIfTimeIsUp();
    if (t >= t_end || anyHeld()) break;
  }
}

// The target's clock leads (after it exited too: the sim's manual clock runs
// on with its counters off); followers exist in lockstep only under the
// manual clock, where a child created at session time `origin` is at t-origin.
std::uint64_t Session::advanceAll(std::uint64_t t) {
  std::uint64_t now = target().pmu->advanceTo(t);
  for (std::size_t i = 1; i < threads_.size(); ++i) {
    DrivenThread& f = *threads_[i];
    f.pmu->advanceTo(now > f.origin ? now - f.origin : 0);
  }
  return now;
}

std::uint64_t Session::nextOverflowAll() {
  std::uint64_t next = target().pmu->nextOverflowNs();
  for (std::size_t i = 1; i < threads_.size(); ++i)
    next = std::min(next, saturatingAdd(threads_[i]->origin, threads_[i]->pmu->nextOverflowNs()));
  return next;
}

// Tree time: each thread to its own present, its overflows taken at their
// instants in its own time; the session's time grows by what they all ran.
// Switches come at catch-ups (the engine's tick), as on hardware.
void Session::catchUpTree() {
  std::uint64_t grown = 0;
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) { grown = saturatingAdd(grown, catchUpThread(t)); });
  if (!loaded()) return;
  tree_now_ = saturatingAdd(tree_now_, grown);
  accountTo(tree_now_);
  const std::uint64_t period = engine_.backend().samplingPeriodNs();
  if (counting() && !interrupts_ && tree_now_ >= saturatingAdd(last_sample_, period)) sampleActive();
  switchIfTimeIsUp();
}

// The active set's time is up: the next set. An overflow in skid comes
// first, as at its interrupt: it may switch (the time switch is then moot)
// or mask (it waits for restart).
void Session::switchIfTimeIsUp() {
  auto time_is_up = [this]() REQUIRES(mutex_) {
    const SwitchSpec& sw = activeSet().switch_spec;
    return counting() && sw.on_time && set_elapsed_ >= effectiveTimeout(sw);
  };
  if (!time_is_up()) return;
  takeOverflowInSkid();
  if (time_is_up()) switchTo(nextSet());
}

// One thread to its present; returns how far its time moved since the last call.
std::uint64_t Session::catchUpThread(DrivenThread& t) {
  const std::uint64_t now = t.pmu->timeNs();
  while (loaded()) {
    std::uint64_t t_next = counting() && interrupts_ ? std::min(now, t.pmu->nextOverflowNs()) : now;
    std::uint64_t reached = t.pmu->advanceTo(t_next);
    drainOverflows(t);
    if (reached >= now || t_next >= now) break;
  }
  std::uint64_t moved = now > t.last_time ? now - t.last_time : 0;
  t.last_time = std::max(t.last_time, now);
  return moved;
}

void Session::accountTo(std::uint64_t t) {
  if (!counting() || t <= counted_to_) return;
  std::uint64_t d = t - counted_to_;
  enabled_ns_ += d;
  activeSet().duration_ns += d;
  set_elapsed_ += d;
  counted_to_ = t;
}

void Session::drainOverflows() {
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) { drainOverflows(t); });
}

void Session::drainOverflows(DrivenThread& t) {
  while (loaded()) {
    auto o = t.pmu->takeOverflow();
    if (!o) break;
    handleHwOverflow(t, *o);
  }
}

void Session::mask() {
  disableAll();
  foldAll();
  state_ = State::Masked;
  stopped_while_masked_ = false;
  engine_.noTicks(this);
}

// A counter wrapped at 2^width: the software bits grow by 2^width. A wrap of
// the 64-bit value (or any wrap under no_emul64) is a user-visible overflow.
void Session::handleHwOverflow(DrivenThread& t, const pmu::HwOverflow& o) {
  if (o.child_sample) return handleChildSample(t, o);
  // A child's interrupt can come after another thread's notification
  // masked the session at the same instant: its carry still counts.
  if (!counting() && !(!isTarget(t) && state_ == State::Masked)) {
    // perf reports overflows late: those of the counters' last moments
    // before a full buffer masked them come now, and write no sample.
    if (sample_buffer_ && state_ == State::Masked) sample_buffer_->dropped(std::popcount(userVisible(t, o.pmds)));
    return;
  }
  EventSet& s = activeSet();
  std::vector<ThreadPmd>& values = valuesOf(t, s);
  RegMask user = 0;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    RegMask bit = regBit(d.index);
    if (!(o.pmds & s.usedPmds() & bit)) continue;
    if (s.noEmul64(d.index) || d.width >= 64) {
      user |= bit;
      continue;
    }
    std::uint64_t& value = values[slot].value;
    std::uint64_t mask = d.widthMask();
    std::uint64_t upper = (value & ~mask) + (mask + 1);  // wraps to 0 past 2^64
    value = upper | (value & mask);
    if (upper == 0) user |= bit;
  }
  if (!user) return;
  if (!counting()) {
    // Masked already: no second notification; its counters take their
    // short reset, loaded at restart, so that sampling goes on.
    if (sample_buffer_) sample_buffer_->dropped(std::popcount(user));
    resetPmds(t, s, user, false);
    return;
  }
  if (!overflow_budget_.take(counted_to_)) {
    // The carries above keep the counts right; only the overflow processing
    // (messages, resets, switches) stops until restart.
    pending_resets_ = 0;
    mask();
    error_ = fmt::format(
        "overflow storm: over {} overflows at more than one per {} ns of target time; "
        "monitoring is masked: lengthen the sampling periods, then restart",
        overflow_budget_.burst(), overflow_budget_.refillNs());
    return;
  }
  handleUserOverflow(t, user, o);
}

// Which of `pmds`' wraps in `t` would be user-visible overflows, changing
// nothing: those of 64-bit counters and no_emul64 PMDs, and those whose
// carry would wrap the 64-bit value.
RegMask Session::userVisible(DrivenThread& t, RegMask pmds) {
  EventSet& s = activeSet();
  const std::vector<ThreadPmd>& values = valuesOf(t, s);
  RegMask user = 0;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    const RegMask bit = regBit(d.index);
    if (!(pmds & s.usedPmds() & bit)) continue;
    if (s.noEmul64(d.index) || d.width >= 64 || (values[slot].value | d.widthMask()) == ~std::uint64_t{0}) user |= bit;
  }
  return user;
}

void Session::handleUserOverflow(DrivenThread& t, RegMask pmds, const pmu::HwOverflow& o) {
  EventSet& s = activeSet();
  s.ovfl_pmds = pmds;
  RegMask resets = pmds, notify = 0;
  bool do_switch = false;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    RegMask bit = regBit(desc_.pmds[slot].index);
    if (!(pmds & bit)) continue;
    PmdState& p = s.pmd(slot);
    resets |= p.reset_pmds;
    if (p.notify) notify |= bit;
    if (s.switch_spec.on_ovfl && p.switch_left > 0 && --p.switch_left == 0) do_switch = true;
  }
  // With a sampling format a sample is taken instead, and only the one that
  // fills the buffer notifies (pfmfs(5), SAMPLING).
  if (sample_buffer_) notify = recordSamples(t, s, pmds, o);
  if (notify) {
    notifyOverflow(t, notify, resets, o);
  } else {
    resetPmds(t, s, resets, false);
  }
  if (do_switch) switchTo(nextSet());
}

void Session::notifyOverflow(DrivenThread& t, RegMask notify, RegMask resets, const pmu::HwOverflow& o) {
  EventSet& s = activeSet();
  // Mask: counting stops here, in every followed thread, and the resets
  // (of the thread that overflowed) wait for restart.
  pending_set_ = s.id();
  pending_resets_ = resets;
  pending_thread_ = t.serial;
  mask();
  if (flags_.notify_block && mode_ == Mode::Thread) {
    t.pmu->hold(true);
    t.held = true;
  }
  if (flags_.no_msg) {
    // No message, but pollers (libpfm-compat's signal thread) must still hear of it.
    notify_pending_ = true;
    return;
  }
  Message m;
  m.type = MessageType::Overflow;
  m.set = s.id();
  m.pmds = notify;
  // The target's PMU says which thread ran (a cpu target's: whichever did).
  m.pid = isTarget(t) ? o.pid : t.pid;
  m.tid = isTarget(t) ? o.tid : t.tid;
  m.cpu = o.cpu;
  m.ip = o.ip;
  queueMessage(m);
}

std::uint64_t Session::resetValue(const PmdState& p, bool long_reset) {
  std::uint64_t v = long_reset ? p.long_reset : p.short_reset;
  if (p.random && p.random_mask) {
    // Fixed seed: random resets repeat run after run.
    if (!random_) random_ = std::make_unique<std::mt19937_64>(0x9e3779b97f4a7c15ull);
    v -= (*random_)() & p.random_mask;
  }
  return v;
}

void Session::resetPmds(DrivenThread& t, EventSet& set, RegMask pmds, bool long_reset) {
  bool live = counting() && set.id() == active_set_;
  std::vector<ThreadPmd>& values = valuesOf(t, set);
  // A child's events are counted up to the reset, for merging at its exit: a
  // segment ends. While live, its value's lower bits are in the hardware.
  const bool child = !isTarget(t);
  RegMask live_used = live ? pmds & set.usedPmds() : 0;
  if (child && live_used) readHw(t, live_used);
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(pmds & regBit(d.index))) continue;
    PmdState& p = set.pmd(slot);
    ThreadPmd& v = values[slot];
    std::uint64_t reset = resetValue(p, long_reset);
    if (child) {
      std::uint64_t now = v.value;
      if (live_used & regBit(d.index)) now = (now & ~d.widthMask()) | (hw_[slot] & d.widthMask());
      v.events = saturatingAdd(v.events, now - v.segment_start);
      v.segment_start = reset;
    } else {
      p.last_reset = reset;  // the set shows the target's (pmds, the fast page)
    }
    v.value = reset;
    v.period_start = reset;
    if (live && (set.usedPmds() & regBit(d.index))) {
      std::uint64_t bits = reset & d.widthMask();
      t.pmu->reloadPmd(d.index, bits);
      v.sampled_hw = bits;
    }
  }
}

// Reads the hardware bits of the active set's counters in `pmds` into hw_.
void Session::readHw(DrivenThread& t, RegMask pmds) {
  hw_.resize(desc_.pmds.size());
  t.pmu->readPmds(pmds, hw_);
}

// No interrupts: read every counter of the active set and count the wraps
// since the last look. The sampling period guarantees at most one.
void Session::sampleActive() {
  last_sample_ = counted_to_;
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) {
    if (counting()) sampleThread(t);
  });
}

void Session::sampleThread(DrivenThread& t) {
  EventSet& s = activeSet();
  std::vector<ThreadPmd>& values = valuesOf(t, s);
  RegMask wrapped = 0;
  readHw(t, s.usedPmds());
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(s.usedPmds() & regBit(d.index))) continue;
    std::uint64_t& sampled = values[slot].sampled_hw;
    std::uint64_t hw = hw_[slot];
    if (hw < sampled) wrapped |= regBit(d.index);
    sampled = hw;
  }
  if (wrapped) {
    pmu::HwOverflow o;
    o.pmds = wrapped;
    o.pid = t.pid;
    o.tid = t.tid;
    o.cpu = target_.kind == pmu::TargetKind::Cpu ? target_.id : 0;
    handleHwOverflow(t, o);
  }
}

// Interrupt skid (the sim's --sim-skid): an overflow whose counter has wrapped
// but whose interrupt is yet to come is taken now, before the active set
// leaves the PMU (stop, time switch, start N, register write, unload), so that
// its carry, resets, message and switch go to the set that counted it. Without
// this the late interrupt would land in whatever set is loaded then, or in
// none.
void Session::takeOverflowInSkid() {
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) { takeOverflowInSkid(t); });
}

void Session::takeOverflowInSkid(DrivenThread& t) {
  if (!counting() || !interrupts_ || !t.pmu->overflowsInSkid()) return;
  t.pmu->raiseOverflowInSkid();
  drainOverflows(t);
}

void Session::foldActive(DrivenThread& t) {
  EventSet& s = activeSet();
  std::vector<ThreadPmd>& values = valuesOf(t, s);
  readHw(t, s.usedPmds());
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(s.usedPmds() & regBit(d.index))) continue;
    ThreadPmd& v = values[slot];
    std::uint64_t hw = hw_[slot];
    std::uint64_t mask = d.widthMask();
    v.value = (v.value & ~mask) | (hw & mask);
    v.sampled_hw = hw;
  }
}

void Session::foldAll() {
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) { foldActive(t); });
}

// Puts the active set on one thread's hardware (counting disabled): the
// backend writes what differs, or switches its group.
Status Session::programActive(DrivenThread& t) {
  EventSet& s = activeSet();
  std::vector<ThreadPmd>& values = valuesOf(t, s);
  pmc_image_.resize(desc_.pmcs.size());
  hw_.resize(desc_.pmds.size());
  for (std::size_t slot = 0; slot < desc_.pmcs.size(); ++slot) pmc_image_[slot] = s.hardwarePmc(slot, interrupts_);
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    hw_[slot] = values[slot].value & d.widthMask();
    if (s.usedPmds() & regBit(d.index)) values[slot].sampled_hw = hw_[slot];
  }
  return t.pmu->loadSet(pmu::SetImage{s.id(), pmc_image_, s.usedPmds(), hw_});
}

Status Session::programAll() {
  Status st;
  forEachDriven([&](DrivenThread& t) REQUIRES(mutex_) {
    if (st) st = programActive(t);
  });
  return st;
}

void Session::enableAll() {
  forEachDriven([](DrivenThread& t) { t.pmu->enable(); });
}

void Session::disableAll() {
  forEachDriven([](DrivenThread& t) { t.pmu->disable(); });
}

void Session::switchTo(EventSet& next) {
  const std::uint16_t from = active_set_;
  if (counting() && !interrupts_) {
    sampleActive();
    if (active_set_ != from) return;  // an overflow the sample found switched already
  }
  // A lone set "switches" to itself: a new activation, nothing to reprogram.
  // Otherwise counting stops for the switch, so that no event counts in both
  // sets or in neither.
  const bool reprogram = counting() && next.id() != from;
  if (reprogram) {
    disableAll();
    foldAll();
  }
  active_set_ = next.id();
  ++next.runs;
  next.reloadSwitchCounters();
  set_elapsed_ = 0;
  if (reprogram) {
    if (Status st = programAll(); !st) return haltCounting(st.error());
    enableAll();
  }
}

}  // namespace pfmfs::session
