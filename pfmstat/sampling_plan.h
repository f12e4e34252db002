// What `pfmstat record` samples: one event on one counter with a period,
// from -e, -c and -F and the mount's PMU. perfmon2 has no frequency mode:
// -F is turned into a period from the event's nominal rate where pfmstat
// knows it (the clocks count ns; the sim's events have fixed rates).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pfmstat/event_plan.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/record_options.h"

namespace pfmstat {

struct SamplingPlan {
  std::string event;  // as the mount names it, with modifiers (the report's header)
  SetPlan set;        // the one set, its sampling PMD in pmd_lines
  unsigned pmd = 0;
  std::uint64_t period = 0;
  std::string period_from;  // how the period was chosen: "-c", "-F 99", "default (-F 4000)", "default"
};

inline constexpr std::uint64_t kDefaultFreq = 4000;  // perf record's default -F
// Events of unknown rate: a prime, so that the samples do not beat with a loop.
inline constexpr std::uint64_t kDefaultPeriod = 10007;

// Events per second of the target's time, when pfmstat knows it.
std::optional<double> eventRate(const PmuInfo& info, const std::string& event_name);

// Throws UsageError (a group, an unknown event, -F for an event of unknown rate).
SamplingPlan planSampling(const RecordOptions& o, const PmuInfo& info, const std::vector<EventInfo>& table);

}  // namespace pfmstat
