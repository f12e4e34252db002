// Liveness of the engine under the manual clock: a lone set whose switch
// (on time or on overflow) can only switch to itself, which must still let
// the clock move and count every ns. Each runs in a child with a deadline, so
// that a hang fails instead of holding the suite.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/run_in_child.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing {
namespace {

using session::Caller;
using session::PmcWrite;
using session::PmdWrite;
using session::State;
using session::SwitchSpec;

SwitchSpec timeSwitch(std::uint64_t ns) { return SwitchSpec{true, ns, false}; }

// ------------------------------------------------------------------------
// Liveness: the engine always comes back.

// A session whose only set has `switch time`: when the timeout expires the
// round-robin "next set" is the set itself. Whatever that means for runs, the
// clock must keep moving: the set keeps counting, every ns of it.
TEST(Liveness, LoneSetWithTimeSwitchManualClock) {
  int rc = runInChild(
      [] {
        SimEngine e;
        auto s = e.newSession("lone");
        if (!s) return 10;
        if (!s->setSwitch(0, timeSwitch(1000)).ok()) return 11;
        if (!s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok()) return 12;
        if (!s->load(Caller::root(), gettidNow()).ok()) return 13;
        if (!s->start().ok()) return 14;
        if (!e.engine().advanceManualClock(10'500).ok()) return 15;  // hangs here if the engine spins
        auto i = s->setInfo(0);
        if (!i.ok() || i->duration_ns != 10'500) return 16;
        // Each timeout (1000 ... 10000 ns) "switches" to the set itself: a new activation.
        if (i->runs != 11 || i->timeout_ns != 500) return 19;
        auto c = s->counts();
        if (c.size() != 1 || c[0].value != 31'500 || c[0].enabled_ns != 10'500) return 17;
        if (s->state().state != State::Active) return 18;
        return 0;
      },
      std::chrono::minutes(1));
  EXPECT_NE(rc, -1) << "advanceManualClock never returned: with a single set whose switch timeout expires, "
                       "Session::catchUpTo loops forever (switchTo(itself) returns at once and never resets "
                       "set_elapsed_, so the next step is 0 ns) while holding the session lock";
  EXPECT_EQ(rc, 0);
}

TEST(Liveness, LoneSetWithOverflowSwitchManualClock) {
  int rc = runInChild(
      [] {
        SimEngine e;
        auto s = e.newSession("lone");
        if (!s) return 10;
        if (!s->setSwitch(0, SwitchSpec{false, 0, true}).ok()) return 11;
        if (!s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok()) return 12;
        PmdWrite w;
        w.index = 0;
        w.value = ~std::uint64_t{0} - 2999;  // overflows after 3000 cycles: 1000 ns
        w.short_reset = w.value;
        w.switch_cnt = 1;
        if (!s->writePmd(0, w).ok()) return 13;
        if (!s->load(Caller::root(), gettidNow()).ok()) return 14;
        if (!s->start().ok()) return 15;
        if (!e.engine().advanceManualClock(10'500).ok()) return 16;
        auto i = s->setInfo(0);
        if (!i.ok() || i->duration_ns != 10'500) return 17;
        // Each overflow exhausts switch_cnt=1: a switch to itself, a new activation that reloads it.
        if (i->runs != 11 || i->ovfl_pmds != 1) return 19;
        // Ten silent overflows at 1000 ns each; 500 ns past the last reset.
        auto v = s->readPmd(0, 0);
        if (!v.ok() || v->value != ~std::uint64_t{0} - 2999 + 1500) return 18;
        return 0;
      },
      std::chrono::minutes(1));
  EXPECT_NE(rc, -1) << "advanceManualClock never returned";
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace pfmfs::testing
