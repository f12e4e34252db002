// The perf backend: choosing the model, and attaching to targets (their PMU
// is perf_target.cpp's).
#include "pmu/perf/perf_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <vector>

#include "pmu/host_info.h"
#include "pmu/perf/child_sampler.h"
#include "pmu/perf/perf_cgroup_target.h"
#include "pmu/perf/perf_inherit.h"
#include "pmu/perf/perf_target.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/perf_event/perf_poller.h"

namespace pfmfs::pmu::perf {

namespace {

// Ring buffer data pages per target: one page holds 128 overflow records.
// perf charges them to the daemon's locked memory (perf_event_mlock_kb).
constexpr std::size_t kRingPages = 1;
// With inherit the children's FORK, EXIT and READ records share the ring: 32
// bytes each for FORK and EXIT, 48 for a READ per counter of every set. 8
// pages hold some 70 children's lives with one set of 8 counters, 10 with
// eight such sets, between two takes.
constexpr std::size_t kInheritRingPages = 8;
// A sampling session takes its records at the engine's tick, not at each
// overflow (Target::sampling): 16 pages hold some 1300 samples, 130 ms at
// 10 000 a second, for a daemon kept off the cpu by busy sampled threads.
constexpr std::size_t kSamplingRingPages = 16;

}  // namespace

std::uint64_t PerfBackend::samplingKernelBytes(const Target& target) const {
  if (!target.sampling) return 0;
  // A ring maps its data pages and one page of metadata.
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t own =
      (kSamplingRingPages + 1) * page * (target.kind == TargetKind::Cgroup ? cgroupCpuCount() : 1);
  return own + (target.inherit ? ChildSampler::ringBytes() : 0);
}

Status perfUsable() {
  // What every thread target needs: its task-clock anchor (see attach).
  perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  a.disabled = 1;
  auto fd = openEvent(a, 0, -1, -1);
  if (!fd) return err(-fd.code(), "perf events cannot be opened here: {}{}", fd.error().reason, paranoidHint());
  return {};
}

Model detectModel() {
  if (::access("/sys/bus/event_source/devices/cpu", F_OK) != 0) return Model::Software;
  if (cpuidGeneralCounters() == 0) return Model::Software;
  const CounterEvent instructions{
      .type = PERF_TYPE_HARDWARE, .config = PERF_COUNT_HW_INSTRUCTIONS, .exclude_user = false, .exclude_kernel = true};
  perf_event_attr a = counterAttr(instructions, /*leads=*/true);
  auto fd = openEvent(a, 0, -1, -1);
  return fd ? Model::X86 : Model::Software;
}

PerfBackend::PerfBackend(Model model, PmuDescription desc, std::unique_ptr<Poller> poller)
    : model_(model), desc_(std::move(desc)), poller_(std::move(poller)) {}

PerfBackend::~PerfBackend() = default;

Result<std::unique_ptr<PerfBackend>> PerfBackend::create(PerfOptions options) {
  if (Status s = perfUsable(); !s) return s.error();
  Model model = options.model ? *options.model : detectModel();
  PmuDescription desc;
  if (model == Model::X86) {
    unsigned n = std::min(cpuidGeneralCounters(), intel::kMaxGeneralCounters);
    if (n == 0 || ::access("/sys/bus/event_source/devices/cpu", F_OK) != 0)
      return err(ENODEV, "perf-x86 needs a hardware PMU: the kernel exposes none here (use perf-sw)");
    desc = x86Description(n);
  } else {
    desc = softwareDescription();
  }
  // It follows a thread's children (flags inherit), with perf's inherited events.
  desc.features.push_back("inherit");
  // It loads on a control group (mode cgroup), with perf's cgroup mode.
  desc.features.push_back("cgroup");
  if (auto bad = desc.validate(); !bad.empty()) return err(EINVAL, "{}: {}", desc.model, bad.front());
  auto poller = Poller::create();
  if (!poller) return poller.error();
  return std::unique_ptr<PerfBackend>(new PerfBackend(model, std::move(desc), std::move(*poller)));
}

void PerfBackend::shutdown() {
  shut_down_.store(true);
  poller_->stop();
}

Result<std::unique_ptr<TargetPmu>> PerfBackend::attach(const Target& target, std::weak_ptr<TargetListener> listener) {
  if (shut_down_.load()) return err(ESHUTDOWN, "the perf backend is shut down");
  if (target.inherit && target.kind == TargetKind::Cpu)
    return err(EINVAL, "inherit follows a thread's children: cpu {} has none", target.id);
  if (target.kind == TargetKind::Cgroup)
    return attachPerfCgroup(model_, desc_, *poller_, target, std::move(listener),
                            target.sampling ? kSamplingRingPages : kRingPages);
  pid_t tgid = 0;
  // task-clock counts the thread's whole CPU time whatever exclude_kernel
  // says; asking for user level only lets a daemon without CAP_PERFMON (a
  // plain user's, at perf_event_paranoid 2) open it. A cpu's clock counts
  // at every level.
  perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  pid_t pid = -1;
  int cpu = -1;
  if (target.kind == TargetKind::Thread) {
    auto ids = threadIds(target.id);
    if (!ids) return ids.error();
    tgid = ids->tgid;
    pid = target.id;
    if (target.inherit && !target.sampling) {
      // Every task record of the children wakes the poller, not only a
      // full half of the ring. Not when sampling: the samples share the
      // ring, and the tick takes the task records with them.
      a.watermark = 1;
      a.wakeup_watermark = 1;
    }
  } else {
    if (!cpuOnline(target.id)) return err(EINVAL, "cpu {} is not online", target.id);
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.exclude_kernel = 0;
    cpu = target.id;
  }
  auto anchor = openEvent(a, pid, cpu, -1);
  if (!anchor) {
    if (anchor.code() == -ESRCH) return err(ESRCH, "no thread {}", target.id);
    return err(-anchor.code(), "the kernel refused to monitor {} {}: {}{}",
               target.kind == TargetKind::Thread ? "thread" : "cpu", target.id, anchor.error().reason, paranoidHint());
  }
  auto ring = std::make_unique<RingBuffer>();
  if (Status s = ring->map(anchor->get(), target.sampling  ? kSamplingRingPages
                                          : target.inherit ? kInheritRingPages
                                                           : kRingPages);
      !s)
    return s.error();
  std::unique_ptr<TreeFollower> tree;
  if (target.inherit) {
    auto t = TreeFollower::open(target.id, anchor->get(), desc_, *poller_, listener);
    if (!t) return t.error();
    tree = std::move(*t);
  }
  auto watch = std::make_shared<Watch>();
  watch->listener = std::move(listener);
  auto key = poller_->watch(anchor->get(), watch);
  if (!key) return key.error();
  return makePerfTarget(model_, desc_, *poller_, target, tgid, std::move(*anchor), std::move(ring), std::move(watch),
                        *key, std::move(tree), OpenSpec::of(target));
}

}  // namespace pfmfs::pmu::perf
