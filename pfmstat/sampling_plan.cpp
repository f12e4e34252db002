// record's event and period (sampling_plan.h).
#include "pfmstat/sampling_plan.h"

#include <cmath>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

// Nominal rates, events per ns of the target's time: perf's clocks count
// ns whatever the machine; the sim's rates are its model (pfmfs(5), The sim
// PMU). Real cycles and instructions have no fixed rate: there -c is asked.
struct Rate {
  const char* backend;  // nullptr: any
  const char* event;
  double per_ns;
};
constexpr Rate kRates[] = {
    {nullptr, "TASK_CLOCK", 1.0},
    {nullptr, "CPU_CLOCK", 1.0},
    {"sim", "UNHALTED_CORE_CYCLES", 3.0},
    {"sim", "INSTRUCTION_RETIRED", 2.0},
    {"sim", "UNHALTED_REFERENCE_CYCLES", 2.5},
};

}  // namespace

std::optional<double> eventRate(const PmuInfo& info, const std::string& event_name) {
  for (const auto& r : kRates)
    if ((!r.backend || info.backend == r.backend) && normalName(event_name) == r.event) return r.per_ns * 1e9;
  return std::nullopt;
}

SamplingPlan planSampling(const RecordOptions& o, const PmuInfo& info, const std::vector<EventInfo>& table) {
  std::string wanted = o.event;
  if (wanted.empty()) wanted = findEvent(table, "cycles") ? "cycles" : "task-clock";
  auto groups = parseEventArgs({wanted});
  if (groups.size() != 1 || groups[0].events.size() != 1 || groups[0].grouped)
    throw UsageError(fmt::format("record samples one event, not '{}'", wanted));
  if (!findEvent(table, groups[0].events[0].name))
    throw UsageError(fmt::format("unknown event '{}' (the mount's pmu/events lists them)", groups[0].events[0].name));
  SamplingPlan p;
  auto sets = planSets(groups, info, table);
  p.set = sets.at(0);
  const Placed& c = p.set.counters.at(0);
  p.pmd = c.pmd;
  const EventInfo* ev = findEvent(table, groups[0].events[0].name);
  p.event =
      groups[0].events[0].text == ev->name ? ev->name : fmt::format("{} ({})", groups[0].events[0].text, ev->name);
  auto rate = eventRate(info, ev->name);
  auto fromFreq = [&](std::uint64_t hz) {
    if (!rate)
      throw UsageError(
          fmt::format("-F needs the rate of {}, which pfmstat does not know on the {} backend: "
                      "give a period with -c",
                      ev->name, info.backend));
    return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::llround(*rate / static_cast<double>(hz))));
  };
  if (o.period) {
    p.period = *o.period;
    p.period_from = "-c";
  } else if (o.freq) {
    p.period = fromFreq(*o.freq);
    p.period_from = fmt::format("-F {}", *o.freq);
  } else if (rate) {
    p.period = fromFreq(kDefaultFreq);
    p.period_from = fmt::format("default (-F {})", kDefaultFreq);
  } else {
    p.period = kDefaultPeriod;
    p.period_from = "default";
  }
  // A period is written as its negation (pfmfs(5), 64-BIT COUNTERS): the
  // counter overflows after `period` events, and again after each reset.
  p.set.pmd_lines = fmt::format("pmd{0} -{1} long_reset=-{1} short_reset=-{1} notify\n", p.pmd, p.period);
  return p;
}

}  // namespace pfmstat
