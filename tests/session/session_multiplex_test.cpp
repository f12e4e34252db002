// Exact multiplexing by the session engine over the sim backend under the
// manual clock: time-based set switching with exact runs/durations/scaling,
// phased events, which set runs first, and the MSR cost of a switch.
// Counting in one set is in session_counting_test.cpp.
//
// Every expected number below is computed by hand from the sim's streams:
// N(t) = floor(rate * t) events in (0, t] of target time, so a counter enabled
// over (a, b] counts N(b) - N(a).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::session::Caller;
using pfmfs::session::CountLine;
using pfmfs::session::SetInfo;
using pfmfs::session::State;
using pfmfs::testing::gettidNow;
using pfmfs::testing::kBranchMisses;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::kRefCycles;
using pfmfs::testing::kUsr;
using pfmfs::testing::simConfig;

using u64 = std::uint64_t;

constexpr u64 kPhaseA = 0x01f0 | kUsr;  // 4/ns in the first 1 ms of every 2 ms
constexpr u64 kPhaseB = 0x02f0 | kUsr;  // 4/ns in the second 1 ms of every 2 ms
constexpr unsigned kFixedCtrl = 16;     // pmc16 = FIXED_CTR_CTRL
constexpr unsigned kFixedInstr = 16;    // pmd16: instructions, 2/ns
constexpr unsigned kFixedCycles = 17;   // pmd17: cycles, 3/ns
constexpr unsigned kFixedRef = 18;      // pmd18: ref cycles, 2.5/ns
// FIXED_CTR_CTRL fields, user level only.
constexpr u64 kFixedInstrUsr = 0x002;
constexpr u64 kFixedCyclesUsr = 0x020;
constexpr u64 kFixedRefUsr = 0x200;
constexpr u64 kFixedAllUsr = kFixedInstrUsr | kFixedCyclesUsr | kFixedRefUsr;

using Rig = pfmfs::testing::SessionRig;

// ---- multiplexing --------------------------------------------------------------------------

// A set that is not on the hardware reads its saved value, and writes to it
// change only that image.
TEST(SessionCounting, InactiveSetReadsItsSavedValue) {
  Rig r;
  r.createSet(1);
  r.timeSwitch(0, 1000);
  r.timeSwitch(1, 1000);
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);  // same register, different set image
  r.load();
  r.start();
  r.advance(1500);  // set0 (0,1000], set1 (1000,1500]
  EXPECT_EQ(r.read(0, 0), 3000u);
  EXPECT_EQ(r.read(1, 0), 1000u);
  r.advance(400);
  EXPECT_EQ(r.read(0, 0), 3000u);
  EXPECT_EQ(r.read(1, 0), 1800u);

  r.pmd(0, 0, 5);  // the inactive set
  EXPECT_EQ(r.read(0, 0), 5u);
  EXPECT_EQ(r.read(1, 0), 1800u);
  r.advance(300);  // set1 to 2000, then set0 (2000,2200]
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.read(1, 0), 2000u);
  EXPECT_EQ(r.read(0, 0), 605u);
}

// Two sets, timeouts 300 and 500 ns that do not divide the advance:
//   set0 (0,300]  set1 (300,800]  set0 (800,1100]  set1 (1100,1600]
//   set0 (1600,1900]  set1 (1900,2000] ... (2000,2400] ends on a switch.
// Done in one advance, or in many uneven small ones: the same exact numbers.
void twoSetScenario(Rig& r, const std::vector<u64>& steps_to_2000) {
  r.createSet(1);
  r.timeSwitch(0, 300);
  r.timeSwitch(1, 500);
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.pmc(1, 1, kBranchMisses);  // 0.004/ns over split intervals
  r.load();
  r.start();
  for (u64 s : steps_to_2000) r.advance(s);

  SetInfo i0 = r.info(0), i1 = r.info(1);
  EXPECT_EQ(i0.runs, 3u);
  EXPECT_EQ(i1.runs, 3u);
  EXPECT_EQ(i0.duration_ns, 900u);
  EXPECT_EQ(i1.duration_ns, 1100u);
  EXPECT_EQ(i0.timeout_ns, 300u);  // inactive: its timeout
  EXPECT_EQ(i1.timeout_ns, 400u);  // active: 100 of 500 used
  EXPECT_EQ(r.state().set, 1u);

  CountLine c0 = r.line(0, 0), c1 = r.line(1, 0), c2 = r.line(1, 1);
  EXPECT_EQ(c0.value, 2700u);
  EXPECT_EQ(c0.enabled_ns, 2000u);
  EXPECT_EQ(c0.running_ns, 900u);
  EXPECT_EQ(c0.scaled, std::optional<u64>(6000));  // 2700 * 2000 / 900
  EXPECT_EQ(c1.value, 2200u);
  EXPECT_EQ(c1.enabled_ns, 2000u);
  EXPECT_EQ(c1.running_ns, 1100u);
  EXPECT_EQ(c1.scaled, std::optional<u64>(4000));  // 2200 * 2000 / 1100
  // Branch misses: N(800)-N(300) + N(1600)-N(1100) + N(2000)-N(1900)
  //              = (3-1) + (6-4) + (8-7) = 5
  EXPECT_EQ(c2.value, 5u);
  EXPECT_EQ(c2.scaled, std::optional<u64>(9));  // 5 * 2000 / 1100 = 9.09

  // 400 more ns end exactly on set1's timeout: the switch happens.
  r.advance(400);
  EXPECT_EQ(r.state().set, 0u);
  i0 = r.info(0);
  i1 = r.info(1);
  EXPECT_EQ(i0.runs, 4u);
  EXPECT_EQ(i1.runs, 3u);
  EXPECT_EQ(i0.duration_ns, 900u);
  EXPECT_EQ(i1.duration_ns, 1500u);
  EXPECT_EQ(i0.timeout_ns, 300u);  // a fresh timeout, nothing used yet
  EXPECT_EQ(i1.timeout_ns, 500u);
  c0 = r.line(0, 0);
  c1 = r.line(1, 0);
  EXPECT_EQ(c0.value, 2700u);
  EXPECT_EQ(c0.enabled_ns, 2400u);
  EXPECT_EQ(c0.scaled, std::optional<u64>(7200));  // 2700 * 2400 / 900
  EXPECT_EQ(c1.value, 3000u);
  EXPECT_EQ(c1.running_ns, 1500u);
  EXPECT_EQ(c1.scaled, std::optional<u64>(4800));  // 3000 * 2400 / 1500
  r.advance(1);
  EXPECT_EQ(r.info(0).timeout_ns, 299u);
  EXPECT_EQ(r.read(0, 0), 2703u);
}

TEST(SessionCounting, TwoSetsTimeSwitchingOneAdvance) {
  Rig r;
  twoSetScenario(r, {2000});
}

TEST(SessionCounting, TwoSetsTimeSwitchingManySmallAdvances) {
  Rig r;
  std::vector<u64> steps(285, 7);  // 1995 ns in 7 ns steps
  steps.push_back(5);
  twoSetScenario(r, steps);
}

TEST(SessionCounting, TwoSetsTimeSwitchingStepsEndingOnSwitches) {
  Rig r;
  twoSetScenario(r, {300, 500, 300, 500, 300, 100});
}

// Three sets switch round-robin in increasing id order, whatever the order of
// creation: 0 -> 3 -> 7 -> 0.
TEST(SessionCounting, ThreeSetsRoundRobinInIdOrder) {
  Rig r;
  r.createSet(7);
  r.createSet(3);
  r.timeSwitch(0, 100);
  r.timeSwitch(3, 200);
  r.timeSwitch(7, 300);
  r.pmc(0, 0, kCycles);
  r.pmc(3, 0, kInstructions);
  r.pmc(3, 1, kBranchMisses);
  r.pmc(7, 0, kRefCycles);
  r.load();
  r.start();
  // set0 (0,100] set3 (100,300] set7 (300,600] set0 (600,700] set3 (700,900]
  // set7 (900,1000]
  r.advance(1000);
  EXPECT_EQ(r.state().set, 7u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(3).runs, 2u);
  EXPECT_EQ(r.info(7).runs, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 200u);
  EXPECT_EQ(r.info(3).duration_ns, 400u);
  EXPECT_EQ(r.info(7).duration_ns, 400u);
  EXPECT_EQ(r.info(7).timeout_ns, 200u);

  auto lines = r.s().counts();
  ASSERT_EQ(lines.size(), 4u);  // set order, then register order
  EXPECT_EQ(std::make_pair(lines[0].set, lines[0].pmd), std::make_pair(std::uint16_t{0}, 0u));
  EXPECT_EQ(std::make_pair(lines[1].set, lines[1].pmd), std::make_pair(std::uint16_t{3}, 0u));
  EXPECT_EQ(std::make_pair(lines[2].set, lines[2].pmd), std::make_pair(std::uint16_t{3}, 1u));
  EXPECT_EQ(std::make_pair(lines[3].set, lines[3].pmd), std::make_pair(std::uint16_t{7}, 0u));
  EXPECT_EQ(lines[0].value, 600u);
  EXPECT_EQ(lines[0].scaled, std::optional<u64>(3000));  // 600 * 1000 / 200
  EXPECT_EQ(lines[1].value, 800u);
  EXPECT_EQ(lines[1].scaled, std::optional<u64>(2000));
  // Branch misses over (100,300] and (700,900]: (1-0) + (3-2) = 2, not 1.6.
  EXPECT_EQ(lines[2].value, 2u);
  EXPECT_EQ(lines[2].scaled, std::optional<u64>(5));
  // Ref cycles over (300,600] and (900,1000]: 750 + 250.
  EXPECT_EQ(lines[3].value, 1000u);
  EXPECT_EQ(lines[3].scaled, std::optional<u64>(2500));
  for (const auto& l : lines) EXPECT_EQ(l.enabled_ns, 1000u);

  // set7 (1000,1200] set0 (1200,1300] set3 (1300,1500] set7 (1500,1800]
  // set0 (1800,1900] set3 (1900,2100] set7 (2100,2234]
  r.advance(1234);
  EXPECT_EQ(r.state().set, 7u);
  EXPECT_EQ(r.info(0).runs, 4u);
  EXPECT_EQ(r.info(3).runs, 4u);
  EXPECT_EQ(r.info(7).runs, 4u);
  EXPECT_EQ(r.info(0).duration_ns, 400u);
  EXPECT_EQ(r.info(3).duration_ns, 800u);
  EXPECT_EQ(r.info(7).duration_ns, 1034u);
  EXPECT_EQ(r.info(7).timeout_ns, 166u);
  EXPECT_EQ(r.read(0, 0), 1200u);
  EXPECT_EQ(r.read(3, 0), 1600u);
  EXPECT_EQ(r.read(7, 0), 2585u);  // 2.5 * 1034
  EXPECT_EQ(r.line(7, 0).enabled_ns, 2234u);
  EXPECT_EQ(r.line(7, 0).scaled, std::optional<u64>(2585u * 2234 / 1034));
}

// A set that never ran has running_ns 0 and no scaled value.
TEST(SessionCounting, NeverRunSetHasNoScaledValue) {
  Rig r;
  r.createSet(1);
  r.createSet(2);
  r.timeSwitch(0, 1000);
  r.timeSwitch(1, 1000);
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kCycles);
  r.pmc(2, 0, kCycles);
  r.load();
  r.start();
  r.advance(1500);
  CountLine l0 = r.line(0, 0), l1 = r.line(1, 0), l2 = r.line(2, 0);
  EXPECT_EQ(l0.scaled, std::optional<u64>(4500));  // 3000 * 1500 / 1000
  EXPECT_EQ(l1.value, 1500u);
  EXPECT_EQ(l1.scaled, std::optional<u64>(4500));
  EXPECT_EQ(l2.value, 0u);
  EXPECT_EQ(l2.enabled_ns, 1500u);
  EXPECT_EQ(l2.running_ns, 0u);
  EXPECT_FALSE(l2.scaled.has_value());
  EXPECT_EQ(r.info(2).runs, 0u);
}

// Sampled every 37 ns over 4000 ns, counts() shows the active set growing at
// its rate and the inactive one frozen at the value of its last activation.
TEST(SessionCounting, CountsNeverShowAnInactiveSetCounting) {
  Rig r(simConfig(16));
  r.createSet(1);
  r.timeSwitch(0, 300);
  r.timeSwitch(1, 500);
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.load();
  r.start();
  auto durations = [](u64 t) {
    u64 full = t / 800, rem = t % 800;
    u64 d0 = 300 * full + std::min<u64>(rem, 300);
    u64 d1 = 500 * full + (rem > 300 ? rem - 300 : 0);
    return std::make_pair(d0, d1);
  };
  u64 t = 0, prev0 = 0, prev1 = 0;
  for (int i = 0; i < 108; ++i) {
    r.advance(37);
    t += 37;
    auto [d0, d1] = durations(t);
    CountLine c0 = r.line(0, 0), c1 = r.line(1, 0);
    ASSERT_EQ(c0.value, 3 * d0) << "t=" << t;
    ASSERT_EQ(c1.value, 2 * d1) << "t=" << t;
    ASSERT_EQ(c0.running_ns, d0) << "t=" << t;
    ASSERT_EQ(c1.running_ns, d1) << "t=" << t;
    ASSERT_EQ(c0.enabled_ns, t);
    // The set not on the hardware at t did not move since the last look
    // unless it was active for part of the step.
    bool set0_active = (t % 800) < 300;
    u64 step_start = t - 37;
    auto [s0, s1] = durations(step_start);
    if (d0 == s0) {
      ASSERT_EQ(c0.value, prev0) << "t=" << t;
    }
    if (d1 == s1) {
      ASSERT_EQ(c1.value, prev1) << "t=" << t;
    }
    ASSERT_EQ(r.state().set, set0_active ? 0u : 1u) << "t=" << t;
    prev0 = c0.value;
    prev1 = c1.value;
  }
  EXPECT_EQ(t, 3996u);
}

// Phased events under multiplexing: with 1 ms timeouts each set sees only one
// phase, so scaling doubles one set's estimate of SIM_PHASE_A and zeroes the
// other's. The truth over 10 ms is 4/ns * 5 ms = 20,000,000.
TEST(SessionCounting, PhasedEventsShowMultiplexingBias) {
  const u64 kTruth = 20'000'000;
  {
    Rig truth;
    truth.pmc(0, 0, kPhaseA);
    truth.pmc(0, 1, kPhaseB);
    truth.load();
    truth.start();
    truth.advance(10'000'000);
    EXPECT_EQ(truth.read(0, 0), kTruth);
    EXPECT_EQ(truth.read(0, 1), kTruth);
    EXPECT_EQ(truth.line(0, 0).scaled, std::optional<u64>(kTruth));
  }
  Rig r;
  r.createSet(1);
  r.timeSwitch(0, 1'000'000);
  r.timeSwitch(1, 1'000'000);
  for (unsigned set : {0u, 1u}) {
    r.pmc(set, 0, kPhaseA);
    r.pmc(set, 1, kPhaseB);
  }
  r.load();
  r.start();
  r.advance(10'000'000);  // ends exactly on the switch back to set 0
  EXPECT_EQ(r.info(0).runs, 6u);
  EXPECT_EQ(r.info(1).runs, 5u);
  // Set 0 runs only in phase A, set 1 only in phase B.
  CountLine a0 = r.line(0, 0), b0 = r.line(0, 1), a1 = r.line(1, 0), b1 = r.line(1, 1);
  EXPECT_EQ(a0.value, kTruth);
  EXPECT_EQ(a0.running_ns, 5'000'000u);
  EXPECT_EQ(a0.enabled_ns, 10'000'000u);
  EXPECT_EQ(a0.scaled, std::optional<u64>(2 * kTruth));  // biased: twice the truth
  EXPECT_EQ(b0.value, 0u);
  EXPECT_EQ(b0.scaled, std::optional<u64>(0));
  EXPECT_EQ(a1.value, 0u);
  EXPECT_EQ(a1.scaled, std::optional<u64>(0));
  EXPECT_EQ(b1.value, kTruth);
  EXPECT_EQ(b1.scaled, std::optional<u64>(2 * kTruth));
}

// With 0.5 ms timeouts each set spends half its time in each phase, and the
// scaled estimate is exactly the truth.
TEST(SessionCounting, PhasedEventsUnbiasedWhenSwitchingFasterThanPhases) {
  Rig r;
  r.createSet(1);
  r.timeSwitch(0, 500'000);
  r.timeSwitch(1, 500'000);
  r.pmc(0, 0, kPhaseA);
  r.pmc(1, 0, kPhaseA);
  r.load();
  r.start();
  r.advance(10'000'000);
  // Set 0 runs (0,0.5] (1,1.5] (2,2.5] ... ms: phase A in 5 of its 10 runs.
  CountLine a0 = r.line(0, 0), a1 = r.line(1, 0);
  EXPECT_EQ(a0.value, 10'000'000u);
  EXPECT_EQ(a0.scaled, std::optional<u64>(20'000'000));
  EXPECT_EQ(a1.value, 10'000'000u);
  EXPECT_EQ(a1.scaled, std::optional<u64>(20'000'000));
  EXPECT_EQ(r.info(0).runs, 11u);  // the advance ends on a switch to set 0
  EXPECT_EQ(r.info(1).runs, 10u);
}

// ---- which set runs first --------------------------------------------------------------

TEST(SessionCounting, LoadSetNChoosesTheFirstSet) {
  Rig r;
  r.createSet(1);
  r.createSet(2);
  for (unsigned set : {0u, 1u, 2u}) {
    r.timeSwitch(set, 100);
    r.pmc(set, 0, kCycles);
  }
  EXPECT_EQ(r.s().load(Caller::root(), gettidNow(), 5u).code(), -EINVAL);
  EXPECT_EQ(r.state().state, State::Unloaded);
  r.load(2u);
  EXPECT_EQ(r.state().set, 2u);
  r.start();
  EXPECT_EQ(r.info(2).runs, 1u);
  EXPECT_EQ(r.info(0).runs, 0u);
  EXPECT_EQ(r.info(1).runs, 0u);
  r.advance(50);
  EXPECT_EQ(r.read(2, 0), 150u);
  EXPECT_EQ(r.read(0, 0), 0u);
  r.advance(100);  // set2 to 100, then wraps to the lowest: set0 for 50
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 1u);
  EXPECT_EQ(r.info(0).duration_ns, 50u);
  EXPECT_EQ(r.info(2).duration_ns, 100u);
  EXPECT_EQ(r.info(1).runs, 0u);
}

TEST(SessionCounting, StartNChoosesTheFirstSet) {
  Rig r;
  r.createSet(1);
  r.createSet(2);
  for (unsigned set : {0u, 1u, 2u}) {
    r.timeSwitch(set, 100);
    r.pmc(set, 0, kCycles);
  }
  r.load();
  EXPECT_EQ(r.s().start(9u).code(), -EINVAL);
  EXPECT_EQ(r.state().state, State::Loaded);
  r.start(1u);
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(1).runs, 1u);
  EXPECT_EQ(r.info(0).runs, 0u);
  r.advance(100);  // exactly set1's timeout: on to set2
  EXPECT_EQ(r.state().set, 2u);
  EXPECT_EQ(r.info(2).runs, 1u);
  EXPECT_EQ(r.read(1, 0), 300u);
  EXPECT_EQ(r.read(0, 0), 0u);
  r.stop();
  r.start(0u);  // a stopped session starts in the set named
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 1u);
  r.advance(30);
  EXPECT_EQ(r.read(0, 0), 90u);
  EXPECT_EQ(r.info(0).timeout_ns, 70u);
}

// The first start runs the lowest set (set 0 need not exist); a later start,
// even after unload and load, resumes the set that was active last.
TEST(SessionCounting, FirstStartRunsTheLowestSetLaterStartsResume) {
  Rig r;
  r.createSet(4);
  r.createSet(2);
  ASSERT_TRUE(r.s().deleteSet(0).ok());
  for (unsigned set : {2u, 4u}) {
    r.timeSwitch(set, 100);
    r.pmc(set, 0, kCycles);
  }
  r.load();
  EXPECT_EQ(r.state().set, 2u);
  r.start();
  EXPECT_EQ(r.info(2).runs, 1u);
  EXPECT_EQ(r.info(4).runs, 0u);
  r.advance(150);  // set2 (0,100], set4 (100,150]
  EXPECT_EQ(r.state().set, 4u);
  r.stop();
  r.unload();
  r.load();
  EXPECT_EQ(r.state().set, 4u);
  r.start();
  EXPECT_EQ(r.info(4).runs, 2u);
  EXPECT_EQ(r.info(2).runs, 1u);
  r.advance(100);  // a fresh 100 ns in set 4, then set 2
  EXPECT_EQ(r.state().set, 2u);
  EXPECT_EQ(r.read(4, 0), 450u);
  EXPECT_EQ(r.read(2, 0), 300u);
}

// A lone set with a timeout "switches" to itself: each timeout is a new
// activation (runs, fresh timeout) that reprograms nothing and loses no count.
TEST(SessionCounting, LoneSetTimeoutReArms) {
  Rig r;
  r.timeSwitch(0, 100);
  r.pmc(0, 0, kCycles);
  r.load();
  r.start();
  r.advance(50);
  const u64 before = r.sim().msrWrites();
  r.advance(1000);  // re-arms at 100, 200, ..., 1000
  EXPECT_EQ(r.sim().msrWrites() - before, 0u);
  SetInfo i = r.info(0);
  EXPECT_EQ(i.runs, 11u);
  EXPECT_EQ(i.duration_ns, 1050u);
  EXPECT_EQ(i.timeout_ns, 50u);
  EXPECT_EQ(r.read(0, 0), 3150u);
  CountLine l = r.line(0, 0);
  EXPECT_EQ(l.enabled_ns, 1050u);
  EXPECT_EQ(l.scaled, std::optional<u64>(3150));
}

// ---- the cost of a switch --------------------------------------------------------------

// Measures the MSR writes of `advance(ns)` on a started two-set session with
// 100 ns timeouts, after `warmup` ns. Width 48: no wrap, so no overflow
// acknowledgements.
class SwitchCost {
 public:
  SwitchCost() : r_(simConfig(48)) {
    r_.createSet(1);
    r_.timeSwitch(0, 100);
    r_.timeSwitch(1, 100);
  }
  Rig& rig() { return r_; }
  u64 writesDuring(u64 ns) {
    u64 before = r_.sim().msrWrites();
    r_.advance(ns);
    return r_.sim().msrWrites() - before;
  }

 private:
  Rig r_;
};

// Every switch stops counting around it (GLOBAL_CTRL off, then on), so that
// no event counts in both sets or in neither: two writes per switch on top of
// the registers that differ.
constexpr u64 kStopStart = 2;

// Same PMCs in both sets, PMD values that never coincide: one PMD write per
// switch.
TEST(SessionSwitchCost, SameControlsCostOnePmdWrite) {
  SwitchCost c;
  Rig& r = c.rig();
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kCycles);
  r.pmd(1, 0, 1'000'000'000);
  r.load();
  r.start();
  r.advance(50);
  EXPECT_EQ(c.writesDuring(1000), 10 * (1 + kStopStart));  // switches at 100, 200, ..., 1000
  EXPECT_EQ(r.info(0).runs + r.info(1).runs, 11u);
  EXPECT_EQ(c.writesDuring(49), 0u);  // to 1099: no switch, no write
  EXPECT_EQ(r.read(0, 0), 1797u);     // 500 + 99 ns of set 0
  EXPECT_EQ(r.read(1, 0), 1'000'000'000u + 1500);
}

// Different PMC and PMD: two writes per switch.
TEST(SessionSwitchCost, DifferentControlCostsTwoWrites) {
  SwitchCost c;
  Rig& r = c.rig();
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.pmd(1, 0, 1'000'000'000);
  r.load();
  r.start();
  r.advance(50);
  EXPECT_EQ(c.writesDuring(1000), 10 * (2 + kStopStart));
  EXPECT_EQ(r.read(0, 0), 1650u);                  // 550 ns of set0
  EXPECT_EQ(r.read(1, 0), 1'000'000'000u + 1000);  // 500 ns of set1
}

// Identical images: a PMD whose value the hardware already holds is not
// written. Set0 and set1 count the same event from 0 for the same time, so
// every second switch finds the hardware holding the value wanted.
TEST(SessionSwitchCost, IdenticalValuesAreNotRewritten) {
  SwitchCost c;
  Rig& r = c.rig();
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kCycles);
  r.load();
  r.start();
  r.advance(50);
  // Switch k (k = 1..10): set1 wants 300*floor(k/2), the hardware holds
  // 300*ceil(k/2); set0 wants 300*k/2 at even k, equal to the hardware's.
  EXPECT_EQ(c.writesDuring(1000), 5 + 10 * kStopStart);
  EXPECT_EQ(r.read(0, 0), 1650u);
  EXPECT_EQ(r.read(1, 0), 1500u);
}

// The three fixed counters under one shared FIXED_CTR_CTRL: three PMD writes.
TEST(SessionSwitchCost, FixedCountersCostThreePmdWrites) {
  SwitchCost c;
  Rig& r = c.rig();
  for (unsigned set : {0u, 1u}) r.pmc(set, kFixedCtrl, kFixedAllUsr);
  r.pmd(1, kFixedInstr, 1'000'000'000);
  r.pmd(1, kFixedCycles, 2'000'000'000);
  r.pmd(1, kFixedRef, 3'000'000'000);
  r.load();
  r.start();
  r.advance(50);
  EXPECT_EQ(c.writesDuring(1000), 10 * (3 + kStopStart));
  EXPECT_EQ(r.read(0, kFixedRef), 1375u);  // 2.5 * 550
  EXPECT_EQ(r.read(1, kFixedRef), 3'000'000'000u + 1250);
}

// Set1 uses a counter set0 does not: each switch writes pmc1 (on or off) and
// pmd0. pmd1 is written once, when first programmed: afterwards its stopped
// hardware counter still holds set1's value.
TEST(SessionSwitchCost, ExtraCounterCostsItsControlOnly) {
  SwitchCost c;
  Rig& r = c.rig();
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kCycles);
  r.pmc(1, 1, kInstructions);
  r.pmd(1, 0, 1'000'000'000);
  r.load();
  r.start();
  r.advance(50);
  EXPECT_EQ(c.writesDuring(200), 5 + 2 * kStopStart);      // 0->1: pmc1, pmd0, pmd1; 1->0: pmc1, pmd0
  EXPECT_EQ(c.writesDuring(1000), 10 * (2 + kStopStart));  // 10 more switches, 2 writes each
  EXPECT_EQ(r.read(1, 1), 1200u);                          // 600 ns of set1
  EXPECT_EQ(r.read(0, 0), 1950u);                          // 650 ns of set0
}

// Sets on disjoint counters under one FIXED_CTR_CTRL: set 0 counts on pmd16,
// set 1 on pmd17. Once both counters were programmed, a switch writes only the
// control: the counter the other set stopped still holds its value.
TEST(SessionSwitchCost, DisjointFixedCountersCostOnlyTheControl) {
  SwitchCost c;
  Rig& r = c.rig();
  r.pmc(0, kFixedCtrl, kFixedInstrUsr);
  r.pmc(1, kFixedCtrl, kFixedCyclesUsr);
  r.load();
  r.start();
  r.advance(50);
  EXPECT_EQ(c.writesDuring(200), 3 + 2 * kStopStart);      // 0->1: pmc16, pmd17 (first time); 1->0: pmc16
  EXPECT_EQ(c.writesDuring(1000), 10 * (1 + kStopStart));  // then one write per switch
  EXPECT_EQ(r.read(0, kFixedInstr), 1300u);                // 650 ns of set 0
  EXPECT_EQ(r.read(1, kFixedCycles), 1800u);               // 600 ns of set 1
}

}  // namespace
