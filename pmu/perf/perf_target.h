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

// Takes over what attach opened: the anchor (the target's clock and the
// owner of `ring`), the poller's watch of it under `watch_key`, and with
// Target::inherit the followed children's events (`tree`, else null).
std::unique_ptr<TargetPmu> makePerfTarget(Model model, const PmuDescription& desc, Poller& poller, const Target& target,
                                          pid_t tgid, Fd anchor, std::unique_ptr<RingBuffer> ring,
                                          std::shared_ptr<Watch> watch, std::uint64_t watch_key,
                                          std::unique_ptr<TreeFollower> tree);

}  // namespace pfmfs::pmu::perf
