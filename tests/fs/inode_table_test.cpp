// The inode table's contract with the kernel: stable numbers while a name is
// known, lookups counted, forget frees at zero, never-reused numbers, and
// unlink separating a name from the node the kernel still holds.
#include "fs/inode_table.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace pfmfs::fs {
namespace {

std::optional<Node> dirNode() {
  Node n;
  n.kind = NodeKind::SessionsDir;
  return n;
}

std::optional<Node> noNode() { return std::nullopt; }

TEST(InodeTable, RootExistsAndIsNeverForgotten) {
  InodeTable t;
  ASSERT_NE(t.get(FUSE_ROOT_ID), nullptr);
  EXPECT_EQ(t.get(FUSE_ROOT_ID)->kind, NodeKind::Root);
  t.forget(FUSE_ROOT_ID, 1000);
  EXPECT_NE(t.get(FUSE_ROOT_ID), nullptr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTable, LookupOfAKnownNameReturnsTheSameInodeAndCounts) {
  InodeTable t;
  NodePtr a = t.lookup(FUSE_ROOT_ID, "sessions", dirNode);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "sessions");
  EXPECT_EQ(a->parent, FUSE_ROOT_ID);
  int made = 0;
  NodePtr b = t.lookup(FUSE_ROOT_ID, "sessions", [&] {
    ++made;
    return dirNode();
  });
  EXPECT_EQ(made, 0);
  EXPECT_EQ(a->ino, b->ino);
  EXPECT_EQ(t.lookupCount(a->ino), 2u);
}

TEST(InodeTable, AMissingNameMakesNothingAndCountsNothing) {
  InodeTable t;
  EXPECT_EQ(t.lookup(FUSE_ROOT_ID, "nope", noNode), nullptr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTable, ForgetFreesAtZeroOnly) {
  InodeTable t;
  NodePtr a = t.lookup(FUSE_ROOT_ID, "x", dirNode);
  t.lookup(FUSE_ROOT_ID, "x", dirNode);
  t.forget(a->ino, 1);
  EXPECT_NE(t.get(a->ino), nullptr);
  EXPECT_EQ(t.lookupCount(a->ino), 1u);
  t.forget(a->ino, 1);
  EXPECT_EQ(t.get(a->ino), nullptr);
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTable, NumbersAreNeverReused) {
  InodeTable t;
  NodePtr a = t.lookup(FUSE_ROOT_ID, "x", dirNode);
  fuse_ino_t first = a->ino;
  t.forget(first, 1);
  NodePtr b = t.lookup(FUSE_ROOT_ID, "x", dirNode);
  EXPECT_NE(b->ino, first);
  EXPECT_GT(b->ino, first);
}

TEST(InodeTable, UnlinkGivesTheNameANewNodeWhileTheOldLivesUntilForgotten) {
  InodeTable t;
  NodePtr old_node = t.lookup(FUSE_ROOT_ID, "s", dirNode);
  t.unlink(FUSE_ROOT_ID, "s");
  NodePtr fresh = t.lookup(FUSE_ROOT_ID, "s", dirNode);
  EXPECT_NE(fresh->ino, old_node->ino);
  EXPECT_NE(t.get(old_node->ino), nullptr);
  t.forget(old_node->ino, 1);
  EXPECT_EQ(t.get(old_node->ino), nullptr);
  // Forgetting the old node must not unmap the name from the new one.
  int made = 0;
  NodePtr again = t.lookup(FUSE_ROOT_ID, "s", [&] {
    ++made;
    return dirNode();
  });
  EXPECT_EQ(made, 0);
  EXPECT_EQ(again->ino, fresh->ino);
}

TEST(InodeTable, ForgettingAnUnknownInodeIsHarmless) {
  InodeTable t;
  t.forget(12345, 1);
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTableDeathTest, ForgettingMoreThanWasLookedUpIsABugThatAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  InodeTable t;
  NodePtr a = t.lookup(FUSE_ROOT_ID, "x", dirNode);
  EXPECT_DEATH(t.forget(a->ino, 2), "bug: forget 2 on inode");
}

TEST(InodeTable, NodeKindsKnowWhichAreDirectories) {
  Node n;
  for (auto k : {NodeKind::Root, NodeKind::PmuDir, NodeKind::DescDir, NodeKind::DescRegDir, NodeKind::SimDir,
                 NodeKind::SessionsDir, NodeKind::SessionDir, NodeKind::SetsDir, NodeKind::SetDir}) {
    n.kind = k;
    EXPECT_TRUE(n.isDir()) << static_cast<int>(k);
  }
  for (auto k : {NodeKind::Version, NodeKind::PmuInfo, NodeKind::PmuEvents, NodeKind::DescModel, NodeKind::DescField,
                 NodeKind::SimAdvance, NodeKind::SessionFile, NodeKind::SetFile}) {
    n.kind = k;
    EXPECT_FALSE(n.isDir()) << static_cast<int>(k);
  }
}

}  // namespace
}  // namespace pfmfs::fs
