// Interrupt skid (--sim-skid) in the session engine over the sim backend
// under the manual clock: an overflow's interrupt comes some events after the
// wrap, and what the session does with an overflow in skid (pfmfs(5),
// OVERFLOWS; the rest of overflow processing is in session_overflow_test.cpp).
//
// A sampling period P is programmed as 2^64 - P (neg(P)): the 64-bit value
// wraps after P events. Cycles count 3/ns and instructions 2/ns, so a period
// that is a multiple of the rate overflows exactly at an integer ns with no
// events past the wrap, and every number below is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::session::PmdWrite;
using pfmfs::session::State;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::expectOverflowMessage;
using pfmfs::testing::kBranches;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::neg;
using pfmfs::testing::pmdWrite;
using pfmfs::testing::SimConfig;

using u64 = std::uint64_t;

using Rig = pfmfs::testing::SessionRig;

// ---- skid ------------------------------------------------------------------------------------------

SimConfig skidConfig(std::uint64_t skid) {
  SimConfig c;
  c.skid = skid;
  return c;
}

// perfmon2's idiom: a counter at -1 that switches sets on overflow. Its
// interrupt comes `skid` of its events after the wrap, so each visit lasts
// that long and the neighbours count that much: with skid 9 an instruction
// counter (2/ns) wraps at the first instruction and interrupts at the tenth,
// 5 ns into the visit; cycles (3/ns) count 15 per visit, branches (0.4/ns) 2.
// Without skid a visit lasts 1 ns.
TEST(SessionSkid, ACounterAtMinusOneLetsItsNeighboursCountTheSkid) {
  auto setUp = [](Rig& r) {
    r.createSet(1);
    for (unsigned set : {0u, 1u}) {
      r.setSwitch(set, SwitchSpec{false, 0, true});
      r.pmc(set, 0, kInstructions);
      PmdWrite w = pmdWrite(0, neg(1));
      w.short_reset = neg(1);
      w.switch_cnt = 1;
      r.pmd(set, w);
    }
    r.pmc(0, 1, kCycles);
    r.pmc(1, 1, kBranches);
    r.loadAndStart();
  };
  Rig r(skidConfig(9));
  setUp(r);
  r.advance(4);
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.read(0, 0), 7u) << "-1 and 8 instructions: a read in skid has the carry";
  EXPECT_EQ(r.read(0, 1), 12u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x0u);
  r.advance(1);  // the tenth instruction: overflow, reset, switch
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.read(0, 0), neg(1)) << "the reset overwrites the skid";
  EXPECT_EQ(r.read(0, 1), 15u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  r.advance(95);  // 20 visits of 5 ns: back in set 0 at 100
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 11u);
  EXPECT_EQ(r.info(1).runs, 10u);
  EXPECT_EQ(r.info(0).duration_ns, 50u);
  EXPECT_EQ(r.info(1).duration_ns, 50u);
  EXPECT_EQ(r.read(0, 1), 150u);  // 15 a visit
  EXPECT_EQ(r.read(1, 1), 20u);   // 2 a visit
  EXPECT_EQ(r.read(1, 0), neg(1));
  EXPECT_EQ(r.state().queued, 0u);

  Rig none;
  setUp(none);
  none.advance(1);
  EXPECT_EQ(none.state().set, 1u);
  EXPECT_EQ(none.read(0, 1), 3u);  // a 1 ns visit
  none.advance(99);
  EXPECT_EQ(none.info(0).runs, 51u);
  EXPECT_EQ(none.info(1).runs, 50u);
}

// Notifying counters that wrap within one skid share one interrupt and one
// message: pmd0 (cycles, period 300) wraps at 100 ns and is due at 110 (330
// cycles); pmd1 (instructions, period 210) wraps at 105, due at 120.
TEST(SessionSkid, WrapsWithinOneSkidShareOneMessage) {
  Rig r(skidConfig(30));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 300, true);
  r.pmc(0, 1, kInstructions);
  r.period(0, 1, 210, std::nullopt, 210, true);
  r.loadAndStart();
  r.advance(109);
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.read(0, 0), 27u);
  EXPECT_EQ(r.read(0, 1), 8u);
  r.advance(1);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.read(0, 0), 30u);  // the skid, counted past the wrap
  EXPECT_EQ(r.read(0, 1), 10u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x3u);
  EXPECT_EQ(r.info(0).duration_ns, 110u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x3);
  EXPECT_EQ(msgs[0].ip, 0x401004u);  // the sim's made-up ip at 110 ns
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(300));
  EXPECT_EQ(r.read(0, 1), neg(210));
}

// An overflow in skid when its set leaves the PMU (stop, unload, a write to
// its registers) is taken then, in that set: pmd0 (cycles, period 300) wraps
// at 100 ns, due at 110; the set stops at 105 and the reset comes at once.
TEST(SessionSkid, LeavingThePmuTakesTheOverflowInSkid) {
  auto setUp = [](Rig& r) {
    r.pmc(0, 0, kCycles);
    r.period(0, 0, 300, 300, std::nullopt, false);
    r.pmc(0, 1, kInstructions);
    r.loadAndStart();
    r.advance(105);
    EXPECT_EQ(r.read(0, 0), 15u);
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x0u);
  };
  {
    Rig r(skidConfig(30));
    setUp(r);
    ASSERT_TRUE(r.s().stop().ok());
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
    EXPECT_EQ(r.read(0, 0), neg(300));
    r.advance(100);  // stopped: no late interrupt, nothing counts
    EXPECT_EQ(r.read(0, 0), neg(300));
    EXPECT_EQ(r.read(0, 1), 210u);
    ASSERT_TRUE(r.s().start().ok());
    r.advance(50);
    EXPECT_EQ(r.read(0, 0), neg(150));
  }
  {
    Rig r(skidConfig(30));
    setUp(r);
    ASSERT_TRUE(r.s().unload().ok());
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
    EXPECT_EQ(r.read(0, 0), neg(300));
  }
  {
    Rig r(skidConfig(30));
    setUp(r);
    r.pmd(0, 1, 0);  // a register of the active set
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
    EXPECT_EQ(r.read(0, 0), neg(300));
    r.advance(5);  // no interrupt at 110 any more: counting from the reset
    EXPECT_EQ(r.read(0, 0), neg(285));
    EXPECT_EQ(r.read(0, 1), 10u);
  }
}

// A notifying overflow in skid taken by stop masks the session, as one taken
// a moment earlier would have: the notification is queued, restart loads the
// long reset and the session stays stopped (PAPI's handler restarts after
// the program's stop).
TEST(SessionSkid, StopTakingANotifyingOverflowLeavesTheSessionMasked) {
  Rig r(skidConfig(30));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, 300, 600, true);  // wraps at 100, due at 110
  r.loadAndStart();
  r.advance(105);
  ASSERT_TRUE(r.s().stop().ok());
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.state().queued, 1u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  r.advance(100);  // stopped and masked: nothing counts
  EXPECT_EQ(r.read(0, 0), 15u);
  ASSERT_TRUE(r.s().restart().ok());
  EXPECT_EQ(r.state().state, State::Loaded);
  EXPECT_EQ(r.read(0, 0), neg(600));
  ASSERT_TRUE(r.s().start().ok());
  r.advance(50);
  EXPECT_EQ(r.read(0, 0), neg(450));
}

// A time switch while an overflow is in skid: the overflow is taken first, in
// the set that counted it, so its late interrupt cannot land in the next set.
// Silent, the switch follows; notifying, it masks and the switch waits for
// restart.
TEST(SessionSkid, ATimeSwitchTakesTheOverflowInSkidFirst) {
  auto setUp = [](Rig& r, bool notify) {
    r.createSet(1);
    r.setSwitch(0, SwitchSpec{true, 105, false});
    r.setSwitch(1, SwitchSpec{true, 105, false});
    r.pmc(0, 0, kCycles);
    r.period(0, 0, 300, 300, 300, notify);  // wraps at 100, due at 110
    r.pmc(1, 0, kInstructions);
    r.loadAndStart();
  };
  {
    Rig r(skidConfig(30));
    setUp(r, false);
    r.advance(200);
    EXPECT_EQ(r.state().set, 1u);
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
    EXPECT_EQ(r.info(1).ovfl_pmds, 0x0u);
    EXPECT_EQ(r.read(0, 0), neg(300));
    EXPECT_EQ(r.read(1, 0), 190u) << "no carry from set 0's overflow";
    r.advance(10);  // back in set 0 at 210
    EXPECT_EQ(r.state().set, 0u);
    EXPECT_EQ(r.info(0).runs, 2u);
  }
  {
    Rig r(skidConfig(30));
    setUp(r, true);
    r.advance(200);
    EXPECT_EQ(r.state().state, State::Masked);
    EXPECT_EQ(r.state().set, 0u);
    EXPECT_EQ(r.info(0).duration_ns, 105u);
    EXPECT_EQ(r.read(0, 0), 15u);
    auto msgs = r.take();
    ASSERT_EQ(msgs.size(), 1u);
    expectOverflowMessage(msgs[0], 1, 0, 0x1);
    r.restart();
    EXPECT_EQ(r.state().set, 1u) << "the switch that was due";
    EXPECT_EQ(r.read(0, 0), neg(300));
    EXPECT_EQ(r.info(1).runs, 1u);
  }
}

// A read in skid has the carry at every width, and none under no_emul64
// (whose wraps carry nothing): a 16-bit cycle counter at 0xfff0 wraps at the
// 16th cycle (6 ns) and interrupts at the 26th (9 ns).
TEST(SessionSkid, AReadInSkidHasTheCarry) {
  for (unsigned width : {16u, 48u, 64u}) {
    SimConfig c = skidConfig(10);
    c.width = width;
    Rig r(c);
    const u64 range_minus_16 = width == 64 ? neg(16) : (u64{1} << width) - 16;
    r.pmc(0, 0, kCycles);
    r.pmd(0, 0, range_minus_16);
    r.pmc(0, 1, kCycles, true);
    r.pmd(0, 1, range_minus_16);
    r.loadAndStart();
    r.advance(7);
    EXPECT_EQ(r.read(0, 0), range_minus_16 + 21) << width;
    EXPECT_EQ(r.read(0, 1), 5u) << width;
    EXPECT_EQ(r.info(0).ovfl_pmds, 0x0u) << width;
  }
}

}  // namespace
