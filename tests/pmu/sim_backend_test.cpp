// Unit tests of the sim backend (pfmfs(5), "The sim PMU"): shapes, attaching to threads and
// CPUs, the manual and the real clock, overflow reports and their skid,
// hold(), gone(), and the sampling period the engine relies on without
// interrupts.
#include "pmu/sim/sim_backend.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "pmu/host_info.h"
#include "pmu/intel_arch_perfmon.h"
#include "tests/support/cpu_time.h"
#include "tests/support/worker_thread.h"

namespace pfmfs::pmu::sim {
namespace {

using namespace std::chrono_literals;
using pfmfs::testing::burnCpu;
using pfmfs::testing::nowNs;
using pfmfs::testing::waitOffCpu;
using pfmfs::testing::Worker;

// How long a test waits for what must happen: generous, it costs nothing
// when the thing happens.
constexpr auto kPatience = std::chrono::minutes(1);

pid_t gettidNow() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::unique_ptr<SimBackend> make(ClockKind clock, unsigned counters = 4, unsigned width = 48, bool interrupts = true) {
  SimOptions o;
  o.shape = intel::Shape{counters, width};
  o.clock = clock;
  o.interrupts = interrupts;
  auto b = SimBackend::create(o);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().reason);
  return b.ok() ? std::move(*b) : nullptr;
}

Target thread(pid_t tid) { return Target{TargetKind::Thread, tid}; }
Target cpu(int n) { return Target{TargetKind::Cpu, n}; }

// A tid no thread can have: pids are below pid_max.
pid_t impossibleTid() {
  std::ifstream f("/proc/sys/kernel/pid_max");
  long max = 0;
  f >> max;
  return max > 0 ? static_cast<pid_t>(max) : 4194304;
}

// The highest online cpu (0 on a single-cpu machine).
int lastOnlineCpu() {
  int last = 0;
  for (int c = 0; c < 4096; ++c)
    if (cpuOnline(c)) last = c;
  return last;
}

// ---------------------------------------------------------------- create

TEST(SimBackendCreate, RejectsBadShapes) {
  for (auto [n, w] : {std::pair{0u, 48u}, {9u, 48u}, {4u, 15u}, {4u, 65u}, {4u, 0u}}) {
    SimOptions o;
    o.shape = intel::Shape{n, w};
    auto b = SimBackend::create(o);
    ASSERT_FALSE(b.ok()) << n << " x " << w;
    EXPECT_EQ(b.code(), -EINVAL);
  }
}

TEST(SimBackendCreate, AcceptsEveryShapeInRange) {
  for (unsigned n = 1; n <= 8; ++n)
    for (unsigned w : {16u, 17u, 32u, 48u, 63u, 64u}) {
      SimOptions o;
      o.shape = intel::Shape{n, w};
      auto b = SimBackend::create(o);
      ASSERT_TRUE(b.ok()) << n << " x " << w << ": " << b.error().reason;
      EXPECT_TRUE((*b)->description().validate().empty());
      EXPECT_EQ((*b)->description().width(), w);
      EXPECT_EQ((*b)->description().pmds.size(), n + 3);
      EXPECT_EQ((*b)->events().size(), 9u) << "the default table";
    }
}

TEST(SimBackendCreate, RejectsEventsTheShapeCannotCount) {
  SimOptions o;
  o.shape = intel::Shape{2, 48};
  o.events = defaultEvents(4);  // names pmd2 and pmd3
  auto b = SimBackend::create(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.code(), -EINVAL);
}

TEST(SimBackendCreate, RejectsAFixedCounterForAnotherEvent) {
  SimOptions o;
  // FIXED_CTR0 (pmd16) counts instructions, not event 0x77.
  o.events = {SimEvent{EventDesc{"OTHER", 0x77, regBit(0) | regBit(16), ""}, EventRate::constant(1, 1), Ring::User}};
  auto b = SimBackend::create(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.code(), -EINVAL);
}

TEST(SimBackendCreate, Properties) {
  auto b = make(ClockKind::Manual, 4, 48, false);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name(), "sim");
  EXPECT_EQ(b->clock(), ClockKind::Manual);
  EXPECT_FALSE(b->interruptsOnOverflow());
  EXPECT_TRUE(b->exclusiveThreads());
  EXPECT_EQ(b->msrWrites(), 0u);
  EXPECT_EQ(b->description().model, "intel-arch-v2");
  auto r = make(ClockKind::Real);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->clock(), ClockKind::Real);
  EXPECT_TRUE(r->interruptsOnOverflow());
}

TEST(SimBackendCreate, Skid) {
  for (std::uint64_t skid : {std::uint64_t{0}, std::uint64_t{1}, kMaxSkid}) {
    SimOptions o;
    o.skid = skid;
    auto b = SimBackend::create(o);
    ASSERT_TRUE(b.ok()) << skid << ": " << b.error().reason;
    EXPECT_EQ((*b)->skid(), skid);
    // pmu/info's features say so when interrupts come late.
    const auto& f = (*b)->description().features;
    EXPECT_EQ(std::count(f.begin(), f.end(), "ovfl_skid"), skid > 0 ? 1 : 0) << skid;
  }
  SimOptions o;
  o.skid = kMaxSkid + 1;
  auto b = SimBackend::create(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.code(), -EINVAL);
  EXPECT_NE(b.error().reason.find("skid"), std::string::npos) << b.error().reason;
  EXPECT_EQ(kMaxSkid, 32767u) << "under half the range of a 16-bit counter";
}

TEST(SimBackendCreate, CustomEventsReplaceTheTable) {
  SimOptions o;
  o.clock = ClockKind::Manual;
  auto ev = parseEvents("name=ONLY code=0x77 rate=1\n", 4);
  ASSERT_TRUE(ev.ok()) << ev.error().reason;
  o.events = *ev;
  auto b = SimBackend::create(o);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  ASSERT_EQ((*b)->description().events.size(), 1u);
  EXPECT_EQ((*b)->description().events[0].name, "ONLY");
  EXPECT_EQ((*b)->events().size(), 1u);
}

// ------------------------------------------------------- sampling period

TEST(SimBackendSampling, HalfTheRangeAtTheFastestRate) {
  // The default table's fastest events are SIM_PHASE_A/B at 4/ns (faster
  // than the 3/ns of core cycles): 2^15 / 4 at width 16.
  auto b = make(ClockKind::Manual, 4, 16);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->samplingPeriodNs(), 8192u);
  auto w48 = make(ClockKind::Manual, 4, 48);
  EXPECT_EQ(w48->samplingPeriodNs(), (1ull << 47) / 4);
  auto w64 = make(ClockKind::Manual, 4, 64);
  EXPECT_EQ(w64->samplingPeriodNs(), (1ull << 63) / 4);
}

TEST(SimBackendSampling, ArchitecturalEventsOnly) {
  // Without the phased events the fastest is cycles at 3/ns: 2^15 / 3.
  SimOptions o;
  o.shape = intel::Shape{4, 16};
  auto all = defaultEvents(4);
  all.resize(7);
  o.events = all;
  auto b = SimBackend::create(o);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  EXPECT_EQ((*b)->samplingPeriodNs(), 32768u / 3);
}

TEST(SimBackendSampling, NoCounterCanWrapTwiceInAPeriod) {
  for (unsigned w : {16u, 20u, 32u, 48u, 64u}) {
    auto b = make(ClockKind::Manual, 4, w);
    ASSERT_TRUE(b);
    std::uint64_t p = b->samplingPeriodNs();
    EXPECT_GT(p, 0u);
    for (const auto& e : b->events()) {
      // Occurrences over any window of p ns stay within half the range.
      unsigned __int128 most = static_cast<unsigned __int128>(e.rate.maxRateCeil()) * p;
      unsigned __int128 half = static_cast<unsigned __int128>(1) << (w - 1);
      EXPECT_LE(most, half) << e.desc.name << " width " << w;
    }
  }
}

TEST(SimBackendSampling, FastEventsStillGiveAPositivePeriod) {
  SimOptions o;
  o.shape = intel::Shape{4, 16};
  auto ev = parseEvents("name=FAST code=0x77 rate=100000\n", 4);
  ASSERT_TRUE(ev.ok());
  o.events = *ev;
  auto b = SimBackend::create(o);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->samplingPeriodNs(), 1u);  // 32768 / 100000 rounds to 0: at least 1
}

// ---------------------------------------------------------------- attach

TEST(SimBackendAttach, OwnThread) {
  for (ClockKind k : {ClockKind::Manual, ClockKind::Real}) {
    auto b = make(k);
    auto t = b->attach(thread(gettidNow()), {});
    ASSERT_TRUE(t.ok()) << t.error().reason;
    EXPECT_FALSE((*t)->gone());
  }
}

TEST(SimBackendAttach, AnotherThreadOfThisProcess) {
  Worker w;
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
}

TEST(SimBackendAttach, NonexistentThreadIsEsrch) {
  for (ClockKind k : {ClockKind::Manual, ClockKind::Real}) {
    auto b = make(k);
    for (pid_t tid : {impossibleTid(), pid_t{0}, pid_t{-1}, pid_t{-12345}}) {
      auto t = b->attach(thread(tid), {});
      ASSERT_FALSE(t.ok()) << tid;
      EXPECT_EQ(t.code(), -ESRCH) << tid;
    }
  }
}

TEST(SimBackendAttach, Cpus) {
  for (ClockKind k : {ClockKind::Manual, ClockKind::Real}) {
    auto b = make(k);
    auto c0 = b->attach(cpu(0), {});
    ASSERT_TRUE(c0.ok()) << c0.error().reason;
    auto last = b->attach(cpu(lastOnlineCpu()), {});
    ASSERT_TRUE(last.ok()) << last.error().reason;
    for (int bad : {-1, 100000, 1 << 30}) {
      auto t = b->attach(cpu(bad), {});
      ASSERT_FALSE(t.ok()) << bad;
      EXPECT_EQ(t.code(), -EINVAL) << bad;
    }
  }
}

// Register-level access through the interface the engine uses: writes are
// staged into one image and put on the PMU by load() (TargetPmu::loadSet),
// reads go through readPmds.
class Regs {
 public:
  Regs(TargetPmu& p, const PmuDescription& d)
      : p_(p), d_(d), pmcs_(d.pmcs.size()), bits_(d.pmds.size()), out_(d.pmds.size()) {}
  void pmc(unsigned index, std::uint64_t v) { pmcs_[static_cast<std::size_t>(d_.pmcSlot(index))] = v; }
  void pmd(unsigned index, std::uint64_t v) {
    bits_[static_cast<std::size_t>(d_.pmdSlot(index))] = v;
    used_ |= regBit(index);
  }
  void load() { ASSERT_TRUE(p_.loadSet(SetImage{0, pmcs_, used_, bits_}).ok()); }
  std::uint64_t read(unsigned index) {
    p_.readPmds(regBit(index), out_);
    return out_[static_cast<std::size_t>(d_.pmdSlot(index))];
  }

 private:
  TargetPmu& p_;
  const PmuDescription& d_;
  std::vector<std::uint64_t> pmcs_, bits_, out_;
  RegMask used_ = 0;
};

// ----------------------------------------------------------- manual clock

TEST(SimBackendManual, TimeStartsAtZeroAndFollowsAdvance) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(thread(gettidNow()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  EXPECT_EQ(p.timeNs(), 0u);
  burnCpu(2'000'000);  // real CPU time does not move a manual clock
  EXPECT_EQ(p.timeNs(), 0u);
  EXPECT_EQ(p.advanceTo(1234), 1234u);
  EXPECT_EQ(p.timeNs(), 1234u);
  EXPECT_EQ(p.advanceTo(1000), 1234u) << "time never runs backwards";
  EXPECT_EQ(p.timeNs(), 1234u);
  EXPECT_EQ(p.advanceTo(1ull << 50), 1ull << 50);
  EXPECT_EQ(p.timeNs(), 1ull << 50);
  p.hold(true);
  EXPECT_EQ(p.timeNs(), 1ull << 50);
  p.hold(false);
  EXPECT_FALSE(p.gone());
}

TEST(SimBackendManual, EachTargetHasItsOwnClock) {
  auto b = make(ClockKind::Manual);
  auto a = b->attach(thread(gettidNow()), {});
  auto c = b->attach(cpu(0), {});
  ASSERT_TRUE(a.ok() && c.ok());
  (void)(*a)->advanceTo(500);
  EXPECT_EQ((*a)->timeNs(), 500u);
  EXPECT_EQ((*c)->timeNs(), 0u);
}

TEST(SimBackendManual, CountsAndMsrWrites) {
  auto b = make(ClockKind::Manual, 4, 48);
  auto t = b->attach(thread(gettidNow()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  r.pmc(0, intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn);
  r.pmc(16, intel::fixedctl::field(0, intel::fixedctl::kUsr));
  r.pmd(0, 100);
  r.pmd(16, (1ull << 48) + 7);  // the backend keeps the implemented bits
  r.load();                     // nothing is known yet: all 5 PMCs and the 2 PMDs in use
  p.enable();
  EXPECT_EQ(b->msrWrites(), 8u);
  r.load();  // the same image again: nothing differs, nothing is written
  EXPECT_EQ(b->msrWrites(), 8u);
  (void)p.advanceTo(1000);
  EXPECT_EQ(r.read(0), 3100u);
  EXPECT_EQ(r.read(16), 2007u);
  p.disable();
  (void)p.advanceTo(2000);
  EXPECT_EQ(r.read(0), 3100u);
  EXPECT_EQ(b->msrWrites(), 9u);
  EXPECT_EQ(p.nextOverflowNs(), kNever);  // no interrupt bit programmed
  EXPECT_FALSE(p.takeOverflow().has_value());

  // The backend's count covers every target.
  auto c = b->attach(cpu(0), {});
  ASSERT_TRUE(c.ok());
  (*c)->enable();
  EXPECT_EQ(b->msrWrites(), 10u);
}

TEST(SimBackendManual, TakeOverflowOfAThread) {
  auto b = make(ClockKind::Manual, 4, 16);
  auto t = b->attach(thread(gettidNow()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  using namespace intel;
  r.pmc(1, event::kUnhaltedCoreCycles | evtsel::kUsr | evtsel::kEn | evtsel::kInt);
  r.pmc(16, fixedctl::field(0, fixedctl::kUsr | fixedctl::kPmi));
  r.pmd(1, 0x10000 - 30);   // 30 cycles: 10 ns
  r.pmd(16, 0x10000 - 20);  // 20 instructions: 10 ns
  r.load();
  p.enable();
  EXPECT_EQ(p.nextOverflowNs(), 10u);
  EXPECT_EQ(p.advanceTo(9), 9u);
  EXPECT_FALSE(p.takeOverflow().has_value());
  EXPECT_EQ(p.advanceTo(10), 10u);
  auto o = p.takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(1) | regBit(16));
  EXPECT_EQ(o->tid, gettidNow());
  EXPECT_EQ(o->pid, ::getpid());
  EXPECT_EQ(o->cpu, 0);
  EXPECT_NE(o->ip, 0u);
  EXPECT_FALSE(p.takeOverflow().has_value()) << "taken once";
  EXPECT_EQ(r.read(1), 0u);
  EXPECT_EQ(r.read(16), 0u);
}

TEST(SimBackendManual, TakeOverflowOfAnotherThread) {
  Worker w;
  auto b = make(ClockKind::Manual, 4, 16);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  r.pmc(0, intel::event::kInstructionRetired | intel::evtsel::kUsr | intel::evtsel::kEn | intel::evtsel::kInt);
  r.pmd(0, 0xffff);
  r.load();
  p.enable();
  (void)p.advanceTo(1);
  auto o = p.takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(0));
  EXPECT_EQ(o->tid, w.tid());
  EXPECT_NE(o->tid, gettidNow());
  EXPECT_EQ(o->pid, ::getpid());
}

TEST(SimBackendManual, TakeOverflowOfACpu) {
  const int n = lastOnlineCpu();
  auto b = make(ClockKind::Manual, 4, 16);
  auto t = b->attach(cpu(n), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  r.pmc(2, intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn | intel::evtsel::kInt);
  r.pmd(2, 0xffff);
  r.load();
  p.enable();
  (void)p.advanceTo(1);
  auto o = p.takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(2));
  EXPECT_EQ(o->cpu, n);
  EXPECT_EQ(o->pid, 0);
  EXPECT_EQ(o->tid, 0);
}

// --sim-skid: the interrupt comes skid events of the counter's stream after the
// wrap; overflowsInSkid names the counters that wrapped meanwhile, and
// raiseOverflowInSkid brings the interrupt forward to now.
TEST(SimBackendManual, OverflowsAfterTheSkid) {
  SimOptions opt;
  opt.shape = intel::Shape{4, 16};
  opt.clock = ClockKind::Manual;
  opt.skid = 10;
  auto b = SimBackend::create(opt);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  auto t = (*b)->attach(thread(gettidNow()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, (*b)->description());
  using namespace intel;
  r.pmc(1, event::kUnhaltedCoreCycles | evtsel::kUsr | evtsel::kEn | evtsel::kInt);
  r.pmc(16, fixedctl::field(0, fixedctl::kUsr | fixedctl::kPmi));
  r.pmd(1, 0x10000 - 30);   // 30 cycles: wraps at 10 ns; the 40th cycle at 14 ns
  r.pmd(16, 0x10000 - 20);  // 20 instructions: wraps at 10 ns; the 30th at 15 ns
  r.load();
  p.enable();
  EXPECT_EQ(p.nextOverflowNs(), 14u);
  EXPECT_EQ(p.overflowsInSkid(), 0u);
  EXPECT_EQ(p.advanceTo(10), 10u);
  EXPECT_FALSE(p.takeOverflow().has_value());
  EXPECT_EQ(p.overflowsInSkid(), regBit(1) | regBit(16));
  EXPECT_EQ(p.nextOverflowNs(), 14u);
  EXPECT_EQ(p.advanceTo(13), 13u);
  EXPECT_FALSE(p.takeOverflow().has_value());
  EXPECT_EQ(p.advanceTo(14), 14u);
  auto o = p.takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(1) | regBit(16)) << "one interrupt for both";
  EXPECT_EQ(o->ip, 0x401000u);  // made up from the time of the interrupt: 14 / 64 = 0
  EXPECT_EQ(p.overflowsInSkid(), 0u);
  EXPECT_EQ(r.read(1), 12u);  // 42 - 30: the counter went on counting
  EXPECT_EQ(r.read(16), 8u);  // 28 - 20

  // The engine's reload at the interrupt, then a wrap at 15 ns (count 45)
  // whose interrupt is brought forward at 16.
  p.reloadPmd(1, 0x10000 - 3);
  EXPECT_EQ(p.nextOverflowNs(), 19u);  // count 55
  EXPECT_EQ(p.advanceTo(16), 16u);
  EXPECT_EQ(p.overflowsInSkid(), regBit(1));
  p.raiseOverflowInSkid();
  EXPECT_EQ(p.overflowsInSkid(), 0u);
  o = p.takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(1));
  EXPECT_GT(p.nextOverflowNs(), 19u) << "taken: nothing is due at 19 any more";
  p.raiseOverflowInSkid();  // nothing in skid: nothing to take
  EXPECT_FALSE(p.takeOverflow().has_value());
}

TEST(SimBackendManual, WrapWithoutInterruptIsNotReported) {
  auto b = make(ClockKind::Manual, 4, 16);
  auto t = b->attach(thread(gettidNow()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  r.pmc(0, intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn);
  r.pmd(0, 0xffff);
  r.load();
  p.enable();
  EXPECT_EQ(p.nextOverflowNs(), kNever);
  (void)p.advanceTo(100);
  EXPECT_FALSE(p.takeOverflow().has_value());
  EXPECT_EQ(r.read(0), (0xffffu + 300u) & 0xffffu);
}

// ------------------------------------------------------------- real clock

TEST(SimBackendReal, ThreadTimeIsItsCpuTime) {
  Worker w;
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TargetPmu& p = **t;
  // Each reading is taken with the worker off the CPU, where the kernel's
  // account of its CPU time (the sim's clock) is exact: on a CPU it lags up
  // to a tick.
  ASSERT_TRUE(waitOffCpu(w.tid()));
  const std::uint64_t wall0 = nowNs(CLOCK_MONOTONIC);
  const std::uint64_t t0 = p.timeNs();
  w.run([] { burnCpu(20'000'000); });
  ASSERT_TRUE(waitOffCpu(w.tid()));
  const std::uint64_t t1 = p.timeNs();
  const std::uint64_t wall1 = nowNs(CLOCK_MONOTONIC);
  EXPECT_GE(t1 - t0, 20'000'000u) << "the CPU time it burnt";
  EXPECT_LE(t1 - t0, wall1 - wall0);
  // Blocked, the worker uses no CPU: its time stands still while wall time
  // and this thread's CPU time run on.
  burnCpu(20'000'000);
  EXPECT_EQ(p.timeNs(), t1);
  EXPECT_FALSE(p.gone());
}

TEST(SimBackendReal, ThreadTimeStartsNearZeroAtAttach) {
  Worker w;
  w.run([] { burnCpu(30'000'000); });  // CPU time before the attach does not count
  ASSERT_TRUE(waitOffCpu(w.tid()));    // and its CPU time is exact, standing still
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->timeNs(), 0u);
}

TEST(SimBackendReal, HoldFreezesTime) {
  Worker w;
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  w.run([] { burnCpu(5'000'000); });
  p.hold(true);
  const std::uint64_t h0 = p.timeNs();
  w.run([] { burnCpu(20'000'000); });
  EXPECT_EQ(p.timeNs(), h0) << "a held target's time stands still";
  p.hold(true);  // holding twice changes nothing
  EXPECT_EQ(p.timeNs(), h0);
  // The release and the reading after it with the worker off the CPU, where
  // its CPU time is exact and stands still.
  ASSERT_TRUE(waitOffCpu(w.tid()));
  p.hold(false);
  // Released, time resumes where it stood: the CPU time used while held is not counted.
  const std::uint64_t r0 = p.timeNs();
  EXPECT_EQ(r0, h0);
  w.run([] { burnCpu(20'000'000); });
  EXPECT_GE(p.timeNs() - r0, 20'000'000u);
}

TEST(SimBackendReal, CpuTimeIsWallTime) {
  auto b = make(ClockKind::Real);
  auto t = b->attach(cpu(0), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  const std::uint64_t outer0 = nowNs(CLOCK_MONOTONIC);
  const std::uint64_t t0 = p.timeNs();
  const std::uint64_t wall0 = nowNs(CLOCK_MONOTONIC);
  std::this_thread::sleep_for(20ms);  // sleeping: wall time moves, this thread's CPU time does not
  const std::uint64_t wall1 = nowNs(CLOCK_MONOTONIC);
  const std::uint64_t t1 = p.timeNs();
  const std::uint64_t outer1 = nowNs(CLOCK_MONOTONIC);
  // The wall clock read inside and outside the two readings.
  EXPECT_GE(t1 - t0, wall1 - wall0);
  EXPECT_GE(t1 - t0, 20'000'000u);
  EXPECT_LE(t1 - t0, outer1 - outer0);
}

TEST(SimBackendReal, AdvanceToMovesTheHardwareNotTheClock) {
  // Under the real clock the engine replays up to timeNs(); the counters
  // follow the target's CPU time.
  Worker w;
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w.tid()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  Regs r(p, b->description());
  w.run([] { burnCpu(2'000'000); });
  const std::uint64_t start = p.advanceTo(p.timeNs());
  r.pmc(0, intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn);
  r.load();
  p.enable();
  w.run([] { burnCpu(10'000'000); });
  const std::uint64_t end = p.advanceTo(p.timeNs());
  EXPECT_GE(end - start, 5'000'000u);
  EXPECT_EQ(r.read(0), 3 * (end - start));
}

TEST(SimBackendReal, ExitedThreadIsGone) {
  auto w = std::make_unique<Worker>();
  auto b = make(ClockKind::Real);
  auto t = b->attach(thread(w->tid()), {});
  ASSERT_TRUE(t.ok());
  TargetPmu& p = **t;
  w->run([] { burnCpu(5'000'000); });
  const std::uint64_t before = p.timeNs();
  EXPECT_FALSE(p.gone());
  w->exitAndJoin();
  // join returns when the thread has cleared its tid; the kernel may take a
  // moment more to release it. Gone it must be, soon.
  bool gone = false;
  std::uint64_t last = before;
  for (auto deadline = std::chrono::steady_clock::now() + kPatience; !gone;) {
    last = p.timeNs();
    gone = p.gone();
    if (gone || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(gone);
  EXPECT_GE(last, before) << "time does not run backwards when the thread goes";
  EXPECT_GE(p.timeNs(), last);
  EXPECT_TRUE(p.gone());
}

TEST(SimBackendReal, AttachToAnExitedThreadIsEsrch) {
  auto w = std::make_unique<Worker>();
  const pid_t tid = w->tid();
  w->exitAndJoin();
  auto b = make(ClockKind::Real);
  Result<std::unique_ptr<TargetPmu>> t = Error{};
  for (auto deadline = std::chrono::steady_clock::now() + kPatience;;) {
    t = b->attach(thread(tid), {});
    if (!t.ok() || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.code(), -ESRCH);
}

// --sim-events=FILE: a file replaces the event table; a missing or malformed
// file is refused with its reason.
TEST(SimEventsFile, ReadsAParsesAndRefuses) {
  char dir[] = "/tmp/pfmfs-sim-events-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string good = std::string(dir) + "/good", bad = std::string(dir) + "/bad";
  std::ofstream(good) << "# two events\n"
                         "name=SLOW code=0x01f1 rate=0.5 desc=\"half an event per ns\"\n"
                         "name=KERNEL_WORK code=0x02f1 rate=1 ring=kernel\n";
  std::ofstream(bad) << "name=SLOW code=0x01f1 rate=fast\n";

  auto events = readEventsFile(good, 4);
  ASSERT_TRUE(events.ok()) << events.error().reason;
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].desc.name, "SLOW");
  EXPECT_EQ((*events)[0].rate.count(1000), 500u);
  EXPECT_EQ((*events)[1].ring, Ring::Kernel);

  SimOptions o;
  o.clock = ClockKind::Manual;
  o.events = *events;
  auto b = SimBackend::create(o);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  EXPECT_NE((*b)->description().findEvent("KERNEL_WORK"), nullptr);
  EXPECT_EQ((*b)->description().findEvent("INSTRUCTION_RETIRED"), nullptr);

  auto missing = readEventsFile(std::string(dir) + "/none", 4);
  EXPECT_EQ(missing.code(), -ENOENT);
  auto malformed = readEventsFile(bad, 4);
  EXPECT_EQ(malformed.code(), -EINVAL);
  EXPECT_NE(malformed.error().reason.find("line 1"), std::string::npos) << malformed.error().reason;
  EXPECT_NE(malformed.error().reason.find(bad), std::string::npos) << malformed.error().reason;

  ::unlink(good.c_str());
  ::unlink(bad.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace pfmfs::pmu::sim
