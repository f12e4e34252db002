// Overflow processing by the session engine over the sim backend under the
// manual clock (pfmfs(5), OVERFLOWS): notification, masking and restart with long
// resets, silent overflows with short resets, reset_pmds, no_msg, a full
// message queue, ovfl_pmds, no_emul64, notify_block, 64-bit overflows at every
// width, and overflow storms. Random resets and overflow-based set switching
// are in session_overflow_switch_test.cpp, interrupt skid in
// session_skid_test.cpp.
//
// A sampling period P is programmed as 2^64 - P (neg(P)): the 64-bit value
// wraps after P events. Cycles count 3/ns and instructions 2/ns, so a period
// that is a multiple of the rate overflows exactly at an integer ns with no
// events past the wrap, and every number below is exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::pmu::RegMask;
using pfmfs::session::CountLine;
using pfmfs::session::Flags;
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
using pfmfs::testing::SimConfig;
using pfmfs::testing::simConfig;

using u64 = std::uint64_t;

constexpr u64 kPhaseA = 0x01f0 | kUsr;  // 4/ns in the first 1 ms of every 2 ms
constexpr unsigned kFixedCtrl = 16;
constexpr unsigned kFixedCycles = 17;   // pmd17: cycles, 3/ns
constexpr u64 kFixedCyclesUsr = 0x020;  // its FIXED_CTR_CTRL field, user level
constexpr RegMask kPmd17 = RegMask{1} << 17;

using Rig = pfmfs::testing::SessionRig;

// ---- notify, mask, restart ---------------------------------------------------------------

TEST(SessionOverflow, NotifyMasksQueuesAndRestartAppliesLongReset) {
  Rig r;
  // pmd0: cycles, period 300 (100 ns), then 600 (200 ns) after each restart.
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.long_reset = neg(600);
  w.short_reset = neg(90);  // not used: a notifying overflow waits for restart
  w.notify = true;
  r.pmd(0, w);
  r.pmc(0, 1, kInstructions);
  r.loadAndStart();

  r.advance(99);
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.read(0, 0), neg(3));
  EXPECT_EQ(r.state().queued, 0u);

  r.advance(1);  // the 300th cycle: the 64-bit value wraps at t = 100
  StateInfo st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.queued, 1u);
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(r.read(0, 0), 0u);  // wrapped; the reset waits for restart
  EXPECT_EQ(r.read(0, 1), 200u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);

  r.advance(1000);  // masked: nothing counts, no time is accounted
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.read(0, 0), 0u);
  EXPECT_EQ(r.read(0, 1), 200u);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.line(0, 1).enabled_ns, 100u);
  EXPECT_EQ(r.s().start().code(), -EBUSY);  // masked: restart first

  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  EXPECT_EQ(r.state().queued, 0u);

  r.restart();
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.read(0, 0), neg(600));
  EXPECT_EQ(r.readFull(0, 0).state.last_reset, neg(600));

  r.advance(250);  // overflows 200 ns after the restart
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.read(0, 0), 0u);
  EXPECT_EQ(r.read(0, 1), 600u);
  EXPECT_EQ(r.info(0).duration_ns, 300u);

  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(600));
  r.advance(200);  // overflows on the last ns of the advance
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.state().queued, 2u);
  EXPECT_EQ(r.read(0, 1), 1000u);
  r.restart();
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.s().restart().code(), -EBUSY);  // nothing to restart

  msgs = r.take();
  ASSERT_EQ(msgs.size(), 2u);
  expectOverflowMessage(msgs[0], 2, 0, 0x1);
  expectOverflowMessage(msgs[1], 3, 0, 0x1);

  r.advance(50);
  EXPECT_EQ(r.read(0, 0), neg(450));
  EXPECT_EQ(r.read(0, 1), 1100u);
  EXPECT_EQ(r.info(0).duration_ns, 550u);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 550u);
  EXPECT_EQ(r.info(0).runs, 1u);  // restart continues the activation
}

// Masked time does not count toward the set's timeout either: the switch
// happens after 1000 ns of counting, however long the mask lasted.
TEST(SessionOverflow, MaskedTimeDoesNotCountTowardTheTimeout) {
  Rig r;
  r.createSet(1);
  r.setSwitch(0, SwitchSpec{true, 1000, false});
  r.setSwitch(1, SwitchSpec{true, 1000, false});
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 30'000, true);
  r.pmc(1, 0, kInstructions);
  r.loadAndStart();
  r.advance(100);
  EXPECT_EQ(r.state().state, State::Masked);
  r.advance(5000);
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.info(0).timeout_ns, 900u);
  EXPECT_EQ(r.info(1).runs, 0u);

  r.restart();
  r.advance(899);
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).timeout_ns, 1u);
  r.advance(1);
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(1).runs, 1u);
  EXPECT_EQ(r.info(0).duration_ns, 1000u);
  EXPECT_EQ(r.read(0, 0), neg(30'000) + 2700);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 1000u);
}

// stop on a masked session keeps it masked, as perfmon2's pfm_stop did
// (docs/design.md): restart then loads the long reset and leaves the session
// stopped; start counts on from the reset value.
TEST(SessionOverflow, StopWhileMaskedKeepsTheNotificationToRestart) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 600, true);
  r.loadAndStart();
  r.advance(100);
  EXPECT_EQ(r.state().state, State::Masked);
  ASSERT_TRUE(r.s().stop().ok());
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.s().start().code(), -EBUSY);
  r.advance(50);
  EXPECT_EQ(r.read(0, 0), 0u);
  ASSERT_TRUE(r.s().restart().ok());
  EXPECT_EQ(r.state().state, State::Loaded);
  EXPECT_EQ(r.read(0, 0), neg(600));
  r.advance(50);
  EXPECT_EQ(r.read(0, 0), neg(600));  // stopped: nothing counts
  EXPECT_EQ(r.s().restart().code(), -EBUSY);
  ASSERT_TRUE(r.s().start().ok());
  r.advance(10);
  EXPECT_EQ(r.read(0, 0), neg(600) + 30);
  EXPECT_EQ(r.state().state, State::Active);
}

// A later overflow masks afresh: its restart starts counting again.
TEST(SessionOverflow, MaskAfterAStoppedMaskRestartsCounting) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 30, true);
  r.loadAndStart();
  r.advance(100);
  ASSERT_TRUE(r.s().stop().ok());
  ASSERT_TRUE(r.s().restart().ok());
  ASSERT_TRUE(r.s().start().ok());
  r.advance(10);
  EXPECT_EQ(r.state().state, State::Masked);
  ASSERT_TRUE(r.s().restart().ok());
  EXPECT_EQ(r.state().state, State::Active);
}

// ---- silent overflows ----------------------------------------------------------------------

class SilentTest : public ::testing::TestWithParam<unsigned> {};

// No notify: each overflow takes the short reset at once and counting goes on.
// First period 30 (10 ns), then 300 (100 ns): overflows at 10, 110, ..., 1010
// (11 of them); at 1050 the counter is 40 ns = 120 cycles into its period.
TEST_P(SilentTest, ShortResetKeepsCounting) {
  Rig r(simConfig(GetParam()));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 30, 300, std::nullopt, false);
  r.pmc(0, 1, kInstructions);
  r.loadAndStart();
  r.advance(1009);
  EXPECT_EQ(r.read(0, 0), neg(3));  // 99 ns into the period that began at 910
  r.advance(1);
  EXPECT_EQ(r.read(0, 0), neg(300));  // the 11th overflow, at 1010
  r.advance(40);
  EXPECT_EQ(r.read(0, 0), neg(180));
  EXPECT_EQ(r.read(0, 1), 2100u);
  EXPECT_EQ(r.readFull(0, 0).state.last_reset, neg(300));
  StateInfo st = r.state();
  EXPECT_EQ(st.state, State::Active);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_EQ(st.lost, 0u);
  EXPECT_TRUE(r.take().empty());
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.info(0).duration_ns, 1050u);  // no time lost to overflows
  EXPECT_EQ(r.line(0, 1).enabled_ns, 1050u);
}

// A period of 300,000 cycles spans several 16-bit hardware wraps: overflows
// at 100 us, 200 us, ..., 1 ms; at 1.05 ms the counter is 150,000 cycles in.
TEST_P(SilentTest, LongPeriodSpanningHardwareWraps) {
  Rig r(simConfig(GetParam()));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300'000, 300'000, std::nullopt, false);
  r.loadAndStart();
  r.advance(999'999);
  EXPECT_EQ(r.read(0, 0), neg(3));
  r.advance(1);
  EXPECT_EQ(r.read(0, 0), neg(300'000));
  r.advance(50'000);
  EXPECT_EQ(r.read(0, 0), neg(150'000));
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
}

INSTANTIATE_TEST_SUITE_P(Widths, SilentTest, ::testing::Values(16u, 32u, 48u, 64u),
                         [](const auto& param_info) { return "W" + std::to_string(param_info.param); });

// reset_pmds: pmd0's overflow also resets pmd1 (to its short reset); pmd2,
// not listed, counts on. Last overflow at 1000; at 1050 pmd1 = 1000 + 2 * 50.
TEST(SessionOverflow, ResetPmdsResetsASecondCounter) {
  Rig r;
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.short_reset = neg(300);
  w.reset_pmds = 0x2;
  r.pmd(0, w);
  r.pmc(0, 1, kInstructions);
  PmdWrite w1 = pmdWrite(1, 0);
  w1.short_reset = 1000;
  r.pmd(0, w1);
  r.pmc(0, 2, kBranches);
  r.loadAndStart();
  r.advance(99);
  EXPECT_EQ(r.read(0, 1), 198u);
  r.advance(1);
  EXPECT_EQ(r.read(0, 1), 1000u);
  r.advance(950);
  EXPECT_EQ(r.read(0, 0), neg(150));
  EXPECT_EQ(r.read(0, 1), 1100u);
  EXPECT_EQ(r.read(0, 2), 420u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);  // pmd1 was reset, it did not overflow
}

// With notify the reset of pmd1 waits for restart and uses its long reset.
TEST(SessionOverflow, ResetPmdsWithNotifyWaitForRestart) {
  Rig r;
  r.pmc(0, 0, kCycles);
  PmdWrite w = pmdWrite(0, neg(300));
  w.long_reset = neg(300);
  w.reset_pmds = 0x2;
  w.notify = true;
  r.pmd(0, w);
  r.pmc(0, 1, kInstructions);
  PmdWrite w1 = pmdWrite(1, 0);
  w1.short_reset = 1000;
  w1.long_reset = 5000;
  r.pmd(0, w1);
  r.loadAndStart();
  r.advance(150);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.read(0, 1), 200u);
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(300));
  EXPECT_EQ(r.read(0, 1), 5000u);
  r.advance(50);
  EXPECT_EQ(r.read(0, 0), neg(150));
  EXPECT_EQ(r.read(0, 1), 5100u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
}

// ---- messages ------------------------------------------------------------------------------

TEST(SessionOverflow, NoMsgMasksWithoutAMessage) {
  Rig r;
  r.flags(Flags{.no_msg = true});
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 300, true);
  r.loadAndStart();
  r.advance(150);
  StateInfo st = r.state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.queued, 0u);
  EXPECT_EQ(st.lost, 0u);
  EXPECT_TRUE(r.take().empty());
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(300));
  r.advance(100);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.state().queued, 0u);
  EXPECT_EQ(r.info(0).duration_ns, 200u);
}

// A queue of 3: five notifications without reading keep the first three and
// count two lost; seq numbers go to queued messages only.
TEST(SessionOverflow, FullQueueCountsLostAndSeqStaysConsecutive) {
  SimConfig config;
  config.engine.max_messages = 3;
  Rig r(config);
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 300, true);
  r.loadAndStart();
  for (int i = 1; i <= 5; ++i) {
    r.advance(100);
    StateInfo st = r.state();
    ASSERT_EQ(st.state, State::Masked) << "overflow " << i;  // masked, queued or not
    EXPECT_EQ(st.queued, static_cast<std::size_t>(std::min(i, 3)));
    EXPECT_EQ(st.lost, static_cast<u64>(i > 3 ? i - 3 : 0));
    r.restart();
  }
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 3u);
  for (unsigned i = 0; i < 3; ++i) expectOverflowMessage(msgs[i], i + 1, 0, 0x1);
  r.advance(100);
  msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 4, 0, 0x1);
  EXPECT_EQ(r.state().lost, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 600u);
}

// ---- ovfl_pmds ----------------------------------------------------------------------------------

// ovfl_pmds holds the PMDs of the last overflow only, fixed counters included.
TEST(SessionOverflow, OvflPmdsShowsTheLastOverflow) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, 3'000'000, std::nullopt, false);  // at 100 ns
  r.pmc(0, 1, kInstructions);
  r.period(0, 1, 400, 4'000'000, std::nullopt, false);  // at 200 ns
  r.pmc(0, kFixedCtrl, kFixedCyclesUsr);
  r.period(0, kFixedCycles, 1500, 3'000'000, std::nullopt, false);  // at 500 ns
  r.loadAndStart();
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x0u);
  r.advance(150);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  r.advance(100);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x2u);
  r.advance(300);
  EXPECT_EQ(r.info(0).ovfl_pmds, kPmd17);
  EXPECT_EQ(r.read(0, 0), neg(3'000'000) + 1350);
  EXPECT_EQ(r.read(0, 1), neg(4'000'000) + 700);
  EXPECT_EQ(r.read(0, kFixedCycles), neg(3'000'000) + 150);
  EXPECT_EQ(r.state().state, State::Active);
}

// Two (here three, one fixed) counters overflowing at the same instant make
// one message naming all of them.
TEST(SessionOverflow, CountersOverflowingTogetherShareOneMessage) {
  Rig r(simConfig(16));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 3000, true);
  r.pmc(0, 1, kInstructions);
  r.period(0, 1, 200, std::nullopt, 4000, true);
  r.pmc(0, kFixedCtrl, kFixedCyclesUsr);
  r.period(0, kFixedCycles, 300, std::nullopt, 6000, true);
  r.loadAndStart();
  r.advance(150);
  EXPECT_EQ(r.state().state, State::Masked);
  const RegMask all = 0x3 | kPmd17;
  EXPECT_EQ(r.info(0).ovfl_pmds, all);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, all);

  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(3000));
  EXPECT_EQ(r.read(0, 1), neg(4000));
  EXPECT_EQ(r.read(0, kFixedCycles), neg(6000));
  r.advance(1000);  // pmd0 alone overflows, at the last ns
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.read(0, 1), neg(2000));
  EXPECT_EQ(r.read(0, kFixedCycles), neg(3000));
  msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 2, 0, 0x1);
}

// Only the overflowed PMDs that ask for notification are in the message;
// ovfl_pmds has both. As docs/design.md §Overflows says (and as perfmon2 did),
// the whole reset set then waits for restart and takes the long reset values,
// the non-notifying PMD included.
TEST(SessionOverflow, MessageNamesOnlyNotifyingPmds) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 3000, true);
  r.pmc(0, 1, kInstructions);
  r.period(0, 1, 200, 222, 4000, false);
  r.loadAndStart();
  r.advance(150);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x3u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(3000));
  EXPECT_EQ(r.read(0, 1), neg(4000));
}

// ---- no_emul64 ----------------------------------------------------------------------------------

// At width 16 a no_emul64 counter overflows user-visibly at the 2^16 hardware
// wrap; a normal counter beside it just carries into its software bits.
TEST(SessionOverflow, NoEmul64OverflowsAtTheHardwareWrap) {
  Rig r(simConfig(16));
  r.pmc(0, 0, kCycles, /*no_emul64=*/true);
  PmdWrite w0 = pmdWrite(0, 65536 - 300);
  w0.short_reset = 65536 - 300;
  r.pmd(0, w0);
  r.pmc(0, 1, kInstructions);
  PmdWrite w1 = pmdWrite(1, 65536 - 200);
  w1.short_reset = 0;
  r.pmd(0, w1);
  r.loadAndStart();
  EXPECT_TRUE(r.s().readPmc(0, 0)->no_emul64);
  r.advance(250);  // pmd0 overflows at 100 and 200
  EXPECT_EQ(r.read(0, 0), 65536u - 300 + 150);
  EXPECT_EQ(r.read(0, 1), 65536u - 200 + 500);  // 64-bit emulated, no reset
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1u);
  EXPECT_EQ(r.state().state, State::Active);
}

TEST(SessionOverflow, NoEmul64NotifiesAtTheHardwareWrap) {
  Rig r(simConfig(16));
  r.pmc(0, 0, kCycles, /*no_emul64=*/true);
  PmdWrite w = pmdWrite(0, 65536 - 300);
  w.long_reset = 65536 - 600;
  w.notify = true;
  r.pmd(0, w);
  r.loadAndStart();
  r.advance(150);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.read(0, 0), 0u);
  r.restart();
  EXPECT_EQ(r.read(0, 0), 65536u - 600);
  r.advance(200);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).duration_ns, 300u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 2u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  expectOverflowMessage(msgs[1], 2, 0, 0x1);
}

// ---- notify_block -------------------------------------------------------------------------------

// With notify_block the thread is held at the overflow until restart: advances
// do not move its time. SIM_PHASE_A (4/ns in the first ms of every 2 ms) shows
// where the target's clock stands: held, it resumes at 100 ns, in phase A;
// not held, its clock ran on to 1.5 ms + 200 ns, in phase B.
void notifyBlockRun(bool block, u64 want_phase_a) {
  Rig r;
  r.flags(Flags{.notify_block = block});
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 300, std::nullopt, 3'000'000'000, true);
  r.pmc(0, 1, kPhaseA);
  r.loadAndStart();
  r.advance(200);  // overflow at 100 ns
  EXPECT_EQ(r.state().state, State::Masked);
  r.advance(1'000'000);
  r.advance(500'000);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).duration_ns, 100u);
  EXPECT_EQ(r.read(0, 1), 400u);
  r.restart();
  r.advance(400);
  EXPECT_EQ(r.read(0, 0), neg(3'000'000'000) + 1200);
  EXPECT_EQ(r.read(0, 1), want_phase_a);
  EXPECT_EQ(r.info(0).duration_ns, 500u);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 500u);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 1u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
}

TEST(SessionOverflow, NotifyBlockFreezesTheTargetsTimeUntilRestart) {
  notifyBlockRun(true, 400 + 1600);  // (100, 500] ns: all phase A
}

TEST(SessionOverflow, WithoutNotifyBlockTheTargetsTimeRunsWhileMasked) {
  notifyBlockRun(false, 400);  // (1,500,200, 1,500,600] ns: phase B
}

// ---- 64-bit overflows at every width ------------------------------------------------------------

class SixtyFourBitTest : public ::testing::TestWithParam<unsigned> {};

// A period of 3,000,000 cycles (1 ms) is one hardware wrap at width 64 and
// ~46 at width 16; the user-visible overflow happens at exactly 1 ms either
// way, and the next one exactly 1 ms after the restart.
TEST_P(SixtyFourBitTest, OverflowAfterExactlyPEvents) {
  Rig r(simConfig(GetParam()));
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 3'000'000, std::nullopt, 3'000'000, true);
  r.pmc(0, kFixedCtrl, kFixedCyclesUsr);
  r.period(0, kFixedCycles, 6'000'000, 6'000'000, std::nullopt, false);  // silent, at 2 ms of counting
  r.loadAndStart();
  r.advance(999'999);
  EXPECT_EQ(r.state().state, State::Active);
  EXPECT_EQ(r.read(0, 0), neg(3));
  r.advance(1);
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.read(0, 0), 0u);
  r.advance(1'000'000);
  EXPECT_EQ(r.info(0).duration_ns, 1'000'000u);
  EXPECT_EQ(r.read(0, kFixedCycles), neg(3'000'000));
  r.restart();
  EXPECT_EQ(r.read(0, 0), neg(3'000'000));
  r.advance(999'999);
  EXPECT_EQ(r.state().state, State::Active);
  r.advance(1);  // both overflow now: one notifying, one silent
  EXPECT_EQ(r.state().state, State::Masked);
  EXPECT_EQ(r.info(0).duration_ns, 2'000'000u);
  EXPECT_EQ(r.info(0).ovfl_pmds, 0x1 | kPmd17);
  auto msgs = r.take();
  ASSERT_EQ(msgs.size(), 2u);
  expectOverflowMessage(msgs[0], 1, 0, 0x1);
  expectOverflowMessage(msgs[1], 2, 0, 0x1);
}

INSTANTIATE_TEST_SUITE_P(Widths, SixtyFourBitTest, ::testing::Values(16u, 32u, 48u, 64u),
                         [](const auto& param_info) { return "W" + std::to_string(param_info.param); });

}  // namespace

namespace {

// An overflow storm: a sampling period far too short for the overflow budget.
// The session is masked with a reason, its counts stay exact, and a longer
// period plus restart resumes it.
TEST(OverflowStorm, MasksTheSessionAndKeepsCountsExact) {
  SimConfig c;
  c.engine.overflow_burst = 5;         // five overflows up front,
  c.engine.overflow_refill_ns = 1000;  // then one per microsecond of target time
  Rig r(c);
  r.pmc(0, 0, kCycles);
  r.period(0, 0, 30, 30, std::nullopt, false);  // 3/ns: an overflow every 10 ns
  r.loadAndStart();

  // Overflows at 10..50 ns use the five tokens; the one at 60 ns finds none.
  r.advance(100);
  StateInfo st = r.s().state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_NE(r.s().error().find("overflow storm"), std::string::npos) << r.s().error();
  EXPECT_EQ(st.queued, 0u);
  EXPECT_EQ(r.read(0, 0), 0u);  // wrapped at 60 ns, not reset, not counting since
  std::vector<CountLine> counts = r.s().counts();
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0].enabled_ns, 60u);

  // A sane period and restart: one overflow per microsecond earns its token.
  r.period(0, 0, 3000, 3000, std::nullopt, false);
  r.restart();
  r.advance(10'000);
  EXPECT_EQ(r.s().state().state, State::Active) << r.s().error();
  EXPECT_EQ(r.read(0, 0), neg(3000));  // reset at the tenth overflow, exactly now
  EXPECT_EQ(r.s().counts()[0].enabled_ns, 10'060u);
}

}  // namespace
