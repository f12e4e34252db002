// Unit tests of pfmstat's derived metrics, their definitions: the formula
// (MetricExpr), the tables (MetricTable, loadMetricTables) and which metrics
// a PMU can show (metricsFor, metricList). Placing their events, their values
// and their output: metrics_run_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pfmstat/errors.h"
#include "pfmstat/metric_expr.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/metrics.h"
#include "pfmstat/mount_files.h"
#include "pfmstat/pmu_table.h"

#ifndef PFMSTAT_METRICS_TABLE
#error "tests/meson.build passes the source tree's pfmstat/metrics.table"
#endif

namespace pfmstat {
namespace {

// The sim's pmu/events and perf-sw's, as their mounts list them (pfmfs(5)).
const char* kSimEvents =
    "name=UNHALTED_CORE_CYCLES code=0x3c pmds=0x2000f\n"
    "name=INSTRUCTION_RETIRED code=0xc0 pmds=0x1000f aliases=INSTRUCTIONS_RETIRED\n"
    "name=UNHALTED_REFERENCE_CYCLES code=0x13c pmds=0x4000f\n"
    "name=LLC_REFERENCES code=0x4f2e pmds=0xf\n"
    "name=LLC_MISSES code=0x412e pmds=0xf\n"
    "name=BRANCH_INSTRUCTIONS_RETIRED code=0xc4 pmds=0xf\n"
    "name=BRANCH_MISSES_RETIRED code=0xc5 pmds=0xf\n";
const char* kPerfSwEvents =
    "name=TASK_CLOCK code=0x1 pmds=0xff\n"
    "name=PAGE_FAULTS code=0x2 pmds=0xff\n"
    "name=CONTEXT_SWITCHES code=0x3 pmds=0xff\n"
    "name=CPU_MIGRATIONS code=0x4 pmds=0xff\n"
    "name=MINOR_FAULTS code=0x5 pmds=0xff\n"
    "name=MAJOR_FAULTS code=0x6 pmds=0xff\n";

std::string usageError(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string exprError(const std::string& text) {
  return usageError([&] { MetricExpr::parse(text); });
}

std::optional<double> eval(const std::string& text, const std::map<std::string, double>& values) {
  return MetricExpr::parse(text).eval([&](const std::string& name) -> std::optional<double> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  });
}

std::string tableError(MetricTable& t, const std::string& text) {
  return usageError([&] { t.addText(text, "f"); });
}

std::string tableError(const std::string& text) {
  MetricTable t;
  return tableError(t, text);
}

std::vector<std::string> namesOf(const std::vector<const Metric*>& ms) {
  std::vector<std::string> out;
  for (const Metric* m : ms) out.push_back(m->name);
  return out;
}

std::vector<std::string> namesOf(const MetricTable& t) {
  std::vector<std::string> out;
  for (const auto& m : t.metrics()) out.push_back(m.name);
  return out;
}

MetricTable installed() {
  MetricTable t;
  t.addFile(PFMSTAT_METRICS_TABLE);
  return t;
}

// ---- the formula -----------------------------------------------------------------

TEST(MetricExpr, Precedence) {
  std::map<std::string, double> v{{"a", 24}, {"b", 4}, {"c", 2}};
  EXPECT_EQ(eval("a + b * c", v), 32);
  EXPECT_EQ(eval("(a + b) * c", v), 56);
  EXPECT_EQ(eval("a - b - c", v), 18);   // (a - b) - c, not a - (b - c) = 22
  EXPECT_EQ(eval("a / b / c", v), 3);    // (a / b) / c, not a / (b / c) = 12
  EXPECT_EQ(eval("a-b*c/b", v), 22);     // no blanks needed
  EXPECT_EQ(eval("\ta\t*\tc ", v), 48);  // a tab is a blank
}

TEST(MetricExpr, UnaryMinus) {
  std::map<std::string, double> v{{"a", 3}, {"b", 5}};
  EXPECT_EQ(eval("-a", v), -3);
  EXPECT_EQ(eval("- -a", v), 3);
  EXPECT_EQ(eval("--a", v), 3);
  EXPECT_EQ(eval("2 * -a", v), -6);
  EXPECT_EQ(eval("-a + b", v), 2);  // (-a) + b, not -(a + b)
  EXPECT_EQ(eval("b - -a", v), 8);
  EXPECT_EQ(eval("-(a - b)", v), 2);
}

TEST(MetricExpr, Numbers) {
  std::map<std::string, double> v{{"a", 2}};
  EXPECT_EQ(eval("1e9 * a", v), 2e9);
  EXPECT_EQ(eval("1E3 * a", v), 2000);
  EXPECT_EQ(eval("0.5 * a", v), 1);
  EXPECT_EQ(eval(".5 * a", v), 1);
  EXPECT_EQ(eval("2.5e-1 * a", v), 0.5);
  EXPECT_EQ(eval("a-1e+1", v), -8);
  EXPECT_EQ(eval("1e-1-a", v), 0.1 - 2);  // the '-' after a digit is a minus
  EXPECT_EQ(exprError("0x10 * a"), "unexpected 'x' at column 2");
  EXPECT_EQ(exprError("1e * a"), "'1e' is not a number");
  EXPECT_EQ(exprError("1e999 * a"), "'1e999' is not a number");  // infinity
  EXPECT_EQ(eval("1e-999 + a", {{"a", 2}}), 2);                  // an underflow is 0
  EXPECT_EQ(exprError("   "), "an empty formula");
  EXPECT_EQ(exprError("1.2.3 * a"), "'1.2.3' is not a number");
  EXPECT_EQ(exprError(". * a"), "'.' is not a number");
  EXPECT_EQ(exprError("1e999 * a"), "'1e999' is not a number");
}

TEST(MetricExpr, NamesOnceInOrderAndTime) {
  auto e = MetricExpr::parse("b / a + b * c + a - TIME_NS");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"b", "a", "c", "TIME_NS"}));
  EXPECT_EQ(e.text(), "b / a + b * c + a - TIME_NS");
  EXPECT_EQ(eval("b / a + b * c + a - TIME_NS", {{"a", 2}, {"b", 4}, {"c", 3}, {"TIME_NS", 1}}), 2 + 12 + 2 - 1);
  EXPECT_TRUE(isTimeName("time_ns"));
  EXPECT_TRUE(isTimeName("TIME_NS"));
  EXPECT_TRUE(isTimeName("Time_Ns"));
  EXPECT_FALSE(isTimeName("time_n"));
  EXPECT_FALSE(isTimeName("time_nss"));
  EXPECT_FALSE(isTimeName("timens"));
  EXPECT_FALSE(isTimeName("cycles"));
}

TEST(MetricExpr, UndefinedValues) {
  EXPECT_EQ(eval("a / b", {{"a", 1}, {"b", 0}}), std::nullopt);
  EXPECT_EQ(eval("a / (b - b)", {{"a", 1}, {"b", 7}}), std::nullopt);
  EXPECT_EQ(eval("0 / a", {{"a", 4}}), 0);
  EXPECT_EQ(eval("a + c", {{"a", 1}}), std::nullopt);  // c has no value
  EXPECT_EQ(eval("-c", {{"a", 1}}), std::nullopt);
  EXPECT_EQ(eval("0 * c + a", {{"a", 1}}), std::nullopt);
}

TEST(MetricExpr, Refused) {
  EXPECT_EQ(exprError(""), "an empty formula");
  EXPECT_EQ(exprError("a +"), "the formula ends where a value was expected");
  EXPECT_EQ(exprError("a * -"), "the formula ends where a value was expected");
  EXPECT_EQ(exprError("(a"), "the '(' at column 1 is not closed");
  EXPECT_EQ(exprError("b * ((a)"), "the '(' at column 5 is not closed");
  EXPECT_EQ(exprError("a )"), "unexpected ')' at column 3");
  EXPECT_EQ(exprError("()"), "unexpected ')' at column 2");
  EXPECT_EQ(exprError("a b"), "unexpected 'b' at column 3");
  EXPECT_EQ(exprError("$"), "unexpected '$' at column 1");
  EXPECT_EQ(exprError("a % b"), "unexpected '%' at column 3");
  EXPECT_EQ(exprError("1 + 2"), "the formula names no event");
  EXPECT_EQ(exprError("time_ns"), "the formula names no event");
  EXPECT_EQ(exprError("1e9 / TIME_NS"), "the formula names no event");
  EXPECT_EQ(exprError("a\nb"), "a control character in the formula");
  EXPECT_EQ(exprError("a\r"), "a control character in the formula");
  EXPECT_EQ(exprError("a \x7f"), "unexpected '\\x7f' at column 3");  // printable in the reason
}

TEST(MetricExpr, DeepNestingRefusedWithoutCrashing) {
  std::string parens = std::string(64, '(') + "a" + std::string(64, ')');
  EXPECT_EQ(eval(parens, {{"a", 5}}), 5);
  EXPECT_EQ(exprError("(" + parens + ")"), "nested more than 64 deep");
  EXPECT_EQ(eval(std::string(64, '-') + "a", {{"a", 5}}), 5);
  EXPECT_EQ(exprError(std::string(65, '-') + "a"), "nested more than 64 deep");
  EXPECT_EQ(exprError(std::string(100000, '(')), "nested more than 64 deep");
  EXPECT_EQ(exprError(std::string(100000, '-') + "a"), "nested more than 64 deep");
  EXPECT_EQ(exprError(std::string(100000, '(') + "a" + std::string(100000, ')')), "nested more than 64 deep");
  // A long flat chain is no nesting, but evaluating it recurses once per
  // operator: 512 terms (1023 nodes) and no more.
  std::string chain = "a";
  for (int i = 1; i < 512; ++i) chain += "+a";
  EXPECT_EQ(eval(chain, {{"a", 1}}), 512);
  EXPECT_EQ(exprError(chain + "+a"), "more than 1024 terms and operators");
}

// ---- the tables ------------------------------------------------------------------

TEST(MetricTable, TheInstalledTable) {
  MetricTable t = installed();
  struct Want {
    const char* name;
    const char* expr;
    const char* unit;
    std::vector<std::string> groups;
  };
  for (const Want& w : {
           Want{"ipc", "instructions / cycles", "insn per cycle", {"default", "pipeline"}},
           Want{"cpi", "cycles / instructions", "cycles per insn", {"pipeline"}},
           Want{"ghz", "cycles / time_ns", "GHz", {"default", "pipeline"}},
           Want{"branch_miss_ratio", "100 * branch_misses / branches", "% of branches", {"default", "branches"}},
           Want{"page_faults_per_sec", "1e9 * page_faults / time_ns", "/sec", {"default", "software"}},
       }) {
    const Metric* m = t.find(w.name);
    ASSERT_NE(m, nullptr) << w.name;
    EXPECT_EQ(m->expr.text(), w.expr) << w.name;
    EXPECT_EQ(m->unit, w.unit) << w.name;
    EXPECT_EQ(m->groups, w.groups) << w.name;
    EXPECT_FALSE(m->desc.empty()) << w.name;
    EXPECT_EQ(m->origin.rfind(std::string(PFMSTAT_METRICS_TABLE) + ":", 0), 0u) << m->origin;
  }
  // Every line names a metric once; the table is one of them.
  EXPECT_EQ(metricList(t, parseEvents(kSimEvents))
                .find("metric=ipc expr=\"instructions / cycles\" unit=\"insn per "
                      "cycle\" groups=default,pipeline desc=\""),
            0u);
}

TEST(MetricTable, ALineAndItsFields) {
  MetricTable t;
  t.addText(
      "# a comment\n\n  metric=a_1 expr=\"x / y\" unit=\"u v\" groups=g1,g_2 desc=\"say \\\"hi\\\" \\\\ \\n\" # c\n"
      "metric=b expr=x*2\r\n"
      "\tmetric=c\texpr=x",
      "f");
  EXPECT_EQ(namesOf(t), (std::vector<std::string>{"a_1", "b", "c"}));
  const Metric& a = t.metrics()[0];
  EXPECT_EQ(a.expr.text(), "x / y");
  EXPECT_EQ(a.unit, "u v");
  EXPECT_EQ(a.groups, (std::vector<std::string>{"g1", "g_2"}));
  EXPECT_EQ(a.desc, "say \"hi\" \\ \\n");  // \" and \\ are escapes; any other \ stays
  EXPECT_EQ(a.origin, "f:3");
  EXPECT_TRUE(a.inGroup("g_2"));
  EXPECT_FALSE(a.inGroup("g"));
  EXPECT_EQ(t.metrics()[1].expr.text(), "x*2");  // \r\n ends a line too
  EXPECT_EQ(t.metrics()[1].origin, "f:4");
  EXPECT_EQ(t.metrics()[2].origin, "f:5");
  t.addText("metric=" + std::string(64, 'n') + " expr=x", "f");  // the longest name
  EXPECT_EQ(t.metrics()[3].name, std::string(64, 'n'));
}

TEST(MetricTable, RefusedWithFileAndLine) {
  EXPECT_EQ(tableError("# one\n\nmetric=a expr=x\n   \ngarbage\nmetric=b expr=y\n"), "f:5: 'garbage' is not key=value");
  EXPECT_EQ(tableError("=x metric=a expr=x"), "f:1: '=' with no key before it");
  EXPECT_EQ(tableError("metric=a expr=x color=red"), "f:1: unknown key 'color' (metric, expr, unit, groups, desc)");
  EXPECT_EQ(tableError("metric=a expr=x unit=a unit=b"), "f:1: unit is given twice");
  EXPECT_EQ(tableError("expr=x unit=u"), "f:1: no metric= name");
  EXPECT_EQ(tableError("\nmetric=a unit=u"), "f:2: no expr= formula");
  EXPECT_EQ(tableError("metric=a expr=\"a +\""), "f:1: expr: the formula ends where a value was expected");
  EXPECT_EQ(tableError("metric=a expr=\"1 + 2\""), "f:1: expr: the formula names no event");
  const char* name_rule = "': lower case letters, digits and _, a letter first";
  EXPECT_EQ(tableError("metric=Ipc expr=x"), std::string("f:1: metric name 'Ipc") + name_rule);
  EXPECT_EQ(tableError("metric=9a expr=x"), std::string("f:1: metric name '9a") + name_rule);
  EXPECT_EQ(tableError("metric=_a expr=x"), std::string("f:1: metric name '_a") + name_rule);
  EXPECT_EQ(tableError("metric=a-b expr=x"), std::string("f:1: metric name 'a-b") + name_rule);
  std::string long_name(65, 'n');
  EXPECT_EQ(tableError("metric=" + long_name + " expr=x"), "f:1: metric name '" + long_name + name_rule);
  EXPECT_EQ(tableError("metric=a expr=x groups=default,Pipe"), std::string("f:1: group name 'Pipe") + name_rule);
  EXPECT_EQ(tableError("metric=a expr=x groups=a,,b"), std::string("f:1: group name '") + name_rule);
  EXPECT_EQ(tableError("metric=a expr=\"x / y"), "f:1: expr: the quoted value is not closed");
  EXPECT_EQ(tableError("metric=a expr=x desc=\"ends \\\""), "f:1: desc: the quoted value is not closed");
  EXPECT_EQ(tableError("metric=a expr=\"x\"y"), "f:1: expr: text right after the quote");
  EXPECT_EQ(tableError("metric=a expr=x unit=\"a\tb\""), "f:1: unit and desc are printable ASCII");
  EXPECT_EQ(tableError("metric=a expr=x desc=\"\x7f\""), "f:1: unit and desc are printable ASCII");
  EXPECT_EQ(tableError("metric=a expr=x unit=\"\xc2\xb5s\""), "f:1: unit and desc are printable ASCII");
  EXPECT_EQ(tableError("metric=a expr=x\n#\nmetric=b expr=y\nmetric=a expr=z\n"),
            "f:4: metric a is defined at f:1 already");
  EXPECT_EQ(tableError(std::string("metric=a expr=x\nmetric=b expr=y\0z\n", 34)), "f:2: a NUL byte");
}

TEST(MetricTable, LongLines) {
  std::string line = "metric=a expr=x desc=\"";
  std::string at_limit = line + std::string(4096 - line.size() - 1, 'd') + "\"";
  ASSERT_EQ(at_limit.size(), 4096u);
  EXPECT_EQ(tableError("#\n" + at_limit + "\n"), "(accepted)");
  EXPECT_EQ(tableError("#\n" + at_limit + " "), "f:2: longer than 4096 bytes");
  EXPECT_EQ(tableError("#" + std::string(5000, '#') + "\n"), "f:1: longer than 4096 bytes");  // even a comment
}

TEST(MetricTable, AllOrNothingAndLaterTablesReplace) {
  MetricTable t;
  t.addText("metric=a expr=x unit=u1 groups=g\nmetric=b expr=y groups=g\n", "one");
  EXPECT_EQ(tableError(t, "metric=c expr=z\nmetric=a expr=w\nmetric=d expr\n"), "f:3: 'expr' is not key=value");
  EXPECT_EQ(namesOf(t), (std::vector<std::string>{"a", "b"}));  // nothing of the bad file
  EXPECT_EQ(t.find("a")->unit, "u1");

  t.addText("metric=c expr=z groups=g\nmetric=a expr=w unit=u2\n", "two");
  EXPECT_EQ(namesOf(t), (std::vector<std::string>{"a", "b", "c"}));  // a keeps its place
  const Metric* a = t.find("a");
  EXPECT_EQ(a->expr.text(), "w");
  EXPECT_EQ(a->unit, "u2");
  EXPECT_TRUE(a->groups.empty());  // the whole line replaced
  EXPECT_EQ(a->origin, "two:2");
  EXPECT_EQ(t.find("c")->origin, "two:1");
  EXPECT_EQ(t.find("nosuch"), nullptr);

  EXPECT_EQ(namesOf(t.select("a")), (std::vector<std::string>{"a"}));
  EXPECT_EQ(namesOf(t.select("g")), (std::vector<std::string>{"b", "c"}));  // table order
  EXPECT_EQ(usageError([&] { t.select("nosuch"); }),
            "-M nosuch: no such metric or metric group (pfmstat --list-metrics)");
  EXPECT_EQ(usageError([&] { t.select("A"); }), "-M A: no such metric or metric group (pfmstat --list-metrics)");
}

// Sets a variable for a test's time and puts back what it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(MetricTable, LoadedFromTheUsersAndExtraFiles) {
  char tmpl[] = "/tmp/pfmstat_metrics_XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::filesystem::path dir(tmpl);
  writeText(dir / "xdg/pfmfs/metrics", "# mine\nmetric=ipc expr=\"instructions / cycles\" unit=\"IPC\"\n");
  writeText(dir / "home/.config/pfmfs/metrics", "metric=from_home expr=x\n");
  writeText(dir / "extra", "metric=extra_one expr=\"a / b\" unit=\"x\"\n");
  std::string installed_path = installedTablePath();
  MetricTable base;
  if (::access(installed_path.c_str(), F_OK) == 0) base.addFile(installed_path);
  auto count = [](const MetricTable& t, const std::string& name) { return t.find(name) ? 1u : 0u; };
  {
    ScopedEnv xdg("XDG_CONFIG_HOME", (dir / "xdg").string());
    ScopedEnv home("HOME", (dir / "home").string());
    MetricTable t = loadMetricTables({(dir / "extra").string()});
    ASSERT_NE(t.find("ipc"), nullptr);
    EXPECT_EQ(t.find("ipc")->unit, "IPC");
    EXPECT_EQ(t.find("ipc")->origin, (dir / "xdg/pfmfs/metrics").string() + ":2");
    ASSERT_NE(t.find("extra_one"), nullptr);
    EXPECT_EQ(t.find("extra_one")->origin, (dir / "extra").string() + ":1");
    EXPECT_EQ(t.find("from_home"), nullptr);  // XDG_CONFIG_HOME first
    EXPECT_EQ(t.metrics().size(), base.metrics().size() + 2 - count(base, "ipc"));
    EXPECT_EQ(t.metrics().back().name, "extra_one");
    EXPECT_EQ(usageError([&] {
                loadMetricTables({(dir / "extra").string(), (dir / "nosuch").string()});
              }),
              "metrics table: cannot open " + (dir / "nosuch").string() + ": No such file or directory");
  }
  {
    ScopedEnv xdg("XDG_CONFIG_HOME", "relative/dir");  // not absolute: ignored, as the XDG spec says
    ScopedEnv home("HOME", (dir / "home").string());
    MetricTable t = loadMetricTables({});
    EXPECT_NE(t.find("from_home"), nullptr);
    EXPECT_EQ(t.metrics().size(), base.metrics().size() + 1);
  }
  std::filesystem::remove_all(dir);
}

// ---- which metrics a PMU shows --------------------------------------------------------

std::vector<std::string> shown(const std::vector<BoundMetric>& ms) {
  std::vector<std::string> out;
  for (const auto& b : ms) out.push_back(b.metric->name + (b.asked ? "(asked)" : ""));
  return out;
}

TEST(MetricsFor, DefaultsOnEachPmu) {
  MetricTable t = installed();
  auto sim = metricsFor(t, {}, parseEvents(kSimEvents));
  EXPECT_EQ(shown(sim), (std::vector<std::string>{"ipc", "ghz", "branch_miss_ratio", "cache_miss_ratio"}));
  EXPECT_EQ(sim[0].events, (std::vector<std::string>{"INSTRUCTION_RETIRED", "UNHALTED_CORE_CYCLES"}));
  EXPECT_EQ(sim[1].events, (std::vector<std::string>{"UNHALTED_CORE_CYCLES", ""}));  // time_ns is no event
  auto sw = metricsFor(t, {}, parseEvents(kPerfSwEvents));
  EXPECT_EQ(shown(sw),
            (std::vector<std::string>{"page_faults_per_sec", "context_switches_per_sec", "cpu_migrations_per_sec"}));
  EXPECT_EQ(sw[0].events, (std::vector<std::string>{"PAGE_FAULTS", ""}));
  EXPECT_TRUE(metricsFor(MetricTable{}, {}, parseEvents(kSimEvents)).empty());
}

TEST(MetricsFor, AskedByNameOrGroup) {
  MetricTable t = installed();
  auto sim = parseEvents(kSimEvents), sw = parseEvents(kPerfSwEvents);
  EXPECT_EQ(shown(metricsFor(t, {"cpi", "ipc", "cpi"}, sim)),
            (std::vector<std::string>{"ipc(asked)", "cpi(asked)", "ghz", "branch_miss_ratio", "cache_miss_ratio"}));
  EXPECT_EQ(
      shown(metricsFor(t, {"branches"}, sim)),
      (std::vector<std::string>{"ipc", "ghz", "branch_miss_ratio(asked)", "branch_mpki(asked)", "cache_miss_ratio"}));
  EXPECT_EQ(shown(metricsFor(t, {"software"}, sw)),
            (std::vector<std::string>{"page_faults_per_sec(asked)", "context_switches_per_sec(asked)",
                                      "cpu_migrations_per_sec(asked)", "major_fault_ratio(asked)"}));
  EXPECT_EQ(metricsFor(t, {"major_fault_ratio"}, sw)[3].events,
            (std::vector<std::string>{"MAJOR_FAULTS", "PAGE_FAULTS"}));

  MetricTable own;
  own.addText("#\nmetric=pf expr=\"page_faults / cycles\" groups=mixed\nmetric=i expr=instructions groups=mixed\n",
              "t");
  EXPECT_EQ(usageError([&] {
              metricsFor(own, {"i", "pf"}, sim);
            }),
            "-M pf: metric pf needs event 'page_faults', which this PMU does not have (t:2)");
  // Of a group, the metrics that apply; an error only when none does.
  EXPECT_EQ(shown(metricsFor(own, {"mixed"}, sim)), (std::vector<std::string>{"i(asked)"}));
  EXPECT_EQ(usageError([&] { metricsFor(own, {"mixed"}, sw); }),
            "-M mixed: no metric of this group applies on this PMU (i needs event 'instructions')");
  EXPECT_EQ(usageError([&] { metricsFor(own, {"nosuch"}, sim); }),
            "-M nosuch: no such metric or metric group (pfmstat --list-metrics)");
}

TEST(MetricsFor, ListIsATable) {
  MetricTable t;
  t.addText(
      "metric=q expr=\"cycles / time_ns\" unit=\"a \\\"q\\\" \\\\\" desc=\"d\"\n"
      "metric=sw expr=page_faults groups=x,y\n"
      "metric=bare expr=instructions\n",
      "f");
  std::string list = metricList(t, parseEvents(kSimEvents));
  EXPECT_EQ(list,
            "metric=q expr=\"cycles / time_ns\" unit=\"a \\\"q\\\" \\\\\" desc=\"d\"\n"
            "metric=bare expr=\"instructions\"\n");
  MetricTable again;
  again.addText(list, "list");
  EXPECT_EQ(again.find("q")->unit, "a \"q\" \\");
}

}  // namespace
}  // namespace pfmstat
