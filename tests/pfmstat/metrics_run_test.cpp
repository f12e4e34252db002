// Unit tests of pfmstat's derived metrics in a run: placing -M's events on
// sets (planSets with GroupSpec::metric), their values from the results
// (metricValues) and the three output formats with metrics. Their formulas
// and tables: metrics_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pfmstat/event_plan.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/metrics.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/report.h"
#include "pfmstat/results.h"

namespace pfmstat {
namespace {

// A sim mount's pmu/info and pmu/events (pfmfs(5)): 4 general counters, 3 fixed.
const char* kSimInfo =
    "backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 "
    "features=fixed_counters,global_ctrl,ovfl_intr,inherit tick_ns=250000\n";
const char* kSimEvents =
    "name=UNHALTED_CORE_CYCLES code=0x3c pmds=0x2000f\n"
    "name=INSTRUCTION_RETIRED code=0xc0 pmds=0x1000f aliases=INSTRUCTIONS_RETIRED\n"
    "name=UNHALTED_REFERENCE_CYCLES code=0x13c pmds=0x4000f\n"
    "name=LLC_REFERENCES code=0x4f2e pmds=0xf\n"
    "name=LLC_MISSES code=0x412e pmds=0xf\n"
    "name=BRANCH_INSTRUCTIONS_RETIRED code=0xc4 pmds=0xf\n"
    "name=BRANCH_MISSES_RETIRED code=0xc5 pmds=0xf\n"
    "name=SIM_PHASE_A code=0x1f0 pmds=0xf\n";

const MetricTable& table() {
  static const MetricTable kTable = [] {
    MetricTable t;
    t.addText(
        "metric=ipc expr=\"instructions / cycles\" unit=\"insn per cycle\" groups=default\n"
        "metric=cpi expr=\"cycles / instructions\" unit=\"cycles per insn\"\n"
        "metric=ghz expr=\"cycles / time_ns\" unit=\"GHz\" groups=default\n"
        "metric=turbo expr=\"cycles / ref_cycles\"\n"
        "metric=brm expr=\"100 * branch_misses / branches\" unit=\"%\"\n"
        "metric=wide expr=\"LLC_MISSES + LLC_REFERENCES + BRANCH_MISSES_RETIRED + BRANCH_INSTRUCTIONS_RETIRED"
        " + SIM_PHASE_A + llc_misses\"\n"
        "metric=cpns expr=\"(cycles + instructions) / time_ns\" unit=\"per ns\"\n"
        "metric=huge expr=\"instructions * 1e308 * 1e308\"\n"
        "metric=nspi expr=\"time_ns / instructions\"\n",
        "t");
    return t;
  }();
  return kTable;
}

// The sets as "label@pmd,... | ...".
std::string planWith(const std::vector<std::string>& e, const std::vector<std::string>& m) {
  auto events = parseEvents(kSimEvents);
  auto groups = parseEventArgs(e);
  for (auto& g : metricGroups(metricsFor(table(), m, events))) groups.push_back(std::move(g));
  std::string out;
  for (const auto& s : planSets(groups, parsePmuInfo(kSimInfo), events)) {
    std::string set;
    for (const auto& c : s.counters) set += fmt::format("{}{}@{}", set.empty() ? "" : ",", c.label, c.pmd);
    out += (out.empty() ? "" : " | ") + set;
  }
  return out;
}

// ---- placing -M's events ----------------------------------------------------------

TEST(MetricPlan, AMetricAloneIsOneSet) {
  EXPECT_EQ(planWith({}, {"ipc"}), "instructions@16,cycles@17");
  auto events = parseEvents(kSimEvents);
  auto groups = metricGroups(metricsFor(table(), {"ipc"}, events));
  ASSERT_EQ(groups.size(), 1u);  // the default ghz is not asked: it adds nothing
  EXPECT_TRUE(groups[0].metric && !groups[0].grouped);
  EXPECT_EQ(planSets(groups, parsePmuInfo(kSimInfo), events)[0].regs(), "pmc16 0x22\n");
  EXPECT_EQ(planWith({}, {"ghz"}), "cycles@17");  // time_ns is counted by no counter
}

TEST(MetricPlan, SharesWhatASetCountsAlready) {
  EXPECT_EQ(planWith({"cycles"}, {"ipc"}), "cycles@17,instructions@16");
  EXPECT_EQ(planWith({}, {"ipc", "cpi", "turbo"}), "instructions@16,cycles@17,ref_cycles@18");
  // Metrics in table order (ipc, then brm), each adding what the set lacks.
  EXPECT_EQ(planWith({"LLC_MISSES", "branches"}, {"brm", "ipc"}),
            "LLC_MISSES@0,branches@1,instructions@16,cycles@17,branch_misses@2");
  // Other modifiers are another count: cycles:k lends nothing to cycles(:u).
  EXPECT_EQ(planWith({"cycles:k"}, {"ipc"}), "cycles:k@17,instructions@16,cycles@0");
}

TEST(MetricPlan, JoinsAGroupWithRoomElseASetOfItsOwn) {
  EXPECT_EQ(planWith({"{LLC_MISSES}"}, {"ipc"}), "LLC_MISSES@0,instructions@16,cycles@17");
  // No room for branches beside branch-misses: both again, together, in a new set.
  EXPECT_EQ(planWith({"{LLC_MISSES,LLC_REFERENCES,SIM_PHASE_A,branch-misses}"}, {"brm"}),
            "LLC_MISSES@0,LLC_REFERENCES@1,SIM_PHASE_A@2,branch-misses@3 | branch_misses@0,branches@1");
}

TEST(MetricPlan, MoreEventsThanASetHoldsAreSpread) {
  // Five general-only events (LLC_MISSES named twice), four general counters.
  const char* spread =
      "LLC_MISSES@0,LLC_REFERENCES@1,BRANCH_MISSES_RETIRED@2,BRANCH_INSTRUCTIONS_RETIRED@3 | SIM_PHASE_A@0";
  EXPECT_EQ(planWith({}, {"wide"}), spread);
  EXPECT_EQ(planWith({"LLC_MISSES"}, {"wide"}), spread);  // the loose set's LLC_MISSES serves
  EXPECT_EQ(planWith({"{LLC_MISSES}", "cycles"}, {"wide"}),
            "LLC_MISSES@0 | cycles@17,LLC_REFERENCES@0,BRANCH_MISSES_RETIRED@1,BRANCH_INSTRUCTIONS_RETIRED@2,"
            "SIM_PHASE_A@3");
}

// ---- their values ---------------------------------------------------------------------

const char* kC = "UNHALTED_CORE_CYCLES";
const char* kI = "INSTRUCTION_RETIRED";

EventResult res(const char* label, unsigned set, std::uint64_t count, std::optional<std::uint64_t> scaled,
                std::uint64_t enabled_ns, std::uint64_t running_ns, const char* event, const char* mods = ":u") {
  return EventResult{label, set, count, scaled, enabled_ns, running_ns, event, mods};
}

// Each value as "name=VALUE[~]@anchor" (VALUE: every digit, or none).
std::vector<std::string> values(const std::vector<std::string>& asked, const std::vector<EventResult>& results) {
  std::vector<std::string> out;
  for (const auto& v : metricValues(metricsFor(table(), asked, parseEvents(kSimEvents)), results))
    out.push_back(fmt::format("{}={}{}@{}", v.metric->name, v.value ? fmt::format("{}", *v.value) : "none",
                              v.estimate ? "~" : "", v.anchor));
  return out;
}

using Strings = std::vector<std::string>;

TEST(MetricValues, ExactFromOneSetThatRanPartly) {
  // The set ran 30% of the time: the counts of the same 30%, its running time.
  // (Scaled numbers made inconsistent on purpose: they must not be used.)
  std::vector<EventResult> r{res("cycles", 0, 3000, 9000, 1000, 300, kC),
                             res("LLC_MISSES", 0, 10, 33, 1000, 300, "LLC_MISSES"),
                             res("instructions", 0, 6000, 30000, 1000, 300, kI)};
  EXPECT_EQ(values({}, r), (Strings{"ipc=2@2", "ghz=10@0"}));  // beside instructions, cycles
  EXPECT_EQ(values({"cpns"}, r), (Strings{"ipc=2@2", "ghz=10@0", "cpns=30@0"}));
  EXPECT_EQ(values({"nspi"}, r), (Strings{"ipc=2@2", "ghz=10@0", "nspi=0.05@2"}));  // beside its first event
}

TEST(MetricValues, EstimateAcrossSets) {
  std::vector<EventResult> r{res("cycles", 0, 1000, 4000, 2000, 500, kC),
                             res("instructions", 1, 1500, 5000, 1000, 300, kI)};
  // ipc and cpns from the scaled counts, cpns's time the enabled time of its
  // first event's; ghz's events are all in set 0: exact.
  EXPECT_EQ(values({"cpns"}, r), (Strings{"ipc=1.25~@1", "ghz=2@0", "cpns=4.5~@0"}));
  // A set that counts both wins over the estimate, wherever it is.
  r.push_back(res("LLC_MISSES", 2, 1, 1, 1000, 200, "LLC_MISSES"));
  r.push_back(res("cycles", 2, 400, 2000, 1000, 200, kC));
  r.push_back(res("instructions", 2, 1200, 6000, 1000, 200, kI));
  EXPECT_EQ(values({}, r), (Strings{"ipc=3@4", "ghz=2@0"}));
}

TEST(MetricValues, NoValue) {
  // A set that never ran: there, but no value.
  std::vector<EventResult> never{res("cycles", 0, 0, std::nullopt, 1000, 0, kC),
                                 res("instructions", 0, 0, std::nullopt, 1000, 0, kI)};
  EXPECT_EQ(values({}, never), (Strings{"ipc=none@1", "ghz=none@0"}));
  std::vector<EventResult> half{res("cycles", 0, 10, 20, 1000, 500, kC),
                                res("instructions", 1, 0, std::nullopt, 1000, 0, kI)};
  EXPECT_EQ(values({}, half), (Strings{"ipc=none~@1", "ghz=0.02@0"}));
  // Division by zero; a value past double's range.
  std::vector<EventResult> zero{res("cycles", 0, 0, 0, 1000, 1000, kC), res("instructions", 0, 5, 5, 1000, 1000, kI)};
  EXPECT_EQ(values({"huge"}, zero), (Strings{"ipc=none@1", "ghz=0@0", "huge=none@1"}));
  // Events not counted at all: no metric.
  EXPECT_EQ(values({}, {res("LLC_MISSES", 0, 1, 1, 1, 1, "LLC_MISSES")}), Strings{});
  EXPECT_EQ(values({}, {}), Strings{});
}

TEST(MetricValues, ModifiersAreNotMixed) {
  // cycles:k and instructions(:u) in one set are no ratio of one thing.
  std::vector<EventResult> r{res("cycles:k", 0, 100, 100, 100, 100, kC, ":k"),
                             res("instructions", 0, 300, 300, 100, 100, kI, ":u")};
  EXPECT_EQ(values({}, r), (Strings{"ghz=1@0"}));
  // instructions:k elsewhere: an estimate of the :k ratio.
  r.insert(r.begin() + 1, res("instructions:k", 1, 200, 400, 100, 50, kI, ":k"));
  EXPECT_EQ(values({}, r), (Strings{"ipc=4~@1", "ghz=1@0"}));
  // Both modifiers in one set: exact, with the first's.
  std::vector<EventResult> uk{res("instructions:u:k", 0, 900, 900, 100, 100, kI, ":u:k"),
                              res("cycles", 0, 100, 100, 100, 100, kC, ":u"),
                              res("cycles:u:k", 0, 300, 300, 100, 100, kC, ":u:k")};
  EXPECT_EQ(values({}, uk), (Strings{"ipc=3@0", "ghz=1@1"}));
}

TEST(MetricValues, ASetThatRanWinsOverOneThatDidNot) {
  // With -I, set 0 may not run in an interval where set 1 does: its counts.
  std::vector<EventResult> r{res("cycles", 0, 0, std::nullopt, 100, 0, kC),
                             res("instructions", 0, 0, std::nullopt, 100, 0, kI), res("cycles", 1, 10, 20, 100, 50, kC),
                             res("instructions", 1, 30, 60, 100, 50, kI)};
  EXPECT_EQ(values({}, r), (Strings{"ipc=3@3", "ghz=0.2@2"}));
}

TEST(MetricValues, AnEstimateTriesEachModifierOfTheFirstEvent) {
  // instructions:u has no cycles:u anywhere; instructions:k and cycles:k,
  // in two sets, make the estimate.
  std::vector<EventResult> r{res("instructions", 0, 10, 10, 100, 100, kI, ":u"),
                             res("cycles:k", 1, 100, 200, 100, 50, kC, ":k"),
                             res("instructions:k", 2, 300, 600, 100, 50, kI, ":k")};
  EXPECT_EQ(values({}, r), (Strings{"ipc=3~@2", "ghz=2@1"}));
}

// ---- output -----------------------------------------------------------------------------

const Metric& metric(const char* name) { return *table().find(name); }

MetricValue mv(const char* name, std::optional<double> value, bool estimate, std::size_t anchor) {
  return MetricValue{&metric(name), value, estimate, anchor};
}

const EventResult kCycles = res("cycles", 0, 1500000, 3000000, 1000000, 500000, kC);
const EventResult kInsns = res("instructions", 0, 3000000, 6000000, 1000000, 500000, kI);
const EventResult kLlc = res("LLC_MISSES", 1, 0, std::nullopt, 1000000, 0, "LLC_MISSES");
const std::string kBeside(78, ' ');  // under an event's line: the width of the line

TEST(MetricReport, Table) {
  std::vector<Summary> s{{kCycles, 1.5}, {kInsns, 0.25}, {kLlc, 0}};
  std::vector<MetricValue> m{mv("ipc", 2, false, 1), mv("ghz", 1.25, true, 0), mv("cpi", 0.5, false, 1),
                             mv("turbo", std::nullopt, false, 2)};
  const char* head = "             count  event                                    scaled    running\n";
  EXPECT_EQ(finalReport(ReportStyle{}, "'p'", s, 1, 0.25, 0, 0, m),
            std::string("\n Performance counter stats for 'p':\n\n") + head +
                "         1,500,000  cycles                                3,000,000   (50.00%)  #       ~1.250 GHz\n"
                "         3,000,000  instructions                          6,000,000   (50.00%)  #        2.000 insn "
                "per cycle\n" +
                kBeside + "  #        0.500 cycles per insn\n" +
                "     <not counted>  LLC_MISSES                                    -    (0.00%)  #            - turbo\n"
                "\n  ~ an estimate: the metric's events were counted in different sets, multiplexed (pfmstat(1))\n"
                "\n       0.250000000 seconds time elapsed\n\n");
  // -r: the spread after the metric; no estimate, no note.
  m[1].estimate = false;
  EXPECT_EQ(finalReport(ReportStyle{}, "'p'", s, 3, 0.5, 2.25, 0, m),
            std::string("\n Performance counter stats for 'p' (3 runs):\n\n") + head +
                "         1,500,000  cycles                                3,000,000   (50.00%)  #        1.250 GHz"
                "  ( +- 1.50% )\n"
                "         3,000,000  instructions                          6,000,000   (50.00%)  #        2.000 insn "
                "per cycle  ( +- 0.25% )\n" +
                kBeside + "  #        0.500 cycles per insn\n" +
                "     <not counted>  LLC_MISSES                                    -    (0.00%)  #            - turbo"
                "  ( +- 0.00% )\n"
                "\n       0.500000000 seconds time elapsed  ( +- 2.25% )\n\n");
}

TEST(MetricReport, TableIntervals) {
  std::vector<MetricValue> m{mv("ipc", 2, false, 1), mv("cpi", 0.5, false, 1)};
  EXPECT_EQ(intervalReport(ReportStyle{}, 1.5, {kCycles, kInsns}, true, m),
            "#           time               count  event                                    scaled    running\n"
            "     1.500000000           1,500,000  cycles                                3,000,000   (50.00%)\n"
            "     1.500000000           3,000,000  instructions                          6,000,000   (50.00%)  #"
            "        2.000 insn per cycle\n" +
                std::string(18, ' ') + kBeside + "  #        0.500 cycles per insn\n");
}

TEST(MetricReport, Csv) {
  std::vector<Summary> s{{kCycles, 1.5}, {kLlc, 0}};
  std::vector<MetricValue> m{mv("ipc", 2, false, 0), mv("ghz", 1.25, true, 0), mv("turbo", std::nullopt, false, 1),
                             mv("cpns", 0.1 + 0.2, false, 0)};
  const char* metrics =
      "2;ipc;insn per cycle;exact\n"
      "1.25;ghz;GHz;estimate\n"
      ";turbo;;exact\n"
      "0.30000000000000004;cpns;per ns;exact\n";  // every digit
  EXPECT_EQ(finalReport(ReportStyle{Format::Csv, ";"}, "'p'", s, 1, 0.25, 0, 0, m),
            std::string("1500000;cycles;3000000;500000;1000000;50.00\n0;LLC_MISSES;;0;1000000;0.00\n") + metrics);
  EXPECT_EQ(
      finalReport(ReportStyle{Format::Csv, ";"}, "'p'", s, 2, 0.25, 0, 0, m),
      std::string("1500000;cycles;3000000;500000;1000000;50.00;1.50\n0;LLC_MISSES;;0;1000000;0.00;0.00\n") + metrics);
  EXPECT_EQ(intervalReport(ReportStyle{Format::Csv, ","}, 1.5, {kCycles}, true, {m[0], m[2]}),
            "1.500000000,1500000,cycles,3000000,500000,1000000,50.00\n"
            "1.500000000,2,ipc,insn per cycle,exact\n"
            "1.500000000,,turbo,,exact\n");
}

TEST(MetricReport, Json) {
  std::vector<Summary> s{{kCycles, 0}};
  std::vector<MetricValue> m{mv("ipc", 2, false, 0), mv("ghz", 1.25, true, 0), mv("turbo", std::nullopt, false, 0)};
  const char* cycles =
      "\"event\":\"cycles\",\"set\":0,\"count\":1500000,\"scaled\":3000000,\"enabled_ns\":1000000,"
      "\"running_ns\":500000,\"percent\":50.00}\n";
  EXPECT_EQ(finalReport(ReportStyle{Format::Json, ","}, "'p'", s, 1, 0.25, 0, 0, m),
            std::string("{") + cycles +
                "{\"metric\":\"ipc\",\"value\":2,\"unit\":\"insn per cycle\",\"estimate\":false}\n"
                "{\"metric\":\"ghz\",\"value\":1.25,\"unit\":\"GHz\",\"estimate\":true}\n"
                "{\"metric\":\"turbo\",\"value\":null,\"unit\":\"\",\"estimate\":false}\n"
                "{\"target\":\"'p'\",\"runs\":1,\"elapsed_ns\":250000000,\"exit_status\":0}\n");
  EXPECT_EQ(intervalReport(ReportStyle{Format::Json, ","}, 1.5, {kCycles}, false, {m[1], m[2]}),
            std::string("{\"interval\":1.500000000,") + cycles +
                "{\"interval\":1.500000000,\"metric\":\"ghz\",\"value\":1.25,\"unit\":\"GHz\",\"estimate\":true}\n"
                "{\"interval\":1.500000000,\"metric\":\"turbo\",\"value\":null,\"unit\":\"\",\"estimate\":false}\n");
}

// BUG (reported, not fixed): the later metrics of an event are indented by
// a fixed 78 columns, its line by its length; a label past 28 characters
// (BRANCH_INSTRUCTIONS_RETIRED:u:k) puts them out of line with the first.
TEST(MetricReport, LaterMetricsAlignedAfterALongLabel) {
  EventResult longer =
      res("BRANCH_INSTRUCTIONS_RETIRED:u:k", 0, 100, 100, 100, 100, "BRANCH_INSTRUCTIONS_RETIRED", ":u:k");
  std::string out =
      intervalReport(ReportStyle{}, 1.5, {longer}, false, {mv("ipc", 2, false, 0), mv("cpi", 0.5, false, 0)});
  auto nl = out.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(out.find('#'), out.find('#', nl) - (nl + 1)) << out;
}

}  // namespace
}  // namespace pfmstat
