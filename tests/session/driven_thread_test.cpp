// DrivenThread: the one store of PMD values, per thread and per set.
#include "session/driven_thread.h"

#include <gtest/gtest.h>

namespace pfmfs::session {
namespace {

TEST(DrivenThread, ASetItHasNotHeldStartsAtZeroInEverySlot) {
  DrivenThread t;
  std::vector<ThreadPmd>& v = t.pmds(3, 4);
  ASSERT_EQ(v.size(), 4u);
  for (const ThreadPmd& p : v) {
    EXPECT_EQ(p.value, 0u);
    EXPECT_EQ(p.sampled_hw, 0u);
    EXPECT_EQ(p.segment_start, 0u);
    EXPECT_EQ(p.events, 0u);
  }
}

TEST(DrivenThread, KeepsEachSetsValuesApart) {
  DrivenThread t;
  t.pmds(0, 2)[1].value = 7;
  t.pmds(5, 2)[1].value = 9;
  EXPECT_EQ(t.pmds(0, 2)[1].value, 7u);
  EXPECT_EQ(t.pmds(5, 2)[1].value, 9u);
  EXPECT_EQ(t.pmds(0, 2)[0].value, 0u);
}

TEST(DrivenThread, TwoThreadsKeepTheirOwnValuesOfOneSet) {
  DrivenThread target, child;
  target.pmds(0, 1)[0].value = 100;
  child.pmds(0, 1)[0].value = 5;
  EXPECT_EQ(target.pmds(0, 1)[0].value, 100u);
  EXPECT_EQ(child.pmds(0, 1)[0].value, 5u);
}

TEST(DrivenThread, AForgottenSetStartsAgainAtZero) {
  DrivenThread t;
  t.pmds(1, 2)[0].value = 42;
  t.pmds(2, 2)[0].value = 43;
  t.forgetSet(1);
  EXPECT_EQ(t.pmds(1, 2)[0].value, 0u);
  EXPECT_EQ(t.pmds(2, 2)[0].value, 43u);
  t.forgetSets();
  EXPECT_EQ(t.pmds(2, 2)[0].value, 0u);
}

TEST(DrivenThread, ValuesStayWhereTheyAreAcrossLookups) {
  // The engine holds a set's vector across a loop that looks up others.
  DrivenThread t;
  std::vector<ThreadPmd>& first = t.pmds(0, 3);
  first[2].value = 11;
  for (std::uint16_t set = 1; set < 64; ++set) t.pmds(set, 3)[0].value = set;
  EXPECT_EQ(&first, &t.pmds(0, 3));
  EXPECT_EQ(first[2].value, 11u);
}

}  // namespace
}  // namespace pfmfs::session
