// The storm harness of the concurrency tests (concurrency_test.cpp): a
// watchdog that calls a hang a deadlock, target threads, a tally of what
// racing operations returned, sessions only readers touch and the checks of
// their exact relations, and the storm itself, one random operation at a
// time on an engine and its churning sessions.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing::storm {

using session::Caller;
using session::PmcWrite;
using session::PmdWrite;
using session::RegWrite;
using session::Session;
using session::State;
using session::SwitchSpec;

inline constexpr std::uint64_t kMs = 1'000'000;
// How long a test may take before the watchdog calls it a deadlock: longer
// than a storm may run (stormFor) on the slowest machine.
inline constexpr std::chrono::seconds kDeadlock{180};

// Aborts the process if the test does not finish in time: a deadlock must
// fail loudly, not hang the suite.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock l(mu_);
          if (!cv_.wait_for(l, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: no progress after %llds: deadlock?\n",
                         static_cast<long long>(limit.count()));
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A thread that exists to be monitored: parked (no CPU time) or burning CPU
// until told to stop.
class Target {
 public:
  explicit Target(bool burn) : burn_(burn), thread_([this] { loop(); }) {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return tid_ != 0; });
  }
  ~Target() {
    quit_.store(true);
    { std::lock_guard l(mu_); }
    cv_.notify_all();
    thread_.join();
  }
  pid_t tid() const { return tid_; }

 private:
  void loop() {
    {
      std::lock_guard l(mu_);
      tid_ = gettidNow();
    }
    cv_.notify_all();
    if (burn_) {
      volatile std::uint64_t sink = 0;
      while (!quit_.load(std::memory_order_relaxed))
        for (int i = 0; i < 10000; ++i) sink = sink + static_cast<std::uint64_t>(i);
      return;
    }
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return quit_.load(); });
  }

  const bool burn_;
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  std::atomic<bool> quit_{false};
  std::thread thread_;
};

// Errors a racing operation may legitimately get.
inline bool expectedError(int code) {
  switch (-code) {
    case EINVAL:
    case EEXIST:
    case ENOENT:
    case EBUSY:
    case ESRCH:
    case ENOSPC:
      return true;
    default:
      return false;
  }
}

// The operations a storm runs at the least, however long that takes.
inline constexpr std::uint64_t kStormOps = 1000;

struct Tally {
  std::atomic<std::uint64_t> ops{0};
  std::atomic<std::uint64_t> failures{0};    // expected errors
  std::atomic<std::uint64_t> unexpected{0};  // anything else
  std::mutex mu;
  std::set<std::string> what;                                            // descriptions of the unexpected
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> stats;  // STORM_STATS=1: op -> ok, failed

  void note(const char* op, int code, const std::string& reason) {
    ops.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("STORM_STATS")) {
      std::lock_guard l(mu);
      auto& [ok, bad] = stats[op];
      (code == 0 ? ok : bad)++;
    }
    if (code == 0) return;
    if (expectedError(code)) {
      failures.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    unexpected.fetch_add(1);
    std::lock_guard l(mu);
    if (what.size() < 20) what.insert(std::string(op) + ": " + std::to_string(code) + " " + reason);
  }
  template <typename R>
  void note(const char* op, const R& r) {
    note(op, r.code(), r.ok() ? std::string() : r.error().reason);
  }
};

inline SwitchSpec timeSwitch(std::uint64_t ns) { return SwitchSpec{true, ns, false}; }

#define ASSERT_OK(expr)                                           \
  do {                                                            \
    auto&& ok_ = (expr);                                          \
    ASSERT_TRUE(ok_.ok()) << #expr << ": " << ok_.error().reason; \
  } while (0)

// A session that only readers and the clock touch while the storm lasts:
// set 0 counts cycles (3/ns), set 1 instructions (2/ns), switching every
// `switch_ns` of target time.
inline std::shared_ptr<Session> makeStable(SimEngine& e, const std::string& name, pid_t tid, std::uint64_t switch_ns) {
  auto s = e.newSession(name);
  if (!s) return nullptr;
  bool ok = s->createSet(1).ok() && s->setSwitch(0, timeSwitch(switch_ns)).ok() &&
            s->setSwitch(1, timeSwitch(switch_ns)).ok() &&
            s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok() &&
            s->writePmc(Caller::root(), 1, PmcWrite{0, kInstructions, false}).ok() &&
            s->load(Caller::root(), tid).ok() && s->start().ok();
  EXPECT_TRUE(ok) << name << ": " << s->error();
  return ok ? s : nullptr;
}

// The exact relations of a stable session once stopped: durations add up to
// the enabled time, runs follow from it, counts from the durations.
inline void checkStable(Session& s, std::uint64_t switch_ns, std::optional<std::uint64_t> total_ns) {
  ASSERT_OK(s.stop());
  auto i0 = s.setInfo(0);
  auto i1 = s.setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  const std::uint64_t d0 = i0->duration_ns, d1 = i1->duration_ns;
  if (total_ns) {
    EXPECT_EQ(d0 + d1, *total_ns) << s.name();
  }
  EXPECT_EQ(i0->runs + i1->runs, 1 + (d0 + d1) / switch_ns) << s.name();
  EXPECT_GE(d0, d1) << s.name();
  EXPECT_LE(d0 - d1, switch_ns) << s.name();
  std::map<unsigned, session::CountLine> by_set;
  for (const auto& c : s.counts()) by_set[c.set] = c;
  ASSERT_EQ(by_set.size(), 2u);
  EXPECT_EQ(by_set[0].value, 3 * d0) << s.name();
  EXPECT_EQ(by_set[1].value, 2 * d1) << s.name();
  EXPECT_EQ(by_set[0].enabled_ns, d0 + d1) << s.name();
  EXPECT_EQ(by_set[1].enabled_ns, d0 + d1) << s.name();
  EXPECT_EQ(s.state().queued, 0u) << s.name();
}

// Invariants of any session, whatever was done to it.
inline void checkAny(Session& s, unsigned max_messages) {
  auto st = s.state();
  EXPECT_LE(st.queued, max_messages) << s.name();
  ASSERT_OK(s.unload());
  EXPECT_EQ(s.state().state, State::Unloaded);
  std::map<unsigned, std::uint64_t> running;
  std::uint64_t enabled = 0;
  for (const auto& c : s.counts()) {
    enabled = c.enabled_ns;
    running[c.set] = c.running_ns;
    EXPECT_LE(c.running_ns, c.enabled_ns) << s.name() << " set " << c.set;
    if (c.running_ns == 0) {
      EXPECT_FALSE(c.scaled.has_value());
    } else {
      ASSERT_TRUE(c.scaled.has_value());
      unsigned __int128 want = static_cast<unsigned __int128>(c.value) * c.enabled_ns / c.running_ns;
      EXPECT_EQ(*c.scaled, want > ~0ull ? ~0ull : static_cast<std::uint64_t>(want));
    }
  }
  std::uint64_t sum = 0;
  for (const auto& [set, r] : running) sum += r;
  EXPECT_LE(sum, enabled) << s.name() << ": the sets' times cannot exceed the session's";
  // Unloaded, nothing moves.
  auto before = s.counts();
  auto after = s.counts();
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].value, after[i].value);
    EXPECT_EQ(before[i].running_ns, after[i].running_ns);
  }
}

// One random operation on the engine or a churn session.
class Storm {
 public:
  // PMDs written near the 64-bit wrap overflow after min_period events or
  // more: the sim replays every overflow, so tiny periods on a real-clock
  // target would only measure how far the replay falls behind the CPU.
  Storm(SimEngine& e, Tally& t, std::vector<pid_t> load_tids, std::vector<std::shared_ptr<Session>> stable,
        unsigned churn_names, std::uint64_t min_period)
      : e_(e),
        t_(t),
        tids_(std::move(load_tids)),
        stable_(std::move(stable)),
        churn_(churn_names),
        min_period_(min_period) {}

  std::atomic<std::uint64_t> advanced{0};

  void one(std::mt19937_64& rng, bool may_advance) {
    auto pick = [&rng](std::uint64_t n) { return static_cast<std::uint64_t>(rng() % n); };
    const std::string name = "c" + std::to_string(pick(churn_));
    const unsigned op = static_cast<unsigned>(pick(may_advance ? 30 : 29));
    session::Engine& eng = e_.engine();
    if (op == 29) {  // the clock
      const std::uint64_t ns = 1 + pick(200'000);
      auto st = eng.advanceManualClock(ns);
      t_.note("advance", st);
      if (st.ok()) advanced.fetch_add(ns);
      return;
    }
    if (op == 0) {
      auto r = eng.createSession(Caller::root(), name);
      t_.note("create", r);
      return;
    }
    if (op == 1) {
      // Rarer than the rest, so that sessions live long enough to be loaded,
      // started, and to overflow.
      if (pick(8) == 0) t_.note("destroy", eng.destroySession(name));
      return;
    }
    if (op == 2) {
      (void)eng.sessionNames();
      t_.note("names", 0, "");
      return;
    }
    if (op >= 3 && op <= 6 && !stable_.empty()) {  // readers of the stable sessions
      Session& s = *stable_[pick(stable_.size())];
      switch (op) {
        case 3:
          t_.note("stable.readPmd", s.readPmd(static_cast<unsigned>(pick(2)), 0));
          break;
        case 4:
          (void)s.counts();
          t_.note("stable.counts", 0, "");
          break;
        case 5:
          (void)s.state();
          t_.note("stable.state", 0, "");
          break;
        case 6:
          t_.note("stable.setInfo", s.setInfo(static_cast<unsigned>(pick(2))));
          break;
      }
      return;
    }
    std::shared_ptr<Session> s = eng.find(name);
    if (!s) return;
    const unsigned set = static_cast<unsigned>(pick(3));  // set 2 never exists: ENOENT
    switch (op) {
      case 7: {
        static constexpr std::uint64_t kValues[] = {kCycles, kInstructions,         kRefCycles, kBranches,
                                                    0,       kCycles | (1ull << 40)};  // the last: reserved bits
        const unsigned pmc = static_cast<unsigned>(pick(5));                           // pmc4 does not exist
        t_.note("writePmc", s->writePmc(Caller::root(), set, PmcWrite{pmc, kValues[pick(6)], pick(4) == 0}));
        break;
      }
      case 8: {
        PmdWrite w;
        w.index = static_cast<unsigned>(pick(4));
        auto period = [&] { return 0 - (min_period_ + pick(100'000)); };  // -P: overflows after P events
        w.value = pick(2) ? period() : pick(1'000'000);
        if (pick(2)) w.short_reset = period();
        if (pick(2)) w.long_reset = period();
        if (pick(3) == 0) w.notify = pick(3) != 0;
        if (pick(4) == 0) w.reset_pmds = pick(16);
        if (pick(8) == 0) {
          w.random = true;
          w.random_mask = 0xff;
        }
        t_.note("writePmd", s->writePmd(set, w));
        break;
      }
      case 9: {
        std::vector<RegWrite> v;
        for (unsigned i = 0; i < 4; ++i) v.push_back(PmcWrite{i, pick(2) ? kCycles : kInstructions, false});
        v.push_back(PmcWrite{16, 0x222, false});
        for (unsigned i : {0u, 1u, 2u, 3u, 16u, 17u, 18u}) v.push_back(pmdWrite(i, pick(1'000'000)));
        t_.note("writeRegs", s->writeRegs(Caller::root(), set, v));
        break;
      }
      case 10:
        t_.note("readPmd", s->readPmd(set, static_cast<unsigned>(pick(20))));
        break;
      case 11:
        t_.note("readPmc", s->readPmc(set, static_cast<unsigned>(pick(20))));
        break;
      case 12:
        t_.note("regs", s->regs(set));
        break;
      case 13:
        (void)s->counts();
        t_.note("counts", 0, "");
        break;
      case 14: {
        auto st = s->state();
        (void)s->error();
        (void)s->flags();
        (void)s->mode();
        t_.note(st.state == State::Masked ? "state(masked)" : "state", 0, "");
        break;
      }
      case 15:
        t_.note("setInfo", s->setInfo(set));
        break;
      case 16:
        (void)s->takeMessages(1 + pick(4));
        (void)s->queuedMessages();
        t_.note("take", 0, "");
        break;
      case 17:
      case 18:
        t_.note("start", pick(2) ? s->start() : s->start(set));
        break;
      case 19:
        t_.note("stop", s->stop());
        break;
      case 20:
        t_.note("restart", s->restart());
        break;
      case 21:
        if (!tids_.empty())
          t_.note("load", s->load(Caller::root(), tids_[pick(tids_.size())],
                                  pick(2) ? std::optional<unsigned>(set) : std::nullopt));
        break;
      case 22:
        if (pick(4) == 0) t_.note("unload", s->unload());
        break;
      case 23:
        t_.note("createSet", s->createSet(1));
        break;
      case 24:
        t_.note("deleteSet", s->deleteSet(1));
        break;
      case 25: {
        // Lone sets with a time switch included (Liveness.LoneSetWithTimeSwitch*).
        SwitchSpec sw = pick(3) == 0 ? SwitchSpec{false, 0, true} : timeSwitch(1 + pick(100'000));
        t_.note("setSwitch", s->setSwitch(set, sw));
        break;
      }
      case 26: {
        session::Flags f;
        f.no_msg = pick(2) == 0;
        t_.note("setFlags", s->setFlags(f));
        break;
      }
      case 27:
        (void)s->loadedTarget();
        (void)s->setIds();
        t_.note("ids", 0, "");
        break;
      default:
        (void)s->readPmd(0, 0);
        t_.note("readPmd0", 0, "");
        break;
    }
  }

 private:
  SimEngine& e_;
  Tally& t_;
  std::vector<pid_t> tids_;
  std::vector<std::shared_ptr<Session>> stable_;
  unsigned churn_;
  std::uint64_t min_period_;
};

// Runs `threads` workers of the storm for `how_long`; the first `advancers`
// of them also move the manual clock.
// Lets a storm run for `at_least`, and on until `enough` says it did what
// its checks need (a minute at most): a slow or busy machine, or TSan, runs
// fewer operations in the same time.
inline void stormFor(std::chrono::milliseconds at_least, const std::function<bool()>& enough) {
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(at_least);
  while (!enough() && std::chrono::steady_clock::now() - start < std::chrono::minutes(1))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

inline void runStorm(Storm& storm, Tally& tally, unsigned threads, unsigned advancers,
                     std::chrono::milliseconds how_long) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i)
    pool.emplace_back([&storm, &stop, i, advancers] {
      std::mt19937_64 rng(0x5eed + i);
      while (!stop.load(std::memory_order_relaxed)) storm.one(rng, i < advancers);
    });
  stormFor(how_long, [&tally] { return tally.ops.load() > kStormOps; });
  stop.store(true);
  for (auto& t : pool) t.join();
}

inline void report(const Tally& t) {
  for (const auto& [op, n] : t.stats)
    std::fprintf(stderr, "  %-16s ok=%llu failed=%llu\n", op.c_str(), static_cast<unsigned long long>(n.first),
                 static_cast<unsigned long long>(n.second));
  EXPECT_EQ(t.unexpected.load(), 0u);
  for (const auto& w : t.what) ADD_FAILURE() << "unexpected error: " << w;
  EXPECT_GT(t.ops.load(), kStormOps) << "the storm hardly ran, in a minute";
}

}  // namespace pfmfs::testing::storm
