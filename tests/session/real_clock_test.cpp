// The engine over the sim backend with the REAL clock: a thread target's time
// is its CPU time and the engine's timer thread ticks every millisecond.
// Switches and overflows still happen at their exact instants of target time
// (the sim replays them), so the relations between counts, durations and runs
// are exact; only the total amount of time is up to the scheduler. The
// bounds on it hold at any speed and load: the sim reads a thread's CPU time
// from /proc/TID/schedstat, which is exact while the thread is off the CPU
// (waitOffCpu) and lags up to a tick while it runs, so the readings that
// bounds rest on are taken with the worker blocked.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/cpu_time.h"
#include "tests/support/run_in_child.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing {
namespace {

using namespace std::chrono_literals;
using session::Caller;
using session::PmcWrite;
using session::PmdWrite;
using session::State;
using session::SwitchSpec;

constexpr std::uint64_t kMs = 1'000'000;
// How long a test waits for what must happen: generous, it costs nothing
// when the thing happens.
constexpr auto kPatience = std::chrono::minutes(1);

// A thread to monitor: blocked (no CPU time) between jobs.
class Worker {
 public:
  Worker() : thread_([this] { loop(); }) {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return tid_ != 0; });
  }
  ~Worker() { exitAndJoin(); }

  pid_t tid() const { return tid_; }

  void post(std::function<void()> job) {
    std::lock_guard l(mu_);
    job_ = std::move(job);
    busy_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return !busy_; });
  }
  void run(std::function<void()> job) {
    post(std::move(job));
    wait();
  }
  void exitAndJoin() {
    {
      std::lock_guard l(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    if (!thread_.joinable()) return;
    thread_.join();
    // join returns when the kernel clears the thread's tid, a moment before
    // it reaps the thread: wait for that too, so that "the thread is gone"
    // holds for whatever the test does next.
    EXPECT_TRUE(waitThreadGone(tid_)) << "thread " << tid_ << " joined but never reaped";
  }

 private:
  void loop() {
    std::unique_lock l(mu_);
    tid_ = gettidNow();
    cv_.notify_all();
    while (true) {
      cv_.wait(l, [this] { return quit_ || job_; });
      if (job_) {
        auto job = std::move(job_);
        job_ = nullptr;
        l.unlock();
        job();
        l.lock();
        busy_ = false;
        cv_.notify_all();
        continue;
      }
      return;  // quit, nothing left to run
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool busy_ = false;
  pid_t tid_ = 0;
  bool quit_ = false;
  std::thread thread_;
};

SimConfig realConfig(unsigned width = 48, bool interrupts = true) {
  SimConfig c;
  c.clock = pmu::ClockKind::Real;
  c.width = width;
  c.interrupts = interrupts;
  c.engine.tick_ns = kMs;
  return c;
}

SwitchSpec timeSwitch(std::uint64_t ns) { return SwitchSpec{true, ns, false}; }

#define ASSERT_OK(expr)                                           \
  do {                                                            \
    auto&& ok_ = (expr);                                          \
    ASSERT_TRUE(ok_.ok()) << #expr << ": " << ok_.error().reason; \
  } while (0)

// counts() as a map (set, pmd) -> line.
std::map<std::pair<unsigned, unsigned>, session::CountLine> countsOf(session::Session& s) {
  std::map<std::pair<unsigned, unsigned>, session::CountLine> m;
  for (const auto& c : s.counts()) m[{c.set, c.pmd}] = c;
  return m;
}

session::CountLine lineOf(session::Session& s, unsigned set, unsigned pmd) { return countsOf(s)[{set, pmd}]; }

// Two sets that multiplex on the thread's CPU time: set 0 counts cycles
// (3/ns) and ref cycles (2.5/ns), set 1 instructions (2/ns).
void programTwoSets(session::Session& s, std::uint64_t switch_ns) {
  ASSERT_OK(s.createSet(1));
  ASSERT_OK(s.setSwitch(0, timeSwitch(switch_ns)));
  ASSERT_OK(s.setSwitch(1, timeSwitch(switch_ns)));
  ASSERT_OK(s.writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(s.writePmc(Caller::root(), 0, PmcWrite{1, kRefCycles, false}));
  ASSERT_OK(s.writePmc(Caller::root(), 1, PmcWrite{0, kInstructions, false}));
}

// The exact relations of programTwoSets' sets after they counted, stopped,
// with effective switch time `t` (a multiple of nothing in particular).
void checkTwoSets(session::Session& s, std::uint64_t t) {
  auto i0 = s.setInfo(0);
  auto i1 = s.setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  const std::uint64_t d0 = i0->duration_ns, d1 = i1->duration_ns, total = d0 + d1;
  // Set 0 runs first; they alternate every t ns of target time, exactly.
  EXPECT_EQ(i0->runs + i1->runs, 1 + total / t) << "d0=" << d0 << " d1=" << d1;
  EXPECT_GE(i0->runs, i1->runs);
  EXPECT_LE(i0->runs, i1->runs + 1);
  EXPECT_GE(d0, d1);
  EXPECT_LE(d0 - d1, t);

  auto c = countsOf(s);
  ASSERT_EQ(c.size(), 3u);
  const auto& cyc = c[{0, 0}];
  const auto& ref = c[{0, 1}];
  const auto& ins = c[{1, 0}];
  EXPECT_EQ(cyc.running_ns, d0);
  EXPECT_EQ(ref.running_ns, d0);
  EXPECT_EQ(ins.running_ns, d1);
  for (const auto* l : {&cyc, &ref, &ins}) {
    EXPECT_EQ(l->enabled_ns, total) << "pmd" << l->pmd << " of set " << l->set;
    if (l->running_ns != 0) {
      ASSERT_TRUE(l->scaled.has_value());
      EXPECT_EQ(*l->scaled,
                static_cast<std::uint64_t>(static_cast<unsigned __int128>(l->value) * l->enabled_ns / l->running_ns));
    }
  }
  // Integral rates make every activation's count exact.
  EXPECT_EQ(cyc.value, 3 * d0);
  EXPECT_EQ(ins.value, 2 * d1);
  // 2.5/ns: each activation's floor(2.5 b) - floor(2.5 a) is within 1 of 2.5 (b - a).
  const double want = 2.5 * static_cast<double>(d0);
  EXPECT_GT(static_cast<double>(ref.value), want - static_cast<double>(i0->runs));
  EXPECT_LT(static_cast<double>(ref.value), want + static_cast<double>(i0->runs));
}

// --------------------------------------------------------------------------

TEST(RealClock, TwoSetsMultiplexOnCpuTime) {
  SimEngine e(realConfig());
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, 10 * kMs);
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  // Start and stop read the worker's CPU time: exact with it off the CPU.
  ASSERT_TRUE(waitOffCpu(w.tid()));
  const std::uint64_t wall0 = nowNs(CLOCK_MONOTONIC);
  ASSERT_OK(s->start());
  w.run([] { burnCpu(300 * kMs); });
  ASSERT_TRUE(waitOffCpu(w.tid()));
  ASSERT_OK(s->stop());
  const std::uint64_t wall1 = nowNs(CLOCK_MONOTONIC);

  auto i0 = s->setInfo(0);
  auto i1 = s->setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  const std::uint64_t total = i0->duration_ns + i1->duration_ns;
  EXPECT_GE(i0->runs, 5u);
  EXPECT_GE(i1->runs, 5u);
  // The worker burnt 300 ms of CPU while the session counted, and cannot have
  // used more CPU than the wall time that passed.
  EXPECT_GE(total, 300 * kMs);
  EXPECT_LE(total, wall1 - wall0);
  // Each set roughly half.
  EXPECT_GE(i0->duration_ns, total * 4 / 10);
  EXPECT_GE(i1->duration_ns, total * 4 / 10);
  checkTwoSets(*s, 10 * kMs);
  EXPECT_EQ(s->state().state, State::Loaded);
  ASSERT_OK(s->unload());
  // Unloading keeps what was counted.
  checkTwoSets(*s, 10 * kMs);
}

TEST(RealClock, TimeoutRoundsUpToTheTick) {
  SimEngine e(realConfig());
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->createSet(1));
  struct Case {
    std::uint64_t asked, effective;
  };
  for (Case c : {Case{1'500'000, 2 * kMs}, Case{1, kMs}, Case{kMs, kMs}, Case{2 * kMs, 2 * kMs},
                 Case{2 * kMs + 1, 3 * kMs}, Case{10 * kMs - 1, 10 * kMs}}) {
    ASSERT_OK(s->setSwitch(1, timeSwitch(c.asked)));
    auto i = s->setInfo(1);
    ASSERT_TRUE(i.ok());
    EXPECT_EQ(i->timeout_ns, c.effective) << "asked " << c.asked;
    EXPECT_EQ(i->switch_spec.timeout_ns, c.asked) << "the request itself is kept";
    EXPECT_TRUE(i->switch_spec.on_time);
  }
  auto none = s->setInfo(0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->timeout_ns, 0u);
  EXPECT_EQ(s->setSwitch(1, timeSwitch(0)).code(), -EINVAL);
}

TEST(RealClock, RoundedTimeoutIsWhatSwitches) {
  SimEngine e(realConfig());
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, 1'500'000);  // effective 2 ms
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.run([] { burnCpu(60 * kMs); });
  ASSERT_OK(s->stop());
  checkTwoSets(*s, 2 * kMs);
  EXPECT_GE(s->setInfo(1)->runs, 10u);
}

TEST(RealClock, SleepingThreadDoesNotSwitch) {
  SimEngine e(realConfig());
  Worker w;                          // blocked: its CPU time does not move
  ASSERT_TRUE(waitOffCpu(w.tid()));  // from before the load on
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, kMs);
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  std::this_thread::sleep_for(100ms);  // a hundred ticks
  auto i0 = s->setInfo(0);
  auto i1 = s->setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  EXPECT_EQ(i0->runs, 1u);
  EXPECT_EQ(i1->runs, 0u);
  EXPECT_EQ(i0->duration_ns, 0u);
  EXPECT_EQ(i1->duration_ns, 0u);
  // Active: the timeout shown is what is left of it, all of it.
  EXPECT_EQ(i0->timeout_ns, kMs);
  auto st = s->state();
  EXPECT_EQ(st.state, State::Active);
  EXPECT_EQ(st.set, 0u);
  ASSERT_OK(s->stop());
}

TEST(RealClock, StopStartAndUnloadWhileTheTimerRuns) {
  SimEngine e(realConfig());
  std::atomic<bool> done{false};  // the worker burns until told (outlives it)
  Worker w;
  struct Stop {
    std::atomic<bool>& done;
    ~Stop() { done = true; }  // also when an assertion ends the test early
  } stop_burning{done};
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, 3 * kMs);
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.post([&done] {
    while (!done.load()) burnCpu(kMs);
  });
  // While the worker burns and the timer ticks: stop, look, start again.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(5ms);
    ASSERT_OK(s->stop());
    EXPECT_EQ(s->state().state, State::Loaded);
    auto frozen = countsOf(*s);
    std::this_thread::sleep_for(3ms);
    auto again = countsOf(*s);
    for (const auto& [k, line] : frozen) {
      EXPECT_EQ(again[k].value, line.value) << "stopped: nothing counts";
      EXPECT_EQ(again[k].enabled_ns, line.enabled_ns);
    }
    ASSERT_OK(s->start());
    EXPECT_EQ(s->state().state, State::Active);
  }
  // Let set 1 complete an activation (3 ms of the worker's CPU time).
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (s->setInfo(1)->runs < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_GE(s->setInfo(1)->runs, 2u);
  ASSERT_OK(s->unload());  // while the worker burns
  EXPECT_EQ(s->state().state, State::Unloaded);
  auto at_unload = countsOf(*s);
  // The worker burns 5 ms more, by its CPU clock, before it stops.
  const std::uint64_t at = threadCpuNs(w.tid());
  ASSERT_NE(at, 0u);
  const auto burn_deadline = std::chrono::steady_clock::now() + kPatience;
  while (threadCpuNs(w.tid()) < at + 5 * kMs && std::chrono::steady_clock::now() < burn_deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_GE(threadCpuNs(w.tid()), at + 5 * kMs);
  done = true;
  w.wait();
  auto later = countsOf(*s);
  for (const auto& [k, line] : at_unload) EXPECT_EQ(later[k].value, line.value) << "unloaded: nothing counts";
  // Stopping and starting split activations but never lose or invent time.
  auto i0 = s->setInfo(0);
  auto i1 = s->setInfo(1);
  const std::uint64_t d0 = i0->duration_ns, d1 = i1->duration_ns;
  auto c = countsOf(*s);
  const auto cyc = c[{0, 0}];
  const auto ins = c[{1, 0}];
  EXPECT_EQ(cyc.value, 3 * d0);
  EXPECT_EQ(ins.value, 2 * d1);
  EXPECT_EQ(cyc.enabled_ns, d0 + d1);
  EXPECT_GT(d0, 0u);
  EXPECT_GT(d1, 0u);
}

TEST(RealClock, ReadsWhileActiveAreLiveAndMonotonic) {
  SimEngine e(realConfig());
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  // The worker's CPU time where the session starts, exact: it is off the CPU
  // from before the load to the start.
  const auto cpu0 = offCpuTimeNs(w.tid());
  ASSERT_TRUE(cpu0.has_value());
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.post([] { burnCpu(60 * kMs); });
  std::uint64_t last = 0;
  for (int i = 0; i < 30; ++i) {
    auto v = s->readPmd(0, 0);
    ASSERT_TRUE(v.ok());
    EXPECT_GE(v->value, last);
    last = v->value;
    std::this_thread::sleep_for(1ms);
  }
  w.wait();
  // Read with the worker off the CPU, where its CPU time is exact.
  const auto cpu1 = offCpuTimeNs(w.tid());
  ASSERT_TRUE(cpu1.has_value());
  // counts() reads value and running time at one instant: exact while active.
  auto c = s->counts();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].value, 3 * c[0].running_ns) << "a live read is exact at the time of the read";
  EXPECT_GE(c[0].running_ns, 60 * kMs) << "the CPU time it burnt";
  EXPECT_EQ(c[0].running_ns, *cpu1 - *cpu0) << "all of its CPU time since the start, the kernel's account";
  EXPECT_GE(c[0].value, last);
  ASSERT_OK(s->stop());
}

// 64-bit emulation on 16-bit counters: cycles wrap every 21.8 us of CPU
// time, thousands of times here; the 64-bit value stays exact.
TEST(RealClock, Emulation64WithInterrupts) {
  SimEngine e(realConfig(16, true));
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, 5 * kMs);
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.run([] { burnCpu(60 * kMs); });
  ASSERT_OK(s->stop());
  checkTwoSets(*s, 5 * kMs);
  EXPECT_GT(lineOf(*s, 0, 0).value, 1000u * 65536u);
  EXPECT_EQ(s->state().queued, 0u) << "no notify: no message";
}

TEST(RealClock, Emulation64BySampling) {
  SimEngine e(realConfig(16, false));
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  programTwoSets(*s, 5 * kMs);
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.run([] { burnCpu(60 * kMs); });
  ASSERT_OK(s->stop());
  checkTwoSets(*s, 5 * kMs);
  EXPECT_GT(lineOf(*s, 0, 0).value, 1000u * 65536u);
}

TEST(RealClock, OverflowNotificationMasksAtTheExactCount) {
  SimEngine e(realConfig(48, true));
  Worker w;
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  PmdWrite p;
  p.index = 0;
  p.value = ~std::uint64_t{0} - 3 * 10 * kMs + 1;  // overflow after 10 ms of CPU time: 30M cycles
  p.notify = true;
  p.long_reset = 0;
  ASSERT_OK(s->writePmd(0, p));
  ASSERT_OK(s->load(Caller::root(), w.tid()));
  ASSERT_OK(s->start());
  w.post([] { burnCpu(40 * kMs); });
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (s->state().state != State::Masked && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  w.wait();
  auto st = s->state();
  EXPECT_EQ(st.state, State::Masked);
  EXPECT_EQ(st.queued, 1u);
  auto i = s->setInfo(0);
  ASSERT_TRUE(i.ok());
  // Masked at the overflow's instant: exactly 10 ms of the thread's CPU time counted.
  EXPECT_EQ(i->duration_ns, 10 * kMs);
  EXPECT_EQ(i->ovfl_pmds, pmu::regBit(0));
  auto v = s->readPmd(0, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, 0u) << "wrapped to 0, reset waits for restart";
  auto m = s->takeMessages(10);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, session::MessageType::Overflow);
  EXPECT_EQ(m[0].seq, 1u);
  EXPECT_EQ(m[0].pmds, pmu::regBit(0));
  EXPECT_EQ(m[0].tid, w.tid());
  EXPECT_EQ(m[0].pid, ::getpid());
  ASSERT_OK(s->restart());
  EXPECT_EQ(s->state().state, State::Active);
  ASSERT_OK(s->stop());
}

TEST(RealClock, ThreadExitUnloadsTheSession) {
  SimEngine e(realConfig());
  auto w = std::make_unique<Worker>();
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(s->load(Caller::root(), w->tid()));
  ASSERT_OK(s->start());
  w->run([] { burnCpu(20 * kMs); });
  // What it counted while the thread lived, read exactly: with the thread off
  // the CPU. (Once it is reaped its CPU time cannot be read: the counts then
  // stand as of the last look at it.)
  ASSERT_TRUE(waitOffCpu(w->tid()));
  const auto alive = lineOf(*s, 0, 0);
  EXPECT_GE(alive.running_ns, 20 * kMs) << "the CPU time it burnt";
  EXPECT_EQ(alive.value, 3 * alive.running_ns);
  w->exitAndJoin();
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (s->state().state != State::Unloaded && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  auto st = s->state();
  EXPECT_EQ(st.state, State::Unloaded);
  EXPECT_TRUE(st.exited);
  EXPECT_FALSE(st.target.has_value());
  auto m = s->takeMessages(10);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, session::MessageType::End);
  EXPECT_EQ(m[0].seq, 1u);
  // Its counts stay: all it counted alive, and what it ran after, if seen.
  auto i = s->setInfo(0);
  ASSERT_TRUE(i.ok());
  EXPECT_GE(i->duration_ns, alive.running_ns);
  EXPECT_EQ(lineOf(*s, 0, 0).running_ns, i->duration_ns);
  EXPECT_EQ(lineOf(*s, 0, 0).value, 3 * i->duration_ns);
  // It can be loaded again, on another thread, and exited= goes.
  Worker w2;
  ASSERT_OK(s->load(Caller::root(), w2.tid()));
  EXPECT_FALSE(s->state().exited);
  ASSERT_OK(s->unload());
}

// Mode system: a CPU's time is wall time, so the sets switch while this
// thread sleeps.
TEST(RealClock, SystemModeSwitchesOnWallTime) {
  SimEngine e(realConfig());
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->setMode(session::Mode::System));
  programTwoSets(*s, 5 * kMs);
  ASSERT_OK(s->load(Caller::root(), 0));
  const std::uint64_t wall0 = nowNs(CLOCK_MONOTONIC);
  ASSERT_OK(s->start());
  std::this_thread::sleep_for(60ms);
  ASSERT_OK(s->stop());
  const std::uint64_t wall1 = nowNs(CLOCK_MONOTONIC);
  auto i0 = s->setInfo(0);
  auto i1 = s->setInfo(1);
  ASSERT_TRUE(i0.ok() && i1.ok());
  const std::uint64_t total = i0->duration_ns + i1->duration_ns;
  EXPECT_GE(total, 60 * kMs);
  EXPECT_LE(total, wall1 - wall0);
  EXPECT_GE(i1->runs, 3u);
  checkTwoSets(*s, 5 * kMs);
  ASSERT_OK(s->unload());
}

// pfmfs(5), THREAD EXIT: when a monitored thread exits the session becomes unloaded by
// itself, whatever it was doing. Here it was loaded and stopped.
TEST(RealClock, ThreadExitUnloadsAStoppedSession) {
  SimEngine e(realConfig());
  auto w = std::make_unique<Worker>();
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(s->load(Caller::root(), w->tid()));
  ASSERT_OK(s->start());
  w->run([] { burnCpu(10 * kMs); });
  ASSERT_OK(s->stop());
  const auto before = lineOf(*s, 0, 0);
  w->exitAndJoin();
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  while (s->state().state != State::Unloaded && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  auto st = s->state();
  EXPECT_EQ(st.state, State::Unloaded) << "a stopped session on an exited thread stays loaded";
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.queued, 1u) << "an end message";
  EXPECT_EQ(lineOf(*s, 0, 0).value, before.value) << "counts are kept";
}

// The engine's own exit path, as the layers above call it.
TEST(RealClock, EngineThreadExitedUnloads) {
  SimEngine e(realConfig());
  Worker w;
  auto a = e.newSession("a");
  auto b = e.newSession("b");
  ASSERT_TRUE(a && b);
  ASSERT_OK(a->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(a->load(Caller::root(), w.tid()));
  ASSERT_OK(a->start());
  w.run([] { burnCpu(10 * kMs); });
  ASSERT_OK(b->load(Caller::root(), gettidNow()));  // another thread: untouched
  ASSERT_TRUE(waitOffCpu(w.tid()));                 // the unload reads its CPU time: exact
  e.engine().threadExited(w.tid());
  auto st = a->state();
  EXPECT_EQ(st.state, State::Unloaded);
  EXPECT_TRUE(st.exited);
  auto m = a->takeMessages(10);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].type, session::MessageType::End);
  auto c = lineOf(*a, 0, 0);
  EXPECT_GE(c.running_ns, 10 * kMs) << "the CPU time it burnt";
  EXPECT_EQ(c.value, 3 * c.running_ns);
  EXPECT_EQ(b->state().state, State::Loaded);
  EXPECT_FALSE(b->state().exited);
  // The thread is free again.
  ASSERT_OK(a->load(Caller::root(), w.tid()));
  ASSERT_OK(a->unload());
  ASSERT_OK(b->unload());
}

// A lone set with a time switch: at its timeout the next set is itself. The
// timer thread must not spin there (holding the session's lock); the set
// keeps counting.
TEST(RealClock, LoneSetWithTimeSwitchKeepsCounting) {
  int rc = runInChild(
      [] {
        SimEngine e(realConfig());
        Worker w;
        auto s = e.newSession();
        if (!s) return 10;
        if (!s->setSwitch(0, timeSwitch(kMs)).ok()) return 11;
        if (!s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok()) return 12;
        if (!s->load(Caller::root(), w.tid()).ok()) return 13;
        if (!s->start().ok()) return 14;
        w.run([] { burnCpu(20 * kMs); });
        if (!waitOffCpu(w.tid())) return 17;  // the stop reads its CPU time: exact
        if (!s->stop().ok()) return 15;       // blocks forever if the timer thread spins
        auto c = s->counts();
        if (c.size() != 1 || c[0].running_ns < 20 * kMs || c[0].value != 3 * c[0].running_ns) return 16;
        return 0;
      },
      kPatience);
  EXPECT_NE(rc, -1) << "hung: with a single set whose switch timeout expires, Session::catchUpTo loops "
                       "forever under the session lock (switchTo(itself) does not reset set_elapsed_)";
  EXPECT_EQ(rc, 0);
}

TEST(RealClock, DestroyAndEngineShutdownWhileActive) {
  Worker w1, w2;
  w1.post([] { burnCpu(100 * kMs); });
  w2.post([] { burnCpu(100 * kMs); });
  {
    SimEngine e(realConfig());
    auto a = e.newSession("a");
    auto b = e.newSession("b");
    ASSERT_TRUE(a && b);
    for (auto* s : {a.get(), b.get()}) {
      programTwoSets(*s, kMs);
      EXPECT_EQ(s->start().code(), -EINVAL) << "start while unloaded";
    }
    ASSERT_OK(a->load(Caller::root(), w1.tid()));
    ASSERT_OK(b->load(Caller::root(), w2.tid()));
    ASSERT_OK(a->start());
    ASSERT_OK(b->start());
    std::this_thread::sleep_for(20ms);
    ASSERT_OK(e.engine().destroySession("a"));
    EXPECT_EQ(a->state().state, State::Unloaded);
    EXPECT_EQ(e.engine().find("a"), nullptr);
    std::this_thread::sleep_for(10ms);
    // The engine goes with b still active: it unloads it.
  }
  w1.wait();
  w2.wait();
}

// A stop that finds the thread gone (before any tick noticed) unloads the
// session and does not leave it half loaded.
TEST(RealClock, ThreadExitUnloadsWithNobodyLooking) {
  // The sim hears of the exit from the kernel (a perf dummy event on the
  // thread hangs up), as perf does: no tick, read or stop needs to look.
  SimConfig c = realConfig();
  c.engine.tick_ns = 10'000'000'000ull;  // no tick during the test
  SimEngine e(c);
  auto w = std::make_unique<Worker>();
  auto s = e.newSession();
  ASSERT_TRUE(s);
  ASSERT_OK(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}));
  ASSERT_OK(s->load(Caller::root(), w->tid()));
  ASSERT_OK(s->start());
  w->run([] { burnCpu(5 * kMs); });
  w->exitAndJoin();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!s->state().exited && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto st = s->state();
  EXPECT_EQ(st.state, State::Unloaded);
  EXPECT_TRUE(st.exited);
  EXPECT_EQ(st.queued, 1u);
  EXPECT_EQ(s->stop().code(), -EINVAL);  // nothing left to stop
  // The counts stay readable. (They stand as of the last look at the thread's
  // CPU time: a reaped thread's CPU time cannot be read.)
  EXPECT_EQ(s->counts().size(), 1u);
}

}  // namespace
}  // namespace pfmfs::testing
