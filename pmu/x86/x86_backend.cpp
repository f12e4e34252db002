// The x86 backend and its per-target PMU.
#include "pmu/x86/x86_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "pmu/host_info.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/x86/record_reader.h"

namespace pfmfs::pmu::x86 {

namespace {

// One target's MSRs through the device. Writes are queued and sent as one
// batch before the next read or at flush(), so that a set switch costs a
// handful of ioctls rather than one per register. A failure is kept for the
// caller to report (the interface of MsrAccess has no error path: the
// registers are checked by the engine before they get here, so what fails
// is the target itself, e.g. a thread that exited and was detached).
class TargetMsrs final : public intel::MsrAccess {
 public:
  TargetMsrs(HelperDevice& device, const Target& target) : device_(device), target_(target) {}

  void writeMsr(std::uint32_t addr, std::uint64_t value) override {
    queue_.push_back(pfmfs_helper_msr{addr, 0, value});
    if (queue_.size() == PFMFS_HELPER_MAX_BATCH) flush();
  }

  std::uint64_t readMsr(std::uint32_t addr) override {
    std::uint64_t v = 0;
    readMsrs(std::span(&addr, 1), std::span(&v, 1));
    return v;
  }

  void readMsrs(std::span<const std::uint32_t> addrs, std::span<std::uint64_t> out) override {
    flush();
    pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH];
    for (std::size_t done = 0; done < addrs.size();) {
      std::size_t n = std::min<std::size_t>(addrs.size() - done, PFMFS_HELPER_MAX_BATCH);
      for (std::size_t i = 0; i < n; ++i) ops[i] = pfmfs_helper_msr{addrs[done + i], 0, 0};
      Status st = device_.readMsrs(target_, std::span(ops, n));
      for (std::size_t i = 0; i < n; ++i) out[done + i] = st ? ops[i].value : 0;
      keep(st);
      done += n;
    }
  }

  void flush() override {
    if (queue_.empty()) return;
    keep(device_.writeMsrs(target_, queue_));
    queue_.clear();
  }

  // The first failure since the last call, if any.
  Status takeError() {
    Status st = std::move(error_);
    error_ = Status{};
    return st;
  }
  // The module no longer knows the target: it exited and was detached.
  bool lost() const { return lost_; }

 private:
  void keep(Status st) {
    if (st) return;
    if (st.code() == -ESRCH || st.code() == -ENOENT) lost_ = true;
    if (error_.ok()) error_ = std::move(st);
  }

  HelperDevice& device_;
  Target target_;
  std::vector<pfmfs_helper_msr> queue_;
  Status error_;
  bool lost_ = false;
};

class X86Target final : public TargetPmu {
 public:
  X86Target(const PmuDescription& desc, HelperDevice& device, RecordReader& reader, const Target& target,
            std::shared_ptr<Watch> watch, std::optional<ThreadCpuTime> cpu_time)
      : device_(device),
        reader_(reader),
        target_(target),
        watch_(std::move(watch)),
        msrs_(device, target),
        driver_(desc, msrs_),
        cpu_time_(std::move(cpu_time)),
        base_(rawTime()) {}

  ~X86Target() override {
    reader_.unwatch(target_);
    (void)device_.detach(target_);  // fails harmlessly for a thread the module already let go
  }

  Status loadSet(const SetImage& image) override {
    driver_.loadImage(image.pmcs, image.pmds, image.pmd_bits);
    msrs_.flush();
    return msrs_.takeError();
  }

  // The module froze the counters at the interrupt, so a reload now is a
  // reload at the interrupt (but for the skid of a real PMU).
  void reloadPmd(unsigned index, std::uint64_t hw_bits) override {
    driver_.writePmd(index, hw_bits);
    msrs_.flush();
    report(msrs_.takeError());
  }

  void readPmds(RegMask pmds, std::span<std::uint64_t> out) override {
    driver_.readPmds(pmds, out);
    report(msrs_.takeError());
  }

  void enable() override {
    enabled_ = true;
    watch_->frozen.store(false);
    driver_.enable();
    msrs_.flush();
    report(msrs_.takeError());
  }

  void disable() override {
    enabled_ = false;
    driver_.disable();
    msrs_.flush();
    report(msrs_.takeError());
  }

  std::uint64_t timeNs() override {
    std::uint64_t raw = rawTime();
    std::uint64_t t = raw >= base_ ? raw - base_ : 0;
    if (t < last_) t = last_;  // never backwards, whatever the source does
    return last_ = t;
  }

  // Hardware counts on its own: the present is the only time there is.
  std::uint64_t advanceTo(std::uint64_t) override { return timeNs(); }
  std::uint64_t nextOverflowNs() override { return kNever; }

  std::optional<HwOverflow> takeOverflow() override {
    pfmfs_helper_record r{};
    {
      std::lock_guard l(watch_->mutex);
      if (!watch_->overflows.empty()) {
        r = watch_->overflows.front();
        watch_->overflows.pop_front();
      }
    }
    if (r.type == 0) {
      // Every interrupt is taken: the engine has applied its resets, so the
      // counters the module froze may count again, unless the engine itself
      // stopped them meanwhile (a mask, an unload).
      if (watch_->frozen.exchange(false) && enabled_) enable();
      return std::nullopt;
    }
    HwOverflow o;
    o.pmds = driver_.statusToPmds(r.value);
    o.ip = r.ip;
    o.cpu = static_cast<int>(r.cpu);
    o.pid = static_cast<pid_t>(r.pid);
    o.tid = static_cast<pid_t>(r.tid);
    return o;
  }

  // An interrupt the module took (the counters froze there) whose record
  // the engine has not taken yet: the engine takes it before the set leaves
  // the PMU, so that its carry lands in the set that counted it. (A record
  // still in the module's ring, not yet read by the record thread, is not
  // seen here: a window of microseconds after the NMI.)
  RegMask overflowsInSkid() override {
    std::uint64_t status = 0;
    {
      std::lock_guard l(watch_->mutex);
      for (const auto& r : watch_->overflows) status |= r.value;
    }
    return status ? driver_.statusToPmds(status) : 0;
  }
  void raiseOverflowInSkid() override {}  // raised already: takeOverflow has it

  void hold(bool held) override { report(device_.hold(target_, held)); }

  bool gone() override {
    if (watch_->exited.load() || msrs_.lost()) return true;
    return cpu_time_ && !cpu_time_->read();
  }

 private:
  std::uint64_t rawTime() {
    if (!cpu_time_) return monotonicNs();
    if (auto t = cpu_time_->read()) last_raw_ = *t;
    return last_raw_;
  }

  // A failure the engine has no way to take: the daemon's log has it, and
  // gone() tells the engine when the target is lost.
  void report(const Status& st) {
    if (!st && !reported_) {
      reported_ = true;
      std::fprintf(stderr, "pfmfsd: x86: %s\n", st.error().reason.c_str());
    }
  }

  HelperDevice& device_;
  RecordReader& reader_;
  Target target_;
  std::shared_ptr<Watch> watch_;
  TargetMsrs msrs_;
  intel::IntelArchDriver driver_;
  std::optional<ThreadCpuTime> cpu_time_;  // threads: their CPU time; cpus: wall time
  std::uint64_t last_raw_ = 0;
  std::uint64_t base_;  // raw time that maps to target time 0
  std::uint64_t last_ = 0;
  bool enabled_ = false;  // the engine's last enable()/disable()
  bool reported_ = false;
};

}  // namespace

Result<PmuDescription> describe(const HelperInfo& info) {
  if (info.gp_counters == 0)
    return err(ENODEV, "the PMU has no architectural general counters (CPUID leaf 0xA, version {})", info.arch_version);
  intel::Shape shape;
  // perfmon2's mapping numbers general counters 0..7 and fixed ones from 16:
  // a PMU with more serves the first 8, as perfmon2 did.
  shape.general_counters = std::min(info.gp_counters, intel::kMaxGeneralCounters);
  shape.width = info.gp_width;
  shape.fixed_counters = std::min(info.fixed_counters, intel::kFixedCounters);
  shape.fixed_width = shape.fixed_counters ? info.fixed_width : 0;
  if (Status st = intel::checkShape(shape); !st)
    return err(ENODEV, "the PMU the module reports is not one pfmfs can drive: {}", st.error().reason);
  PmuDescription d = intel::makeDescription(shape, intel::architecturalEvents(shape.general_counters, shape.fixed_counters));
  if (info.emulated) d.features.push_back("emulated");
  if (auto bad = d.validate(); !bad.empty()) return err(ENODEV, "PMU description: {}", bad.front());
  return d;
}

X86Backend::X86Backend(std::unique_ptr<HelperDevice> device, PmuDescription desc)
    : device_(std::move(device)), desc_(std::move(desc)) {}

X86Backend::~X86Backend() = default;

Result<std::unique_ptr<X86Backend>> X86Backend::create(const X86Options& options) {
  auto device = HelperDevice::open(options.device);
  if (!device) return device.error();
  auto desc = describe((*device)->info());
  if (!desc) return desc.error();
  std::unique_ptr<X86Backend> b(new X86Backend(std::move(*device), std::move(*desc)));
  auto reader = RecordReader::create(*b->device_);
  if (!reader) return reader.error();
  b->reader_ = std::move(*reader);
  return b;
}

Result<std::unique_ptr<TargetPmu>> X86Backend::attach(const Target& target, std::weak_ptr<TargetListener> listener) {
  std::optional<ThreadCpuTime> cpu_time;
  if (target.kind == TargetKind::Thread) {
    cpu_time = ThreadCpuTime::open(target.id);
    if (!cpu_time) return err(ESRCH, "no thread {}", target.id);
  } else if (!cpuOnline(target.id)) {
    return err(EINVAL, "cpu {} is not online", target.id);
  }
  auto watch = std::make_shared<Watch>();
  watch->listener = std::move(listener);
  watch->attached_ns = monotonicNs();
  if (Status st = device_->attach(target); !st) {
    if (st.code() == -EBUSY)
      return err(EBUSY, "{}: the helper module has it attached already, or {} (system-wide and per-thread "
                        "monitoring exclude each other)", st.error().reason,
                 target.kind == TargetKind::Cpu ? "a thread is monitored" : "a cpu is monitored system-wide");
    return st.error();
  }
  reader_->watch(target, watch);
  return std::unique_ptr<TargetPmu>(new X86Target(desc_, *device_, *reader_, target, std::move(watch), std::move(cpu_time)));
}

}  // namespace pfmfs::pmu::x86
