// Inheritance: which exited children are merged (only those created under
// the present control), the figures across loads, and the child image told
// to the backend only when it changed.
#include "session/inheritance.h"

#include <gtest/gtest.h>

namespace pfmfs::session {
namespace {

TEST(Inheritance, AggregateChildOfThePresentControlIsMerged) {
  Inheritance in;
  in.loaded();
  in.aggregateCreated(101);
  EXPECT_EQ(in.aggregateCount(), 1u);
  EXPECT_EQ(in.aggregateExited(101), std::optional<bool>(true));
  EXPECT_EQ(in.aggregateCount(), 0u);
  // Its news is taken once: a second exit of the same tid is unknown.
  EXPECT_EQ(in.aggregateExited(101), std::nullopt);
}

TEST(Inheritance, ChildCreatedBeforeAControlChangeIsNotOfThisControl) {
  Inheritance in;
  in.loaded();
  in.aggregateCreated(101);
  const std::uint64_t before = in.generation();
  in.controlChanged();
  EXPECT_EQ(in.generation(), before + 1);
  in.aggregateCreated(102);
  EXPECT_EQ(in.aggregateExited(101), std::optional<bool>(false));
  EXPECT_EQ(in.aggregateExited(102), std::optional<bool>(true));
}

TEST(Inheritance, EveryLoadIsANewControl) {
  Inheritance in;
  in.loaded();
  const std::uint64_t first = in.generation();
  in.aggregateCreated(7);
  in.dropAll(0);
  in.loaded();
  EXPECT_NE(in.generation(), first);
  // A child of the previous load is no longer known.
  EXPECT_EQ(in.aggregateExited(7), std::nullopt);
}

TEST(Inheritance, UnknownChildIsNeitherMergedNorDropped) {
  Inheritance in;
  in.loaded();
  EXPECT_EQ(in.aggregateExited(55), std::nullopt);
  EXPECT_EQ(in.mergedCount(), 0u);
  EXPECT_EQ(in.droppedCount(), 0u);
}

TEST(Inheritance, DropAllCountsAdoptedAndAggregateChildrenAndForgetsTheTargetExit) {
  Inheritance in;
  in.loaded();
  in.aggregateCreated(1);
  in.aggregateCreated(2);
  in.targetExited();
  EXPECT_TRUE(in.hasTargetExited());
  in.dropAll(3);
  EXPECT_EQ(in.droppedCount(), 5u);
  EXPECT_EQ(in.aggregateCount(), 0u);
  EXPECT_FALSE(in.hasTargetExited());
}

TEST(Inheritance, FiguresOutliveLoads) {
  Inheritance in;
  in.loaded();
  in.merged();
  in.merged();
  in.dropped();
  in.dropAll(0);
  in.loaded();
  EXPECT_FALSE(in.hasTargetExited());
  EXPECT_EQ(in.mergedCount(), 2u);
  EXPECT_EQ(in.droppedCount(), 1u);
}

ChildImage image(std::uint16_t set, std::uint64_t pmc0, bool counting) {
  ChildImage i;
  i.set = set;
  i.pmcs = {pmc0, 0};
  i.pmd_bits = {0, 0};
  i.pmds = 0x1;
  i.counting = counting;
  return i;
}

TEST(Inheritance, ChildImageIsToldOnlyWhenItChanges) {
  Inheritance in;
  in.loaded();
  in.draft() = image(0, 0x13003c, false);
  const ChildImage* told = in.tellIfChanged();
  ASSERT_NE(told, nullptr);
  EXPECT_EQ(*told, image(0, 0x13003c, false));

  in.draft() = image(0, 0x13003c, false);
  EXPECT_EQ(in.tellIfChanged(), nullptr);

  in.draft() = image(0, 0x13003c, true);  // started
  told = in.tellIfChanged();
  ASSERT_NE(told, nullptr);
  EXPECT_TRUE(told->counting);

  in.draft() = image(1, 0x13003c, true);  // another set
  told = in.tellIfChanged();
  ASSERT_NE(told, nullptr);
  EXPECT_EQ(told->set, 1u);
}

TEST(Inheritance, ImageTheBackendRefusedIsToldAgain) {
  Inheritance in;
  in.loaded();
  in.draft() = image(0, 0x13003c, true);
  ASSERT_NE(in.tellIfChanged(), nullptr);
  in.forgetTold();
  in.draft() = image(0, 0x13003c, true);
  const ChildImage* told = in.tellIfChanged();
  ASSERT_NE(told, nullptr);
  EXPECT_EQ(*told, image(0, 0x13003c, true));
}

TEST(Inheritance, EveryLoadTellsTheImageAgain) {
  Inheritance in;
  in.loaded();
  in.draft() = image(0, 0x13003c, false);
  ASSERT_NE(in.tellIfChanged(), nullptr);
  in.dropAll(0);
  in.loaded();  // a new target: its backend knows nothing yet
  in.draft() = image(0, 0x13003c, false);
  EXPECT_NE(in.tellIfChanged(), nullptr);
}

TEST(Inheritance, ReleaseForgetsChildrenAndTheImage) {
  Inheritance in;
  in.loaded();
  in.aggregateCreated(9);
  in.draft() = image(0, 1, false);
  ASSERT_NE(in.tellIfChanged(), nullptr);
  in.release();
  EXPECT_EQ(in.aggregateCount(), 0u);
  EXPECT_EQ(in.draft(), ChildImage{});
  in.draft() = image(0, 1, false);
  EXPECT_NE(in.tellIfChanged(), nullptr);
}

}  // namespace
}  // namespace pfmfs::session
