// Exact counting by the session engine over the sim backend under the manual
// clock: 64-bit emulation at every width, start/stop accounting, live PMD
// writes, unload and reload, and the no-interrupt sampling mode.
// Multiplexing is in session_multiplex_test.cpp.
//
// Every expected number below is computed by hand from the sim's streams:
// N(t) = floor(rate * t) events in (0, t] of target time, so a counter enabled
// over (a, b] counts N(b) - N(a).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::session::CountLine;
using pfmfs::session::Session;
using pfmfs::session::State;
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

// N(t) of SIM_PHASE_A: 4 per ns of (0, t] that falls in the first half of a
// 2 ms period.
u64 phaseA(u64 t) {
  const u64 period = 2'000'000, half = 1'000'000;
  return 4 * ((t / period) * half + std::min(t % period, half));
}

using Rig = pfmfs::testing::SessionRig;

// (set, pmd, value, enabled, running, scaled) of every counts() line.
using Snapshot = std::vector<std::tuple<unsigned, unsigned, u64, u64, u64, std::optional<u64>>>;

Snapshot snapshot(Session& s) {
  Snapshot out;
  for (const auto& c : s.counts()) out.emplace_back(c.set, c.pmd, c.value, c.enabled_ns, c.running_ns, c.scaled);
  return out;
}

// ---- 64-bit emulation at every width -------------------------------------------------

struct WidthCase {
  unsigned width;
  bool interrupts;
  u64 t;  // total target time to count
};

class WidthTest : public ::testing::TestWithParam<WidthCase> {};

// Four general counters and the three fixed counters count over T ns, advanced
// in three uneven pieces. At width 16 that is tens of millions of events and
// hundreds of hardware wraps per counter; at 32 and 48, several wraps; at 64,
// none. Upper bits written by the user are kept.
TEST_P(WidthTest, CountsExactlyAcrossHardwareWraps) {
  const WidthCase c = GetParam();
  Rig r(simConfig(c.width, c.interrupts));
  const u64 init1 = 0x0123'4567'0000'fff0ull;  // low 16 bits about to wrap
  const u64 init3 = 7;
  const u64 init17 = 0x00ff'0000'0000'0000ull;
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kInstructions);
  r.pmc(0, 2, kRefCycles);
  r.pmc(0, 3, kBranchMisses);
  r.pmc(0, kFixedCtrl, kFixedAllUsr);
  r.pmd(0, 1, init1);
  r.pmd(0, 3, init3);
  r.pmd(0, kFixedCycles, init17);
  r.load();
  r.start();

  const u64 a = c.t / 3, b = c.t / 7, rest = c.t - a - b;
  r.advance(a);
  EXPECT_EQ(r.read(0, 0), 3 * a);
  EXPECT_EQ(r.read(0, kFixedInstr), 2 * a);
  r.advance(b);
  r.advance(rest);

  const u64 T = c.t;
  const u64 want0 = 3 * T, want1 = init1 + 2 * T, want2 = 5 * T / 2, want3 = init3 + T / 250;
  const u64 want16 = 2 * T, want17 = init17 + 3 * T, want18 = 5 * T / 2;
  EXPECT_EQ(r.read(0, 0), want0);
  EXPECT_EQ(r.read(0, 1), want1);
  EXPECT_EQ(r.read(0, 2), want2);
  EXPECT_EQ(r.read(0, 3), want3);
  EXPECT_EQ(r.read(0, kFixedInstr), want16);
  EXPECT_EQ(r.read(0, kFixedCycles), want17);
  EXPECT_EQ(r.read(0, kFixedRef), want18);

  // counts(): one line per used PMD, in register order, unscaled (one set).
  auto lines = r.s().counts();
  ASSERT_EQ(lines.size(), 7u);
  const unsigned pmds[] = {0, 1, 2, 3, 16, 17, 18};
  const u64 values[] = {want0, want1, want2, want3, want16, want17, want18};
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(lines[i].set, 0u);
    EXPECT_EQ(lines[i].pmd, pmds[i]);
    EXPECT_EQ(lines[i].value, values[i]) << "pmd" << pmds[i];
    EXPECT_EQ(lines[i].enabled_ns, T);
    EXPECT_EQ(lines[i].running_ns, T);
    EXPECT_EQ(lines[i].scaled, std::optional<u64>(values[i])) << "pmd" << pmds[i];
  }
  EXPECT_EQ(r.info(0).duration_ns, T);
  EXPECT_EQ(r.info(0).runs, 1u);

  // Stopping folds the hardware bits in; time after it counts nothing.
  r.stop();
  r.advance(c.t);
  EXPECT_EQ(r.read(0, 0), want0);
  EXPECT_EQ(r.read(0, kFixedCycles), want17);
  // So does unloading: the values stay readable.
  r.unload();
  EXPECT_EQ(r.read(0, 0), want0);
  EXPECT_EQ(r.read(0, 1), want1);
  EXPECT_EQ(r.read(0, 2), want2);
  EXPECT_EQ(r.read(0, 3), want3);
  EXPECT_EQ(r.read(0, kFixedInstr), want16);
  EXPECT_EQ(r.read(0, kFixedCycles), want17);
  EXPECT_EQ(r.read(0, kFixedRef), want18);
  EXPECT_EQ(r.line(0, 0).enabled_ns, T);
}

INSTANTIATE_TEST_SUITE_P(Widths, WidthTest,
                         ::testing::Values(WidthCase{16, true, 10'000'000},      // ~458 wraps of pmd0
                                           WidthCase{16, false, 10'000'000},     // sampled, not interrupted
                                           WidthCase{32, true, 20'000'000'000},  // ~14 wraps
                                           WidthCase{32, false, 20'000'000'000},
                                           WidthCase{48, true, 1'000'000'000'000'000},  // ~10 wraps
                                           WidthCase{48, false, 1'000'000'000'000'000},
                                           WidthCase{64, true, 1'000'000'000'000'000},  // no wrap
                                           WidthCase{64, false, 1'000'000'000'000'000}),
                         [](const auto& param_info) {
                           return "W" + std::to_string(param_info.param.width) +
                                  (param_info.param.interrupts ? "_interrupts" : "_sampled");
                         });

// ---- start / stop ----------------------------------------------------------------------

// Only active time counts: stopped time adds nothing to the counters, to
// enabled_ns or to duration_ns; each start is a new run.
TEST(SessionCounting, StartStopStartAccumulatesOnlyActiveTime) {
  Rig r(simConfig(16));
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kPhaseA);
  r.load();
  r.advance(777);  // loaded, not started: nothing counts
  EXPECT_EQ(r.read(0, 0), 0u);
  EXPECT_EQ(r.state().state, State::Loaded);

  r.start();  // target time 777
  r.advance(1000);
  EXPECT_EQ(r.read(0, 0), 3000u);
  r.stop();
  EXPECT_EQ(r.state().state, State::Loaded);
  r.advance(5000);
  EXPECT_EQ(r.read(0, 0), 3000u);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 1000u);
  EXPECT_EQ(r.info(0).duration_ns, 1000u);

  r.start();  // target time 6777
  r.advance(2000);
  r.stop();
  r.advance(7);
  EXPECT_EQ(r.read(0, 0), 9000u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 3000u);
  CountLine l = r.line(0, 0);
  EXPECT_EQ(l.value, 9000u);
  EXPECT_EQ(l.enabled_ns, 3000u);
  EXPECT_EQ(l.running_ns, 3000u);
  EXPECT_EQ(l.scaled, std::optional<u64>(9000));

  // The target's clock keeps moving while stopped: the phased event counts
  // exactly the phase-A time of the two active intervals.
  const u64 want = (phaseA(1777) - phaseA(777)) + (phaseA(8777) - phaseA(6777));
  EXPECT_EQ(want, 12000u);
  EXPECT_EQ(r.read(0, 1), want);
}

// The phased event shows that stopped time moves the target's clock: a stop
// that spans a phase change lands the next start in the other phase.
TEST(SessionCounting, StoppedTimeMovesTheTargetClock) {
  Rig r;
  r.pmc(0, 0, kPhaseA);
  r.load();
  r.start();
  r.advance(500'000);  // (0, 0.5 ms]: phase A
  EXPECT_EQ(r.read(0, 0), 2'000'000u);
  r.stop();
  r.advance(1'000'000);  // stopped until 1.5 ms
  r.start();
  r.advance(500'000);  // (1.5 ms, 2 ms]: phase B, A counts nothing
  EXPECT_EQ(r.read(0, 0), 2'000'000u);
  r.advance(500'000);  // (2 ms, 2.5 ms]: phase A again
  EXPECT_EQ(r.read(0, 0), 4'000'000u);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 1'500'000u);
}

// Start/stop across several advances with time switching: stop folds, a
// stopped session keeps the active set, and start (no set) resumes in it with
// a new run and a fresh timeout.
TEST(SessionCounting, StartStopAcrossAdvancesWithSwitching) {
  Rig r;
  r.createSet(1);
  r.timeSwitch(0, 100);
  r.timeSwitch(1, 100);
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.load();
  r.start();
  r.advance(250);  // set0 (0,100], set1 (100,200], set0 (200,250]
  r.stop();
  EXPECT_EQ(r.state().set, 0u);
  EXPECT_EQ(r.info(0).timeout_ns, 100u);  // not active: the configured timeout
  r.advance(1000);
  EXPECT_EQ(r.read(0, 0), 450u);
  EXPECT_EQ(r.read(1, 0), 200u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(1).runs, 1u);

  r.start();  // set0 again, fresh 100 ns
  EXPECT_EQ(r.info(0).runs, 3u);
  EXPECT_EQ(r.info(0).timeout_ns, 100u);
  r.advance(60);
  EXPECT_EQ(r.info(0).timeout_ns, 40u);
  r.advance(70);  // set0 to 100 ns of this run, then set1 for 30
  EXPECT_EQ(r.state().set, 1u);
  EXPECT_EQ(r.info(1).runs, 2u);
  EXPECT_EQ(r.info(1).timeout_ns, 70u);
  r.stop();
  r.advance(500);
  r.start();       // set1, fresh timeout
  r.advance(100);  // ends exactly on the switch back to set0
  EXPECT_EQ(r.state().set, 0u);
  r.stop();

  EXPECT_EQ(r.info(0).runs, 4u);
  EXPECT_EQ(r.info(1).runs, 3u);
  EXPECT_EQ(r.info(0).duration_ns, 250u);  // 100 + 50 + 100
  EXPECT_EQ(r.info(1).duration_ns, 230u);  // 100 + 30 + 100
  EXPECT_EQ(r.read(0, 0), 750u);
  EXPECT_EQ(r.read(1, 0), 460u);
  CountLine l0 = r.line(0, 0), l1 = r.line(1, 0);
  EXPECT_EQ(l0.enabled_ns, 480u);
  EXPECT_EQ(l0.running_ns, 250u);
  EXPECT_EQ(l0.scaled, std::optional<u64>(750u * 480 / 250));  // 1440
  EXPECT_EQ(l1.enabled_ns, 480u);
  EXPECT_EQ(l1.running_ns, 230u);
  EXPECT_EQ(l1.scaled, std::optional<u64>(460u * 480 / 230));  // 960
}

// ---- registers while active ---------------------------------------------------------------

// A PMD write to the active set takes effect on the hardware at once, upper
// bits included; a PMC write changes the event from that instant on. At width
// 16, with and without overflow interrupts.
class LiveWriteTest : public ::testing::TestWithParam<bool> {};

TEST_P(LiveWriteTest, PmdWriteWhileActiveTakesEffectAtOnce) {
  Rig r(simConfig(16, GetParam()));
  r.pmc(0, 0, kCycles);
  r.load();
  r.start();
  r.advance(100);
  EXPECT_EQ(r.read(0, 0), 300u);

  const u64 v = 0x7777'0000'0000'fff0ull;
  r.pmd(0, 0, v);
  EXPECT_EQ(r.read(0, 0), v);
  r.advance(1000);  // 3000 events: wraps the 16-bit hardware once
  EXPECT_EQ(r.read(0, 0), v + 3000);
  r.advance(1'000'000);  // 3,000,000 more: ~46 wraps
  EXPECT_EQ(r.read(0, 0), v + 3'003'000);

  r.pmd(0, 0, 0x10);  // clears the upper bits too
  EXPECT_EQ(r.read(0, 0), 0x10u);
  r.advance(100'000);
  EXPECT_EQ(r.read(0, 0), 0x10u + 300'000);

  const u64 w = 0x10u + 300'000;
  r.pmc(0, 0, kInstructions);  // now 2 per ns
  EXPECT_EQ(r.read(0, 0), w);
  r.advance(100);
  EXPECT_EQ(r.read(0, 0), w + 200);
  EXPECT_EQ(r.readPmcValue(0, 0), kInstructions);

  // Writing 0 frees the counter: its value freezes and leaves counts().
  r.pmc(0, 0, 0);
  r.advance(100);
  EXPECT_EQ(r.read(0, 0), w + 200);
  EXPECT_TRUE(r.s().counts().empty());
}

INSTANTIATE_TEST_SUITE_P(Modes, LiveWriteTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "interrupts" : "sampled"; });

// Unload folds the counts into the 64-bit values; a later load and start
// count on from them (a new attachment: the target's time starts again).
TEST(SessionCounting, UnloadAndReloadCountOnFromTheSavedValues) {
  Rig r(simConfig(16));
  const u64 init = 0x1234'0000'0000'fff0ull;
  r.pmc(0, 0, kCycles);
  r.pmd(0, 0, init);
  r.pmc(0, kFixedCtrl, kFixedInstrUsr);
  r.load();
  r.start();
  r.advance(100'000);
  r.unload();
  EXPECT_EQ(r.state().state, State::Unloaded);
  EXPECT_EQ(r.read(0, 0), init + 300'000);
  EXPECT_EQ(r.read(0, kFixedInstr), 200'000u);
  r.advance(100'000);  // nothing is loaded
  r.load();
  r.start();
  r.advance(100'000);
  EXPECT_EQ(r.read(0, 0), init + 600'000);
  EXPECT_EQ(r.read(0, kFixedInstr), 400'000u);
  EXPECT_EQ(r.info(0).runs, 2u);
  EXPECT_EQ(r.info(0).duration_ns, 200'000u);
  EXPECT_EQ(r.line(0, 0).enabled_ns, 200'000u);
}

// ---- no-interrupt sampling mode ------------------------------------------------------

// The same multiplexed session at width 16 with and without overflow
// interrupts: every counts() snapshot along the way is identical, and the final
// numbers are exact. Timeouts 1 ms and 0.7 ms over 10 ms:
//   5 cycles of 1.7 ms, then set0 (8.5, 9.5] ms and set1 (9.5, 10] ms:
//   set0 runs 6 ms, set1 4 ms.
Snapshot runSampledScenario(bool interrupts, std::vector<Snapshot>& along) {
  Rig r(simConfig(16, interrupts));
  r.createSet(1);
  r.timeSwitch(0, 1'000'000);
  r.timeSwitch(1, 700'000);
  r.pmc(0, 0, kCycles);
  r.pmc(0, kFixedCtrl, kFixedAllUsr);
  r.pmc(1, 0, kInstructions);
  r.pmc(1, 1, kPhaseB);
  r.pmc(1, kFixedCtrl, kFixedCyclesUsr);
  r.pmd(1, 0, 0x5555'0000'0000'1234ull);
  r.load();
  r.start();
  for (int i = 0; i < 30; ++i) {
    r.advance(333'333);
    along.push_back(snapshot(r.s()));
  }
  r.advance(10);  // 10,000,000 ns in all
  EXPECT_EQ(r.info(0).runs, 6u);
  EXPECT_EQ(r.info(1).runs, 6u);
  EXPECT_EQ(r.info(0).duration_ns, 6'000'000u);
  EXPECT_EQ(r.info(1).duration_ns, 4'000'000u);
  EXPECT_EQ(r.info(1).timeout_ns, 200'000u);
  return snapshot(r.s());
}

TEST(SessionCounting, NoInterruptSamplingMatchesInterruptsAtWidth16) {
  std::vector<Snapshot> along_irq, along_smpl;
  Snapshot irq = runSampledScenario(true, along_irq);
  Snapshot smpl = runSampledScenario(false, along_smpl);
  ASSERT_EQ(along_irq.size(), along_smpl.size());
  for (std::size_t i = 0; i < along_irq.size(); ++i) EXPECT_EQ(along_irq[i], along_smpl[i]) << "step " << i;

  const u64 E = 10'000'000, R0 = 6'000'000, R1 = 4'000'000;
  auto sc = [&](u64 v, u64 running) {
    return std::optional<u64>(static_cast<u64>(static_cast<unsigned __int128>(v) * E / running));
  };
  // Phase B within set1's runs (1,1.7] (2.7,3.4] (4.4,5.1] (6.1,6.8] (7.8,8.5]
  // (9.5,10] ms: 0.7 + 0.4 + 0.1 + 0 + 0.2 + 0.5 = 1.9 ms at 4/ns.
  const u64 phase_b = 7'600'000;
  const u64 init = 0x5555'0000'0000'1234ull;
  Snapshot want = {
      {0, 0, 18'000'000, E, R0, sc(18'000'000, R0)},
      {0, 16, 12'000'000, E, R0, sc(12'000'000, R0)},
      {0, 17, 18'000'000, E, R0, sc(18'000'000, R0)},
      {0, 18, 15'000'000, E, R0, sc(15'000'000, R0)},
      {1, 0, init + 8'000'000, E, R1, sc(init + 8'000'000, R1)},
      {1, 1, phase_b, E, R1, sc(phase_b, R1)},
      {1, 17, 12'000'000, E, R1, sc(12'000'000, R1)},
  };
  EXPECT_EQ(irq, want);
  EXPECT_EQ(smpl, want);
}

}  // namespace
