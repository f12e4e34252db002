// Derived metrics in a run: which ones it shows, the events -M adds, and
// their values from a report's results (pfmstat(1), METRICS).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "pfmstat/event_plan.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/results.h"

namespace pfmstat {

// A metric as this PMU can compute it: its formula's events resolved.
struct BoundMetric {
  const Metric* metric = nullptr;
  std::vector<std::string> events;  // pmu/events' name of each formula name (empty for time_ns)
  bool asked = false;               // named by -M: shown even when not in group default
};

// The metrics a run may show: those -M names (each must apply on this PMU,
// or UsageError says which event it lacks), then the default group's that
// apply. Nothing without a table.
std::vector<BoundMetric> metricsFor(const MetricTable& table, const std::vector<std::string>& words,
                                    const std::vector<EventInfo>& events);

// --list-metrics: every metric that applies on this PMU, one per line in
// the tables' own syntax (a table itself).
std::string metricList(const MetricTable& table, const std::vector<EventInfo>& events);

// The groups -M adds to the events to count: each asked metric's events.
std::vector<GroupSpec> metricGroups(const std::vector<BoundMetric>& metrics);

struct MetricValue {
  const Metric* metric = nullptr;
  std::optional<double> value;  // none: a set that never ran, or a division by zero
  bool estimate = false;        // its events were counted in different sets (multiplexed)
  std::size_t anchor = 0;       // the result it is printed beside: its first event's
};

// Every metric whose events all were counted, in `results` (one report: the
// totals, an interval, or -r's means). From one set where one counted them
// all (exact: its counts and its running time); else from the scaled counts
// of the sets that did (an estimate, time_ns the enabled time).
std::vector<MetricValue> metricValues(const std::vector<BoundMetric>& metrics, const std::vector<EventResult>& results);

}  // namespace pfmstat
