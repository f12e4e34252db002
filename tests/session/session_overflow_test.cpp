// Overflow processing by the session engine over the sim backend under the
// manual clock (pfmfs(5), OVERFLOWS): notification, masking and restart with long
// resets, silent overflows with short resets, reset_pmds, no_msg, a full
// message queue, random resets, overflow-based set switching, ovfl_pmds,
// no_emul64, notify_block, 64-bit overflows at every width, and interrupt
// skid (--sim-skid).
//
// A sampling period P is programmed as 2^64 - P (neg(P)): the 64-bit value
// wraps after P events. Cycles count 3/ns and instructions 2/ns, so a period
// that is a multiple of the rate overflows exactly at an integer ns with no
// events past the wrap, and every number below is exact.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::Status;
using pfmfs::pmu::RegMask;
using pfmfs::session::Caller;
using pfmfs::session::CountLine;
using pfmfs::session::Flags;
using pfmfs::session::Message;
using pfmfs::session::MessageType;
using pfmfs::session::PmcWrite;
using pfmfs::session::PmdValue;
using pfmfs::session::PmdWrite;
using pfmfs::session::Session;
using pfmfs::session::SetInfo;
using pfmfs::session::State;
using pfmfs::session::StateInfo;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::gettidNow;
using pfmfs::testing::kBranches;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::kUsr;
using pfmfs::testing::neg;
using pfmfs::testing::pmdWrite;
using pfmfs::testing::SimConfig;
using pfmfs::testing::simConfig;
using pfmfs::testing::SimEngine;

using u64 = std::uint64_t;

constexpr u64 kPhaseA = 0x01f0 | kUsr;  // 4/ns in the first 1 ms of every 2 ms
constexpr unsigned kFixedCtrl = 16;
constexpr unsigned kFixedCycles = 17;   // pmd17: cycles, 3/ns
constexpr u64 kFixedCyclesUsr = 0x020;  // its FIXED_CTR_CTRL field, user level
constexpr RegMask kPmd17 = RegMask{1} << 17;

class Rig : public pfmfs::testing::SessionRig {
 public:
  using SessionRig::pmd;
  using SessionRig::SessionRig;

  // A sampling counter: value neg(first), resets neg(short)/neg(long).
  void period(unsigned set, unsigned index, u64 first, std::optional<u64> short_p, std::optional<u64> long_p,
              bool notify) {
    PmdWrite w = pmdWrite(index, neg(first));
    if (short_p) w.short_reset = neg(*short_p);
    if (long_p) w.long_reset = neg(*long_p);
    w.notify = notify;
    pmd(set, w);
  }
};

// An overflow message of this thread.
void expectOverflowMessage(const Message& m, u64 seq, std::uint16_t set, RegMask pmds) {
  EXPECT_EQ(m.type, MessageType::Overflow);
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.set, set) << "seq " << seq;
  EXPECT_EQ(m.pmds, pmds) << "seq " << seq;
  EXPECT_EQ(m.pid, ::getpid()) << "seq " << seq;
  EXPECT_EQ(m.tid, gettidNow()) << "seq " << seq;
  EXPECT_EQ(m.cpu, 0) << "seq " << seq;
}

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

namespace {

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
