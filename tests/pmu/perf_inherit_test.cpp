// Tests of the perf backend following a thread's children (Target::inherit,
// Inheritance::Aggregate) on this machine's software events: a real process
// whose children and grandchildren fault pages and burn CPU, their counts
// per set, the tree clock, set switches reaching the children, reprogramming,
// and a child that outlives the target. The ledger's corner cases are
// child_ledger_test.cpp's.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/perf/perf_backend.h"
#include "pmu/perf_event/perf_event.h"
#include "tests/support/cpu_time.h"
#include "tests/support/perf_rig.h"
#include "tests/support/task_clock.h"

namespace pfmfs::pmu::perf {
namespace {

using namespace perf_rig;
using Kind = ChildEvent::Kind;

using namespace std::chrono_literals;

// A child's count of PMD `slot` in `set`, 0 where its set counted nothing.
std::uint64_t countOf(const ChildEvent& e, std::uint16_t set, std::size_t slot) {
  if (!e.counts) return 0;
  auto it = e.counts->by_set.find(set);
  return it == e.counts->by_set.end() ? 0 : it->second.at(slot);
}

TEST(PerfInherit, TheBackendAggregatesAndOnlyForThreads) {
  PerfOptions o;
  o.model = Model::Software;
  auto b = PerfBackend::create(o);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  EXPECT_EQ((*b)->inheritance(), Inheritance::Aggregate);
  auto cpu = (*b)->attach(Target{TargetKind::Cpu, 0, true}, {});
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.code(), -EINVAL);
}

TEST(PerfInherit, ChildrenReportTheirCountsAndTheTreeClockTheirTime) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  r.pmc(0, 1, PERF_COUNT_SW_TASK_CLOCK);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  const std::uint64_t t0 = r.pmu().timeNs();
  r.pmu().enable();
  constexpr int N = 3, P = kPages;
  constexpr long kBurn = 20'000'000;
  ASSERT_TRUE(f.target({'S', N, P, kBurn}));
  ASSERT_TRUE(r.collectExits(N));
  r.pmu().disable();
  const std::uint64_t t1 = r.pmu().timeNs();
  auto exits = TreeRig::exits(r.events);
  ASSERT_EQ(exits.size(), static_cast<std::size_t>(N));
  std::uint64_t children_cpu = 0;
  for (const auto& e : exits) {
    SCOPED_TRACE(e.tid);
    const ChildEvent* c = r.created(e.tid);
    ASSERT_NE(c, nullptr) << "a Created for each Exited";
    EXPECT_EQ(c->parent_tid, f.pid());
    ASSERT_TRUE(e.counts.has_value());
    EXPECT_TRUE(e.counts->complete);
    EXPECT_GE(countOf(e, 0, 0), static_cast<std::uint64_t>(P));
    EXPECT_LE(countOf(e, 0, 0), P + kForkFaults);
    EXPECT_GE(countOf(e, 0, 1), static_cast<std::uint64_t>(kBurn)) << "its task-clock, ns: at least what it burnt";
    children_cpu += countOf(e, 0, 1);
  }
  // The tree clock: the target's time and its children's, exited ones included.
  EXPECT_GE(t1 - t0, children_cpu);
  EXPECT_LT(r.read(0), static_cast<std::uint64_t>(P)) << "the target's own count has none of its children's faults";
}

TEST(PerfInherit, WithoutInheritNoChildIsFollowed) {
  Family f;
  TreeRig r(f.pid(), false);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  // The target's own task-clock, the kernel's, read around the target's
  // clock (before t0, after t1), both times while the target waits for a
  // command (off the CPU: its task-clock stands still). The target's clock
  // moves as far as that, while each of its children burns kBurn.
  const pfmfs::testing::TaskClock own(f.pid(), false);
  ASSERT_TRUE(own.ok());
  ASSERT_TRUE(pfmfs::testing::waitOffCpu(f.pid()));
  const std::uint64_t own0 = own.ns();
  const std::uint64_t t0 = r.pmu().timeNs();
  r.pmu().enable();
  constexpr int N = 3, P = kPages;
  constexpr long kBurn = 10'000'000;
  ASSERT_TRUE(f.target({'S', N, P, kBurn}));
  std::this_thread::sleep_for(20ms);  // time for wrongly followed children's records to show
  r.pmu().disable();
  r.pmu().takeChildEvents(r.events);
  EXPECT_TRUE(r.events.empty());
  EXPECT_LT(r.read(0), static_cast<std::uint64_t>(P)) << "the children's faults are not the target's";
  ASSERT_TRUE(pfmfs::testing::waitOffCpu(f.pid()));
  const std::uint64_t t1 = r.pmu().timeNs();
  const std::uint64_t own1 = own.ns();
  EXPECT_LE(t1 - t0, own1 - own0) << "the target's own CPU time, not its children's (" << N << " x " << kBurn << " ns)";
}

TEST(PerfInherit, AGrandchildsCountsArriveToo) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  constexpr int P = kPages;
  ASSERT_TRUE(f.target({'G', 0, P, 0}));
  ASSERT_TRUE(r.collectExits(2));
  auto exits = TreeRig::exits(r.events);
  ASSERT_EQ(exits.size(), 2u);
  // The grandchild exits first: its parent waits for it.
  const ChildEvent* child = r.created(exits[1].tid);
  const ChildEvent* grandchild = r.created(exits[0].tid);
  ASSERT_NE(child, nullptr);
  ASSERT_NE(grandchild, nullptr);
  EXPECT_EQ(child->parent_tid, f.pid());
  EXPECT_EQ(grandchild->parent_tid, child->tid);
  EXPECT_TRUE(exits[0].counts && exits[0].counts->complete);
  EXPECT_GE(countOf(exits[0], 0, 0), static_cast<std::uint64_t>(P));
  EXPECT_LE(countOf(exits[0], 0, 0), P + kForkFaults);
  EXPECT_LT(countOf(exits[1], 0, 0), static_cast<std::uint64_t>(P)) << "the child's own faults only";
}

TEST(PerfInherit, ChildrenSwitchSetsWithTheTarget) {
  Family f;
  TreeRig r(f.pid(), true, 2);
  ASSERT_TRUE(r.ok());
  // The same counter, another event in each set: set 1 counts the faults
  // (minor: these pages need no I/O) only while it is on the PMU.
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  r.pmc(1, 0, PERF_COUNT_SW_PAGE_FAULTS_MIN);
  r.pmc(1, 1, PERF_COUNT_SW_TASK_CLOCK);
  ASSERT_TRUE(r.prepareAndLoad(1).ok());
  r.pmu().enable();
  // A child created, faulting and ending while set 1 is loaded.
  constexpr int P = 300;
  ASSERT_TRUE(f.target({'S', 1, P, 1'000'000}));
  ASSERT_TRUE(r.collectExits(1));
  auto only1 = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(only1.counts && only1.counts->complete);
  EXPECT_EQ(countOf(only1, 0, 0), 0u) << "set 0 never counted while it lived";
  EXPECT_GE(countOf(only1, 1, 0), static_cast<std::uint64_t>(P));
  EXPECT_GT(countOf(only1, 1, 1), 0u);

  // A child that lives through switches: 64 pages in set 0, then kPages in
  // set 1, then 32 in set 0.
  r.switchTo(0);
  ASSERT_TRUE(f.target({'H'}));
  ASSERT_TRUE(f.child({'T', 0, 64, 0}));
  r.switchTo(1);
  ASSERT_TRUE(f.child({'T', 0, kPages, 0}));
  r.switchTo(0);
  ASSERT_TRUE(f.child({'T', 0, 32, 0}));
  f.childExits();
  ASSERT_TRUE(f.target({'W'}));
  ASSERT_TRUE(r.collectExits(2));
  auto held = TreeRig::exits(r.events).at(1);
  ASSERT_TRUE(held.counts && held.counts->complete);
  EXPECT_GE(countOf(held, 0, 0), 64u + 32);
  EXPECT_LT(countOf(held, 0, 0), 64u + 32 + kForkFaults) << "set 1's pages are not in set 0";
  EXPECT_GE(countOf(held, 1, 0), static_cast<std::uint64_t>(kPages));
  EXPECT_LE(countOf(held, 1, 0), kPages + kForkFaults);
}

TEST(PerfInherit, ReprogrammingASetWhileAChildLivesLeavesItIncomplete) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.target({'H'}));
  ASSERT_TRUE(f.child({'T', 0, 50, 0}));
  // A PMC write: the engine stops counting, puts every set again, reloads.
  r.pmu().disable();
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS_MIN);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.child({'T', 0, 50, 0}));
  f.childExits();
  ASSERT_TRUE(f.target({'W'}));
  ASSERT_TRUE(r.collectExits(1));
  auto held = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(held.counts.has_value());
  EXPECT_FALSE(held.counts->complete) << "its set 0 was reopened while it lived";
  // A child created after the reprogram counts the new events in full.
  constexpr int P = 200;
  ASSERT_TRUE(f.target({'S', 1, P, 0}));
  ASSERT_TRUE(r.collectExits(2));
  auto fresh = TreeRig::exits(r.events).at(1);
  ASSERT_TRUE(fresh.counts && fresh.counts->complete);
  EXPECT_GE(countOf(fresh, 0, 0), static_cast<std::uint64_t>(P));
}

TEST(PerfInherit, AChildThatOutlivesTheTargetStillReports) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.target({'H'}));
  f.exitTarget();
  for (auto deadline = std::chrono::steady_clock::now() + kPatience;
       !r.pmu().gone() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(r.pmu().gone());
  // The engine catches up on the exit; then only the child's records wake it.
  r.pmu().takeChildEvents(r.events);
  std::this_thread::sleep_for(20ms);
  const int calls = r.calls();
  const std::uint64_t t0 = r.pmu().timeNs();
  constexpr int P = 400;
  constexpr long kBurn = 20'000'000;
  ASSERT_TRUE(f.child({'T', 0, P, 0}));
  ASSERT_TRUE(f.child({'B', 0, 0, kBurn}));
  EXPECT_GE(r.pmu().timeNs() - t0, static_cast<std::uint64_t>(kBurn)) << "the tree clock runs on in the child";
  f.childExits();
  for (auto deadline = std::chrono::steady_clock::now() + kPatience;
       r.calls() == calls && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  EXPECT_GT(r.calls(), calls) << "the child's exit woke the engine";
  ASSERT_TRUE(r.collectExits(1));
  auto held = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(held.counts && held.counts->complete);
  EXPECT_GE(countOf(held, 0, 0), static_cast<std::uint64_t>(P));
}

}  // namespace
}  // namespace pfmfs::pmu::perf
