// The PMU of one thread or CPU as perf sees it: what PerfBackend::attach
// returns. Internal to the perf backend.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>

#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/perf/perf_models.h"

namespace pfmfs::pmu::perf {

class Poller;
class RingBuffer;
class TreeFollower;
struct Watch;

// Where a target's events open: perf_event_open's pid, cpu and flags.
struct OpenSpec {
  pid_t pid = -1;  // a thread, -1 for a cpu, a cgroup directory's fd with PERF_FLAG_PID_CGROUP
  int cpu = -1;    // a cpu, -1 for a thread's every cpu
  unsigned long flags = 0;
  static OpenSpec of(const Target& t) {
    return t.kind == TargetKind::Thread ? OpenSpec{t.id, -1, 0} : OpenSpec{-1, t.id, 0};
  }
};

// Takes over what attach opened: the anchor (the target's clock and the
// owner of `ring`), the poller's watch of it under `watch_key`, and with
// Target::inherit the followed children's events (`tree`, else null). Its
// events open at `at` (a control group's one cpu: PerfCgroupTarget).
std::unique_ptr<TargetPmu> makePerfTarget(Model model, const PmuDescription& desc, Poller& poller, const Target& target,
                                          pid_t tgid, Fd anchor, std::unique_ptr<RingBuffer> ring,
                                          std::shared_ptr<Watch> watch, std::uint64_t watch_key,
                                          std::unique_ptr<TreeFollower> tree, OpenSpec at);

}  // namespace pfmfs::pmu::perf
