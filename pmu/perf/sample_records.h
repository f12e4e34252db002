// What a perf target makes of its sample periods and records: a PMD's
// value as a perf sample period, the periods a sampling session's inherited
// events sample with, and a child's sample record as the engine's overflow.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "pmu/backend.h"
#include "pmu/perf_event/perf_event.h"

namespace pfmfs::pmu::perf {

// perf refuses sample periods with bit 63 set; a counter that is this far
// from its wrap samples "never" in practice (292 years of nanoseconds).
inline constexpr std::uint64_t kMaxPeriod = (std::uint64_t{1} << 63) - 1;

// Events from the value `bits` to its 64-bit wrap, as a perf sample period.
std::uint64_t periodFor(std::uint64_t bits);

// By PMD slot: the period each of a sampling session's inherited events
// samples its children with, from the PMDs' values (`pmd_bits`) when the
// group is opened; 0 for a PMD that is too far from its wrap to sample.
std::vector<std::uint64_t> childPeriods(std::span<const std::uint64_t> pmd_bits);

// A followed child's sample (HwOverflow::child_sample) of the PMD `index`
// from record `r` of an inherited event; a record the kernel lost has ip 0
// and no thread (docs/backends.md).
HwOverflow childSampleOf(const OverflowRecord& r, unsigned index);

}  // namespace pfmfs::pmu::perf
