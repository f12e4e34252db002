// Many threads hammering one engine at once: register reads and writes,
// start/stop/restart, counts, state, set info, messages, the manual clock,
// sessions created and destroyed under the same names, loads and unloads.
// What must hold: no crash, no deadlock (a watchdog aborts after a minute),
// no error outside the documented errnos, and the sessions nobody but readers
// touched count exactly what their clock says. Meant for TSan and ASan.
// The harness (watchdog, targets, tally, the storm) is in storm.h; a lone
// set's liveness in lone_set_liveness_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "session/engine.h"
#include "session/session.h"
#include "tests/session/storm.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing {
namespace {

using namespace std::chrono_literals;
using namespace storm;

TEST(Concurrency, ManualClockStorm) {
  Watchdog dog(kDeadlock);
  SimConfig cfg;
  cfg.width = 16;  // cycles wrap every 21.8 us: overflows everywhere
  cfg.engine.max_messages = 8;
  SimEngine e(cfg);
  Target p0(false), p1(false), p2(false), q0(false), q1(false);
  const std::uint64_t kSwitch = 50'000;
  auto s0 = makeStable(e, "stable0", q0.tid(), kSwitch);
  auto s1 = makeStable(e, "stable1", q1.tid(), kSwitch);
  ASSERT_TRUE(s0 && s1);
  Tally tally;
  Storm storm(e, tally, {p0.tid(), p1.tid(), p2.tid()}, {s0, s1}, 6, 100);
  runStorm(storm, tally, 10, 2, 1500ms);

  report(tally);
  const std::uint64_t total = storm.advanced.load();
  EXPECT_GT(total, 0u);
  // Loaded and started before the first advance: each counted every ns.
  checkStable(*s0, kSwitch, total);
  checkStable(*s1, kSwitch, total);
  for (const auto& n : e.engine().sessionNames())
    if (auto s = e.engine().find(n)) checkAny(*s, cfg.engine.max_messages);
}

TEST(Concurrency, SameNamesRace) {
  Watchdog dog(kDeadlock);
  SimEngine e;
  Target p(false);
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> created{0}, destroyed{0}, bad{0};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < 8; ++i)
    pool.emplace_back([&, i] {
      std::mt19937_64 rng(i);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string name = "n" + std::to_string(rng() % 2);
        if (rng() % 2) {
          auto r = e.engine().createSession(Caller::root(), name);
          if (r.ok()) {
            created.fetch_add(1);
            // Whoever made it may use it while others try to destroy it.
            (void)(*r)->load(Caller::root(), p.tid());
            (void)(*r)->start();
            (void)(*r)->counts();
          } else if (r.code() != -EEXIST) {
            bad.fetch_add(1);
          }
        } else {
          auto st = e.engine().destroySession(name);
          if (st.ok())
            destroyed.fetch_add(1);
          else if (st.code() != -ENOENT)
            bad.fetch_add(1);
        }
      }
    });
  stormFor(1000ms, [&created] { return created.load() > 10; });
  stop.store(true);
  for (auto& t : pool) t.join();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(created.load(), 10u);
  // Every session made was destroyed or is still there, exactly once.
  EXPECT_EQ(created.load(), destroyed.load() + e.engine().sessionNames().size());
  // The per-user count followed: the limit is still usable to the full.
  for (const auto& n : e.engine().sessionNames()) ASSERT_OK(e.engine().destroySession(n));
  for (unsigned i = 0; i < e.engine().options().max_sessions_per_user; ++i)
    ASSERT_OK(e.engine().createSession(Caller::root(), "x" + std::to_string(i)));
  EXPECT_EQ(e.engine().createSession(Caller::root(), "one-too-many").code(), -ENOSPC);
  // And the parked thread is free again for a new session.
  for (unsigned i = 0; i < e.engine().options().max_sessions_per_user; ++i)
    ASSERT_OK(e.engine().destroySession("x" + std::to_string(i)));
  auto s = e.newSession("last");
  ASSERT_TRUE(s);
  ASSERT_OK(s->load(Caller::root(), p.tid()));
}

TEST(Concurrency, OneSessionManyHands) {
  // Everyone on one loaded, active session: reads, writes to the active and
  // the inactive set, start/stop, and the clock.
  Watchdog dog(kDeadlock);
  SimConfig cfg;
  cfg.width = 16;
  SimEngine e(cfg);
  Target p(false);
  auto s = e.newSession("one");
  ASSERT_TRUE(s);
  ASSERT_OK(s->createSet(1));
  ASSERT_OK(s->setSwitch(0, timeSwitch(10'000)));
  ASSERT_OK(s->setSwitch(1, timeSwitch(10'000)));
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(s->writePmc(Caller::root(), 1, PmcWrite{1, kInstructions, false}));
  ASSERT_OK(s->load(Caller::root(), p.tid()));
  ASSERT_OK(s->start());
  std::atomic<bool> stop{false};
  Tally tally;
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < 8; ++i)
    pool.emplace_back([&, i] {
      std::mt19937_64 rng(100 + i);
      while (!stop.load(std::memory_order_relaxed)) {
        const unsigned set = static_cast<unsigned>(rng() % 2);
        switch (rng() % 8) {
          case 0:
            tally.note("advance", e.engine().advanceManualClock(1 + rng() % 50'000));
            break;
          case 1:
            tally.note("readPmd", s->readPmd(set, set));
            break;
          case 2:
            tally.note("writePmd", s->writePmd(set, pmdWrite(set, rng() % 1000)));
            break;
          case 3:
            tally.note("writePmc",
                       s->writePmc(Caller::root(), set, PmcWrite{set, rng() % 2 ? kCycles : kBranches, false}));
            break;
          case 4:
            tally.note(i % 2 ? "start" : "stop", i % 2 ? s->start() : s->stop());
            break;
          case 5:
            (void)s->counts();
            tally.note("counts", 0, "");
            break;
          case 6:
            tally.note("setInfo", s->setInfo(set));
            break;
          default:
            (void)s->state();
            tally.note("state", 0, "");
            break;
        }
      }
    });
  stormFor(1000ms, [&tally] { return tally.ops.load() > kStormOps; });
  stop.store(true);
  for (auto& t : pool) t.join();
  report(tally);
  // Time is conserved whatever the interleaving.
  ASSERT_OK(s->stop());
  auto i0 = s->setInfo(0);
  auto i1 = s->setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  auto c = s->counts();
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].enabled_ns, i0->duration_ns + i1->duration_ns);
  checkAny(*s, e.engine().options().max_messages);
}

TEST(Concurrency, RealClockStorm) {
  Watchdog dog(kDeadlock);
  SimConfig cfg;
  cfg.clock = pmu::ClockKind::Real;
  cfg.width = 24;  // a wrap every 5.6 ms of cycles: emulation at work, at a rate any build keeps up with
  cfg.engine.tick_ns = kMs;
  cfg.engine.max_messages = 8;
  SimEngine e(cfg);
  Target b0(true), b1(true), b2(true);  // burning: their sessions switch and overflow on the timer thread
  Target p0(false);
  const std::uint64_t kSwitch = 2 * kMs;
  auto s0 = makeStable(e, "stable0", b0.tid(), kSwitch);
  auto s1 = makeStable(e, "stable1", b1.tid(), kSwitch);
  ASSERT_TRUE(s0 && s1);
  Tally tally;
  Storm storm(e, tally, {p0.tid(), b2.tid(), b0.tid()}, {s0, s1}, 4, 3 * kMs);  // >= 1 ms of cycles
  runStorm(storm, tally, 8, 0, 1000ms);

  report(tally);
  // The timer thread kept the stable sessions' hardware moving; their relations are exact.
  checkStable(*s0, kSwitch, std::nullopt);
  checkStable(*s1, kSwitch, std::nullopt);
  EXPECT_GT(s0->setInfo(1)->runs + s1->setInfo(1)->runs, 0u) << "the burners got no CPU at all?";
  for (const auto& n : e.engine().sessionNames())
    if (auto s = e.engine().find(n)) checkAny(*s, cfg.engine.max_messages);
}

TEST(Concurrency, RealClockLoadUnloadAndDestroyAgainstTheTimer) {
  Watchdog dog(kDeadlock);
  SimConfig cfg;
  cfg.clock = pmu::ClockKind::Real;
  cfg.engine.tick_ns = kMs;
  SimEngine e(cfg);
  Target b0(true), b1(true);
  std::atomic<bool> stop{false};
  Tally tally;
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < 8; ++i)
    pool.emplace_back([&, i] {
      std::mt19937_64 rng(200 + i);
      const pid_t tids[] = {b0.tid(), b1.tid()};
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string name = "r" + std::to_string(rng() % 3);
        std::shared_ptr<Session> s = e.engine().find(name);
        switch (rng() % 6) {
          case 0:
            tally.note("create", e.engine().createSession(Caller::root(), name));
            break;
          case 1:
            tally.note("destroy", e.engine().destroySession(name));
            break;
          case 2:
            if (s) {
              // One or two sets switching on time, lone sets included.
              if (rng() % 2) (void)s->createSet(1);
              (void)s->setSwitch(0, timeSwitch(kMs));
              (void)s->setSwitch(1, timeSwitch(kMs));
              (void)s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false});
              (void)s->writePmc(Caller::root(), 1, PmcWrite{0, kCycles, false});
              tally.note("load", s->load(Caller::root(), tids[rng() % 2]));
              tally.note("start", s->start());
            }
            break;
          case 3:
            if (s) tally.note("unload", s->unload());
            break;
          case 4:
            if (s) tally.note("stop", s->stop());
            break;
          default:
            if (s) {
              (void)s->counts();
              (void)s->state();
              tally.note("read", 0, "");
            }
            break;
        }
      }
    });
  stormFor(1000ms, [&tally] { return tally.ops.load() > kStormOps; });
  stop.store(true);
  for (auto& t : pool) t.join();
  report(tally);
  for (const auto& n : e.engine().sessionNames())
    if (auto s = e.engine().find(n)) {
      // Each load of a cycles counter counts exactly 3 per ns of its time.
      ASSERT_OK(s->unload());
      auto c = s->counts();
      for (const auto& l : c) EXPECT_EQ(l.value, 3 * l.running_ns) << n;
      checkAny(*s, e.engine().options().max_messages);
    }
}

}  // namespace
}  // namespace pfmfs::testing
