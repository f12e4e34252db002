// OverflowBudget: a burst of tokens, one more per refill period of counted
// time, never more than the burst, and a full burst again at each load.
#include "session/overflow_budget.h"

#include <gtest/gtest.h>

namespace pfmfs::session {
namespace {

TEST(OverflowBudget, GivesTheBurstThenRefuses) {
  OverflowBudget b(3, 1000);
  EXPECT_TRUE(b.take(0));
  EXPECT_TRUE(b.take(0));
  EXPECT_TRUE(b.take(999));
  EXPECT_EQ(b.left(), 0u);
  EXPECT_FALSE(b.take(999));
  EXPECT_FALSE(b.take(999));
}

TEST(OverflowBudget, EarnsOneTokenPerWholeRefillPeriod) {
  OverflowBudget b(2, 1000);
  ASSERT_TRUE(b.take(0));
  ASSERT_TRUE(b.take(0));
  EXPECT_FALSE(b.take(999));  // no whole period yet
  EXPECT_TRUE(b.take(1000));  // one earned
  EXPECT_FALSE(b.take(1500));
  // The half period from 1000 to 1500 was not lost: 2000 completes it.
  EXPECT_TRUE(b.take(2000));
  EXPECT_FALSE(b.take(2000));
}

TEST(OverflowBudget, NeverHoldsMoreThanTheBurst) {
  OverflowBudget b(2, 10);
  ASSERT_TRUE(b.take(0));
  ASSERT_TRUE(b.take(0));
  // A long quiet time earns a thousand periods, but the bucket holds two.
  EXPECT_TRUE(b.take(10'000));
  EXPECT_TRUE(b.take(10'000));
  EXPECT_FALSE(b.take(10'000));
  EXPECT_EQ(b.left(), 0u);
}

TEST(OverflowBudget, WithoutRefillTheBurstIsAll) {
  OverflowBudget b(1, 0);
  EXPECT_TRUE(b.take(0));
  EXPECT_FALSE(b.take(1'000'000'000));
  EXPECT_FALSE(b.take(~0ull));
}

TEST(OverflowBudget, FillGivesAWholeBurstFromTimeZero) {
  OverflowBudget b(2, 1000);
  ASSERT_TRUE(b.take(5000));
  ASSERT_TRUE(b.take(5000));
  ASSERT_FALSE(b.take(5000));
  b.fill();  // a new load: the session's counted time starts again at 0
  EXPECT_EQ(b.left(), 2u);
  ASSERT_TRUE(b.take(0));
  ASSERT_TRUE(b.take(0));
  EXPECT_FALSE(b.take(999));
  EXPECT_TRUE(b.take(1000));
}

TEST(OverflowBudget, TheLastPossibleTimeDoesNotWrap) {
  OverflowBudget b(1, 3);
  ASSERT_TRUE(b.take(0));
  EXPECT_TRUE(b.take(~0ull));
  EXPECT_FALSE(b.take(~0ull));
}

}  // namespace
}  // namespace pfmfs::session
