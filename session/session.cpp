// The session state machine, time accounting, 64-bit emulation, set switching
// and overflow processing. See docs/design.md for the rules this implements.
#include "session/session.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "pmu/host_info.h"
#include "session/engine.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

namespace {

std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b) {
  return a > pmu::kNever - b ? pmu::kNever : a + b;
}

}  // namespace

const char* toString(Mode m) { return m == Mode::Thread ? "thread" : "system"; }

const char* toString(State s) {
  switch (s) {
    case State::Unloaded: return "unloaded";
    case State::Loaded: return "loaded";
    case State::Active: return "active";
    case State::Masked: return "masked";
  }
  return "?";
}

// Holds the session lock for one public operation. When the operation queued
// messages, the observer hears of it after the lock is released, so that it
// may call back into the session.
class Session::Op {
 public:
  explicit Op(const Session& s) : s_(const_cast<Session&>(s)), lock_(s_.mutex_) {}
  ~Op() {
    bool notify = s_.notify_pending_;
    s_.notify_pending_ = false;
    lock_.unlock();
    if (notify) s_.engine_.notifyQueued(s_);
  }
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

 private:
  Session& s_;
  std::unique_lock<std::mutex> lock_;
};

Session::Session(Engine& engine, std::string name, uid_t uid, gid_t gid)
    : engine_(engine),
      desc_(engine.backend().description()),
      name_(std::move(name)),
      uid_(uid),
      gid_(gid),
      interrupts_(engine.backend().interruptsOnOverflow()),
      messages_(engine.options().max_messages),
      random_(0x9e3779b97f4a7c15ull) {  // fixed seed: random resets repeat run after run
  sets_.emplace(std::piecewise_construct, std::forward_as_tuple(0), std::forward_as_tuple(0, desc_));
}

Session::~Session() {
  // The engine unloads sessions before it lets go of them; this only keeps
  // hardware from counting for nobody should that ever be skipped.
  if (pmu_) pmu_->disable();
}

Status Session::fail(Error e) {
  error_ = e.reason;
  return Status(std::move(e));
}

Status Session::refuse(Error e) {
  Op op(*this);
  return fail(std::move(e));
}

EventSet* Session::findSet(unsigned id) {
  if (id > 0xffff) return nullptr;
  auto it = sets_.find(static_cast<std::uint16_t>(id));
  return it == sets_.end() ? nullptr : &it->second;
}

EventSet& Session::activeSet() {
  auto it = sets_.find(active_set_);
  assert(it != sets_.end());
  return it->second;
}

EventSet& Session::nextSet() {
  auto it = sets_.upper_bound(active_set_);
  return it == sets_.end() ? sets_.begin()->second : it->second;
}

std::uint64_t Session::effectiveTimeout(const SwitchSpec& s) const {
  if (!s.on_time) return 0;
  if (engine_.backend().clock() == pmu::ClockKind::Manual) return s.timeout_ns;
  std::uint64_t tick = engine_.options().tick_ns;
  std::uint64_t ticks = s.timeout_ns / tick + (s.timeout_ns % tick != 0);
  return ticks > pmu::kNever / tick ? pmu::kNever : ticks * tick;
}

// ---- mode, flags -----------------------------------------------------------

Mode Session::mode() const {
  Op op(*this);
  return mode_;
}

Status Session::setMode(Mode m) {
  Op op(*this);
  if (ever_loaded_) return fail(err(EBUSY, "mode can only be set before the first load"));
  if (m == Mode::System && flags_.notify_block)
    return fail(err(EINVAL, "system-wide sessions cannot use notify_block"));
  mode_ = m;
  return {};
}

Flags Session::flags() const {
  Op op(*this);
  return flags_;
}

Status Session::setFlags(const Flags& f) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "flags can only change while unloaded"));
  if (f.notify_block && mode_ == Mode::System)
    return fail(err(EINVAL, "notify_block holds a thread: not possible in system mode"));
  if (f.notify_block && !engine_.backend().holdsThreads())
    return fail(err(EINVAL, "notify_block holds a thread: the {} backend cannot stop one", engine_.backend().name()));
  flags_ = f;
  return {};
}

// ---- load, unload ------------------------------------------------------------

Status Session::load(const Caller& caller, int target, std::optional<unsigned> set) {
  Op op(*this);
  if (retired_) return fail(err(ENOENT, "session {} was destroyed", name_));
  if (loaded())
    return fail(err(EBUSY, "already loaded on {} {}: unload first",
                    target_.kind == pmu::TargetKind::Thread ? "thread" : "cpu", target_.id));
  // The first start runs the lowest set unless load named one; later starts
  // resume the last active set.
  std::uint16_t first = set_chosen_ ? active_set_ : sets_.begin()->first;
  if (set) {
    if (!findSet(*set)) return fail(err(EINVAL, "no set {}", *set));
    first = static_cast<std::uint16_t>(*set);
  }
  pmu::Target t;
  if (mode_ == Mode::Thread) {
    auto ids = pmu::threadIds(target);
    if (!ids) return fail(err(ESRCH, "no thread {}", target));
    if ((ids->uid != caller.uid || ids->euid != caller.uid) && !caller.may_monitor_any_thread)
      return fail(err(EPERM, "thread {} belongs to uid {}: monitoring it needs root or CAP_SYS_PTRACE", target, ids->uid));
    t = pmu::Target{pmu::TargetKind::Thread, target};
    target_pid_ = ids->tgid;
  } else {
    if (!caller.may_system_wide)
      return fail(err(EPERM, "system-wide sessions need root or the daemon's system group"));
    if (!pmu::cpuOnline(target)) return fail(err(EINVAL, "cpu {} is not online", target));
    t = pmu::Target{pmu::TargetKind::Cpu, target};
    target_pid_ = 0;
  }
  if (Status s = engine_.claimTarget(mode_, target, shared_from_this()); !s) return fail(s.error());
  // The backend holds us weakly: its threads may call after we are gone.
  std::shared_ptr<pmu::TargetListener> listener(shared_from_this(), static_cast<pmu::TargetListener*>(this));
  auto attached = engine_.backend().attach(t, listener);
  if (!attached) {
    engine_.releaseTarget(mode_, target, this);
    return fail(attached.error());
  }
  pmu_ = std::move(*attached);
  target_ = t;
  state_ = State::Loaded;
  ever_loaded_ = true;
  exited_ = false;
  ovfl_tokens_ = engine_.options().overflow_burst;
  ovfl_tokens_at_ = 0;
  active_set_ = first;
  set_chosen_ = set_chosen_ || set.has_value();
  return {};
}

Status Session::unload() {
  Op op(*this);
  if (loaded()) unloadLocked(false);
  return {};
}

Status Session::retire() {
  Op op(*this);
  retired_ = true;
  if (loaded()) unloadLocked(false);
  return {};
}

void Session::unloadLocked(bool exited) {
  catchUpTo(pmu_->timeNs());
  if (counting() && !interrupts_) sampleActive();
  takeOverflowInSkid();
  pmu_->disable();
  if (counting()) foldActive();
  if (held_) pmu_->hold(false);
  held_ = false;
  pending_resets_ = 0;
  engine_.noTicks(this);
  engine_.releaseTarget(mode_, target_.id, this);
  pmu_.reset();
  state_ = State::Unloaded;
  exited_ = exited;
  if (exited) {
    Message m;
    m.type = MessageType::End;
    queueMessage(m);
  }
}

void Session::targetGone() {
  Op op(*this);
  if (loaded()) unloadLocked(true);
}

std::optional<pmu::Target> Session::loadedTarget() const {
  Op op(*this);
  if (!loaded()) return std::nullopt;
  return target_;
}

// ---- start, stop, restart ------------------------------------------------------

Status Session::start(std::optional<unsigned> set) {
  Op op(*this);
  if (!loaded()) return fail(err(EINVAL, "not loaded: load a thread or cpu first"));
  EventSet* s = nullptr;
  if (set && !(s = findSet(*set))) return fail(err(EINVAL, "no set {}", *set));
  if (state_ == State::Masked) return fail(err(EBUSY, "masked by an overflow notification: write restart"));
  if (state_ == State::Active) {
    catchUp();
    if (s && counting() && s->id() != active_set_) takeOverflowInSkid();
    if (s && counting() && s->id() != active_set_) switchTo(*s);
    return {};
  }
  if (s) active_set_ = s->id();
  set_chosen_ = true;
  EventSet& a = activeSet();
  ++a.runs;
  a.reloadSwitchCounters();
  set_elapsed_ = 0;
  if (Status st = startCounting(); !st) {
    --a.runs;
    return fail(st.error());
  }
  return {};
}

Status Session::startCounting() {
  // Bring the hardware to the present first: nothing counted while stopped.
  std::uint64_t now = pmu_->advanceTo(pmu_->timeNs());
  counted_to_ = now;
  last_sample_ = now;
  if (Status st = programActive(); !st) {
    state_ = State::Loaded;
    return st;
  }
  state_ = State::Active;
  pmu_->enable();
  if (engine_.backend().clock() == pmu::ClockKind::Real) engine_.wantTicks(shared_from_this());
  return {};
}

// The backend refused a set while counting (perf out of descriptors, say):
// counting stops, the counts so far stay, and error says why.
void Session::haltCounting(const Error& e) {
  state_ = State::Loaded;
  engine_.noTicks(this);
  error_ = fmt::format("{}: counting stopped", e.reason);
}

void Session::stopCounting() {
  catchUp();
  if (!loaded()) return;  // the target turned out to be gone: unloaded already
  if (counting() && !interrupts_) sampleActive();
  takeOverflowInSkid();
  if (counting()) {
    pmu_->disable();
    foldActive();
  }
  if (held_) pmu_->hold(false);
  held_ = false;
  pending_resets_ = 0;
  state_ = State::Loaded;
  engine_.noTicks(this);
}

Status Session::stop() {
  Op op(*this);
  if (!loaded()) return fail(err(EINVAL, "not loaded"));
  if (state_ != State::Loaded) stopCounting();
  return {};
}

Status Session::restart() {
  Op op(*this);
  if (state_ != State::Masked) return fail(err(EBUSY, "nothing to restart: no overflow notification is pending"));
  if (EventSet* s = findSet(pending_set_)) resetPmds(*s, pending_resets_, true);
  pending_resets_ = 0;
  if (held_) pmu_->hold(false);
  held_ = false;
  // The set's activation goes on: no new run.
  if (Status st = startCounting(); !st) return fail(st.error());
  return {};
}

// ---- sets --------------------------------------------------------------------------

Status Session::createSet(unsigned id) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "sets can only be created while unloaded"));
  if (id > 0xffff) return fail(err(EINVAL, "set {}: ids are 0..65535", id));
  if (findSet(id)) return fail(err(EEXIST, "set {} exists", id));
  if (sets_.size() >= engine_.options().max_sets)
    return fail(err(ENOSPC, "a session has at most {} sets", engine_.options().max_sets));
  auto sid = static_cast<std::uint16_t>(id);
  sets_.emplace(std::piecewise_construct, std::forward_as_tuple(sid), std::forward_as_tuple(sid, desc_));
  return {};
}

Status Session::deleteSet(unsigned id) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "sets can only be deleted while unloaded"));
  if (!findSet(id)) return fail(err(EINVAL, "no set {}", id));
  if (sets_.size() == 1) return fail(err(EBUSY, "set {} is the last set: a session keeps at least one", id));
  sets_.erase(static_cast<std::uint16_t>(id));
  if (active_set_ == id) active_set_ = sets_.begin()->first;
  return {};
}

std::vector<std::uint16_t> Session::setIds() const {
  Op op(*this);
  std::vector<std::uint16_t> ids;
  for (const auto& [id, s] : sets_) ids.push_back(id);
  return ids;
}

Status Session::setSwitch(unsigned set, const SwitchSpec& spec) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set));
  if (spec.on_time && spec.timeout_ns == 0) return fail(err(EINVAL, "switch time 0: the timeout must be at least 1 ns"));
  if (loaded()) return fail(err(EBUSY, "switching can only change while unloaded"));
  SwitchSpec clean = spec;
  if (!clean.on_time) clean.timeout_ns = 0;
  s->switch_spec = clean;
  return {};
}

Result<SetInfo> Session::setInfo(unsigned set) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  s = findSet(set);
  SetInfo i;
  i.id = s->id();
  i.switch_spec = s->switch_spec;
  i.runs = s->runs;
  i.duration_ns = s->duration_ns;
  i.timeout_ns = effectiveTimeout(s->switch_spec);
  if (loaded() && s->id() == active_set_ && state_ != State::Loaded)
    i.timeout_ns = i.timeout_ns > set_elapsed_ ? i.timeout_ns - set_elapsed_ : 0;
  i.ovfl_pmds = s->ovfl_pmds;
  i.avail_pmcs = desc_.pmcMask();
  i.avail_pmds = desc_.pmdMask();
  return i;
}

// ---- registers -----------------------------------------------------------------

Status Session::writePmc(const Caller& caller, unsigned set, const PmcWrite& w) {
  return writeRegs(caller, set, {RegWrite{w}});
}

Status Session::writePmd(unsigned set, const PmdWrite& w) {
  return writeRegs(Caller{}, set, {RegWrite{w}});
}

Status Session::writeRegs(const Caller& caller, unsigned set, const std::vector<RegWrite>& writes) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set));
  // All-or-nothing: every write is checked before any is applied.
  for (const auto& w : writes) {
    Status st = std::holds_alternative<PmcWrite>(w) ? checkPmcWrite(desc_, caller, std::get<PmcWrite>(w))
                                                    : checkPmdWrite(desc_, std::get<PmdWrite>(w));
    if (!st) return fail(st.error());
  }
  bool live = false;
  if (counting()) {
    catchUp();
    if (counting() && !interrupts_) sampleActive();
    s = findSet(set);
    if (counting() && s->id() == active_set_) takeOverflowInSkid();
    live = counting() && s->id() == active_set_;
    if (live) {
      pmu_->disable();
      foldActive();
    }
  }
  for (const auto& w : writes) std::visit([s](const auto& x) { s->apply(x); }, w);
  if (live) {
    if (Status st = programActive(); !st) {
      haltCounting(st.error());
      return Status(err(-st.code(), "{}", error_));
    }
    pmu_->enable();
  }
  return {};
}

Result<PmcState> Session::readPmc(unsigned set, unsigned index) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set)).error();
  int slot = desc_.pmcSlot(index);
  if (slot < 0) return fail(err(EINVAL, "no pmc{} on this PMU", index)).error();
  return s->pmc(static_cast<std::size_t>(slot));
}

// The 64-bit values of the PMDs in `pmds` of `set`, by slot into values_:
// the hardware bits combined with the software upper bits where the set is
// counting (one backend read for all of them), the image otherwise.
void Session::liveValues(const EventSet& set, RegMask pmds) {
  values_.resize(desc_.pmds.size());
  RegMask live = counting() && set.id() == active_set_ ? pmds & set.usedPmds() : 0;
  if (live) readHw(live);
  // A counter whose interrupt is in skid has wrapped: the carry its interrupt
  // will add is already counted (reads never run backwards).
  RegMask skid = live && interrupts_ ? pmu_->overflowsInSkid() & live : 0;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(pmds & regBit(d.index))) continue;
    std::uint64_t v = set.pmd(slot).value;
    if (live & regBit(d.index)) {
      std::uint64_t upper = v & ~d.widthMask();
      if ((skid & regBit(d.index)) && !set.noEmul64(d.index) && d.width < 64) upper += d.widthMask() + 1;
      v = upper | (hw_[slot] & d.widthMask());
    }
    values_[slot] = v;
  }
}

Result<PmdValue> Session::readPmd(unsigned set, unsigned index) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  int slot = desc_.pmdSlot(index);
  if (slot < 0) return fail(err(EINVAL, "no pmd{} on this PMU", index)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  liveValues(s, regBit(index));
  PmdValue v;
  v.state = s.pmd(static_cast<std::size_t>(slot));
  v.value = values_[static_cast<std::size_t>(slot)];
  v.state.value = v.value;
  return v;
}

Result<std::vector<RegWrite>> Session::regs(unsigned set) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  std::vector<RegWrite> out = s.nonDefaultRegisters();
  RegMask pmds = 0;
  for (const auto& w : out)
    if (const auto* p = std::get_if<PmdWrite>(&w)) pmds |= regBit(p->index);
  liveValues(s, pmds);
  for (auto& w : out)
    if (auto* p = std::get_if<PmdWrite>(&w)) p->value = values_[static_cast<std::size_t>(desc_.pmdSlot(p->index))];
  return out;
}

Result<std::vector<PmdLine>> Session::pmdStates(unsigned set) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  RegMask pmds = s.usedPmds();
  for (std::size_t slot = 0; slot < s.pmdCount(); ++slot)
    if (s.pmd(slot).written) pmds |= regBit(desc_.pmds[slot].index);
  liveValues(s, pmds);
  std::vector<PmdLine> out;
  for (std::size_t slot = 0; slot < s.pmdCount(); ++slot) {
    unsigned index = desc_.pmds[slot].index;
    if (!(pmds & regBit(index))) continue;
    PmdLine l{index, s.pmd(slot)};
    l.state.value = values_[slot];
    out.push_back(l);
  }
  return out;
}

// ---- reading ------------------------------------------------------------------------

StateInfo Session::state() {
  Op op(*this);
  catchUp();
  StateInfo i;
  i.state = state_;
  i.mode = mode_;
  if (loaded()) i.target = target_.id;
  i.set = set_chosen_ || loaded() ? active_set_ : sets_.begin()->first;
  i.queued = messages_.size();
  i.lost = messages_.lost();
  i.exited = exited_;
  if (loaded()) i.unscheduled_ns = pmu_->unscheduledNs();
  return i;
}

std::string Session::error() const {
  Op op(*this);
  return error_;
}

std::vector<CountLine> Session::counts() {
  Op op(*this);
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  std::vector<CountLine> out;
  for (const auto& [id, s] : sets_) {
    liveValues(s, s.usedPmds());
    for (std::size_t slot = 0; slot < s.pmdCount(); ++slot) {
      unsigned index = desc_.pmds[slot].index;
      if (!(s.usedPmds() & regBit(index))) continue;
      CountLine c;
      c.set = id;
      c.pmd = index;
      c.value = values_[slot];
      c.enabled_ns = enabled_ns_;
      c.running_ns = s.duration_ns;
      if (c.running_ns != 0) {
        unsigned __int128 scaled = static_cast<unsigned __int128>(c.value) * c.enabled_ns / c.running_ns;
        c.scaled = scaled > pmu::kNever ? pmu::kNever : static_cast<std::uint64_t>(scaled);
      }
      out.push_back(c);
    }
  }
  return out;
}

std::vector<Message> Session::takeMessages(std::size_t max) {
  Op op(*this);
  return messages_.take(max);
}

std::vector<Message> Session::takeMessagesWhile(const std::function<bool(const Message&)>& accept) {
  Op op(*this);
  return messages_.takeWhile(accept);
}

std::size_t Session::queuedMessages() const {
  Op op(*this);
  return messages_.size();
}

bool Session::masked() const {
  Op op(*this);
  return state_ == State::Masked;
}

void Session::queueMessage(const Message& m) {
  if (messages_.push(m)) notify_pending_ = true;
}

// ---- engine hooks ---------------------------------------------------------------------

void Session::advanceBy(std::uint64_t ns) {
  Op op(*this);
  if (!loaded() || held_) return;  // a held thread's time stands still
  catchUpTo(saturatingAdd(pmu_->timeNs(), ns));
}

void Session::tick() {
  Op op(*this);
  if (counting()) catchUp();
}

void Session::attention() {
  Op op(*this);
  catchUp();
}

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
