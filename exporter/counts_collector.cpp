#include "exporter/counts_collector.h"

#include <chrono>
#include <set>
#include <utility>

#include "pfmstat/errors.h"
#include "pfmstat/results.h"

namespace exporter {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily family(const char* name, const char* help, MetricType type) { return MetricFamily{name, help, type, {}}; }

ClientMetric::Label label(const char* name, const std::string& value) { return ClientMetric::Label{name, value}; }

}  // namespace

CountsCollector::CountsCollector(const SessionPool& pool, std::string version,
                                 std::function<void(const std::string&)> onFailure)
    : pool_(pool), version_(std::move(version)), on_failure_(std::move(onFailure)) {}

std::vector<MetricFamily> CountsCollector::Collect() const {
  auto start = std::chrono::steady_clock::now();
  auto counts = family("pfmfs_event_count_total",
                       "Events counted by a pfmfs session (value + children), raw: not scaled for multiplexing",
                       MetricType::Counter);
  auto enabled =
      family("pfmfs_set_enabled_seconds_total",
             "Time the event set's session was counting, in seconds (pfmfs counts enabled_ns)", MetricType::Counter);
  auto running = family("pfmfs_set_running_seconds_total",
                        "Time the event set was on the PMU, in seconds (pfmfs counts running_ns)", MetricType::Counter);
  const auto& sets = pool_.sets();
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    pfmstat::Snapshot snap;
    try {
      snap = pfmstat::parseCounts(pool_.counts(i));
    } catch (const pfmstat::RunError& e) {
      // The exporter ends (main), and this scrape fails with nothing: a
      // partial answer would look like counters going back to zero.
      on_failure_(e.what());
      return {};
    }
    const auto& who = pool_.labels(i);
    for (unsigned set = 0; set < sets.size(); ++set) {
      std::string set_text = std::to_string(set);
      std::set<std::string> shown;  // one series per (set, event): a label named twice in a set is counted once
      bool timed = false;
      for (const auto& c : sets[set].counters) {
        auto it = snap.find({set, c.pmd});
        if (it == snap.end() || !shown.insert(c.label).second) continue;
        const pfmstat::Reading& r = it->second;
        ClientMetric m;
        m.label = {label("cpu", who.cpu), label("cgroup", who.cgroup), label("set", set_text), label("event", c.label)};
        // A double: exact up to 2^53 events (pfmfs-exporter(8), PRECISION).
        m.counter.value = static_cast<double>(r.value + r.children);
        counts.metric.push_back(std::move(m));
        if (timed) continue;
        // Every counter of a set has the set's times: the first one's.
        timed = true;
        std::vector<ClientMetric::Label> set_labels = {label("cpu", who.cpu), label("cgroup", who.cgroup),
                                                       label("set", set_text)};
        ClientMetric e, run;
        e.label = run.label = set_labels;
        e.counter.value = static_cast<double>(r.enabled_ns) / 1e9;
        run.counter.value = static_cast<double>(r.running_ns) / 1e9;
        enabled.metric.push_back(std::move(e));
        running.metric.push_back(std::move(run));
      }
    }
  }
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;

  auto duration = family("pfmfs_exporter_scrape_duration_seconds",
                         "Time this scrape took to read every session's counts", MetricType::Gauge);
  duration.metric.emplace_back().gauge.value = took.count();
  auto sessions = family("pfmfs_exporter_sessions", "pfmfs sessions the exporter counts with", MetricType::Gauge);
  sessions.metric.emplace_back().gauge.value = static_cast<double>(pool_.size());
  auto build = family("pfmfs_exporter_build_info", "pfmfs-exporter's version, as a label; always 1", MetricType::Gauge);
  auto& b = build.metric.emplace_back();
  b.label = {label("version", version_)};
  b.gauge.value = 1;
  return {std::move(counts),   std::move(enabled),  std::move(running),
          std::move(duration), std::move(sessions), std::move(build)};
}

}  // namespace exporter
