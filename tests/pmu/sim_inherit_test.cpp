// Unit tests of the sim backend's inheritance (Inheritance::Adopt): a thread
// target with `inherit` reports the processes and threads it creates, and
// theirs (takeChildEvents), with the CPU time of each at its exit; each child
// adopted gets an emulated PMU whose time starts at its creation; the
// listener hears of children's records under either clock. Real processes
// and threads of the test itself, in step through pipes.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/sim_backend.h"
#include "tests/support/cpu_time.h"
#include "tests/support/forked_child.h"
#include "tests/support/run_in_child.h"
#include "tests/support/task_clock.h"
#include "tests/support/worker_thread.h"

namespace pfmfs::pmu::sim {
namespace {

using namespace std::chrono_literals;
using pfmfs::testing::burnCpu;
using pfmfs::testing::ChildIo;
using pfmfs::testing::DescendantsTaskClock;
using pfmfs::testing::ForkedChild;
using pfmfs::testing::nowNs;
using pfmfs::testing::Worker;

constexpr std::uint64_t kMs = 1'000'000;
// How long a test waits for what must happen: generous, it costs nothing
// when the thing happens.
constexpr auto kPatience = std::chrono::minutes(1);

pid_t gettidNow() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

std::unique_ptr<SimBackend> make(ClockKind clock) {
  SimOptions o;
  o.clock = clock;
  auto b = SimBackend::create(o);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().reason);
  return b.ok() ? std::move(*b) : nullptr;
}

Target inherited(pid_t tid) { return Target{TargetKind::Thread, tid, true}; }

// Counts the backend's calls, from its poller thread.
class CountingListener final : public TargetListener {
 public:
  void attention() override {
    {
      std::lock_guard l(mu_);
      ++calls_;
    }
    cv_.notify_all();
  }
  int calls() {
    std::lock_guard l(mu_);
    return calls_;
  }
  // Whether calls reach `n` (within kPatience).
  bool waitFor(int n) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, kPatience, [&] { return calls_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
};

const ChildEvent* find(const std::vector<ChildEvent>& events, ChildEvent::Kind kind, pid_t tid) {
  for (const auto& e : events)
    if (e.kind == kind && e.tid == tid) return &e;
  return nullptr;
}

// Takes the target's child events until the exit of `tid` is among them
// (within kPatience): a thread's records are written after a join returns.
const ChildEvent* takeUntilExited(TargetPmu& p, std::vector<ChildEvent>& events, pid_t tid) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  for (;;) {
    p.takeChildEvents(events);
    if (const ChildEvent* e = find(events, ChildEvent::Kind::Exited, tid)) return e;
    if (std::chrono::steady_clock::now() > deadline) return nullptr;
    std::this_thread::sleep_for(1ms);
  }
}

std::size_t indexOf(const std::vector<ChildEvent>& events, const ChildEvent* e) {
  return static_cast<std::size_t>(e - events.data());
}

// ------------------------------------------------------------ the interface

TEST(SimInherit, BackendAdopts) {
  auto b = make(ClockKind::Manual);
  EXPECT_EQ(b->inheritance(), Inheritance::Adopt);
}

TEST(SimInherit, CpuTargetWithInheritIsEinval) {
  for (ClockKind k : {ClockKind::Manual, ClockKind::Real}) {
    auto b = make(k);
    auto t = b->attach(Target{TargetKind::Cpu, 0, true}, {});
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.code(), -EINVAL);
    EXPECT_NE(t.error().reason.find("inherit"), std::string::npos) << t.error().reason;
  }
}

TEST(SimInherit, NonexistentThreadIsEsrch) {
  auto b = make(ClockKind::Real);
  ForkedChild c([](const ChildIo&) { return 0; });
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.wait(), 0);
  auto t = b->attach(inherited(c.pid()), {});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.code(), -ESRCH);
}

// A daemon that may not watch the target says why. In a child that drops to
// nobody (as root) and asks for this root-owned process, or for init.
TEST(SimInherit, RefusalNamesPerfEventParanoid) {
  const pid_t target = ::getuid() == 0 ? ::getpid() : 1;
  int rc = pfmfs::testing::runInChild(
      [target] {
        if (::getuid() == 0 && ::setresgid(65534, 65534, 65534) != 0) return 10;
        if (::getuid() == 0 && ::setresuid(65534, 65534, 65534) != 0) return 11;
        auto b = make(ClockKind::Manual);
        auto t = b->attach(inherited(target), {});
        if (t.ok()) return 12;
        if (t.code() != -EACCES && t.code() != -EPERM) return 13;
        return t.error().reason.find("perf_event_paranoid=") != std::string::npos ? 0 : 14;
      },
      kPatience);
  EXPECT_EQ(rc, 0) << "10-11: cannot drop root, 12: attached, 13: another error, 14: no hint";
}

TEST(SimInherit, WithoutInheritNothingIsFollowed) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(Target{TargetKind::Thread, gettidNow()}, {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  ForkedChild c([](const ChildIo&) { return 0; });
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.wait(), 0);
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  EXPECT_TRUE(events.empty());
  auto child = (*t)->adoptChild(c.pid(), {});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.code(), -EINVAL);
}

// ------------------------------------------------------------- child events

TEST(SimInherit, ForkReportedAtOnceAndItsExitWithItsCpuTime) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TargetPmu& p = **t;
  const DescendantsTaskClock children;  // the oracle of the child's final time
  ASSERT_TRUE(children.ok());
  ForkedChild c([](const ChildIo& io) {
    if (!io.awaitGo()) return 1;
    burnCpu(20 * kMs);
    io.report(pfmfs::testing::nowNs(CLOCK_PROCESS_CPUTIME_ID));
    return 0;
  });
  ASSERT_TRUE(c.ok());
  // The parent writes the FORK record before fork() returns in it.
  std::vector<ChildEvent> events;
  p.takeChildEvents(events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ChildEvent::Kind::Created);
  EXPECT_EQ(events[0].pid, c.pid());
  EXPECT_EQ(events[0].tid, c.pid());
  EXPECT_EQ(events[0].parent_tid, gettidNow());
  c.go();
  auto used = c.report();
  ASSERT_TRUE(used.has_value());
  ASSERT_EQ(c.wait(), 0);
  events.clear();
  // The child writes EXIT and READ before it becomes a zombie: a wait that
  // returned means both are there.
  p.takeChildEvents(events);
  const ChildEvent* e = find(events, ChildEvent::Kind::Exited, c.pid());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->pid, c.pid());
  ASSERT_TRUE(e->final_time_ns.has_value());
  EXPECT_GE(*e->final_time_ns, 16 * kMs);
  EXPECT_LE(*e->final_time_ns, children.ns()) << "its own task-clock, no more (the kernel's, read by the test)";
  EXPECT_GE(*e->final_time_ns, *used * 9 / 10) << "its whole CPU time, from its creation";
  EXPECT_EQ(std::count_if(events.begin(), events.end(), [](auto& x) { return x.kind == ChildEvent::Kind::Created; }),
            0);
}

TEST(SimInherit, ThreadReportedWithItsProcessAndParent) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  const DescendantsTaskClock threads;  // the oracle of the thread's final time
  ASSERT_TRUE(threads.ok());
  std::atomic<pid_t> tid{0};
  std::thread th([&] {
    tid = gettidNow();
    burnCpu(5 * kMs);
  });
  th.join();
  std::vector<ChildEvent> events;
  const ChildEvent* exited = takeUntilExited(**t, events, tid);
  ASSERT_NE(exited, nullptr);
  const ChildEvent* created = find(events, ChildEvent::Kind::Created, tid);
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->pid, ::getpid());
  EXPECT_EQ(created->parent_tid, gettidNow());
  EXPECT_LT(indexOf(events, created), indexOf(events, exited));
  ASSERT_TRUE(exited->final_time_ns.has_value());
  EXPECT_GE(*exited->final_time_ns, 4 * kMs);
  // The oracle has the thread's time once the thread is gone from /proc (its
  // perf events end before it is released).
  ASSERT_TRUE(pfmfs::testing::waitThreadGone(tid)) << "thread " << tid.load() << " never went";
  EXPECT_LE(*exited->final_time_ns, threads.ns()) << "its own task-clock, no more (the kernel's, read by the test)";
}

TEST(SimInherit, GrandchildHasItsParentsTid) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  ForkedChild c([](const ChildIo& io) {
    pid_t g = ::fork();
    if (g == 0) {
      burnCpu(5 * kMs);
      ::_exit(0);
    }
    io.report(static_cast<std::uint64_t>(g));
    int status = 0;
    return ::waitpid(g, &status, 0) == g && WIFEXITED(status) ? 0 : 1;
  });
  ASSERT_TRUE(c.ok());
  auto g = c.report();
  ASSERT_TRUE(g.has_value());
  const auto grandchild = static_cast<pid_t>(*g);
  ASSERT_EQ(c.wait(), 0);
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  const ChildEvent* cc = find(events, ChildEvent::Kind::Created, c.pid());
  const ChildEvent* gc = find(events, ChildEvent::Kind::Created, grandchild);
  const ChildEvent* ge = find(events, ChildEvent::Kind::Exited, grandchild);
  const ChildEvent* ce = find(events, ChildEvent::Kind::Exited, c.pid());
  ASSERT_TRUE(cc && gc && ge && ce);
  EXPECT_EQ(cc->parent_tid, gettidNow());
  EXPECT_EQ(gc->parent_tid, c.pid());
  EXPECT_EQ(gc->pid, grandchild);
  EXPECT_LT(indexOf(events, cc), indexOf(events, gc));
  EXPECT_LT(indexOf(events, gc), indexOf(events, ge));
  EXPECT_LT(indexOf(events, ge), indexOf(events, ce));
  ASSERT_TRUE(ge->final_time_ns.has_value());
  EXPECT_GE(*ge->final_time_ns, 4 * kMs);
  EXPECT_EQ(events.size(), 4u);
}

// ---------------------------------------------------------------- adoption

TEST(SimInherit, ManualAdoptedChildCountsFromZero) {
  auto b = make(ClockKind::Manual);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  (void)(*t)->advanceTo(5000);  // the target's time is not the child's
  ForkedChild c([](const ChildIo& io) { return io.awaitGo() ? 0 : 1; });
  ASSERT_TRUE(c.ok());
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  ASSERT_NE(find(events, ChildEvent::Kind::Created, c.pid()), nullptr);
  auto child = (*t)->adoptChild(c.pid(), {});
  ASSERT_TRUE(child.ok()) << child.error().reason;
  TargetPmu& p = **child;
  EXPECT_EQ(p.timeNs(), 0u);
  const PmuDescription& d = b->description();
  std::vector<std::uint64_t> pmcs(d.pmcs.size()), bits(d.pmds.size()), out(d.pmds.size());
  pmcs[static_cast<std::size_t>(d.pmcSlot(0))] =
      intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn;
  ASSERT_TRUE(p.loadSet(SetImage{0, pmcs, regBit(0), bits}).ok());
  p.enable();
  EXPECT_EQ(p.advanceTo(1000), 1000u);
  p.readPmds(regBit(0), out);
  EXPECT_EQ(out[static_cast<std::size_t>(d.pmdSlot(0))], 3000u) << "3 cycles per ns";
  EXPECT_FALSE(p.takeOverflow().has_value());
  // Its exit moves no manual time.
  c.go();
  ASSERT_EQ(c.wait(), 0);
  p.childExited(123 * kMs);
  EXPECT_EQ(p.timeNs(), 1000u);
  EXPECT_EQ(p.advanceTo(1500), 1500u);
  EXPECT_EQ((*t)->timeNs(), 5000u);
}

TEST(SimInherit, RealAdoptedChildTimeStartsAtItsCreation) {
  auto b = make(ClockKind::Real);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  ForkedChild c([](const ChildIo& io) {
    burnCpu(20 * kMs);  // before its adoption
    io.report(nowNs(CLOCK_THREAD_CPUTIME_ID));
    if (!io.awaitGo()) return 1;
    io.report(nowNs(CLOCK_THREAD_CPUTIME_ID));
    burnCpu(10 * kMs);
    io.report(nowNs(CLOCK_THREAD_CPUTIME_ID));
    return 0;
  });
  ASSERT_TRUE(c.ok());
  // The child's CPU time from its creation, by its own clock, before and
  // after the adoption's reading of it (the same account: sum_exec_runtime,
  // which the child's look at its clock brings up to date).
  const auto before = c.report();
  ASSERT_TRUE(before.has_value());
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  ASSERT_NE(find(events, ChildEvent::Kind::Created, c.pid()), nullptr);
  auto child = (*t)->adoptChild(c.pid(), {});
  ASSERT_TRUE(child.ok()) << child.error().reason;
  TargetPmu& p = **child;
  const std::uint64_t at_adoption = p.timeNs();
  EXPECT_GE(at_adoption, 20 * kMs) << "counted from its creation, not its adoption";
  EXPECT_GE(at_adoption, *before) << "counted from its creation, not its adoption";
  EXPECT_FALSE(p.gone());
  c.go();
  const auto after = c.report();
  ASSERT_TRUE(after.has_value());
  EXPECT_LE(at_adoption, *after) << "its CPU time, no more";
  const auto last = c.report();
  ASSERT_TRUE(last.has_value());
  ASSERT_EQ(c.wait(), 0);
  const ChildEvent* e = takeUntilExited(**t, events, c.pid());
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->final_time_ns.has_value());
  // The final time is the kernel's task-clock; the adoption read schedstat.
  // Both count from the creation but on a loaded machine they drift apart by
  // milliseconds, so each is held only to what it must be: the final time
  // is counted from the creation, and the frozen time is the later of the
  // two, no more than the child's own clock said at its end.
  const std::uint64_t final_ns = *e->final_time_ns;
  EXPECT_GE(final_ns, 20 * kMs) << "counted from its creation";
  p.childExited(final_ns);
  const std::uint64_t frozen = p.timeNs();
  EXPECT_GE(frozen, std::max(final_ns, at_adoption)) << "the exit's time, or the last reading if later";
  EXPECT_LE(frozen, std::max(final_ns, *last + 5 * kMs)) << "no more than the CPU time it had";
  EXPECT_EQ(p.timeNs(), frozen);
  p.childExited(frozen + 1000 * kMs);  // once only
  EXPECT_EQ(p.timeNs(), frozen);
  EXPECT_EQ(p.advanceTo(frozen), frozen);
}

TEST(SimInherit, RealAdoptionOfAReapedChild) {
  auto b = make(ClockKind::Real);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  const DescendantsTaskClock children;  // the oracle of the child's final time
  ASSERT_TRUE(children.ok());
  ForkedChild c([](const ChildIo&) {
    burnCpu(10 * kMs);
    return 0;
  });
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.wait(), 0);  // reaped before the engine adopts it
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  ASSERT_NE(find(events, ChildEvent::Kind::Created, c.pid()), nullptr);
  const ChildEvent* e = find(events, ChildEvent::Kind::Exited, c.pid());
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->final_time_ns.has_value());
  EXPECT_GE(*e->final_time_ns, 8 * kMs);
  EXPECT_LE(*e->final_time_ns, children.ns()) << "its own task-clock, no more (the kernel's, read by the test)";
  auto child = (*t)->adoptChild(c.pid(), {});
  ASSERT_TRUE(child.ok()) << child.error().reason;
  TargetPmu& p = **child;
  EXPECT_EQ(p.timeNs(), 0u) << "its clock cannot be read: it waits for childExited";
  EXPECT_TRUE(p.gone());
  p.childExited(e->final_time_ns);
  EXPECT_EQ(p.timeNs(), *e->final_time_ns);
  // Its PMU works all the same: the engine catches it up to its final time.
  EXPECT_EQ(p.advanceTo(p.timeNs()), *e->final_time_ns);
}

TEST(SimInherit, RealChildExitedWithoutAFinalTimeKeepsItsLastReading) {
  auto b = make(ClockKind::Real);
  auto t = b->attach(inherited(gettidNow()), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  ForkedChild c([](const ChildIo& io) {
    burnCpu(5 * kMs);
    io.report(0);
    return io.awaitGo() ? 0 : 1;
  });
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.report().has_value());
  auto child = (*t)->adoptChild(c.pid(), {});
  ASSERT_TRUE(child.ok()) << child.error().reason;
  const std::uint64_t read = (*child)->timeNs();
  EXPECT_GE(read, 4 * kMs);
  c.go();
  ASSERT_EQ(c.wait(), 0);
  (*child)->childExited(std::nullopt);
  EXPECT_GE((*child)->timeNs(), read);
  EXPECT_LE((*child)->timeNs(), read + 5 * kMs);
}

// --------------------------------------------------------------- attention

TEST(SimInherit, AttentionWhenAChildForks) {
  for (ClockKind k : {ClockKind::Real, ClockKind::Manual}) {
    auto b = make(k);
    auto listener = std::make_shared<CountingListener>();
    auto t = b->attach(inherited(gettidNow()), listener);
    ASSERT_TRUE(t.ok()) << t.error().reason;
    const std::uint64_t time0 = (*t)->timeNs();
    ForkedChild c([](const ChildIo& io) { return io.awaitGo() ? 0 : 1; });
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(listener->waitFor(1)) << "the FORK record wakes the poller";
    const int after_fork = listener->calls();
    c.go();
    ASSERT_EQ(c.wait(), 0);
    EXPECT_TRUE(listener->waitFor(after_fork + 1)) << "and so does the exit";
    std::vector<ChildEvent> events;
    (*t)->takeChildEvents(events);
    EXPECT_NE(find(events, ChildEvent::Kind::Created, c.pid()), nullptr);
    EXPECT_NE(find(events, ChildEvent::Kind::Exited, c.pid()), nullptr);
    if (k == ClockKind::Manual) {
      EXPECT_EQ((*t)->timeNs(), time0) << "attention moves no manual time";
    }
  }
}

// The target's exit ends nothing: its children are still followed, and the
// poller still hears of them.
TEST(SimInherit, ChildrenOutliveTheTarget) {
  auto b = make(ClockKind::Real);
  auto listener = std::make_shared<CountingListener>();
  auto worker = std::make_unique<Worker>();
  auto t = b->attach(inherited(worker->tid()), listener);
  ASSERT_TRUE(t.ok()) << t.error().reason;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::atomic<pid_t> child{0};
  std::thread th;
  worker->run([&] {
    th = std::thread([&] {
      child = gettidNow();
      std::unique_lock l(mu);
      cv.wait(l, [&] { return release; });
      l.unlock();
      burnCpu(5 * kMs);
    });
    while (child == 0) std::this_thread::yield();
  });
  worker->exitAndJoin();
  std::vector<ChildEvent> events;
  (*t)->takeChildEvents(events);
  const ChildEvent* created = find(events, ChildEvent::Kind::Created, child);
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->parent_tid, worker->tid());
  const int calls = listener->calls();
  {
    std::lock_guard l(mu);
    release = true;
  }
  cv.notify_all();
  th.join();
  EXPECT_TRUE(listener->waitFor(calls + 1)) << "a child's exit after the target's still wakes the poller";
  const ChildEvent* e = takeUntilExited(**t, events, child);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->final_time_ns.has_value());
  EXPECT_GE(*e->final_time_ns, 4 * kMs);
  EXPECT_EQ(find(events, ChildEvent::Kind::Exited, worker->tid()), nullptr) << "the target's own exit is not a child's";
}

// Many targets, one poller; a target destroyed while its children live stops
// every call to its listener.
TEST(SimInherit, DetachWhileChildrenLive) {
  auto b = make(ClockKind::Real);
  auto listener = std::make_shared<CountingListener>();
  auto t1 = b->attach(inherited(gettidNow()), listener);
  ASSERT_TRUE(t1.ok()) << t1.error().reason;
  ForkedChild c([](const ChildIo& io) { return io.awaitGo() ? 0 : 1; });
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(listener->waitFor(1));
  t1->reset();
  const int calls = listener->calls();
  c.go();
  ASSERT_EQ(c.wait(), 0);
  // A second target's records reach its own listener only.
  auto other = std::make_shared<CountingListener>();
  auto t2 = b->attach(inherited(gettidNow()), other);
  ASSERT_TRUE(t2.ok()) << t2.error().reason;
  ForkedChild d([](const ChildIo&) { return 0; });
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d.wait(), 0);
  EXPECT_TRUE(other->waitFor(1));
  EXPECT_EQ(listener->calls(), calls);
}

}  // namespace
}  // namespace pfmfs::pmu::sim
