#include "pfmstat/results.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/pmu_table.h"

namespace pfmstat {
namespace {

std::uint64_t field(const std::map<std::string, std::string>& kv, const char* key, std::string_view line) {
  auto it = kv.find(key);
  if (it == kv.end()) throw RunError(fmt::format("the mount's counts line '{}' has no {}=", line, key));
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  if (errno || *end || it->second.empty())
    throw RunError(fmt::format("the mount's counts line '{}': {}= is not a number", line, key));
  return v;
}

// a × b / c without overflow (the mount's own formula, pfmfs(5) counts).
std::uint64_t scale(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return static_cast<std::uint64_t>(static_cast<unsigned __int128>(a) * b / c);
}

}  // namespace

Snapshot parseCounts(std::string_view text) {
  Snapshot s;
  for (std::string_view line : recordLines(text)) {
    auto kv = parseRecord(line);
    Reading r;
    r.value = field(kv, "value", line);
    r.enabled_ns = field(kv, "enabled_ns", line);
    r.running_ns = field(kv, "running_ns", line);
    if (kv.count("children")) r.children = field(kv, "children", line);
    s[{static_cast<unsigned>(field(kv, "set", line)), static_cast<unsigned>(field(kv, "pmd", line))}] = r;
  }
  return s;
}

std::optional<double> EventResult::percent() const {
  if (enabled_ns == 0) return std::nullopt;
  return 100.0 * static_cast<double>(running_ns) / static_cast<double>(enabled_ns);
}

std::vector<EventResult> results(const std::vector<SetPlan>& sets, const std::vector<Snapshot>& now,
                                 const std::vector<Snapshot>* before) {
  std::vector<EventResult> out;
  for (unsigned set = 0; set < sets.size(); ++set) {
    for (const auto& c : sets[set].counters) {
      EventResult r;
      r.label = c.label;
      r.event = c.event;
      r.mods = c.mods;
      r.set = set;
      bool ran = false;
      std::uint64_t scaled = 0;
      for (std::size_t i = 0; i < now.size(); ++i) {
        auto it = now[i].find({set, c.pmd});
        if (it == now[i].end()) continue;  // this session's counts do not list it: it counted nothing
        Reading d = it->second;
        if (before) {
          if (auto b = (*before)[i].find({set, c.pmd}); b != (*before)[i].end()) {
            // Counters only go up between two readings of one session, but a
            // pmd can be reset by an overflow: wrap-safe differences.
            d.value -= b->second.value;
            d.children -= b->second.children;
            d.enabled_ns -= b->second.enabled_ns;
            d.running_ns -= b->second.running_ns;
          }
        }
        std::uint64_t count = d.value + d.children;
        r.count += count;
        r.enabled_ns += d.enabled_ns;
        r.running_ns += d.running_ns;
        if (d.running_ns) {
          ran = true;
          scaled += scale(count, d.enabled_ns, d.running_ns);
        }
      }
      if (ran) r.scaled = scaled;
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::pair<double, double> meanAndSpread(const std::vector<double>& values) {
  if (values.empty()) return {0, 0};
  double n = static_cast<double>(values.size()), sum = 0;
  for (double v : values) sum += v;
  double mean = sum / n;
  if (values.size() < 2 || mean == 0) return {mean, 0};
  double sq = 0;
  for (double v : values) sq += (v - mean) * (v - mean);
  double stddev = std::sqrt(sq / (n - 1));
  return {mean, 100.0 * (stddev / std::sqrt(n)) / mean};
}

std::vector<Summary> summarize(const std::vector<std::vector<EventResult>>& runs) {
  std::vector<Summary> out;
  if (runs.empty()) return out;
  for (std::size_t e = 0; e < runs[0].size(); ++e) {
    Summary s;
    s.mean = runs[0][e];
    std::vector<double> counts, scaled;
    std::uint64_t enabled = 0, running = 0;
    for (const auto& run : runs) {
      counts.push_back(static_cast<double>(run[e].count));
      if (run[e].scaled) scaled.push_back(static_cast<double>(*run[e].scaled));
      enabled += run[e].enabled_ns;
      running += run[e].running_ns;
    }
    s.mean.count = static_cast<std::uint64_t>(std::llround(meanAndSpread(counts).first));
    s.mean.enabled_ns = enabled / runs.size();
    s.mean.running_ns = running / runs.size();
    if (scaled.empty()) {
      s.mean.scaled.reset();
    } else {
      auto [mean, spread] = meanAndSpread(scaled);
      s.mean.scaled = static_cast<std::uint64_t>(std::llround(mean));
      s.stddev_pct = spread;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace pfmstat
