// The x86 backend: the PMU's description, the device, and attaching targets.
#include "pmu/x86/x86_backend.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "pmu/host_info.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/x86/record_reader.h"
#include "pmu/x86/x86_target.h"

namespace pfmfs::pmu::x86 {

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
  // AnyThread came with version 3; the module's test PMU counts its events
  // at rates, with no cycles for edge, invert or a counter mask to act on.
  if (info.arch_version < 3) shape.evtsel_missing |= intel::evtsel::kAny;
  if (info.emulated) shape.evtsel_missing |= intel::evtsel::kFilters & ~intel::evtsel::kAny;
  if (Status st = intel::checkShape(shape); !st)
    return err(ENODEV, "the PMU the module reports is not one pfmfs can drive: {}", st.error().reason);
  PmuDescription d =
      intel::makeDescription(shape, intel::architecturalEvents(shape.general_counters, shape.fixed_counters));
  d.features.push_back("inherit");
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

void X86Backend::shutdown() {
  shut_down_.store(true);
  reader_->stop();
}

Status checkTarget(const Target& target) {
  // Counting a group would mean switching counters at every context switch
  // into and out of any of its threads, on every CPU: the module's hooks
  // follow one thread (and its children) or one CPU, and changing it is out
  // of this backend's reach (pfmfs(5), CONTROL-GROUP LOADS).
  if (target.kind == TargetKind::Cgroup)
    return err(EOPNOTSUPP,
               "the x86 backend cannot count a control group: its helper module attaches only to a thread or a "
               "cpu (use the perf backend)");
  return {};
}

Result<std::unique_ptr<TargetPmu>> X86Backend::attach(const Target& target, std::weak_ptr<TargetListener> listener) {
  if (shut_down_.load()) return err(ESHUTDOWN, "the x86 backend is shut down");
  if (Status s = checkTarget(target); !s) return s.error();
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
  const bool inherit = target.inherit && target.kind == TargetKind::Thread;
  if (inherit) watch->family = std::make_shared<Family>();
  // Watched first: a FORK record may come as soon as it is attached.
  reader_->watch(target, watch);
  if (Status st = device_->attach(target, inherit ? PFMFS_HELPER_ATTACH_INHERIT : 0); !st) {
    reader_->unwatch(target);
    if (st.code() == -EBUSY)
      return err(EBUSY,
                 "{}: the helper module has it attached already, or {} (system-wide and per-thread "
                 "monitoring exclude each other)",
                 st.error().reason,
                 target.kind == TargetKind::Cpu ? "a thread is monitored" : "a cpu is monitored system-wide");
    return st.error();
  }
  return std::unique_ptr<TargetPmu>(
      new X86Target(desc_, *device_, *reader_, target, std::move(watch), std::move(cpu_time), /*from_creation=*/false));
}

}  // namespace pfmfs::pmu::x86
