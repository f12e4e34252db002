// The two PMU descriptions the perf backend offers and how a register image
// of each becomes perf events:
//   perf-sw   perf's software events (task-clock, page-faults, ...) on eight
//             64-bit counters, for machines without a hardware PMU;
//   perf-x86  the Intel architectural register model of the sim (pfmfs(5)),
//             each PERFEVTSEL turned into a raw event and each fixed counter
//             into its generic hardware event.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/pmu_description.h"

namespace pfmfs::pmu::perf {

enum class Model { Software, X86 };

// What one counter asks perf to count.
struct CounterEvent {
  std::uint32_t type = 0;  // PERF_TYPE_*
  std::uint64_t config = 0;
  bool exclude_user = false;
  bool exclude_kernel = false;

  bool operator==(const CounterEvent&) const = default;
};

// The one perf_event_attr of a counter, for the target's counting group
// (with its overflow period) and the inherited group alike: the event at its privilege levels, never the
// hypervisor, and disabled when it leads its group (members follow their
// leader, which the backend enables). Each caller adds only what is its own
// (read_format, a period, inherit).
perf_event_attr counterAttr(const CounterEvent& ev, bool leads);

inline constexpr unsigned kSoftwareCounters = 8;

// perf-sw. The PMC layout is PERFEVTSEL's: the software event id in bits
// 7:0, USR 16, OS 17, and the engine's INT 20 and EN 22; the rest reserved.
PmuDescription softwareDescription();

// perf-x86 with the machine's number of general counters; counters are 64
// bits wide as perf reports them.
PmuDescription x86Description(unsigned general_counters);

// The number of general counters CPUID leaf 0xA reports, 0 where there is
// none (no architectural perfmon, or not x86).
unsigned cpuidGeneralCounters();

// The event PMD `pmd_slot` counts under `pmcs` (hardware PMC values by
// description slot), or nullopt when its PMC leaves it off.
std::optional<CounterEvent> counterEvent(Model model, const PmuDescription& desc, std::span<const std::uint64_t> pmcs,
                                         std::size_t pmd_slot);

std::string modelName(Model model);

}  // namespace pfmfs::pmu::perf
