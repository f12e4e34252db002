// Unit tests of perf::TaskTracker, which follows a thread's descendants
// through perf task records: how records become child events (a READ late or
// lost, the target's own exit, a tid reused), and, with real processes, that
// it follows children after the target exited, says when none is left
// (POLLHUP), and counts what a full buffer loses.
#include "pmu/perf_event/task_tracker.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "tests/support/cpu_time.h"
#include "tests/support/forked_child.h"
#include "tests/support/task_clock.h"

namespace pfmfs::pmu::perf {
namespace {

using namespace std::chrono_literals;
using pfmfs::testing::burnCpu;
using pfmfs::testing::ChildIo;
using pfmfs::testing::DescendantsTaskClock;
using pfmfs::testing::ForkedChild;

constexpr std::uint64_t kMs = 1'000'000;
constexpr pid_t kTarget = 100;

TaskRecord fork(pid_t tid, pid_t parent, pid_t pid = 0) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Fork;
  r.pid = static_cast<std::uint32_t>(pid ? pid : tid);
  r.tid = static_cast<std::uint32_t>(tid);
  r.ppid = r.ptid = static_cast<std::uint32_t>(parent);
  return r;
}
TaskRecord exit(pid_t tid) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Exit;
  r.pid = r.tid = static_cast<std::uint32_t>(tid);
  return r;
}
TaskRecord read(pid_t tid, std::uint64_t value) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Read;
  r.pid = r.tid = static_cast<std::uint32_t>(tid);
  r.value = value;
  return r;
}

// One take of a folder: the records drained, with `finished` saying which
// threads have finished their exit when the take starts.
std::vector<ChildEvent> take(TaskRecordFolder& f, std::vector<TaskRecord> records, std::uint64_t now = 0,
                             std::vector<pid_t> finished = {}) {
  std::vector<ChildEvent> out;
  f.beginTake([&](pid_t tid) { return std::find(finished.begin(), finished.end(), tid) != finished.end(); }, now);
  for (const auto& r : records) f.add(r, now, out);
  f.endTake(out);
  return out;
}

// ------------------------------------------------------- records to events

TEST(TaskRecordFolder, ForkThenExitAndRead) {
  TaskRecordFolder f(kTarget);
  auto e = take(f, {fork(200, kTarget), fork(201, 200, 200), exit(201), read(201, 777)});
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].kind, ChildEvent::Kind::Created);
  EXPECT_EQ(e[0].tid, 200);
  EXPECT_EQ(e[0].parent_tid, kTarget);
  EXPECT_EQ(e[1].kind, ChildEvent::Kind::Created);
  EXPECT_EQ(e[1].pid, 200) << "a thread of the child's process";
  EXPECT_EQ(e[1].tid, 201);
  EXPECT_EQ(e[1].parent_tid, 200);
  EXPECT_EQ(e[2].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(e[2].tid, 201);
  EXPECT_EQ(e[2].pid, 200);
  EXPECT_EQ(e[2].final_time_ns, 777u);
  EXPECT_EQ(f.followed(), 1u);
}

TEST(TaskRecordFolder, ReadInALaterTake) {
  TaskRecordFolder f(kTarget);
  auto e = take(f, {fork(200, kTarget), exit(200)});
  ASSERT_EQ(e.size(), 1u) << "the exit waits for its READ";
  EXPECT_EQ(f.waitingForRead(), 1u);
  e = take(f, {}, 10 * kMs);  // still running its exit: it goes on waiting
  EXPECT_TRUE(e.empty());
  e = take(f, {read(200, 5)}, 20 * kMs);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(e[0].final_time_ns, 5u);
  EXPECT_EQ(f.waitingForRead(), 0u);
  EXPECT_EQ(f.readsLost(), 0u);
}

TEST(TaskRecordFolder, ReadInTheDrainOfTheTakeThatSawTheThreadFinished) {
  TaskRecordFolder f(kTarget);
  (void)take(f, {fork(200, kTarget), exit(200)});
  auto e = take(f, {read(200, 9)}, 1, {200});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].final_time_ns, 9u) << "the READ was written before the thread finished";
  EXPECT_EQ(f.readsLost(), 0u);
}

TEST(TaskRecordFolder, LostReadGivenUpOnceTheThreadFinished) {
  TaskRecordFolder f(kTarget);
  (void)take(f, {fork(200, kTarget), exit(200)});
  auto e = take(f, {}, 1, {200});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(e[0].tid, 200);
  EXPECT_FALSE(e[0].final_time_ns.has_value());
  EXPECT_EQ(f.readsLost(), 1u);
  EXPECT_TRUE(take(f, {read(200, 9)}, 2).empty()) << "reported once";
}

TEST(TaskRecordFolder, LostReadGivenUpAfterAWhile) {
  TaskRecordFolder f(kTarget);
  (void)take(f, {fork(200, kTarget)}, 0);
  (void)take(f, {exit(200)}, 5);
  EXPECT_TRUE(take(f, {}, 5 + kReadWaitNs - 1).empty());
  auto e = take(f, {}, 5 + kReadWaitNs);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_FALSE(e[0].final_time_ns.has_value());
}

TEST(TaskRecordFolder, TidReusedWhileWaitingForARead) {
  TaskRecordFolder f(kTarget);
  auto e = take(f, {fork(200, kTarget), exit(200), fork(200, kTarget)});
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[1].kind, ChildEvent::Kind::Exited);
  EXPECT_FALSE(e[1].final_time_ns.has_value());
  EXPECT_EQ(e[2].kind, ChildEvent::Kind::Created);
  EXPECT_EQ(f.followed(), 1u);
  EXPECT_EQ(f.waitingForRead(), 0u);
}

TEST(TaskRecordFolder, AfterALossEveryFinishedChildIsGivenUp) {
  TaskRecordFolder f(kTarget);
  (void)take(f, {fork(200, kTarget), fork(201, kTarget)});
  EXPECT_TRUE(take(f, {}, 1, {200}).empty()) << "no EXIT taken: 200 is not waiting for a READ";
  f.lostRecords();  // its EXIT and READ may have been dropped
  auto e = take(f, {}, 2, {200});
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(e[0].tid, 200);
  EXPECT_FALSE(e[0].final_time_ns.has_value());
  EXPECT_EQ(f.followed(), 1u) << "201 lives";
  EXPECT_TRUE(take(f, {}, 3, {201}).empty()) << "one look after each loss";
}

TEST(TaskRecordFolder, SkipsTheTargetAndStrangers) {
  TaskRecordFolder f(kTarget);
  auto e = take(f, {exit(kTarget), exit(300), read(300, 1), read(kTarget, 2)});
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(f.followed(), 0u);
}

TEST(TaskRecordFolder, ReadWithoutItsExit) {
  TaskRecordFolder f(kTarget);
  auto e = take(f, {fork(200, kTarget), read(200, 3)});
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(e[1].final_time_ns, 3u);
}

TEST(TaskRecordFolder, PidOfOutlivesTheExit) {
  TaskRecordFolder f(kTarget);
  (void)take(f, {fork(201, kTarget, 200)});
  EXPECT_EQ(f.pidOf(201), 200);
  (void)take(f, {exit(201), read(201, 1)});
  (void)take(f, {});
  EXPECT_EQ(f.pidOf(201), 200) << "the engine adopts after the take";
  EXPECT_EQ(f.pidOf(999), std::nullopt);
  for (pid_t t = 1000; t < 1000 + static_cast<pid_t>(TaskRecordFolder::kRecentExits); ++t)
    (void)take(f, {fork(t, kTarget), read(t, 1)});
  EXPECT_EQ(f.pidOf(201), std::nullopt) << "forgotten after kRecentExits more";
  EXPECT_EQ(f.pidOf(1000), 1000);
}

// --------------------------------------------------------- the real kernel

TEST(TaskTracker, NoThreadIsEsrch) {
  ForkedChild c([](const ChildIo&) { return 0; });
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c.wait(), 0);
  auto t = TaskTracker::open(c.pid());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.code(), -ESRCH);
}

short pollOnce(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 ? p.revents : 0;
}

// The target forks a child and exits; the child, adopted by this test (a
// subreaper), exits later. Its records still come, the tree event stays
// readable while it lives, and reports POLLHUP once nothing is followed.
TEST(TaskTracker, FollowsChildrenAfterTheTargetExited) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  ForkedChild target([](const ChildIo& io) {
    if (!io.awaitGo()) return 1;
    pid_t c = ::fork();
    if (c == 0) {
      // Shares the target's pipes: the test's next go() is for it.
      if (!io.awaitGo()) ::_exit(1);
      burnCpu(10 * kMs);
      ::_exit(0);
    }
    io.report(static_cast<std::uint64_t>(c));
    return 0;
  });
  ASSERT_TRUE(target.ok());
  auto t = TaskTracker::open(target.pid());
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TaskTracker& tr = **t;
  // The oracle of the child's final time: the task-clock of what the target
  // creates from now on (its child, and under TSan the runtime's threads).
  const DescendantsTaskClock descendants(target.pid());
  ASSERT_TRUE(descendants.ok());
  target.go();
  auto c = target.report();
  ASSERT_TRUE(c.has_value());
  const auto child = static_cast<pid_t>(*c);
  ASSERT_EQ(target.wait(), 0);

  // Processes only: under TSan a forked child has a runtime thread of its
  // own, followed like any other thread.
  auto mainThreads = [](std::vector<ChildEvent>& v) {
    std::erase_if(v, [](const ChildEvent& e) { return e.tid != e.pid; });
  };
  std::vector<ChildEvent> events;
  tr.take(events);
  mainThreads(events);
  ASSERT_EQ(events.size(), 1u) << "the child's creation, not the target's exit";
  EXPECT_EQ(events[0].kind, ChildEvent::Kind::Created);
  EXPECT_EQ(events[0].tid, child);
  EXPECT_EQ(events[0].parent_tid, target.pid());
  EXPECT_EQ(tr.pidOf(child), child);
  EXPECT_EQ(pollOnce(tr.pollFd(), 0) & POLLHUP, 0) << "a followed child lives";
  EXPECT_NE(pollOnce(tr.anchorFd(), 0) & POLLHUP, 0) << "why a poller watches the tree event, not the anchor";

  target.go();
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
  events.clear();
  tr.take(events);
  mainThreads(events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, ChildEvent::Kind::Exited);
  EXPECT_EQ(events[0].tid, child);
  ASSERT_TRUE(events[0].final_time_ns.has_value());
  EXPECT_GE(*events[0].final_time_ns, 8 * kMs);
  // All of them have exited (the child is reaped): the oracle is final.
  EXPECT_LE(*events[0].final_time_ns, descendants.ns())
      << "its own task-clock, no more (the kernel's, read by the test)";
  // The kernel drops the child's event just after its records.
  bool hup = false;
  for (auto deadline = std::chrono::steady_clock::now() + 1min; !hup && std::chrono::steady_clock::now() < deadline;)
    hup = pollOnce(tr.pollFd(), 10) & POLLHUP;
  EXPECT_TRUE(hup) << "nothing is followed any more";
  EXPECT_EQ(tr.lost(), 0u);
}

// More children than the buffer holds between two takes: the kernel drops
// records and says how many; the tracker counts them, reports the exit of
// every child it reported created, and goes on.
TEST(TaskTracker, LostRecordsAreCounted) {
  auto t = TaskTracker::open(static_cast<pid_t>(::syscall(SYS_gettid)));
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TaskTracker& tr = **t;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const int n = static_cast<int>(kTrackerPages * page / (3 * 48)) * 2;  // twice what fits
  for (int i = 0; i < n; ++i) {
    pid_t c = ::fork();
    if (c == 0) ::_exit(0);
    ASSERT_GT(c, 0);
    ASSERT_EQ(::waitpid(c, nullptr, 0), c);
  }
  std::vector<ChildEvent> events;
  tr.take(events);
  EXPECT_LT(events.size(), static_cast<std::size_t>(2 * n));
  EXPECT_EQ(tr.lost(), 0u) << "the kernel tells of a loss with the next record that fits";
  ForkedChild last([](const ChildIo&) { return 0; });
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last.wait(), 0);
  tr.take(events);
  EXPECT_GT(tr.lost(), 0u);
  std::set<pid_t> live;
  for (const auto& e : events) {
    if (e.kind == ChildEvent::Kind::Created) {
      EXPECT_TRUE(live.insert(e.tid).second) << e.tid;
    } else {
      EXPECT_EQ(live.erase(e.tid), 1u) << e.tid;
    }
  }
  EXPECT_TRUE(live.empty()) << live.size() << " children still followed, all reaped";
  auto created = std::count_if(events.begin(), events.end(), [&](const ChildEvent& e) {
    return e.tid == last.pid() && e.kind == ChildEvent::Kind::Created;
  });
  auto exited = std::count_if(events.begin(), events.end(), [&](const ChildEvent& e) {
    return e.tid == last.pid() && e.kind == ChildEvent::Kind::Exited && e.final_time_ns.has_value();
  });
  EXPECT_EQ(created, 1) << "followed again after the loss";
  EXPECT_EQ(exited, 1);
}

}  // namespace
}  // namespace pfmfs::pmu::perf
