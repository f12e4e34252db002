// Tests of the perf backend's ledger of followed children (ChildLedger,
// Target::inherit): how the ring buffer's task records become child events,
// fed the orders the kernel rarely produces (READs in a later take, READs
// that never come, events closed or opened while a child lives, records
// lost, a tid reused). The real thing is perf_inherit_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "pmu/perf/perf_inherit.h"
#include "pmu/perf_event/perf_event.h"

namespace pfmfs::pmu::perf {
namespace {

using Kind = ChildEvent::Kind;

constexpr pid_t kTarget = 100;

TaskRecord forkRec(pid_t tid, pid_t parent, pid_t pid = 0) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Fork;
  r.pid = static_cast<std::uint32_t>(pid ? pid : tid);
  r.tid = static_cast<std::uint32_t>(tid);
  r.ppid = r.ptid = static_cast<std::uint32_t>(parent);
  return r;
}

TaskRecord exitRec(pid_t tid) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Exit;
  r.pid = r.tid = static_cast<std::uint32_t>(tid);
  return r;
}

TaskRecord readRec(pid_t tid, std::uint64_t id, std::uint64_t value) {
  TaskRecord r;
  r.kind = TaskRecord::Kind::Read;
  r.pid = r.tid = static_cast<std::uint32_t>(tid);
  r.id = id;
  r.value = value;
  return r;
}

// A ledger with two sets: set 0 counts in slots 0 and 1 (events 11, 12),
// set 1 in slot 2 (event 21).
class LedgerTest : public ::testing::Test {
 protected:
  LedgerTest() : ledger_(kTarget, 4) {
    ledger_.opened(11, 0, 0);
    ledger_.opened(12, 0, 1);
    ledger_.opened(21, 1, 2);
  }
  // One take, at `now` ns, with the threads `finished` says.
  std::vector<ChildEvent> take(std::uint64_t now = 0, std::function<bool(pid_t)> finished = {}) {
    ledger_.beginTake(
        finished ? finished : [](pid_t) { return false; }, now);
    std::vector<ChildEvent> out;
    ledger_.take(out);
    return out;
  }
  void add(const TaskRecord& r, std::uint64_t now = 0) { ledger_.add(r, now); }

  ChildLedger ledger_;
};

TEST_F(LedgerTest, ReportsChildrenInRingOrderWithTheirCountsBySet) {
  add(forkRec(200, kTarget));
  add(forkRec(201, 200));  // a grandchild
  add(exitRec(201));
  add(readRec(201, 21, 7));
  add(readRec(201, 11, 5));
  add(readRec(201, 12, 6));
  add(exitRec(kTarget));  // the target's own: the engine learns of it from gone()
  auto ev = take();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].kind, Kind::Created);
  EXPECT_EQ(ev[0].tid, 200);
  EXPECT_EQ(ev[0].parent_tid, kTarget);
  EXPECT_EQ(ev[1].kind, Kind::Created);
  EXPECT_EQ(ev[1].parent_tid, 200);
  EXPECT_EQ(ev[2].kind, Kind::Exited);
  EXPECT_EQ(ev[2].tid, 201);
  ASSERT_TRUE(ev[2].counts.has_value());
  EXPECT_TRUE(ev[2].counts->complete);
  EXPECT_EQ(ev[2].counts->by_set.at(0), (std::vector<std::uint64_t>{5, 6, 0, 0}));
  EXPECT_EQ(ev[2].counts->by_set.at(1), (std::vector<std::uint64_t>{0, 0, 7, 0}));
  EXPECT_EQ(ledger_.tracked(), 1u);
}

TEST_F(LedgerTest, AnExitWaitsForItsReadsInALaterTake) {
  add(forkRec(200, kTarget));
  add(exitRec(200));
  add(readRec(200, 11, 5));
  EXPECT_EQ(take(10).size(), 1u) << "Created only: two READs are still being written";
  add(readRec(200, 12, 6), 20);
  add(readRec(200, 21, 0), 20);
  auto ev = take(30);
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_TRUE(ev[0].counts.has_value());
  EXPECT_TRUE(ev[0].counts->complete);
  EXPECT_EQ(ev[0].counts->by_set.at(1)[2], 0u);
  EXPECT_EQ(ledger_.tracked(), 0u);
}

TEST_F(LedgerTest, AFinishedChildsMissingReadsWillNotCome) {
  add(forkRec(200, kTarget));
  add(exitRec(200));
  add(readRec(200, 11, 5));
  take(0, [](pid_t) { return false; });
  // Seen finished before the drain: what that drain holds is all there is.
  auto ev = take(10, [](pid_t tid) { return tid == 200; });
  ASSERT_EQ(ev.size(), 1u);
  ASSERT_TRUE(ev[0].counts.has_value());
  EXPECT_FALSE(ev[0].counts->complete);
  EXPECT_EQ(ev[0].counts->by_set.at(0)[0], 5u);
  // Without /proc's word (a tid reused), the wait is bounded.
  add(forkRec(300, kTarget));
  add(exitRec(300), 100);
  EXPECT_EQ(take(100 + ChildLedger::kReadWaitNs - 1).size(), 1u);
  ev = take(100 + ChildLedger::kReadWaitNs);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].tid, 300);
  EXPECT_FALSE(ev[0].counts->complete);
}

TEST_F(LedgerTest, ClosingAnEventALiveChildCarriesLeavesItIncomplete) {
  add(forkRec(200, kTarget));
  add(forkRec(201, kTarget));
  add(exitRec(201));
  add(readRec(201, 11, 4));  // 201 read out event 11 before it closed: kept
  ledger_.closed(11);
  ledger_.closed(12);  // set 0 reprogrammed
  ledger_.opened(13, 0, 0);
  add(readRec(201, 21, 1));
  add(forkRec(202, kTarget));  // created after: carries the new event
  add(exitRec(200));
  add(readRec(200, 21, 3));
  add(exitRec(202));
  add(readRec(202, 13, 9));
  add(readRec(202, 21, 2));
  auto ev = take();
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[2].tid, 201);
  EXPECT_FALSE(ev[2].counts->complete) << "event 12's copy was freed without a READ";
  EXPECT_EQ(ev[2].counts->by_set.at(0)[0], 4u);
  EXPECT_EQ(ev[4].tid, 200);
  ASSERT_TRUE(ev[4].counts.has_value());
  EXPECT_FALSE(ev[4].counts->complete);
  EXPECT_EQ(ev[4].counts->by_set.at(1)[2], 3u);
  EXPECT_EQ(ev[5].tid, 202);
  EXPECT_TRUE(ev[5].counts->complete);
  EXPECT_EQ(ev[5].counts->by_set.at(0)[0], 9u);
}

TEST_F(LedgerTest, EventsOpenedWhileAChildLivesAreNotCounted) {
  add(forkRec(200, kTarget));
  ledger_.opened(31, 2, 3);  // a set put on the PMU for the first time
  add(exitRec(200));
  add(readRec(200, 11, 1));
  add(readRec(200, 12, 1));
  add(readRec(200, 21, 1));
  auto ev = take();
  ASSERT_EQ(ev.size(), 2u);
  ASSERT_TRUE(ev[1].counts.has_value());
  EXPECT_FALSE(ev[1].counts->complete);
  EXPECT_EQ(ev[1].counts->by_set.count(2), 0u);
}

TEST_F(LedgerTest, LostRecordsLeaveEveryChildIncomplete) {
  add(forkRec(200, kTarget));
  add(forkRec(201, kTarget));
  take();
  ledger_.lost();  // 200's EXIT and READs among them
  add(exitRec(201));
  add(readRec(201, 11, 1));
  add(readRec(201, 12, 1));
  add(readRec(201, 21, 1));
  add(readRec(999, 11, 1));  // of a child whose FORK was lost: nobody to count for
  auto ev = take(0, [](pid_t tid) { return tid != 201; });
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].tid, 201);
  EXPECT_FALSE(ev[0].counts->complete);
  EXPECT_EQ(ev[1].tid, 200);
  EXPECT_FALSE(ev[1].counts.has_value()) << "neither its EXIT nor a READ came";
  EXPECT_EQ(ledger_.tracked(), 0u);
}

TEST_F(LedgerTest, AReusedTidEndsTheChildItNamed) {
  add(forkRec(200, kTarget));
  add(exitRec(200));
  add(readRec(200, 11, 1));
  add(forkRec(200, kTarget));
  auto ev = take();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].kind, Kind::Exited);
  EXPECT_FALSE(ev[1].counts->complete);
  EXPECT_EQ(ev[2].kind, Kind::Created);
  EXPECT_EQ(ledger_.tracked(), 1u);
}

}  // namespace
}  // namespace pfmfs::pmu::perf
