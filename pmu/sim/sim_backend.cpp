// The sim backend and its per-target PMU.
#include "pmu/sim/sim_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "pmu/host_info.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/perf_event/perf_poller.h"
#include "pmu/perf_event/task_tracker.h"
#include "pmu/sim/emulated_pmu.h"

namespace pfmfs::pmu::sim {

namespace {

std::uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The sim's view of one target: the emulated PMU, the driver that programs it,
// and the target's clock. Under the real clock a thread's time is its CPU time
// (sum_exec_runtime from /proc/TID/schedstat) and a CPU's time is wall time;
// under the manual clock it is whatever the engine advanced it to. A control
// group's is its CPU time (cpu.stat's usage_usec, descendants included) under
// the real clock: the sim counts what the group's threads would.
//
// A target with `inherit` holds the TaskTracker of its children and reports
// them (takeChildEvents); each adopted child is a SimTarget of its own whose
// real-clock time is its CPU time from its creation (`from_creation`: base
// 0), not from its adoption, which comes a little later.
class SimTarget final : public TargetPmu {
 public:
  SimTarget(const SimBackend& backend, std::atomic<std::uint64_t>* writes, const Target& target, pid_t tgid,
            int schedstat_fd, bool from_creation)
      : backend_(backend),
        writes_(writes),
        pmu_(backend.description(), backend.events(), writes, backend.skid()),
        driver_(backend.description(), pmu_),
        target_(target),
        tgid_(tgid),
        schedstat_fd_(schedstat_fd) {
    if (backend_.clock() == ClockKind::Real && !from_creation) base_ = rawTime();
  }

  ~SimTarget() override {
    // The poller stops calling the listener before the tracker's events close.
    if (poller_) poller_->unwatch(watch_key_);
    if (sentinel_poller_) sentinel_poller_->unwatch(sentinel_key_);
    if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
  }

  void follow(std::unique_ptr<perf::TaskTracker> tracker, perf::Poller* poller, std::shared_ptr<perf::Watch> watch,
              std::uint64_t watch_key) {
    tracker_ = std::move(tracker);
    poller_ = poller;
    watch_ = std::move(watch);
    watch_key_ = watch_key;
  }

  // The thread's end as the kernel sees it for perf: a dummy event on it
  // hangs up when it exits, and when it execs a set-id program (the kernel
  // ends every perf event of a thread there). The sim counts with no
  // kernel help, so it needs this to stop where perf would (pfmfs(5),
  // SECURITY).
  void watchOwner(std::string owned_path, uid_t owner) {
    owned_path_ = std::move(owned_path);
    owner_at_load_ = owner;
  }
  void watchEnd(Fd sentinel, std::unique_ptr<perf::RingBuffer> page, perf::Poller* poller,
                std::shared_ptr<perf::Watch> watch, std::uint64_t key) {
    sentinel_ = std::move(sentinel);
    sentinel_page_ = std::move(page);
    sentinel_poller_ = poller;
    sentinel_watch_ = std::move(watch);
    sentinel_key_ = key;
  }

  Status loadSet(const SetImage& image) override {
    driver_.loadImage(image.pmcs, image.pmds, image.pmd_bits);
    return {};
  }
  // The sim raises its interrupts at their exact instants: a reload now is a
  // reload at the interrupt.
  void reloadPmd(unsigned index, std::uint64_t hw_bits) override { driver_.writePmd(index, hw_bits); }
  void readPmds(RegMask pmds, std::span<std::uint64_t> out) override { driver_.readPmds(pmds, out); }
  void enable() override { driver_.enable(); }
  void disable() override { driver_.disable(); }

  std::uint64_t timeNs() override {
    if (backend_.clock() == ClockKind::Manual) return pmu_.now();
    if (frozen_) return std::max(*frozen_, pmu_.now());
    if (held_) return held_at_;
    std::uint64_t raw = rawTime();
    std::uint64_t t = raw >= base_ ? raw - base_ : 0;
    // Never let time run backwards, even if the source hiccups.
    return t < pmu_.now() ? pmu_.now() : t;
  }

  std::uint64_t advanceTo(std::uint64_t t) override {
    pmu_.advanceTo(t);
    return pmu_.now();
  }

  std::uint64_t nextOverflowNs() override { return pmu_.nextInterruptNs(); }

  std::optional<HwOverflow> takeOverflow() override {
    if (!pmu_.interruptPending()) return std::nullopt;
    pmu_.clearInterrupt();
    RegMask pmds = driver_.takeOverflowStatus();
    if (pmds == 0) return std::nullopt;
    HwOverflow o;
    o.pmds = pmds;
    // A made-up but stable instruction pointer inside a pretend text segment,
    // a function of the time only, so that a test knows every sample's ip
    // (pfmfs(5), SAMPLING: the sim's model).
    o.time_ns = pmu_.now();
    o.ip = 0x401000 + ((o.time_ns / 64) % 0x1000) * 4;
    o.cpu = target_.kind == TargetKind::Cpu ? target_.id : 0;
    o.pid = target_.kind == TargetKind::Thread ? tgid_ : 0;
    o.tid = target_.kind == TargetKind::Thread ? target_.id : 0;
    return o;
  }

  RegMask overflowsInSkid() override {
    std::uint64_t status = pmu_.skidStatus();
    RegMask pmds = 0;
    for (const auto& d : backend_.description().pmds)
      if (status & intel::IntelArchDriver::globalBit(d.index)) pmds |= regBit(d.index);
    return pmds;
  }
  void raiseOverflowInSkid() override { pmu_.endSkid(); }

  void hold(bool held) override {
    if (held == held_) return;
    if (backend_.clock() == ClockKind::Real) {
      // The sim cannot stop a real thread; it stops the thread's emulated
      // clock instead, so the emulated PMU sees no time pass while held.
      std::uint64_t raw = rawTime();
      if (held) {
        held_at_ = timeNs();
      } else {
        base_ = raw - held_at_;
      }
    }
    held_ = held;
  }

  bool gone() override {
    if (target_.kind == TargetKind::Cgroup) return gone_ || target_.cgroup->removed();
    if (gone_ || (sentinel_watch_ && sentinel_watch_->hup.load())) return true;
    // Without a sentinel (perf refused it), a set-id exec shows when the
    // engine next looks: /proc/TID/status changes owner (task_creds.h). A
    // lookup by path brings it up to date (an open descriptor's would not).
    struct stat st {};
    if (!owned_path_.empty() && ::stat(owned_path_.c_str(), &st) == 0 && st.st_uid != owner_at_load_) gone_ = true;
    return gone_;
  }

  void takeChildEvents(std::vector<ChildEvent>& out) override {
    if (tracker_) tracker_->take(out);
  }

  // The sim adopts a child even when it is already gone (-ESRCH would leave
  // the engine without a PMU for the counts of its whole life): under the
  // real clock its time then stands at 0 until childExited gives the CPU
  // time it had. The child needs no listener: its own children come through
  // this target's tracker, and the sim raises its interrupts when the engine
  // replays time.
  Result<std::unique_ptr<TargetPmu>> adoptChild(pid_t tid, std::weak_ptr<TargetListener> /*listener*/) override {
    if (!tracker_) return err(EINVAL, "thread {} does not follow its children (no inherit)", target_.id);
    // The process from the child's FORK record, which outlives the thread; a
    // tid is its own process where nothing else says.
    pid_t tgid = tid;
    if (auto pid = tracker_->pidOf(tid)) {
      tgid = *pid;
    } else if (auto ids = threadIds(tid)) {
      tgid = ids->tgid;
    }
    int fd = -1;
    if (backend_.clock() == ClockKind::Real)
      fd = ::open(fmt::format("/proc/{}/schedstat", tid).c_str(), O_RDONLY | O_CLOEXEC);
    return std::unique_ptr<TargetPmu>(
        new SimTarget(backend_, writes_, Target{TargetKind::Thread, tid}, tgid, fd, /*from_creation=*/true));
  }

  // Under the real clock a child's time stops at its exit: at the CPU time
  // the kernel reported (counted from its creation, like this target's time
  // when it was adopted), or where it was last read if that is later. A held
  // child stays where the hold stopped it. The manual clock moves only by
  // advanceTo.
  void childExited(std::optional<std::uint64_t> final_time_ns) override {
    if (backend_.clock() == ClockKind::Manual || frozen_) return;
    std::uint64_t t = timeNs();
    if (final_time_ns && !held_ && *final_time_ns >= base_) t = std::max(t, *final_time_ns - base_);
    frozen_ = t;
  }

 private:
  std::uint64_t rawTime() {
    if (target_.kind == TargetKind::Cpu) return monotonicNs();
    if (target_.kind == TargetKind::Cgroup) {
      auto t = target_.cgroup->usageNs();
      if (!t) gone_ = true;  // removed: its cpu.stat reads ENODEV
      last_raw_ = t.value_or(last_raw_);
      return last_raw_;
    }
    char buf[128];
    ssize_t n = schedstat_fd_ >= 0 ? ::pread(schedstat_fd_, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) {
      gone_ = true;  // the thread has been reaped
      return last_raw_;
    }
    buf[n] = '\0';
    last_raw_ = std::strtoull(buf, nullptr, 10);
    return last_raw_;
  }

  const SimBackend& backend_;
  std::atomic<std::uint64_t>* writes_;
  EmulatedPmu pmu_;
  intel::IntelArchDriver driver_;
  Target target_;
  pid_t tgid_;
  int schedstat_fd_;
  std::uint64_t base_ = 0;  // raw time that maps to target time 0
  std::uint64_t last_raw_ = 0;
  std::uint64_t held_at_ = 0;
  bool held_ = false;
  bool gone_ = false;
  std::optional<std::uint64_t> frozen_;  // an adopted child's time after its exit (real clock)

  // inherit: the children's records, and the poller watching them.
  std::unique_ptr<perf::TaskTracker> tracker_;
  perf::Poller* poller_ = nullptr;
  std::shared_ptr<perf::Watch> watch_;
  std::uint64_t watch_key_ = 0;

  // watchEnd's event, and the poller that watches it for its hang-up.
  Fd sentinel_;
  std::unique_ptr<perf::RingBuffer> sentinel_page_;
  perf::Poller* sentinel_poller_ = nullptr;
  std::shared_ptr<perf::Watch> sentinel_watch_;
  std::uint64_t sentinel_key_ = 0;
  // watchOwner's: /proc/TID/status and its owner when loaded. (After the
  // thread is reaped schedstat says so first: rawTime sets gone_.)
  std::string owned_path_;
  uid_t owner_at_load_ = 0;
};

}  // namespace

Result<std::vector<SimEvent>> readEventsFile(const std::string& path, unsigned general_counters) {
  std::ifstream in(path);
  if (!in) {
    int e = errno ? errno : ENOENT;
    return err(e, "cannot read sim events file {}: {}", path, std::strerror(e));
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto events = parseEvents(text.str(), general_counters);
  if (!events) return err(EINVAL, "{}: {}", path, events.error().reason);
  return events;
}

SimBackend::SimBackend(SimOptions options) : options_(std::move(options)) {}

SimBackend::~SimBackend() = default;

Result<perf::Poller*> SimBackend::poller() {
  MutexLock l(poller_mutex_);
  if (shut_down_) return err(ESHUTDOWN, "the sim backend is shut down");
  if (!poller_) {
    auto p = perf::Poller::create();
    if (!p) return p.error();
    poller_ = std::move(*p);
  }
  return poller_.get();
}

Result<std::unique_ptr<SimBackend>> SimBackend::create(SimOptions options) {
  if (Status s = intel::checkShape(options.shape); !s) return s.error();
  if (options.skid > kMaxSkid) return err(EINVAL, "sim skid {} is out of range (0..{})", options.skid, kMaxSkid);
  if (options.events.empty()) options.events = defaultEvents(options.shape.general_counters);

  std::vector<EventDesc> table;
  std::uint64_t max_rate = 1;
  for (const auto& e : options.events) {
    table.push_back(e.desc);
    if (e.rate.maxRateCeil() > max_rate) max_rate = e.rate.maxRateCeil();
  }
  // The sim's events are streams of occurrences, without the cycles that
  // edge, invert and a counter mask compare against, nor pins; with no other
  // hyperthread, AnyThread counts what the thread does, which it does.
  options.shape.evtsel_missing = intel::evtsel::kFilters & ~intel::evtsel::kAny;
  std::unique_ptr<SimBackend> b(new SimBackend(std::move(options)));
  b->desc_ = intel::makeDescription(b->options_.shape, std::move(table));
  if (auto bad = b->desc_.validate(); !bad.empty())
    return err(EINVAL, "sim event table does not fit a PMU with {} counters: {}", b->options_.shape.general_counters,
               bad.front());
  // pmu/info says that interrupts come late, so that a tool knows counters
  // count past their overflow.
  // It follows a thread's children (flags inherit): a tool asks pmu/info.
  b->desc_.features.push_back("inherit");
  // It loads on a control group (mode cgroup): a tool asks pmu/info.
  b->desc_.features.push_back("cgroup");
  if (b->options_.skid > 0) b->desc_.features.push_back("ovfl_skid");
  // Without interrupts the engine must look at every counter before it can
  // wrap twice: half the range at the fastest event's rate.
  unsigned w = b->options_.shape.width;
  std::uint64_t half_range = w >= 64 ? (std::uint64_t{1} << 63) : (std::uint64_t{1} << (w - 1));
  b->sampling_period_ns_ = half_range / max_rate;
  if (b->sampling_period_ns_ == 0) b->sampling_period_ns_ = 1;
  return b;
}

void SimBackend::shutdown() {
  perf::Poller* p = nullptr;
  {
    MutexLock l(poller_mutex_);
    shut_down_ = true;
    p = poller_.get();
  }
  // Joined outside the lock, which attach() takes: a listener call still
  // under way ends first, and may reach it.
  if (p) p->stop();
}

Result<std::unique_ptr<TargetPmu>> SimBackend::attach(const Target& target, std::weak_ptr<TargetListener> listener) {
  {
    MutexLock l(poller_mutex_);
    if (shut_down_) return err(ESHUTDOWN, "the sim backend is shut down");
  }
  // The sim raises its interrupts when the engine replays time; it calls the
  // listener from a thread of its own only for the records of followed
  // children (inherit).
  if (target.inherit && target.kind != TargetKind::Thread)
    return err(EINVAL, "inherit follows a thread's children: a cpu or a control group has none");
  if (target.kind == TargetKind::Cgroup && !target.cgroup)
    return err(EINVAL, "a control group target without its group");
  pid_t tgid = 0;
  int fd = -1;
  if (target.kind == TargetKind::Thread) {
    auto ids = threadIds(target.id);
    if (!ids) return ids.error();
    tgid = ids->tgid;
    if (options_.clock == ClockKind::Real) {
      fd = ::open(fmt::format("/proc/{}/schedstat", target.id).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return err(ESRCH, "cannot read the CPU time of thread {}", target.id);
    }
  } else if (target.kind == TargetKind::Cpu && !cpuOnline(target.id)) {
    return err(EINVAL, "cpu {} is not online", target.id);
  }
  std::unique_ptr<SimTarget> t(new SimTarget(*this, &msr_writes_, target, tgid, fd, /*from_creation=*/false));
  if (target.kind == TargetKind::Thread) {
    auto p = poller();
    if (!p) return p.error();
    perf_event_attr a = perf::userSoftwareAttr(PERF_COUNT_SW_DUMMY);
    auto sentinel = perf::openEvent(a, target.id, -1, -1);
    // A perf event without a buffer reports POLLHUP at once: the control
    // page alone (no data pages) gives it one, so that the hang-up means
    // the thread's end.
    auto ring = std::make_unique<perf::RingBuffer>();
    if (sentinel && !ring->map(sentinel->get(), 0)) sentinel = err(EPERM, "its control page cannot be mapped");
    if (sentinel) {
      auto watch = std::make_shared<perf::Watch>();
      watch->listener = listener;
      auto key = (*p)->watch(sentinel->get(), watch);
      if (!key) return key.error();
      t->watchEnd(std::move(*sentinel), std::move(ring), *p, std::move(watch), *key);
    } else if (sentinel.code() == -ESRCH) {
      return err(ESRCH, "no thread {}", target.id);
    } else {
      // Where perf is closed to the daemon (the sim is what pfmfsd falls
      // back to there), the owner of /proc/TID says it instead.
      std::string owned = fmt::format("/proc/{}/status", target.id);
      struct stat st {};
      if (::stat(owned.c_str(), &st) != 0) return err(ESRCH, "no thread {}", target.id);
      t->watchOwner(std::move(owned), st.st_uid);
    }
  }
  if (target.inherit) {
    // A poller under either clock: the engine drains the records when told,
    // so that a child's exit is handled even when nobody reads a file (under
    // the manual clock that moves no time). The poller is made before the
    // tracker opens: made by a followed thread, it would be one of its children.
    auto p = poller();
    if (!p) return p.error();
    auto tracker = perf::TaskTracker::open(target.id);
    if (!tracker) return tracker.error();
    auto watch = std::make_shared<perf::Watch>();
    watch->listener = std::move(listener);
    auto key = (*p)->watch((*tracker)->pollFd(), watch);
    if (!key) return key.error();
    t->follow(std::move(*tracker), *p, std::move(watch), *key);
  }
  return std::unique_ptr<TargetPmu>(std::move(t));
}

}  // namespace pfmfs::pmu::sim
