// A control group as perf counts it (perf's cgroup mode): one PerfTarget per
// online CPU, each opened with the group's directory and
// PERF_FLAG_PID_CGROUP, driven together. Internal to the perf backend.
#pragma once

#include <cstddef>
#include <memory>

#include "pmu/backend.h"
#include "pmu/perf/perf_models.h"

namespace pfmfs::pmu::perf {

class Poller;

// Attaches to Target::cgroup on every online CPU, each with a ring of
// `ring_pages` data pages. The daemon needs what perf asks of a CPU-wide
// event (CAP_PERFMON, or perf_event_paranoid 0 or less).
Result<std::unique_ptr<TargetPmu>> attachPerfCgroup(Model model, const PmuDescription& desc, Poller& poller,
                                                    const Target& target, std::weak_ptr<TargetListener> listener,
                                                    std::size_t ring_pages);

// The CPUs a control group's events open on: those online now.
std::size_t cgroupCpuCount();

}  // namespace pfmfs::pmu::perf
