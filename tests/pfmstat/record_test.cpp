// Unit tests of pfmstat record's and report's pure parts: the data file's
// parser (every malformed line named, garbage never crashing it), the
// sample buffer's layout, /proc maps lines, the event and period record
// picks, and the flat profile with a stub symbolizer.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "pfmstat/data_file.h"
#include "pfmstat/errors.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/proc_maps.h"
#include "pfmstat/profile.h"
#include "pfmstat/record_options.h"
#include "pfmstat/sample_buffer.h"
#include "pfmstat/sampling_plan.h"

namespace pfmstat {
namespace {

std::string dataError(const std::string& text) {
  try {
    parseDataFile(text, "f");
  } catch (const DataError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(DataFile, RoundTrip) {
  char* buf = nullptr;
  std::size_t size = 0;
  std::FILE* f = open_memstream(&buf, &size);
  {
    DataWriter w(f);
    w.meta("command", "make -j2\nx");
    w.comm({7, true, "cc1"});
    w.fork({8, 7});
    w.map({7, 0x1000, 0x2000, 0, "/a dir/lib x.so"});
    w.sample({7, 9, 1, 0x1234, 55});
  }
  std::fclose(f);
  std::string text(buf, size);
  std::free(buf);
  EXPECT_EQ(text,
            "pfmstat-data 1\nmeta command=make -j2 x\ncomm pid=7 exec=1 name=cc1\nfork pid=8 ppid=7\n"
            "map pid=7 start=0x1000 end=0x2000 pgoff=0x0 path=/a dir/lib x.so\n"
            "sample pid=7 tid=9 cpu=1 ip=0x1234 tstamp=55\n");
  DataFile d = parseDataFile(text, "f");
  EXPECT_EQ(d.meta.at("command"), "make -j2 x");
  ASSERT_EQ(d.order.size(), 4u);
  EXPECT_EQ(d.maps.at(0).path, "/a dir/lib x.so");
  EXPECT_EQ(d.samples.at(0).ip, 0x1234u);
  EXPECT_EQ(d.samples.at(0).tid, 9u);
  EXPECT_TRUE(d.comms.at(0).exec);
  EXPECT_EQ(d.forks.at(0).ppid, 7u);
}

TEST(DataFile, RefusesWithTheLine) {
  struct Row {
    int line;
    const char* text;
    const char* error;
  };
  const Row rows[] = {
      {__LINE__, "", "f: not a pfmstat data file (its first line is not 'pfmstat-data 1')"},
      {__LINE__, "perf.data\n", "f: not a pfmstat data file (its first line is not 'pfmstat-data 1')"},
      {__LINE__, "pfmstat-data 9\n", "f: pfmstat data version '9': this pfmstat reads version 1"},
      {__LINE__, "pfmstat-data 1\n\nbogus x\n", "f:3: unknown line type 'bogus'"},
      {__LINE__, "pfmstat-data 1\nsample pid=1\n", "f:2: expected tid="},
      {__LINE__, "pfmstat-data 1\nsample pid=x tid=1 cpu=0 ip=0x1 tstamp=1\n", "f:2: pid= is not a number"},
      {__LINE__, "pfmstat-data 1\nsample pid=4294967296 tid=1 cpu=0 ip=0x1 tstamp=1\n", "f:2: pid= is out of range"},
      {__LINE__, "pfmstat-data 1\nsample pid=1 tid=1 cpu=0 ip=12 tstamp=1\n", "f:2: ip= is not a 0x number"},
      {__LINE__, "pfmstat-data 1\nsample pid=1 tid=1 cpu=0 ip=0x1 tstamp=1 x\n",
       "f:2: unexpected text at the end of the line"},
      {__LINE__, "pfmstat-data 1\nsample pid=1 tid=1 cpu=0 ip=0x1ffffffffffffffff tstamp=1\n",
       "f:2: ip= is out of range"},
      {__LINE__, "pfmstat-data 1\nmap pid=1 start=0x2 end=0x1 pgoff=0x0 path=/x\n", "f:2: end= is not above start="},
      {__LINE__, "pfmstat-data 1\nmap pid=1 start=0x1 end=0x2 pgoff=0x0\n", "f:2: expected path="},
      {__LINE__, "pfmstat-data 1\ncomm pid=1 exec=2 name=x\n", "f:2: exec= is out of range"},
      {__LINE__, "pfmstat-data 1\nmeta\n", "f:2: expected meta KEY=VALUE"},
      {__LINE__, "pfmstat-data 1\nmeta =x\n", "f:2: expected meta KEY=VALUE"},
      {__LINE__, "pfmstat-data 1\n\x01\xff z\n", "f:2: unknown line type '\\x01\\xff'"},
  };
  for (const auto& r : rows) EXPECT_EQ(dataError(r.text), r.error) << "row of line " << r.line;
}

// Garbage of every kind: the parser either accepts it or says which line,
// and never crashes (the fuzzing build's sanitizers see the same loop).
TEST(DataFile, GarbageNeverCrashes) {
  std::mt19937 rng(42);
  const std::string seed =
      "pfmstat-data 1\nmeta a=b\ncomm pid=1 exec=1 name=x\nfork pid=2 ppid=1\n"
      "map pid=1 start=0x1000 end=0x2000 pgoff=0x0 path=/bin/x\nsample pid=1 tid=1 cpu=0 ip=0x1000 tstamp=1\n";
  for (int i = 0; i < 20000; ++i) {
    std::string t = seed;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) {
      std::size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0:
          t[at] = static_cast<char>(rng());
          break;
        case 1:
          t.erase(at, rng() % 8);
          break;
        default:
          t.insert(at, 1, "= x0\n"[rng() % 5]);
      }
    }
    try {
      parseDataFile(t, "f");
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("f", 0), 0u);
    }
  }
}

TEST(SampleBuffer, ParsesEntriesAndChecksTheHeader) {
  std::string b(4096, '\0');
  auto put64 = [&](std::size_t at, std::uint64_t v) { std::memcpy(&b[at], &v, 8); };
  auto put32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(&b[at], &v, 4); };
  put64(0, 2);
  put64(8, 128 + 80);
  put64(16, 3);
  put32(40, 0x10000);
  for (std::uint32_t k = 0; k < 2; ++k) {
    std::size_t at = 128 + 40 * k;
    put32(at, 100 + k);  // tid
    put64(at + 16, 0x401000 + k);
    put64(at + 24, 1000 * k);
    std::uint16_t cpu = 3;
    std::memcpy(&b[at + 32], &cpu, 2);
    put32(at + 36, 100);  // tgid
  }
  SampleBuffer s = parseSampleBuffer(b, 0);
  EXPECT_EQ(s.overflows, 3u);
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_EQ(s.samples[1].tid, 101u);
  EXPECT_EQ(s.samples[1].pid, 100u);
  EXPECT_EQ(s.samples[1].ip, 0x401001u);
  EXPECT_EQ(s.samples[1].tstamp, 1000u);
  EXPECT_EQ(s.samples[1].cpu, 3u);
  put64(8, 128 + 81);  // not a whole number of entries
  EXPECT_THROW(parseSampleBuffer(b, 0), RunError);
  put64(8, 128 + 80);
  put32(40, 0x20000);
  EXPECT_THROW(parseSampleBuffer(b, 0), RunError);
  EXPECT_THROW(parseSampleBuffer(b.substr(0, 100), 0), RunError);
}

TEST(ProcMaps, ExecutableFileMappingsOnly) {
  auto maps = parseProcMaps(
      "00400000-00401000 r--p 00000000 08:01 12 /usr/bin/a b\n"
      "00401000-00402000 r-xp 00001000 08:01 12 /usr/bin/a b\n"
      "7f00-7f10 r-xp 00000000 00:00 0 \n"
      "7ffd1000-7ffd3000 r-xp 00000000 00:00 0                          [vdso]\n"
      "garbage\n",
      5);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(maps[0].path, "/usr/bin/a b");
  EXPECT_EQ(maps[0].pgoff, 0x1000u);
  EXPECT_EQ(maps[1].path, "[vdso]");
}

const char* kSimInfo =
    "backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 "
    "features=fixed_counters,global_ctrl,ovfl_intr,inherit tick_ns=1000000\n";
const char* kSimEvents =
    "name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc=\"c\" pmds=0x2000f\n"
    "name=LLC_MISSES code=0x412e pmcs=0xf desc=\"m\" pmds=0xf\n";
const char* kPerfInfo =
    "backend=perf model=perf-sw pmcs=0xff pmds=0xff counters=8 fixed=0 width=64 features=perf_events,inherit\n";
const char* kPerfEvents =
    "name=TASK_CLOCK code=0x1 pmcs=0xff desc=\"t\" pmds=0xff\nname=PAGE_FAULTS code=0x2 pmcs=0xff desc=\"p\" "
    "pmds=0xff\n";

SamplingPlan plan(const char* info, const char* events, RecordOptions o) {
  return planSampling(o, parsePmuInfo(info), parseEvents(events));
}

TEST(SamplingPlan, DefaultsAndFrequencies) {
  auto sim = plan(kSimInfo, kSimEvents, {});
  EXPECT_EQ(sim.event, "cycles (UNHALTED_CORE_CYCLES)");
  EXPECT_EQ(sim.period, 750000u);  // 3e9/s at 4000 Hz
  EXPECT_EQ(sim.pmd, 17u);
  EXPECT_EQ(sim.set.regs(), "pmc16 0x20\npmd17 -750000 long_reset=-750000 short_reset=-750000 notify\n");
  RecordOptions o;
  o.freq = 1000;
  auto perf = plan(kPerfInfo, kPerfEvents, o);
  EXPECT_EQ(perf.event, "task-clock (TASK_CLOCK)");
  EXPECT_EQ(perf.period, 1000000u);
  EXPECT_EQ(perf.period_from, "-F 1000");
  o = {};
  o.event = "page-faults";
  EXPECT_EQ(plan(kPerfInfo, kPerfEvents, o).period, kDefaultPeriod);
  o.period = 7;
  EXPECT_EQ(plan(kPerfInfo, kPerfEvents, o).period, 7u);
  o.period.reset();
  o.freq = 10;
  EXPECT_THROW(plan(kPerfInfo, kPerfEvents, o), UsageError);
  o = {};
  o.event = "LLC_MISSES,cycles";
  EXPECT_THROW(plan(kSimInfo, kSimEvents, o), UsageError);
}

struct StubResolver : Resolver {
  Symbol resolve(const MapLine* map, std::uint64_t ip) override {
    if (!map) return {"[unknown]", "[unknown]"};
    return {map->path, ip < map->start + 0x10 ? "low" : "high"};
  }
};

TEST(Profile, MapsAfterTheLastExecAndInheritedAtFork) {
  DataFile d = parseDataFile(
      "pfmstat-data 1\n"
      "comm pid=1 exec=1 name=sh\n"
      "map pid=1 start=0x1000 end=0x2000 pgoff=0x0 path=sh\n"
      "fork pid=2 ppid=1\n"
      "comm pid=2 exec=1 name=cc1\n"
      "map pid=2 start=0x1000 end=0x2000 pgoff=0x0 path=cc1\n"
      "fork pid=3 ppid=1\n"
      "sample pid=2 tid=2 cpu=0 ip=0x1000 tstamp=1\n"
      "sample pid=2 tid=2 cpu=0 ip=0x1020 tstamp=2\n"
      "sample pid=2 tid=2 cpu=0 ip=0x1030 tstamp=2\n"
      "sample pid=3 tid=3 cpu=0 ip=0x1000 tstamp=3\n"
      "sample pid=9 tid=9 cpu=0 ip=0x1000 tstamp=3\n",
      "f");
  StubResolver r;
  Profile p = buildProfile(d, r);
  EXPECT_EQ(p.total, 5u);
  ASSERT_EQ(p.by_symbol.size(), 4u);
  EXPECT_EQ(p.by_symbol[0].command, "cc1");
  EXPECT_EQ(p.by_symbol[0].symbol, "high");
  EXPECT_EQ(p.by_symbol[0].samples, 2u);
  EXPECT_EQ(p.by_symbol[1].command, ":9");  // no name, no maps
  EXPECT_EQ(p.by_symbol[1].dso, "[unknown]");
  EXPECT_EQ(p.by_symbol[2].command, "cc1");
  EXPECT_EQ(p.by_symbol[3].command, "sh");  // the fork's child has its parent's maps and name
  EXPECT_EQ(p.by_symbol[3].dso, "sh");
  EXPECT_EQ(p.by_dso[0].dso, "cc1");
  EXPECT_EQ(p.by_dso[0].samples, 3u);
}

TEST(Options, RecordAndReport) {
  auto record = [](std::vector<const char*> args) {
    args.insert(args.begin(), "record");
    args.push_back(nullptr);
    return parseRecordOptions(static_cast<int>(args.size() - 1), const_cast<char**>(args.data()));
  };
  auto o = record({"-c", "100", "-o", "x", "-i", "make", "-j2"});
  EXPECT_EQ(*o.period, 100u);
  EXPECT_EQ(o.output, "x");
  EXPECT_FALSE(o.inherit);
  EXPECT_EQ(o.command, (std::vector<std::string>{"make", "-j2"}));
  EXPECT_THROW(record({"-e", "a", "-e", "b", "x"}), UsageError);
  EXPECT_THROW(record({"-p", "1", "-a"}), UsageError);
  EXPECT_THROW(record({"-a", "-i"}), UsageError);
  EXPECT_THROW(record({"-F", "0", "x"}), UsageError);
  EXPECT_THROW(record({"--bogus", "x"}), UsageError);
  const char* argv[] = {"report", "--sort", "dso", nullptr};
  EXPECT_EQ(parseReportOptions(3, const_cast<char**>(argv)).sort, ReportOptions::Sort::Dso);
  const char* bad[] = {"report", "--sort", "pid", nullptr};
  EXPECT_THROW(parseReportOptions(3, const_cast<char**>(bad)), UsageError);
}

}  // namespace
}  // namespace pfmstat
