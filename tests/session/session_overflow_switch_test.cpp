// Overflow processing by the session engine over the sim backend under the
// manual clock (pfmfs(5), OVERFLOWS), continued from session_overflow_test.cpp:
// random resets (random_mask) and overflow-based set switching (switch_cnt),
// alone and against time switches, and the overflow instants of fractional
// and phased rates.
//
// A sampling period P is programmed as 2^64 - P (neg(P)): the 64-bit value
// wraps after P events. Cycles count 3/ns and instructions 2/ns, so a period
// that is a multiple of the rate overflows exactly at an integer ns with no
// events past the wrap, and every number below is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::session::CountLine;
using pfmfs::session::PmdValue;
using pfmfs::session::PmdWrite;
using pfmfs::session::State;
using pfmfs::session::StateInfo;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::expectOverflowMessage;
using pfmfs::testing::kBranches;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::kUsr;
using pfmfs::testing::neg;
using pfmfs::testing::pmdWrite;
using pfmfs::testing::simConfig;

using u64 = std::uint64_t;

constexpr u64 kPhaseA = 0x01f0 | kUsr;  // 4/ns in the first 1 ms of every 2 ms

using Rig = pfmfs::testing::SessionRig;

// ---- random resets ---------------------------------------------------------------------------

// Silent overflows with short reset 3000 and random_mask 0xff: each reset is
// 3000 + r cycles with 0 <= r <= 255. Each advance runs exactly to the next
// overflow, so the value read is the reset just applied.
TEST(SessionOverflow, RandomShortResetsStayInRange) {
  Rig r;
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(3000));
  w.short_reset = neg(3000);
  w.random = true;
  w.random_mask = 0xff;
  r.pmd(0, w);
  r.loadAndStart();
  r.advance(1000);
  std::set<u64> seen;
  for (int i = 0; i < 200; ++i) {
    PmdValue v = r.readFull(0, 0);
    ASSERT_EQ(v.value, v.state.last_reset) << "overflow " << i;
    ASSERT_GE(v.value, neg(3000 + 0xff)) << "overflow " << i;
    ASSERT_LE(v.value, neg(3000)) << "overflow " << i;
    const u64 events = neg(v.value);  // 3000 + r
    seen.insert(events - 3000);
    const u64 ns = (events + 2) / 3;  // the ns of the next overflow
    r.advance(ns - 1);
    ASSERT_EQ(r.read(0, 0), v.value + 3 * (ns - 1)) << "overflow " << i;
    r.advance(1);
  }
  EXPECT_GT(seen.size(), 1u);  // not all equal
  EXPECT_EQ(r.state().state, State::Active);
}

// Notifying overflows, long reset 6000, random_mask 0xf0: after each restart
// the value is 6000 + r cycles from overflow with r a multiple of 16 <= 240.
TEST(SessionOverflow, RandomLongResetsUseOnlyTheMaskBits) {
  Rig r;
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(3000));
  w.long_reset = neg(6000);
  w.notify = true;
  w.random = true;
  w.random_mask = 0xf0;
  r.pmd(0, w);
  r.loadAndStart();
  std::set<u64> seen;
  for (u64 i = 1; i <= 50; ++i) {
    r.advance(3000);  // at most 6240 cycles = 2080 ns to the overflow
    ASSERT_EQ(r.state().state, State::Masked) << "overflow " << i;
    auto msgs = r.take();
    ASSERT_EQ(msgs.size(), 1u);
    expectOverflowMessage(msgs[0], i, 0, 0x1);
    r.restart();
    const u64 lowered = neg(r.read(0, 0)) - 6000;
    ASSERT_LE(lowered, 0xf0u) << "overflow " << i;
    ASSERT_EQ(lowered & ~u64{0xf0}, 0u) << "overflow " << i;
    seen.insert(lowered);
  }
  EXPECT_GT(seen.size(), 1u);
}

// ---- overflow-based switching ------------------------------------------------------------------

// Set 0 switches after 3 overflows of pmd0 (period 300 cycles = 100 ns), set 1
// after 500 ns: set0 (0,300] set1 (300,800] set0 (800,1100] set1 (1100,1600]
// set0 (1600,1900] set1 (1900,2000].
TEST(SessionOverflow, OverflowSwitchingAfterSwitchCnt) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{false, 0, true});
  r.setSwitch(1, SwitchSpec{true, 500, false});
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.short_reset = neg(300);
  w.switch_cnt = 3;
  r.pmd(0, w);
  r.pmc(1, 0, kInstructions);
  r.loadAndStart();
  r.advance(2000);
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(0).runs, 3u);
  EXPECT_EQ(r.info(1).runs, 3u);
  EXPECT_EQ(r.info(0).duration_ns, 900u);
  EXPECT_EQ(r.info(1).duration_ns, 1100u);
  EXPECT_EQ(r.info(1).timeout_ns, 400u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.info(1).ovfl_pmds, 0x0u);
  EXPECT_EQ(r.read(0, 0), neg(300));  // reset at its third overflow, then switched out
  EXPECT_EQ(r.read(1, 0), 2200u);
  EXPECT_EQ(r.readFull(0, 0).state.switch_cnt, 3u);

  r.advance(400);  // ends exactly on set 1's timeout
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 4u);
  r.advance(150);  // one overflow at 2500, then 50 ns
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.read(0, 0), neg(150));
  r.advance(150);  // second at 2600, third at 2700: switch
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(1).runs, 4u);
  EXPECT_EQ(r.info(0).duration_ns, 1200u);
}

// Both sets switch on overflow: set 0 after 2 periods of 100 ns, set 1 after 5
// periods of 100 ns (200 instructions). A cycle is 700 ns; 7000 ns end exactly
// on set 1's tenth switch.
TEST(SessionOverflow, OverflowSwitchingBothSets) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{false, 0, true});
  r.setSwitch(1, SwitchSpec{false, 0, true});
  r.pmc(0, 0, kCycles);
  PmdWrite w0 = pmdWrite(0, neg(300));
  w0.short_reset = neg(300);
  w0.switch_cnt = 2;
  r.pmd(0, w0);
  r.pmc(1, 0, kInstructions);
  PmdWrite w1 = pmdWrite(0, neg(200));
  w1.short_reset = neg(200);
  w1.switch_cnt = 5;
  r.pmd(1, w1);
  r.pmc(1, 1, kBranches);
  r.loadAndStart();
  r.advance(7000);
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 11u);
  EXPECT_EQ(r.info(1).runs, 10u);
  EXPECT_EQ(r.info(0).duration_ns, 2000u);
  EXPECT_EQ(r.info(1).duration_ns, 5000u);
  EXPECT_EQ(r.read(0, 0), neg(300));
  EXPECT_EQ(r.read(1, 0), neg(200));
  CountLine b = r.line(1, 1);  // 0.4/ns over ten runs of 500 ns
  EXPECT_EQ(b.value, 2000u);
  EXPECT_EQ(b.enabled_ns, 7000u);
  EXPECT_EQ(b.running_ns, 5000u);
  EXPECT_EQ(b.scaled, std::optional<u64>(2800));
  r.advance(150);  // set 0: one overflow at 7100, 50 ns into the second period
  EXPECT_EQ(r.read(0, 0), neg(150));
  EXPECT_EQ(r.state().set, 0u);
}

// A lone set switching on overflow: every second overflow starts a new
// activation of the same set, which reloads the switch counter.
TEST(SessionOverflow, LoneSetOverflowSwitchReArms) {
  Rig r;
  r.setSwitch(0, SwitchSpec{false, 0, true});
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.short_reset = neg(300);
  w.switch_cnt = 2;
  r.pmd(0, w);
  r.loadAndStart();
  r.advance(1050);  // overflows at 100, 200, ..., 1000: re-arms at 200, ..., 1000
  EXPECT_EQ(r.info(0).runs, 6u);
  EXPECT_EQ(r.info(0).duration_ns, 1050u);
  EXPECT_EQ(r.read(0, 0), neg(150));
  EXPECT_EQ(r.state().state, State::Active);
}

// A notifying overflow that also switches: the switch happens while masked,
// restart resets the PMD of the set that overflowed and resumes in the new set.
TEST(SessionOverflow, OverflowSwitchWithNotify) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{false, 0, true});
  r.setSwitch(1, SwitchSpec{true, 500, false});
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.long_reset = neg(300);
  w.switch_cnt = 1;
  w.notify = true;
  r.pmd(0, w);
  r.pmc(1, 0, kInstructions);
  r.loadAndStart();
  r.advance(100);
  StateInfo st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.set, 1u);
  EXPECT_EQ(r.info(1).runs, 1u);
  EXPECT_EQ(r.read(0, 0), 0u);
  r.advance(1000);
  EXPECT_EQ(r.info(1).duration_ns, 0u);
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(300));
  EXPECT_EQ(r.state().set, 1u);
  r.advance(600);  // set1 for 500, set0 for 100: overflow, switch, mask
  st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.set, 1u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(1).runs, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 200u);
  EXPECT_EQ(r.info(1).duration_ns, 500u);
  EXPECT_EQ(r.read(1, 0), 1000u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 2u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  expectOverflowMessage(msgs[1], 2, 0, 0x1);
}

// An overflow and a time switch at the same instant: the PMD is reset, then
// the switch happens. With 100 ns timeouts and a 100 ns period set 0
// overflows exactly once per activation.
TEST(SessionOverflow, SilentOverflowOnTheInstantOfATimeSwitch) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{true, 100, false});
  r.setSwitch(1, SwitchSpec{true, 100, false});
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, 300, std::nullopt, false);
  r.pmc(1, 0, kInstructions);
  r.loadAndStart();
  r.advance(1000);               // set 0 runs (0,100] (200,300] ... (800,900]
  EXPECT_EQ(r.state().set, 0u);  // switched back at 1000
  EXPECT_EQ(r.info(0).runs, 6u);
  EXPECT_EQ(r.info(1).runs, 5u);
  EXPECT_EQ(r.read(0, 0), neg(300));
  EXPECT_EQ(r.read(1, 0), 1000u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  r.advance(50);
  EXPECT_EQ(r.read(0, 0), neg(150));
}

// A notifying overflow on the instant set 0's time is up: masked first; after
// restart the switch that was due happens at once.
TEST(SessionOverflow, NotifyOnTheInstantOfATimeSwitch) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{true, 100, false});
  r.setSwitch(1, SwitchSpec{true, 100, false});
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 3'000'000, true);
  r.pmc(1, 0, kInstructions);
  r.loadAndStart();
  r.advance(500);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.info(1).duration_ns, 0u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  r.restart();
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(1).runs, 1u);
  EXPECT_EQ(r.info(0).timeout_ns, 100u);
  r.advance(100);  // all of it in set 1, then back to set 0
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.info(1).duration_ns, 100u);
  EXPECT_EQ(r.read(1, 0), 200u);
  EXPECT_EQ(r.read(0, 0), neg(3'000'000));
}

// A PMD of a set that is not on the hardware cannot overflow: set 1's counter,
// 10 instructions from overflow, overflows 5 ns into set 1's first run.
TEST(SessionOverflow, InactiveSetDoesNotOverflow) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{true, 1000, false});
  r.setSwitch(1, SwitchSpec{true, 1000, false});
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.period(1, 0, 10, std::nullopt, 10, true);
  r.loadAndStart();
  r.advance(1000);
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.read(1, 0), neg(10));
  r.advance(4);
  EXPECT_EQ(r.state().state, State::Active);
  r.advance(1);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(1).duration_ns, 5u);
  EXPECT_EQ(r.info(1).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x0u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 1, 0x1);
}

// Overflow instants of events with fractional and phased rates:
//  - ref cycles (2.5/ns), period 1001: floor(2.5 t) >= 1001 first at t = 401,
//    where 1002 events have happened: the value at the overflow is 1;
//  - SIM_PHASE_A, period 5,000,000: 4,000,000 in the first ms, none in the
//    second, the last 1,000,000 by 2.25 ms.
TEST(SessionOverflow, OverflowInstantOfFractionalAndPhasedRates) {
  {
    Rig r;
    r.pmc(0, 0, pfmfs::testing::kRefCycles);
    r.period(0, 0, 1001, std::nullopt, 1001, true);
    r.loadAndStart();
    r.advance(400);
    EXPECT_EQ(r.state().state, State::Active);
    EXPECT_EQ(r.read(0, 0), neg(1));
    r.advance(600);
    EXPECT_EQ(r.state().state, State::Masked);
    EXPECT_EQ(r.info(0).duration_ns, 401u);
    EXPECT_EQ(r.read(0, 0), 1u);
  }
  {
    Rig r(simConfig(16));
    r.pmc(0, 0, kPhaseA);
    r.period(0, 0, 5'000'000, std::nullopt, 5'000'000, true);
    r.loadAndStart();
    r.advance(2'249'999);
    EXPECT_EQ(r.state().state, State::Active);
    EXPECT_EQ(r.read(0, 0), neg(4));
    r.advance(1'000'000);
    EXPECT_EQ(r.state().state, State::Masked);
    EXPECT_EQ(r.info(0).duration_ns, 2'250'000u);
    EXPECT_EQ(r.read(0, 0), 0u);
  }
}

}  // namespace
