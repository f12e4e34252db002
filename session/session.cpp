// The session state machine: mode and flags, load and unload, start and
// stop. Sets and what a read shows are in session_sets_reads.cpp, register
// reads and writes in session_registers.cpp; time, overflows and set
// switching in session_time.cpp. See docs/design.md for the rules.
#include "session/session.h"

#include <algorithm>
#include <cassert>

#include <fmt/format.h>

#include "pmu/host_info.h"
#include "pmu/task_creds.h"
#include "session/engine.h"
#include "session/monitor_rule.h"
#include "session/saturating.h"
#include "session/session_op.h"

namespace pfmfs::session {

const char* toString(Mode m) {
  switch (m) {
    case Mode::Thread:
      return "thread";
    case Mode::System:
      return "system";
    case Mode::Cgroup:
      return "cgroup";
  }
  return "?";
}

const char* toString(State s) {
  switch (s) {
    case State::Unloaded:
      return "unloaded";
    case State::Loaded:
      return "loaded";
    case State::Active:
      return "active";
    case State::Masked:
      return "masked";
  }
  return "?";
}

Session::Session(Engine& engine, std::string name, uid_t uid, gid_t gid)
    : engine_(engine),
      desc_(engine.backend().description()),
      name_(std::move(name)),
      uid_(uid),
      gid_(gid),
      interrupts_(engine.backend().interruptsOnOverflow()),
      aggregate_(engine.backend().inheritance() == pmu::Inheritance::Aggregate),
      messages_(engine.options().max_messages),
      overflow_budget_(engine.options().overflow_burst, engine.options().overflow_refill_ns) {
  sets_.emplace(std::piecewise_construct, std::forward_as_tuple(0), std::forward_as_tuple(0, desc_));
  threads_.push_back(std::make_unique<DrivenThread>());  // the target, serial 0
}

Session::~Session() {
  // The engine unloads sessions before it lets go of them; this only keeps
  // hardware from counting for nobody should that ever be skipped.
  for (auto& t : threads_)
    if (t->pmu) t->pmu->disable();
}

Status Session::fail(Error e) {
  error_ = e.reason;
  return Status(std::move(e));
}

// The end of an operation (Op::publish).
Status Session::publish(Status result) {
  Status children = publishChildImage();
  publishFastPage();
  if (!result || children) return result;
  return fail(err(-children.code(), "children created from now on start with the control before this change: {}",
                  children.error().reason));
}

Status Session::refuse(Error e) {
  MutexLock lock(mutex_);
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
  MutexLock lock(mutex_);
  return mode_;
}

Status Session::setMode(Mode m) {
  Op op(*this);
  if (ever_loaded_) return fail(err(EBUSY, "mode can only be set before the first load"));
  if (m == Mode::System && flags_.notify_block)
    return fail(err(EINVAL, "system-wide sessions cannot use notify_block"));
  if (m == Mode::System && flags_.inherit)
    return fail(err(EINVAL, "system-wide sessions cannot use inherit: it follows a thread's children"));
  if (m == Mode::Cgroup && flags_.notify_block)
    return fail(err(EINVAL, "cgroup sessions cannot use notify_block: a control group has no one thread to hold"));
  if (m == Mode::Cgroup && flags_.inherit)
    return fail(err(EINVAL, "cgroup sessions cannot use inherit: a control group counts its threads already"));
  mode_ = m;
  return op.publish();
}

Flags Session::flags() const {
  MutexLock lock(mutex_);
  return flags_;
}

Status Session::setFlags(const Flags& f) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "flags can only change while unloaded"));
  if (f.notify_block && mode_ == Mode::System)
    return fail(err(EINVAL, "notify_block holds a thread: not possible in system mode"));
  if (f.notify_block && !engine_.backend().holdsThreads())
    return fail(err(EINVAL, "notify_block holds a thread: the {} backend cannot stop one", engine_.backend().name()));
  if (f.inherit && mode_ == Mode::System)
    return fail(err(EINVAL, "inherit follows a thread's children: not possible in system mode"));
  if (f.notify_block && mode_ == Mode::Cgroup)
    return fail(err(EINVAL, "notify_block holds a thread: not possible in cgroup mode"));
  if (f.inherit && mode_ == Mode::Cgroup)
    return fail(err(EINVAL, "inherit follows a thread's children: a control group counts its threads already"));
  if (f.inherit && engine_.backend().inheritance() == pmu::Inheritance::None)
    return fail(err(EOPNOTSUPP, "inherit: the {} backend cannot follow a thread's children", engine_.backend().name()));
  flags_ = f;
  return op.publish();
}

// ---- load, unload ------------------------------------------------------------

Result<std::uint16_t> Session::loadableLocked(std::optional<unsigned> set) {
  if (retired_) return err(ENOENT, "session {} was destroyed", name_);
  if (loaded()) return err(EBUSY, "already loaded on {}: unload first", describeTarget());
  // The first start runs the lowest set unless load named one; later starts
  // resume the last active set.
  std::uint16_t first = set_chosen_ ? active_set_ : sets_.begin()->first;
  if (set) {
    if (!findSet(*set)) return err(EINVAL, "no set {}", *set);
    first = static_cast<std::uint16_t>(*set);
  }
  return first;
}

std::string Session::describeTarget() const {
  switch (target_.kind) {
    case pmu::TargetKind::Thread:
      return fmt::format("thread {}", target_.id);
    case pmu::TargetKind::Cpu:
      return fmt::format("cpu {}", target_.id);
    case pmu::TargetKind::Cgroup:
      return fmt::format("control group {}", target_.cgroup ? target_.cgroup->path() : "?");
  }
  return "?";
}

Status Session::load(const Caller& caller, int target, std::optional<unsigned> set) {
  Op op(*this);
  auto first = loadableLocked(set);
  if (!first) return fail(first.error());
  pmu::Target t;
  pid_t pid = 0;  // the process of a thread target
  if (mode_ == Mode::Cgroup) {
    return fail(err(EINVAL, "a cgroup session loads on a control group's path (load PATH), not on {}", target));
  } else if (mode_ == Mode::Thread) {
    auto creds = pmu::readTaskCreds(target);
    if (!creds) return fail(creds.error());
    if (Status may = mayMonitorThread(caller, target, *creds); !may) return fail(may.error());
    t = pmu::Target{pmu::TargetKind::Thread, target, flags_.inherit};
    pid = creds->tgid;
  } else {
    if (!caller.may_system_wide)
      return fail(err(EPERM, "system-wide sessions need CAP_PERFMON or the daemon's system group"));
    if (!pmu::cpuOnline(target)) return fail(err(EINVAL, "cpu {} is not online", target));
    t = pmu::Target{pmu::TargetKind::Cpu, target};
  }
  if (Status s = attachLocked(caller, std::move(t), pid, *first, set.has_value()); !s) return s;
  return op.publish();
}

Status Session::attachLocked(const Caller& caller, pmu::Target t, pid_t pid, std::uint16_t first, bool set_given) {
  const int target = t.id;
  t.sampling = sample_buffer_ != nullptr;
  // The kernel's sampling rings are the owner's, like the buffer: charged
  // before they exist, given back on every way out but a load.
  const std::uint64_t kernel_bytes = engine_.backend().samplingKernelBytes(t);
  if (Status s = engine_.chargeSampleBytes(uid_, 0, kernel_bytes); !s)
    return fail(err(ENOMEM, "the kernel's ring pages for the samples ({} bytes) do not fit: {}", kernel_bytes,
                    s.error().reason));
  auto refuse = [&](Error e) REQUIRES(mutex_) {
    (void)engine_.chargeSampleBytes(uid_, kernel_bytes, 0);
    return fail(std::move(e));
  };
  if (Status s = engine_.claimTarget(mode_, target, shared_from_this()); !s) return refuse(s.error());
  // The backend holds us weakly: its threads may call after we are gone.
  std::shared_ptr<pmu::TargetListener> listener(shared_from_this(), static_cast<pmu::TargetListener*>(this));
  auto attached = engine_.backend().attach(t, listener);
  if (!attached) {
    engine_.releaseTarget(mode_, target, this);
    return refuse(attached.error());
  }
  if (mode_ == Mode::Thread) {
    // Again, now that the backend watches the thread: a set-id exec from now
    // on ends its counting (as the kernel ends perf's: pfmfs(5), SECURITY);
    // one that came between the first look and the attach shows here.
    auto again = pmu::readTaskCreds(target);
    Status may = again ? mayMonitorThread(caller, target, *again) : Status(again.error());
    if (!may) {
      attached->reset();
      engine_.releaseTarget(mode_, target, this);
      return refuse(may.error());
    }
  }
  kernel_smpl_bytes_ = kernel_bytes;
  DrivenThread& driven = this->target();
  driven.pmu = std::move(*attached);
  driven.pid = pid;
  driven.tid = mode_ == Mode::Thread ? target : 0;
  driven.last_time = driven.pmu->timeNs();
  target_ = std::move(t);
  state_ = State::Loaded;
  late_restart_ok_ = false;
  ever_loaded_ = true;
  exited_ = false;
  inheritance_.loaded();
  tree_now_ = 0;
  overflow_budget_.fill();
  if (sample_buffer_) sample_buffer_->reset();
  active_set_ = first;
  set_chosen_ = set_chosen_ || set_given;
  return {};
}

Status Session::unload() {
  Op op(*this);
  if (loaded()) unloadLocked(false);
  return op.publish();
}

Status Session::retire() {
  Op op(*this);
  retired_ = true;
  if (loaded()) unloadLocked(false);
  releaseState();
  return op.publish();
}

// After retire() nothing reads the state again, but the session lives on as
// long as the kernel holds one of its files: after an autoclose it keeps
// those a program opened until memory pressure. 2,000 libpfm-compat
// contexts kept 29 MB of pfmfsd that way (pfmfs(5), SECURITY).
void Session::releaseState() {
  sets_.clear();
  target().forgetSets();
  sets_.emplace(std::piecewise_construct, std::forward_as_tuple(0), std::forward_as_tuple(0, desc_));
  active_set_ = 0;
  set_chosen_ = false;
  pending_set_ = 0;
  messages_ = MessageQueue(engine_.options().max_messages);
  std::string().swap(error_);
  std::vector<std::uint64_t>().swap(hw_);
  std::vector<std::uint64_t>().swap(pmc_image_);
  std::vector<std::uint64_t>().swap(values_);
  inheritance_.release();
  std::vector<pmu::ChildEvent>().swap(child_events_);
  releaseSampleBuffer();
  random_.reset();
}

void Session::unloadLocked(bool exited) {
  catchUpNow();
  if (counting() && !interrupts_) sampleActive();
  takeOverflowInSkid();
  disableAll();
  if (counting()) foldAll();
  releaseHolds();
  pending_resets_ = 0;
  stopped_while_masked_ = false;
  late_restart_ok_ = state_ == State::Masked;
  // Children still followed are followed no more: their counts are not
  // final, so they are not merged.
  dropFollowers();
  engine_.noTicks(this);
  engine_.releaseTarget(mode_, target_.id, this);
  target().pmu.reset();
  target_.cgroup.reset();  // the group's directory stays open only while loaded
  (void)engine_.chargeSampleBytes(uid_, kernel_smpl_bytes_, 0);
  kernel_smpl_bytes_ = 0;
  (void)engine_.chargeCgroupEvents(uid_, cgroup_events_, 0);
  cgroup_events_ = 0;
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
  if (!loaded()) return;
  // Children it created just before it exited are followed still.
  drainChildEvents();
  if (loaded()) targetExitedLocked();
  op.publishUnreported();
}

std::optional<pmu::Target> Session::loadedTarget() const {
  MutexLock lock(mutex_);
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
    return op.publish();
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
  return op.publish();
}

Status Session::startCounting() {
  // Bring the hardware to the present first: nothing counted while stopped.
  std::uint64_t now = 0;
  if (treeClock()) {
    catchUpTree();  // not counting: the time each thread ran while stopped is not the session's
    now = tree_now_;
  } else {
    now = advanceAll(target().pmu->timeNs());
  }
  counted_to_ = now;
  last_sample_ = now;
  Status st = prepareSets();
  if (st) st = programAll();
  if (!st) {
    state_ = State::Loaded;
    return st;
  }
  state_ = State::Active;
  enableAll();
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

// Brings the counts up to now and stops. An overflow due by now is taken
// first, as the hardware would have taken it: when it notifies, the session
// ends up stopped and masked, like a stop of a session already masked.
void Session::stopCounting() {
  catchUp();
  if (!loaded()) return;  // the target turned out to be gone: unloaded already
  if (counting() && !interrupts_) sampleActive();
  takeOverflowInSkid();
  if (counting()) {
    disableAll();
    foldAll();
  }
  releaseHolds();
  engine_.noTicks(this);
  if (state_ == State::Masked) {
    stopped_while_masked_ = true;
    return;
  }
  pending_resets_ = 0;
  state_ = State::Loaded;
}

// On a masked session stop keeps the session masked, as perfmon2's pfm_stop
// did: the notification is still to be acknowledged, and programs (PAPI's
// overflow handler) write restart after a stop. That restart then applies
// the resets and leaves the session stopped.
Status Session::stop() {
  Op op(*this);
  if (!loaded()) return fail(err(EINVAL, "not loaded"));
  if (state_ != State::Loaded) stopCounting();
  return op.publish();
}

Status Session::restart() {
  Op op(*this);
  if (state_ != State::Masked) {
    // The notification of a session unloaded while masked may reach the
    // program after the unload (libpfm-compat's signal comes from a thread
    // of its own, a moment after the overflow): its restart is accepted
    // once, and does nothing but empty a full sampling buffer: the program
    // read it after the notification, and reads the buffer again after the
    // end message for the last samples (there are none: it was full).
    if (state_ == State::Unloaded && late_restart_ok_) {
      late_restart_ok_ = false;
      if (sample_buffer_) sample_buffer_->clear();
      return op.publish();
    }
    return fail(err(EBUSY, "nothing to restart: no overflow notification is pending"));
  }
  if (EventSet* s = findSet(pending_set_)) {
    // The resets are the overflowing thread's; a child that exited since
    // has nothing left to reset.
    for (auto& t : threads_) {
      if (t->serial != pending_thread_ || (isTarget(*t) && inheritance_.hasTargetExited())) continue;
      resetPmds(*t, *s, pending_resets_, true);
    }
  }
  pending_resets_ = 0;
  if (sample_buffer_) sample_buffer_->clear();
  releaseHolds();
  if (stopped_while_masked_) {
    stopped_while_masked_ = false;
    state_ = State::Loaded;
    return op.publish();
  }
  // The set's activation goes on: no new run. Counting that cannot start
  // again leaves the session loaded and stopped, its resets applied.
  Status st = startCounting();
  return op.publish(st ? st : fail(st.error()));
}

// ---- engine hooks ---------------------------------------------------------------------

void Session::advanceBy(std::uint64_t ns) {
  Op op(*this);
  if (!loaded()) return;
  // Children created before this advance move with it: their news first.
  drainChildEvents();
  if (loaded() && !anyHeld())  // a held thread's time stands still
    catchUpTo(saturatingAdd(target().pmu->timeNs(), ns));
  op.publishUnreported();
}

void Session::tick() {
  Op op(*this);
  if (counting()) catchUp();
  op.publishUnreported();
}

void Session::attention() {
  Op op(*this);
  catchUp();
  op.publishUnreported();
}

}  // namespace pfmfs::session
