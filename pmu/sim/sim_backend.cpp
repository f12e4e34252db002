// The sim backend and its per-target PMU.
#include "pmu/sim/sim_backend.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "pmu/host_info.h"
#include "pmu/intel_arch_driver.h"
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
// under the manual clock it is whatever the engine advanced it to.
class SimTarget final : public TargetPmu {
 public:
  SimTarget(const SimBackend& backend, std::atomic<std::uint64_t>* writes, const Target& target, pid_t tgid,
            int schedstat_fd)
      : backend_(backend),
        pmu_(backend.description(), backend.events(), writes, backend.skid()),
        driver_(backend.description(), pmu_),
        target_(target),
        tgid_(tgid),
        schedstat_fd_(schedstat_fd) {
    if (backend_.clock() == ClockKind::Real) base_ = rawTime();
  }

  ~SimTarget() override {
    if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
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
    // so that tools that histogram ips see something plausible.
    o.ip = 0x401000 + ((pmu_.now() / 64) % 0x1000) * 4;
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

  bool gone() override { return gone_; }

 private:
  std::uint64_t rawTime() {
    if (target_.kind == TargetKind::Cpu) return monotonicNs();
    char buf[128];
    ssize_t n = ::pread(schedstat_fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) {
      gone_ = true;  // the thread has been reaped
      return last_raw_;
    }
    buf[n] = '\0';
    last_raw_ = std::strtoull(buf, nullptr, 10);
    return last_raw_;
  }

  const SimBackend& backend_;
  EmulatedPmu pmu_;
  intel::IntelArchDriver driver_;
  Target target_;
  pid_t tgid_;
  int schedstat_fd_;
  std::uint64_t base_ = 0;      // raw time that maps to target time 0
  std::uint64_t last_raw_ = 0;
  std::uint64_t held_at_ = 0;
  bool held_ = false;
  bool gone_ = false;
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
  std::unique_ptr<SimBackend> b(new SimBackend(std::move(options)));
  b->desc_ = intel::makeDescription(b->options_.shape, std::move(table));
  if (auto bad = b->desc_.validate(); !bad.empty())
    return err(EINVAL, "sim event table does not fit a PMU with {} counters: {}", b->options_.shape.general_counters,
               bad.front());
  // pmu/info says that interrupts come late, so that a tool knows counters
  // count past their overflow.
  if (b->options_.skid > 0) b->desc_.features.push_back("ovfl_skid");
  // Without interrupts the engine must look at every counter before it can
  // wrap twice: half the range at the fastest event's rate.
  unsigned w = b->options_.shape.width;
  std::uint64_t half_range = w >= 64 ? (std::uint64_t{1} << 63) : (std::uint64_t{1} << (w - 1));
  b->sampling_period_ns_ = half_range / max_rate;
  if (b->sampling_period_ns_ == 0) b->sampling_period_ns_ = 1;
  return b;
}

Result<std::unique_ptr<TargetPmu>> SimBackend::attach(const Target& target,
                                                       std::weak_ptr<TargetListener> /*listener*/) {
  // The sim raises its interrupts when the engine replays time, so it never
  // needs to call the listener from a thread of its own.
  pid_t tgid = 0;
  int fd = -1;
  if (target.kind == TargetKind::Thread) {
    auto ids = threadIds(target.id);
    if (!ids) return err(ESRCH, "no thread {}", target.id);
    tgid = ids->tgid;
    if (options_.clock == ClockKind::Real) {
      fd = ::open(fmt::format("/proc/{}/schedstat", target.id).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return err(ESRCH, "cannot read the CPU time of thread {}", target.id);
    }
  } else if (!cpuOnline(target.id)) {
    return err(EINVAL, "cpu {} is not online", target.id);
  }
  return std::unique_ptr<TargetPmu>(new SimTarget(*this, &msr_writes_, target, tgid, fd));
}

}  // namespace pfmfs::pmu::sim
