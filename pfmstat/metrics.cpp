#include "pfmstat/metrics.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

// The formula's names resolved on this PMU; nothing when one is missing
// (`missing` then names it).
std::optional<std::vector<std::string>> bind(const Metric& m, const std::vector<EventInfo>& events,
                                             std::string* missing = nullptr) {
  std::vector<std::string> out;
  for (const auto& name : m.expr.names()) {
    if (isTimeName(name)) {
      out.emplace_back();
      continue;
    }
    const EventInfo* e = findEvent(events, name);
    if (!e) {
      if (missing) *missing = name;
      return std::nullopt;
    }
    out.push_back(e->name);
  }
  return out;
}

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// The result of `event` counted with `mods` (any when empty), in `set` (any
// when kNone): its index, or kNone.
std::size_t findResult(const std::vector<EventResult>& results, const std::string& event, const std::string& mods,
                       std::size_t set) {
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (r.event == event && (mods.empty() || r.mods == mods) && (set == kNone || r.set == set)) return i;
  }
  return kNone;
}

// Where each of the metric's events was counted with `mods` (in `set`, or
// anywhere): result indexes by formula name (kNone for time_ns), or nothing
// when one was not.
std::optional<std::vector<std::size_t>> inputsAt(const BoundMetric& b, const std::vector<EventResult>& results,
                                                 const std::string& mods, std::size_t set) {
  std::vector<std::size_t> at(b.events.size(), kNone);
  for (std::size_t i = 0; i < b.events.size(); ++i) {
    if (b.events[i].empty()) continue;
    at[i] = findResult(results, b.events[i], mods, set);
    if (at[i] == kNone) return std::nullopt;
  }
  return at;
}

}  // namespace

std::vector<BoundMetric> metricsFor(const MetricTable& table, const std::vector<std::string>& words,
                                    const std::vector<EventInfo>& events) {
  std::set<const Metric*> asked;
  for (const auto& word : words) {
    // A metric named must apply; of a group, those that apply (a group may
    // serve several models, as `default` does).
    std::string missing;
    const Metric* last = nullptr;
    std::size_t before = asked.size();
    auto chosen = table.select(word);
    for (const Metric* m : chosen) {
      if (bind(*m, events, &missing))
        asked.insert(m);
      else
        last = m;
    }
    if (table.find(word) && last)
      throw UsageError(fmt::format("-M {}: metric {} needs event '{}', which this PMU does not have ({})", word,
                                   last->name, missing, last->origin));
    if (asked.size() == before && last)
      throw UsageError(fmt::format("-M {}: no metric of this group applies on this PMU ({} needs event '{}')", word,
                                   last->name, missing));
  }
  std::vector<BoundMetric> out;
  for (const auto& m : table.metrics()) {
    bool is_asked = asked.count(&m) != 0;
    if (!is_asked && !m.inGroup("default")) continue;
    auto bound = bind(m, events);
    if (!bound) continue;  // a default metric of another model
    out.push_back(BoundMetric{&m, std::move(*bound), is_asked});
  }
  return out;
}

std::string metricList(const MetricTable& table, const std::vector<EventInfo>& events) {
  auto quoted = [](const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  std::string out;
  for (const auto& m : table.metrics()) {
    if (!bind(m, events)) continue;
    std::string groups;
    for (const auto& g : m.groups) groups += (groups.empty() ? "" : ",") + g;
    out += fmt::format("metric={} expr={}", m.name, quoted(m.expr.text()));
    if (!m.unit.empty()) out += " unit=" + quoted(m.unit);
    if (!groups.empty()) out += " groups=" + groups;
    if (!m.desc.empty()) out += " desc=" + quoted(m.desc);
    out += '\n';
  }
  return out;
}

std::vector<GroupSpec> metricGroups(const std::vector<BoundMetric>& metrics) {
  std::vector<GroupSpec> out;
  for (const auto& b : metrics) {
    if (!b.asked) continue;
    GroupSpec g;
    g.metric = true;
    const auto& names = b.metric->expr.names();
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (b.events[i].empty()) continue;
      EventSpec e;
      e.text = e.name = names[i];
      g.events.push_back(std::move(e));
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<MetricValue> metricValues(const std::vector<BoundMetric>& metrics,
                                      const std::vector<EventResult>& results) {
  std::vector<MetricValue> out;
  for (const auto& b : metrics) {
    std::size_t first = 0;  // the first event name of the formula
    while (first < b.events.size() && b.events[first].empty()) ++first;
    if (first == b.events.size()) continue;

    // Exact: one set that counted every event with the same modifiers,
    // one that ran rather than one that did not.
    std::vector<std::size_t> at;
    bool exact = false;
    for (std::size_t lead = 0; lead < results.size(); ++lead) {
      if (results[lead].event != b.events[first]) continue;
      auto found = inputsAt(b, results, results[lead].mods, results[lead].set);
      if (!found) continue;
      if (at.empty() || results[lead].scaled) {
        at = std::move(*found);
        exact = true;
      }
      if (results[lead].scaled) break;
    }
    if (!exact) {
      // An estimate: each event where it was counted, all with the
      // modifiers of one of the first event's places.
      for (std::size_t lead = 0; lead < results.size() && at.empty(); ++lead)
        if (results[lead].event == b.events[first])
          if (auto found = inputsAt(b, results, results[lead].mods, kNone)) at = std::move(*found);
      if (at.empty()) continue;
    }
    const EventResult& lead = results[at[first]];
    bool ran = true;
    for (std::size_t i = 0; i < b.events.size(); ++i)
      if (!b.events[i].empty()) ran &= results[at[i]].scaled.has_value();
    MetricValue v;
    v.metric = b.metric;
    v.estimate = !exact;
    v.anchor = at[first];
    if (ran) {
      v.value = b.metric->expr.eval([&](const std::string& name) -> std::optional<double> {
        const auto& names = b.metric->expr.names();
        std::size_t i = 0;
        while (names[i] != name) ++i;
        if (b.events[i].empty())  // time_ns
          return static_cast<double>(exact ? lead.running_ns : lead.enabled_ns);
        const EventResult& r = results[at[i]];
        return static_cast<double>(exact ? r.count : *r.scaled);
      });
      if (v.value && !std::isfinite(*v.value)) v.value.reset();  // a user's formula overflowed
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace pfmstat
