// Unit tests of pfmstat's pure parts: its options, the -e syntax, placing
// events on counters and sets, the arithmetic of the results, and the three
// output formats, on the mount texts of the sim and perf-sw PMUs.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "pfmstat/errors.h"
#include "pfmstat/event_plan.h"
#include "pfmstat/options.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/report.h"
#include "pfmstat/results.h"

namespace pfmstat {
namespace {

// What a sim mount's pmu/info and pmu/events say (pfmfs(5)).
const char* kSimInfo =
    "backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 "
    "features=fixed_counters,global_ctrl,ovfl_intr,inherit,fastpath tick_ns=250000 fastpath=@x\n";
const char* kSimEvents =
    "name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc=\"Core cycles while the thread is not halted\" "
    "pmds=0x2000f\n"
    "name=INSTRUCTION_RETIRED code=0xc0 pmcs=0x1000f desc=\"Instructions retired\" pmds=0x1000f "
    "aliases=INSTRUCTIONS_RETIRED\n"
    "name=UNHALTED_REFERENCE_CYCLES code=0x13c pmcs=0x1000f desc=\"Reference cycles\" pmds=0x4000f\n"
    "name=LLC_REFERENCES code=0x4f2e pmcs=0xf desc=\"Last level cache references\" pmds=0xf "
    "aliases=LAST_LEVEL_CACHE_REFERENCES\n"
    "name=LLC_MISSES code=0x412e pmcs=0xf desc=\"Last level cache misses\" pmds=0xf\n"
    "name=BRANCH_INSTRUCTIONS_RETIRED code=0xc4 pmcs=0xf desc=\"Branch \\\"instructions\\\" retired\" pmds=0xf\n"
    "name=BRANCH_MISSES_RETIRED code=0xc5 pmcs=0xf desc=\"Mispredicted branches\" pmds=0xf\n"
    "name=SIM_PHASE_A code=0x1f0 pmcs=0xf desc=\"phase A\" pmds=0xf\n";
const char* kPerfSwInfo =
    "backend=perf model=perf-sw pmcs=0xff pmds=0xff counters=8 fixed=0 width=64 "
    "features=perf_events,software_events,ovfl_intr,inherit\n";
const char* kPerfSwEvents =
    "name=CPU_CLOCK code=0x0 pmcs=0xff desc=\"cpu-clock\" pmds=0xff\n"
    "name=TASK_CLOCK code=0x1 pmcs=0xff desc=\"task-clock\" pmds=0xff\n"
    "name=PAGE_FAULTS code=0x2 pmcs=0xff desc=\"page-faults\" pmds=0xff\n"
    "name=CONTEXT_SWITCHES code=0x3 pmcs=0xff desc=\"context-switches\" pmds=0xff\n";

Options parse(std::initializer_list<const char*> args) {
  std::vector<char*> argv{const_cast<char*>("pfmstat")};
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  return parseOptions(static_cast<int>(argv.size() - 1), argv.data());
}

std::string usageError(std::initializer_list<const char*> args) {
  try {
    parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::vector<SetPlan> plan(const std::vector<std::string>& args, const char* info = kSimInfo,
                          const char* events = kSimEvents) {
  return planSets(parseEventArgs(args), parsePmuInfo(info), parseEvents(events));
}

std::string planError(const std::vector<std::string>& args) {
  try {
    plan(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(placed)";
}

// ---- options -----------------------------------------------------------------

TEST(Options, CommandAfterOptionsWithoutDashDash) {
  Options o = parse({"-e", "cycles", "-e", "{A,B}", "ls", "-l", "/tmp"});
  EXPECT_EQ(o.events, (std::vector<std::string>{"cycles", "{A,B}"}));
  EXPECT_EQ(o.command, (std::vector<std::string>{"ls", "-l", "/tmp"}));
  EXPECT_TRUE(o.inherit);
  EXPECT_EQ(o.repeat, 1u);
  EXPECT_FALSE(o.switch_ms);
}

TEST(Options, EveryOption) {
  Options o = parse({"--switch-ms", "4", "-i", "-x", ";", "-r", "5", "-o", "out", "--mount", "/m", "--", "prog", "-e"});
  EXPECT_EQ(*o.switch_ms, 4u);
  EXPECT_FALSE(o.inherit);
  EXPECT_EQ(parse({"-I", "100", "ls"}).interval_ms, 100u);
  EXPECT_EQ(*o.separator, ";");
  EXPECT_EQ(o.repeat, 5u);
  EXPECT_EQ(o.output, "out");
  EXPECT_EQ(o.mount, "/m");
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "-e"}));
}

TEST(Options, Targets) {
  Options p = parse({"-p", "12,34", "-t", "56"});
  EXPECT_EQ(p.pids, (std::vector<pid_t>{12, 34}));
  EXPECT_EQ(p.tids, (std::vector<pid_t>{56}));
  Options c = parse({"-C", "3,0-1,1"});
  EXPECT_TRUE(c.system);
  EXPECT_EQ(c.cpus, (std::vector<int>{0, 1, 3}));
  Options a = parse({"-a", "--json", "sleep", "1"});
  EXPECT_TRUE(a.system && a.json && a.cpus.empty());
  // -G alone, or with perf's -a (which then changes nothing), no command needed.
  for (Options g : {parse({"-G", "system.slice"}), parse({"-a", "--cgroup", "system.slice"})}) {
    EXPECT_EQ(g.cgroup, "system.slice");
    EXPECT_FALSE(g.system);
    EXPECT_TRUE(g.command.empty());
  }
}

TEST(Options, RefusedWithAReason) {
  EXPECT_EQ(usageError({}), "nothing to count: give a command, -p, -t, -a, -C or -G (pfmstat --help)");
  EXPECT_EQ(usageError({"-G", "g", "-t", "1"}), "-p/-t count threads, -G a control group: choose one");
  EXPECT_EQ(usageError({"-G", "g", "-C", "0"}), "-G counts its group on every cpu: -C does not go with it");
  EXPECT_EQ(usageError({"-G", "g", "-i"}), "--no-inherit is for threads; -G counts a whole control group");
  EXPECT_EQ(usageError({"-G", "g", "-r", "2", "ls"}), "-r and -G do not go together");
  EXPECT_EQ(usageError({"-G", "a", "-G", "b"}), "-G names one control group a run");
  EXPECT_EQ(usageError({"-G", ""}), "-G needs a control group's path");
  EXPECT_EQ(usageError({"-G"}), "-G needs a value");
  EXPECT_EQ(usageError({"-p", "12", "-a"}), "-p/-t count threads, -a/-C cpus: choose one");
  EXPECT_EQ(usageError({"-r", "3", "-p", "1"}), "-r repeats a command: give one");
  EXPECT_EQ(usageError({"-r", "3", "-I", "100", "ls"}), "-r and -I do not go together");
  EXPECT_EQ(usageError({"--json", "-x,", "ls"}), "--json and -x do not go together");
  EXPECT_EQ(usageError({"-a", "-i"}), "--no-inherit is for threads; -a/-C count whole cpus");
  EXPECT_EQ(usageError({"-I", "5", "ls"}), "-I '5' is out of range (10..3600000)");
  EXPECT_EQ(usageError({"-r", "0", "ls"}), "-r '0' is out of range (1..100000)");
  EXPECT_EQ(usageError({"-p", "12,,3"}), "-p '' is not a number");
  EXPECT_EQ(usageError({"-p", "-5"}), "-p '-5' is not a number");
  EXPECT_EQ(usageError({"-C", "3-1"}), "-C '3-1': the range goes down");
  EXPECT_EQ(usageError({"--switch-ms", "0x10", "ls"}), "--switch-ms '0x10' is not a number");
  EXPECT_EQ(usageError({"--bogus", "ls"}), "unknown option --bogus");
  EXPECT_EQ(usageError({"-Z", "ls"}), "unknown option -Z");
  EXPECT_EQ(usageError({"ls", "-e"}), "(accepted)");  // the command's own option
  EXPECT_EQ(usageError({"-e"}), "-e needs a value");
}

// ---- the mount's texts -----------------------------------------------------------

TEST(PmuTable, InfoAndEvents) {
  PmuInfo info = parsePmuInfo(kSimInfo);
  EXPECT_EQ(info.backend, "sim");
  EXPECT_EQ(info.pmds, 0x7000fu);
  EXPECT_EQ(info.counters, 4u);
  EXPECT_EQ(info.fixed, 3u);
  EXPECT_EQ(info.tick_ns, 250000u);
  EXPECT_TRUE(info.has("inherit"));
  EXPECT_FALSE(info.has("inher"));
  EXPECT_EQ(parsePmuInfo(kPerfSwInfo).tick_ns, 1000000u);  // before tick_ns=: the default

  auto events = parseEvents(kSimEvents);
  ASSERT_EQ(events.size(), 8u);
  EXPECT_EQ(events[1].aliases, (std::vector<std::string>{"INSTRUCTIONS_RETIRED"}));
  EXPECT_EQ(events[3].code, 0x4f2eu);
  EXPECT_EQ(parseRecord("a=1 desc=\"x \\\"y\\\" \\\\z\" b=2")["desc"], "x \"y\" \\z");
  EXPECT_THROW(parseRecord("a=1 desc=\"open"), RunError);
  EXPECT_THROW(parsePmuInfo("backend=sim model=x\n"), RunError);
}

TEST(PmuTable, NamesAsUsersWriteThem) {
  auto events = parseEvents(kSimEvents);
  EXPECT_EQ(findEvent(events, "unhalted-core-cycles")->name, "UNHALTED_CORE_CYCLES");
  EXPECT_EQ(findEvent(events, "instructions_retired")->name, "INSTRUCTION_RETIRED");  // an alias
  EXPECT_EQ(findEvent(events, "cycles")->name, "UNHALTED_CORE_CYCLES");               // perf's generic names
  EXPECT_EQ(findEvent(events, "instructions")->name, "INSTRUCTION_RETIRED");
  EXPECT_EQ(findEvent(events, "branch-misses")->name, "BRANCH_MISSES_RETIRED");
  EXPECT_EQ(findEvent(events, "cache-misses")->name, "LLC_MISSES");
  EXPECT_EQ(findEvent(events, "page-faults"), nullptr);
  auto sw = parseEvents(kPerfSwEvents);
  EXPECT_EQ(findEvent(sw, "page-faults")->name, "PAGE_FAULTS");
  EXPECT_EQ(findEvent(sw, "cycles"), nullptr);  // no architectural events on perf-sw
}

// ---- -e and placing ---------------------------------------------------------------

TEST(EventArgs, ListsGroupsAndModifiers) {
  auto groups = parseEventArgs({"cycles,instructions:k", "{a:u:k,b},c", "r1003c:uk"});
  ASSERT_EQ(groups.size(), 5u);
  EXPECT_FALSE(groups[0].grouped);
  EXPECT_EQ(groups[1].events[0].text, "instructions:k");
  EXPECT_TRUE(!groups[1].events[0].user && groups[1].events[0].kernel);
  EXPECT_TRUE(groups[2].grouped);
  ASSERT_EQ(groups[2].events.size(), 2u);
  EXPECT_TRUE(groups[2].events[0].user && groups[2].events[0].kernel);
  EXPECT_TRUE(groups[2].events[1].user && !groups[2].events[1].kernel);  // :u is the default
  EXPECT_EQ(groups[3].events[0].name, "c");
  EXPECT_TRUE(groups[4].events[0].raw);
  EXPECT_EQ(groups[4].events[0].code, 0x1003cu);
}

TEST(EventArgs, Refused) {
  auto error = [](const std::string& arg) {
    try {
      parseEventArgs({arg});
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error("{a,b"), "-e '{a,b': a '{' without its '}'");
  EXPECT_EQ(error("a,b}"), "-e 'a,b}': a '}' without its '{'");
  EXPECT_EQ(error("{a,{b}}"), "-e '{a,{b}}': groups do not nest");
  EXPECT_EQ(error("{a,b}:u"), "-e '{a,b}:u': a group ends with '}' (modifiers go on each event)");
  EXPECT_EQ(error("a,,b"), "an empty event name in -e");
  EXPECT_EQ(error("cycles:x"), "'cycles:x': unknown modifier 'x' (pfmstat knows :u and :k)");
  EXPECT_EQ(error(":u"), "':u': no event name before ':'");
  EXPECT_EQ(error("r123456789"), "'r123456789': a raw event is r and at most 8 hex digits (PERFEVTSEL's bits 31:0)");
}

TEST(Plan, FixedCountersFirstThenGeneral) {
  auto sets = plan({"cycles,instructions,LLC_MISSES,cycles:k"});
  ASSERT_EQ(sets.size(), 1u);
  const auto& c = sets[0].counters;
  ASSERT_EQ(c.size(), 4u);
  EXPECT_TRUE(c[0].fixed);
  EXPECT_EQ(c[0].pmd, 17u);  // cycles: FIXED_CTR1
  EXPECT_EQ(c[1].pmd, 16u);  // instructions: FIXED_CTR0
  EXPECT_EQ(c[2].pmd, 0u);
  EXPECT_EQ(c[3].pmd, 1u);  // the fixed counter is taken: a general one
  EXPECT_EQ(sets[0].regs(), "pmc0 LLC_MISSES:u\npmc1 UNHALTED_CORE_CYCLES:k\npmc16 0x22\n");
  // :u:k on a fixed counter: both privilege bits of its field.
  EXPECT_EQ(plan({"instructions:u:k"})[0].regs(), "pmc16 0x3\n");
  EXPECT_EQ(plan({"r1003c"})[0].regs(), "pmc0 0x1003c\n");
  EXPECT_EQ(plan({"r3c:k"})[0].regs(), "pmc0 0x2003c\n");
}

TEST(Plan, GroupsAreSetsLooseEventsPack) {
  // 4 general counters: the fifth loose general-only event opens a second set.
  auto sets = plan({"LLC_MISSES,LLC_REFERENCES,BRANCH_MISSES_RETIRED,SIM_PHASE_A,BRANCH_INSTRUCTIONS_RETIRED"});
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0].counters.size(), 4u);
  EXPECT_EQ(sets[1].counters[0].label, "BRANCH_INSTRUCTIONS_RETIRED");
  EXPECT_EQ(sets[1].counters[0].pmd, 0u);

  // A group is a set of its own; loose events after it go on filling the
  // loose set, so that no set runs less than it must.
  auto g = plan({"cycles", "{LLC_MISSES,SIM_PHASE_A}", "instructions"});
  ASSERT_EQ(g.size(), 2u);
  ASSERT_EQ(g[0].counters.size(), 2u);
  EXPECT_EQ(g[0].counters[1].label, "instructions");
  EXPECT_EQ(g[1].counters.size(), 2u);
  EXPECT_EQ(g[1].counters[0].label, "LLC_MISSES");
}

TEST(Plan, Refused) {
  EXPECT_EQ(planError({"nosuch"}), "unknown event 'nosuch' (the mount's pmu/events lists them)");
  EXPECT_EQ(planError({"{LLC_MISSES,LLC_REFERENCES,BRANCH_MISSES_RETIRED,SIM_PHASE_A,BRANCH_INSTRUCTIONS_RETIRED}"}),
            "group {LLC_MISSES,LLC_REFERENCES,BRANCH_MISSES_RETIRED,SIM_PHASE_A,BRANCH_INSTRUCTIONS_RETIRED} does not "
            "fit in one event set: this PMU has 4 general and 3 fixed counters (split the group)");
  // An unknown name anywhere is reported before anything is placed.
  EXPECT_EQ(planError({"cycles", "{instructions,bogus}"}), "unknown event 'bogus' (the mount's pmu/events lists them)");
}

TEST(Plan, DefaultEventsByPmu) {
  auto sim = defaultEvents(parseEvents(kSimEvents));
  ASSERT_EQ(sim.size(), 4u);
  EXPECT_EQ(sim[0].events[0].text, "UNHALTED_CORE_CYCLES");
  EXPECT_EQ(sim[3].events[0].text, "BRANCH_MISSES_RETIRED");
  auto sw = defaultEvents(parseEvents(kPerfSwEvents));
  ASSERT_EQ(sw.size(), 2u);
  EXPECT_EQ(sw[0].events[0].text, "TASK_CLOCK");
  EXPECT_EQ(sw[1].events[0].text, "PAGE_FAULTS");
}

// ---- results ------------------------------------------------------------------------

TEST(Results, ScaledPerSessionAndSummed) {
  auto sets = plan({"{LLC_MISSES}", "{SIM_PHASE_A}"});
  Snapshot a = parseCounts(
      "set=0 pmd=0 value=100 enabled_ns=1000 running_ns=500 scaled=200\n"
      "set=1 pmd=0 value=7 enabled_ns=1000 running_ns=500 scaled=14 children=3 total_scaled=20\n");
  Snapshot b = parseCounts("set=0 pmd=0 value=30 enabled_ns=300 running_ns=100 scaled=90\n");
  auto r = results(sets, {a, b});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].count, 130u);
  EXPECT_EQ(*r[0].scaled, 200u + 90u);  // each session scaled by its own times
  EXPECT_EQ(r[0].enabled_ns, 1300u);
  EXPECT_EQ(r[0].running_ns, 600u);
  EXPECT_NEAR(*r[0].percent(), 100.0 * 600 / 1300, 1e-9);
  EXPECT_EQ(r[1].count, 10u);  // the children's events count too
  EXPECT_EQ(*r[1].scaled, 20u);
  EXPECT_EQ(r[1].set, 1u);
}

TEST(Results, NotCountedAndIntervals) {
  auto sets = plan({"LLC_MISSES"});
  Snapshot never = parseCounts("set=0 pmd=0 value=0 enabled_ns=500 running_ns=0 scaled=-\n");
  auto r = results(sets, {never});
  EXPECT_FALSE(r[0].scaled);
  EXPECT_EQ(results(sets, {Snapshot{}})[0].percent(), std::nullopt);
  Snapshot t1 = parseCounts("set=0 pmd=0 value=100 enabled_ns=1000 running_ns=500 scaled=200\n");
  Snapshot t2 = parseCounts("set=0 pmd=0 value=160 enabled_ns=2000 running_ns=800 scaled=400\n");
  std::vector<Snapshot> before{t1};
  auto d = results(sets, {t2}, &before);
  EXPECT_EQ(d[0].count, 60u);
  EXPECT_EQ(*d[0].scaled, 200u);  // 60 × 1000 / 300
  EXPECT_EQ(d[0].enabled_ns, 1000u);
  EXPECT_EQ(d[0].running_ns, 300u);
  // A product past 64 bits (the mount computes it in 128).
  Snapshot big =
      parseCounts("set=0 pmd=0 value=18446744073709551 enabled_ns=4000000000 running_ns=2000000000 scaled=-\n");
  EXPECT_EQ(*results(sets, {big})[0].scaled, 36893488147419102u);
  EXPECT_THROW(parseCounts("set=0 pmd=0 value=x enabled_ns=1 running_ns=1\n"), RunError);
}

TEST(Results, RepeatsMeanAndSpread) {
  auto [mean, spread] = meanAndSpread({3e6, 6e6, 9e6});
  EXPECT_DOUBLE_EQ(mean, 6e6);
  // stddev 3e6; of the mean 3e6/sqrt(3); in % of 6e6.
  EXPECT_NEAR(spread, 28.8675134595, 1e-9);
  EXPECT_EQ(meanAndSpread({5}).second, 0);
  EventResult a{"x", 0, 10, 20, 100, 50, {}, {}}, b{"x", 0, 20, 40, 100, 50, {}, {}},
      c{"x", 0, 30, std::nullopt, 100, 0, {}, {}};
  auto s = summarize({{a}, {b}, {c}});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].mean.count, 20u);
  EXPECT_EQ(*s[0].mean.scaled, 30u);  // over the runs where it ran
  EXPECT_EQ(s[0].mean.running_ns, 33u);
}

// ---- output ----------------------------------------------------------------------------

TEST(Report, Table) {
  EventResult r{"cycles", 0, 1500000, 3000000, 1000000, 500000, {}, {}};
  EventResult n{"LLC_MISSES", 1, 0, std::nullopt, 1000000, 0, {}, {}};
  std::vector<Summary> s{{r, 0}, {n, 0}};
  EXPECT_EQ(finalReport(ReportStyle{}, "'prog a'", s, 1, 0.25, 0, 0),
            "\n Performance counter stats for 'prog a':\n\n"
            "             count  event                                    scaled    running\n"
            "         1,500,000  cycles                                3,000,000   (50.00%)\n"
            "     <not counted>  LLC_MISSES                                    -    (0.00%)\n"
            "\n       0.250000000 seconds time elapsed\n\n");
  std::vector<Summary> rep{{r, 1.5}};
  EXPECT_EQ(finalReport(ReportStyle{}, "'p'", rep, 3, 0.5, 2.25, 0),
            "\n Performance counter stats for 'p' (3 runs):\n\n"
            "             count  event                                    scaled    running\n"
            "         1,500,000  cycles                                3,000,000   (50.00%)  ( +- 1.50% )\n"
            "\n       0.500000000 seconds time elapsed  ( +- 2.25% )\n\n");
}

TEST(Report, CsvAndJson) {
  EventResult r{"cycles", 0, 1500000, 3000000, 1000000, 500000, {}, {}};
  EventResult n{"a\"b", 1, 0, std::nullopt, 0, 0, {}, {}};
  std::vector<Summary> s{{r, 0}, {n, 0}};
  EXPECT_EQ(finalReport(ReportStyle{Format::Csv, ";"}, "'p'", s, 1, 0.25, 0, 3),
            "1500000;cycles;3000000;500000;1000000;50.00\n0;a\"b;;0;0;\n");
  EXPECT_EQ(finalReport(ReportStyle{Format::Json, ","}, "'p'", s, 1, 0.25, 0, 3),
            "{\"event\":\"cycles\",\"set\":0,\"count\":1500000,\"scaled\":3000000,\"enabled_ns\":1000000,"
            "\"running_ns\":500000,\"percent\":50.00}\n"
            "{\"event\":\"a\\\"b\",\"set\":1,\"count\":0,\"scaled\":null,\"enabled_ns\":0,\"running_ns\":0,\"percent\":"
            "null}\n"
            "{\"target\":\"'p'\",\"runs\":1,\"elapsed_ns\":250000000,\"exit_status\":3}\n");
  EXPECT_EQ(intervalReport(ReportStyle{Format::Csv, ","}, 1.5, {r}, true),
            "1.500000000,1500000,cycles,3000000,500000,1000000,50.00\n");
  EXPECT_EQ(intervalReport(ReportStyle{}, 1.5, {r}, true),
            "#           time               count  event                                    scaled    running\n"
            "     1.500000000           1,500,000  cycles                                3,000,000   (50.00%)\n");
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1000), "1,000");
  EXPECT_EQ(jsonString("a\nb"), "\"a\\u000ab\"");
}

}  // namespace
}  // namespace pfmstat
