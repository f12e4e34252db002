// pfmstat's parsers against what must hold of any input: a refusal is a
// UsageError (RunError for the mount's text) with one printable line; an
// accepted -e list places every event once, on a counter the event may use
// and no other event of its set holds; a cpu list agrees with a reference
// parse; a counts file reads back to itself; a metrics table is refused
// whole with its line, or lists back (--list-metrics) to the same table.
#include "pfmstat_oracles.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "oracle_check.h"
#include "pfmstat/errors.h"
#include "pfmstat/event_plan.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/metrics.h"
#include "pfmstat/options.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/results.h"

namespace pfmfs::fuzz {
namespace {

// The default sim mount's pmu/info and pmu/events, as pfmstat reads them.
const pfmstat::PmuInfo& simInfo() {
  static const auto info = pfmstat::parsePmuInfo(
      "backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 "
      "features=fixed_counters,global_ctrl,ovfl_intr,inherit tick_ns=1000000\n");
  return info;
}

const std::vector<pfmstat::EventInfo>& simEvents() {
  static const auto events = pfmstat::parseEvents(
      "name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc=\"cycles\" pmds=0x2000f\n"
      "name=INSTRUCTION_RETIRED code=0xc0 pmcs=0x1000f desc=\"instructions\" pmds=0x1000f "
      "aliases=INSTRUCTIONS_RETIRED\n"
      "name=UNHALTED_REFERENCE_CYCLES code=0x13c pmcs=0x1000f desc=\"reference cycles\" pmds=0x4000f\n"
      "name=LLC_REFERENCES code=0x4f2e pmcs=0xf desc=\"llc references\" pmds=0xf\n"
      "name=LLC_MISSES code=0x412e pmcs=0xf desc=\"llc misses\" pmds=0xf\n"
      "name=SIM_PHASE_A code=0x1f0 pmcs=0xf desc=\"phase A\" pmds=0xf\n");
  return events;
}

std::vector<std::string> lines(std::string_view in) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= in.size()) {
    std::size_t nl = in.find('\n', start);
    out.emplace_back(in.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

void refusal(const std::exception& e, const Check& check) {
  check(oneLinePrintable(e.what()), std::string("refused without a one-line printable reason: '") + e.what() + "'");
}

// The reference of parseCpuList: N or A-B items, plain decimal, 0..65535.
std::optional<std::set<int>> referenceCpus(std::string_view in) {
  std::set<int> cpus;
  auto num = [](std::string_view t) -> std::optional<int> {
    if (t.empty()) return std::nullopt;
    long v = 0;
    for (char c : t) {
      if (c < '0' || c > '9') return std::nullopt;
      v = std::min(v * 10 + (c - '0'), 1'000'000L);  // leading zeros are fine; past 65535 is not
    }
    return v <= 65535 ? std::optional<int>(static_cast<int>(v)) : std::nullopt;
  };
  std::size_t start = 0;
  while (true) {
    std::size_t comma = in.find(',', start);
    std::string_view item = in.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t dash = item.find('-');
    auto lo = num(item.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : num(item.substr(dash + 1));
    if (!lo || !hi || *lo > *hi) return std::nullopt;
    for (int c = *lo; c <= *hi; ++c) cpus.insert(c);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return cpus;
}

}  // namespace

bool pfmstatEvents(std::string_view in, Fail fail) {
  Check check{fail, in};
  std::vector<pfmstat::GroupSpec> groups;
  try {
    groups = pfmstat::parseEventArgs(lines(in));
  } catch (const pfmstat::UsageError& e) {
    refusal(e, check);
    return false;
  }
  std::size_t events = 0;
  for (const auto& g : groups) {
    check(!g.events.empty(), "an empty group accepted");
    check(g.grouped || g.events.size() == 1, "a loose event in a group of several");
    for (const auto& e : g.events) {
      ++events;
      check(!e.text.empty() && e.text.find_first_of(",{}") == std::string::npos, "an event text with a separator");
      check(e.user || e.kernel, "an event counting at no level");
      check(e.text.compare(0, e.name.size(), e.name) == 0, "the name is not the start of the text");
    }
  }
  std::vector<pfmstat::SetPlan> sets;
  try {
    sets = pfmstat::planSets(groups, simInfo(), simEvents());
  } catch (const pfmstat::UsageError& e) {
    refusal(e, check);
    return false;
  }
  std::size_t placed = 0;
  for (const auto& set : sets) {
    check(!set.counters.empty(), "an empty set");
    std::uint64_t used = 0;
    for (const auto& c : set.counters) {
      ++placed;
      check(c.pmd < 64 && (simInfo().pmds >> c.pmd & 1), "an event on a counter the PMU does not have");
      check(!(used >> c.pmd & 1), "two events of a set on one counter");
      used |= 1ull << c.pmd;
      check(c.fixed == (c.pmd >= 16), "a fixed counter configured as a general one, or the reverse");
      check(c.fixed ? (c.field != 0 && c.pmc_value.empty()) : !c.pmc_value.empty(), "a counter without its setting");
    }
    check(oneLinePrintable(set.regs().substr(0, set.regs().find('\n'))), "a regs line that is not printable");
  }
  check(placed == events, "events lost or added on the way to the sets");
  return true;
}

bool pfmstatCpuList(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto ref = referenceCpus(in);
  try {
    auto cpus = pfmstat::parseCpuList(std::string(in), "-C");
    check(ref.has_value(), "a cpu list the reference refuses accepted");
    if (ref) check(std::set<int>(cpus.begin(), cpus.end()) == *ref, "a cpu list read as other cpus");
    check(std::is_sorted(cpus.begin(), cpus.end()) && std::adjacent_find(cpus.begin(), cpus.end()) == cpus.end(),
          "cpus not sorted, or repeated");
    return true;
  } catch (const pfmstat::UsageError& e) {
    check(!ref.has_value(), "a cpu list the reference accepts refused");
    refusal(e, check);
    return false;
  }
}

bool pfmstatCounts(std::string_view in, Fail fail) {
  Check check{fail, in};
  pfmstat::Snapshot snap;
  try {
    snap = pfmstat::parseCounts(in);
  } catch (const pfmstat::RunError& e) {
    refusal(e, check);
    return false;
  }
  std::string again;
  for (const auto& [key, r] : snap)
    again += fmt::format("set={} pmd={} value={} enabled_ns={} running_ns={} children={}\n", key.first, key.second,
                         r.value, r.enabled_ns, r.running_ns, r.children);
  try {
    auto back = pfmstat::parseCounts(again);
    check(back.size() == snap.size(), "counts read back to another number of counters");
    for (const auto& [key, r] : snap) {
      auto it = back.find(key);
      check(it != back.end() && it->second.value == r.value && it->second.enabled_ns == r.enabled_ns &&
                it->second.running_ns == r.running_ns && it->second.children == r.children,
            "counts read back to other numbers");
    }
  } catch (const pfmstat::RunError& e) {
    check(false, std::string("counts written back refused: ") + e.what());
  }
  return true;
}

bool pfmstatMetrics(std::string_view in, Fail fail) {
  Check check{fail, in};
  pfmstat::MetricTable table;
  try {
    table.addText(std::string(in), "fuzz");
  } catch (const pfmstat::UsageError& e) {
    refusal(e, check);
    check(std::string_view(e.what()).substr(0, 5) == "fuzz:", "a refusal that does not name its line");
    check(table.metrics().empty(), "a refused table added metrics");
    return false;
  }
  // Every formula name an event of a PMU, so that the listing shows every
  // metric; the listing is a table that reads back to the same metrics.
  std::vector<pfmstat::EventInfo> events;
  for (const auto& m : table.metrics()) {
    (void)m.expr.eval([](const std::string&) { return 1.0; });
    for (const auto& name : m.expr.names())
      if (!pfmstat::isTimeName(name)) events.push_back(pfmstat::EventInfo{name, 0, 1, {}});
  }
  pfmstat::MetricTable back;
  try {
    back.addText(pfmstat::metricList(table, events), "list");
  } catch (const pfmstat::UsageError& e) {
    check(false, std::string("the listing of an accepted table refused: ") + e.what());
    return true;
  }
  check(back.metrics().size() == table.metrics().size(), "the listing has another number of metrics");
  for (std::size_t i = 0; i < std::min(back.metrics().size(), table.metrics().size()); ++i) {
    const auto &a = table.metrics()[i], &b = back.metrics()[i];
    check(a.name == b.name && a.expr.text() == b.expr.text() && a.unit == b.unit && a.groups == b.groups &&
              a.desc == b.desc && a.expr.names() == b.expr.names(),
          "a metric listed as another");
  }
  return true;
}

}  // namespace pfmfs::fuzz
