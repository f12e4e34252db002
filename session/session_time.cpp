// A session's time: catching the target up to the present one event at a
// time (set switches, overflow interrupts, samples), time accounting, 64-bit
// emulation on hardware overflows, overflow processing (messages, masking,
// resets) and set switching. The rest of Session is in session.cpp.
#include <algorithm>

#include <fmt/format.h>

#include "session/engine.h"
#include "session/saturating.h"
#include "session/session.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

// ---- time, overflows, switching ---------------------------------------------------

void Session::catchUp() {
  if (!loaded()) return;
  catchUpTo(pmu_->timeNs());
  // A backend that notices its target is gone (the sim's real clock reading a
  // reaped thread's CPU time) unloads the session whatever its state.
  if (loaded() && pmu_->gone()) unloadLocked(true);
}

// Moves the target to t_end one event at a time: the next set switch, the next
// overflow interrupt, the next sample, whichever is first. For the sim this
// replays every event at its exact instant; hardware backends reach the
// present in one step.
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
      t_next = std::min(t_next, interrupts_ ? pmu_->nextOverflowNs() : saturatingAdd(last_sample_, period));
    }
    std::uint64_t t = pmu_->advanceTo(t_next);
    accountTo(t);
    drainOverflows();
    if (counting() && !interrupts_ && t >= saturatingAdd(last_sample_, period)) sampleActive();
    auto time_is_up = [this] {
      const SwitchSpec& sw = activeSet().switch_spec;
      return counting() && sw.on_time && set_elapsed_ >= effectiveTimeout(sw);
    };
    if (time_is_up()) {
      // An overflow in skid comes first, as at its interrupt: it may switch
      // (the time switch is then moot) or mask (it waits for restart).
      takeOverflowInSkid();
      if (time_is_up()) switchTo(nextSet());
    }
    if (t >= t_end || held_) break;
  }
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
  while (loaded()) {
    auto o = pmu_->takeOverflow();
    if (!o) break;
    handleHwOverflow(*o);
  }
}

bool Session::takeOverflowToken() {
  const EngineOptions& opt = engine_.options();
  if (opt.overflow_refill_ns && counted_to_ > ovfl_tokens_at_) {
    std::uint64_t earned = (counted_to_ - ovfl_tokens_at_) / opt.overflow_refill_ns;
    ovfl_tokens_ = std::min(opt.overflow_burst, saturatingAdd(ovfl_tokens_, earned));
    ovfl_tokens_at_ += earned * opt.overflow_refill_ns;
  }
  if (ovfl_tokens_ == 0) return false;
  --ovfl_tokens_;
  return true;
}

void Session::mask() {
  pmu_->disable();
  foldActive();
  state_ = State::Masked;
  engine_.noTicks(this);
}

// A counter wrapped at 2^width: the software bits grow by 2^width. A wrap of
// the 64-bit value (or any wrap under no_emul64) is a user-visible overflow.
void Session::handleHwOverflow(const pmu::HwOverflow& o) {
  if (!counting()) return;
  EventSet& s = activeSet();
  RegMask user = 0;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    RegMask bit = regBit(d.index);
    if (!(o.pmds & s.usedPmds() & bit)) continue;
    if (s.noEmul64(d.index) || d.width >= 64) {
      user |= bit;
      continue;
    }
    PmdState& p = s.pmd(slot);
    std::uint64_t mask = d.widthMask();
    std::uint64_t upper = (p.value & ~mask) + (mask + 1);  // wraps to 0 past 2^64
    p.value = upper | (p.value & mask);
    if (upper == 0) user |= bit;
  }
  if (!user) return;
  if (!takeOverflowToken()) {
    // The carries above keep the counts right; only the overflow processing
    // (messages, resets, switches) stops until restart.
    pending_resets_ = 0;
    mask();
    error_ = fmt::format(
        "overflow storm: over {} overflows at more than one per {} ns of target time; "
        "monitoring is masked: lengthen the sampling periods, then restart",
        engine_.options().overflow_burst, engine_.options().overflow_refill_ns);
    return;
  }
  handleUserOverflow(user, o);
}

void Session::handleUserOverflow(RegMask pmds, const pmu::HwOverflow& o) {
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
  if (notify) {
    // Mask: counting stops here and the resets wait for restart.
    pending_set_ = s.id();
    pending_resets_ = resets;
    mask();
    if (flags_.notify_block && mode_ == Mode::Thread) {
      pmu_->hold(true);
      held_ = true;
    }
    if (flags_.no_msg) {
      // No message, but pollers (libpfm-compat's signal thread) must still hear of it.
      notify_pending_ = true;
    } else {
      Message m;
      m.type = MessageType::Overflow;
      m.set = s.id();
      m.pmds = notify;
      m.pid = o.pid;
      m.tid = o.tid;
      m.cpu = o.cpu;
      m.ip = o.ip;
      queueMessage(m);
    }
  } else {
    resetPmds(s, resets, false);
  }
  if (do_switch) switchTo(nextSet());
}

std::uint64_t Session::resetValue(const PmdState& p, bool long_reset) {
  std::uint64_t v = long_reset ? p.long_reset : p.short_reset;
  if (p.random && p.random_mask) v -= random_() & p.random_mask;
  return v;
}

void Session::resetPmds(EventSet& set, RegMask pmds, bool long_reset) {
  bool live = counting() && set.id() == active_set_;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(pmds & regBit(d.index))) continue;
    PmdState& p = set.pmd(slot);
    p.value = p.last_reset = resetValue(p, long_reset);
    if (live && (set.usedPmds() & regBit(d.index))) {
      std::uint64_t bits = p.value & d.widthMask();
      pmu_->reloadPmd(d.index, bits);
      p.sampled_hw = bits;
    }
  }
}

// Reads the hardware bits of the active set's counters in `pmds` into hw_.
void Session::readHw(RegMask pmds) {
  hw_.resize(desc_.pmds.size());
  pmu_->readPmds(pmds, hw_);
}

// No interrupts: read every counter of the active set and count the wraps
// since the last look. The sampling period guarantees at most one.
void Session::sampleActive() {
  last_sample_ = counted_to_;
  EventSet& s = activeSet();
  RegMask wrapped = 0;
  readHw(s.usedPmds());
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(s.usedPmds() & regBit(d.index))) continue;
    PmdState& p = s.pmd(slot);
    std::uint64_t hw = hw_[slot];
    if (hw < p.sampled_hw) wrapped |= regBit(d.index);
    p.sampled_hw = hw;
  }
  if (wrapped) {
    pmu::HwOverflow o;
    o.pmds = wrapped;
    o.pid = target_pid_;
    o.tid = target_.kind == pmu::TargetKind::Thread ? target_.id : 0;
    o.cpu = target_.kind == pmu::TargetKind::Cpu ? target_.id : 0;
    handleHwOverflow(o);
  }
}

// Interrupt skid (the sim's --sim-skid): an overflow whose counter has wrapped
// but whose interrupt is yet to come is taken now, before the active set
// leaves the PMU (stop, time switch, start N, register write, unload), so that
// its carry, resets, message and switch go to the set that counted it. Without
// this the late interrupt would land in whatever set is loaded then, or in
// none.
void Session::takeOverflowInSkid() {
  if (!counting() || !interrupts_ || !pmu_->overflowsInSkid()) return;
  pmu_->raiseOverflowInSkid();
  drainOverflows();
}

void Session::foldActive() {
  EventSet& s = activeSet();
  readHw(s.usedPmds());
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(s.usedPmds() & regBit(d.index))) continue;
    PmdState& p = s.pmd(slot);
    std::uint64_t hw = hw_[slot];
    std::uint64_t mask = d.widthMask();
    p.value = (p.value & ~mask) | (hw & mask);
    p.sampled_hw = hw;
  }
}

// Puts the active set on the hardware (counting disabled): the backend
// writes what differs, or switches its group.
Status Session::programActive() {
  EventSet& s = activeSet();
  pmc_image_.resize(desc_.pmcs.size());
  hw_.resize(desc_.pmds.size());
  for (std::size_t slot = 0; slot < desc_.pmcs.size(); ++slot) pmc_image_[slot] = s.hardwarePmc(slot, interrupts_);
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    PmdState& p = s.pmd(slot);
    hw_[slot] = p.value & d.widthMask();
    if (s.usedPmds() & regBit(d.index)) p.sampled_hw = hw_[slot];
  }
  return pmu_->loadSet(pmu::SetImage{s.id(), pmc_image_, s.usedPmds(), hw_});
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
    pmu_->disable();
    foldActive();
  }
  active_set_ = next.id();
  ++next.runs;
  next.reloadSwitchCounters();
  set_elapsed_ = 0;
  if (reprogram) {
    if (Status st = programActive(); !st) return haltCounting(st.error());
    pmu_->enable();
  }
}

}  // namespace pfmfs::session
