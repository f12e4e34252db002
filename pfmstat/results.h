// From the sessions' `counts` to one result per event: summed over the
// sessions (the threads of -p, the cpus of -a), scaled per session, and for
// -I the difference between two readings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pfmstat/event_plan.h"

namespace pfmstat {

struct Reading {
  std::uint64_t value = 0, children = 0, enabled_ns = 0, running_ns = 0;
};

// One session's `counts`, by (set, pmd). Throws RunError on a bad line.
using Snapshot = std::map<std::pair<unsigned, unsigned>, Reading>;
Snapshot parseCounts(std::string_view text);

struct EventResult {
  std::string label;
  unsigned set = 0;
  std::uint64_t count = 0;              // the events counted (children's included)
  std::optional<std::uint64_t> scaled;  // count × enabled / running; none when the set never ran
  std::uint64_t enabled_ns = 0, running_ns = 0;
  std::string event, mods;                // Placed's: what a metric's inputs are matched by
  std::optional<double> percent() const;  // running / enabled
};

// `now` and, for an interval, `before` hold one snapshot per session.
std::vector<EventResult> results(const std::vector<SetPlan>& sets, const std::vector<Snapshot>& now,
                                 const std::vector<Snapshot>* before = nullptr);

// -r: each event's mean over the runs and the spread of that mean.
struct Summary {
  EventResult mean;       // count and scaled are the means (rounded)
  double stddev_pct = 0;  // the standard deviation of the mean scaled value, % of it (perf's "+-")
};
std::vector<Summary> summarize(const std::vector<std::vector<EventResult>>& runs);

// The mean of the values and the standard deviation of that mean, in % of it.
std::pair<double, double> meanAndSpread(const std::vector<double>& values);

}  // namespace pfmstat
