// The tree's rows (fs/tree_schema.h) against pfmfs(5)'s THE TREE, and the
// walks that lookup and readdir are made of, on a filesystem over the sim
// backend (no mount: the walks need only the engine and the registry).
#include "fs/tree_schema.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fs/filesystem.h"
#include "fs/tree_context.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::fs {
namespace {

std::string nameOf(const TreeEntry& row) { return row.name.pattern ? row.name.pattern->shown : row.name.literal; }

// The path of a row as pfmfs(5) writes it; directories end in '/'.
std::string pathOf(const TreeEntry& row) {
  std::string self = nameOf(row) + (row.isDir() ? "/" : "");
  if (row.parent == NodeKind::Root) return self;
  for (const TreeEntry& p : kTree) {
    if (p.kind != row.parent) continue;
    if (row.shown == Shown::UnderPmc && p.name.pattern != &kPmcNames) continue;
    if (row.shown == Shown::UnderPmd && p.name.pattern != &kPmdNames) continue;
    return pathOf(p) + self;
  }
  return "?/" + self;
}

TEST(TreeSchema, PathsAndModesAreThoseOfPfmfs5) {
  // pfmfs(5), THE TREE.
  const std::map<std::string, mode_t> expected = {
      {"version", S_IFREG | 0444},
      {"pmu/", S_IFDIR | 0555},
      {"pmu/info", S_IFREG | 0444},
      {"pmu/events", S_IFREG | 0444},
      {"pmu/desc/", S_IFDIR | 0555},
      {"pmu/desc/model", S_IFREG | 0444},
      {"pmu/desc/pmcN/", S_IFDIR | 0555},
      {"pmu/desc/pmcN/name", S_IFREG | 0444},
      {"pmu/desc/pmcN/addr", S_IFREG | 0444},
      {"pmu/desc/pmcN/dfl_val", S_IFREG | 0444},
      {"pmu/desc/pmcN/rsvd_msk", S_IFREG | 0444},
      {"pmu/desc/pmcN/pmds", S_IFREG | 0444},
      {"pmu/desc/pmdN/", S_IFDIR | 0555},
      {"pmu/desc/pmdN/name", S_IFREG | 0444},
      {"pmu/desc/pmdN/addr", S_IFREG | 0444},
      {"pmu/desc/pmdN/width", S_IFREG | 0444},
      {"pmu/desc/pmdN/rsvd_msk", S_IFREG | 0444},
      {"pmu/sim/", S_IFDIR | 0555},
      {"pmu/sim/advance", S_IFREG | 0200},
      {"sessions/", S_IFDIR | 01777},
      {"sessions/NAME/", S_IFDIR | 0700},
      {"sessions/NAME/mode", S_IFREG | 0600},
      {"sessions/NAME/flags", S_IFREG | 0600},
      {"sessions/NAME/ctl", S_IFREG | 0200},
      {"sessions/NAME/state", S_IFREG | 0400},
      {"sessions/NAME/error", S_IFREG | 0400},
      {"sessions/NAME/counts", S_IFREG | 0400},
      {"sessions/NAME/messages", S_IFREG | 0400},
      {"sessions/NAME/msg", S_IFREG | 0400},
      {"sessions/NAME/smpl_fmt", S_IFREG | 0600},
      {"sessions/NAME/smpl_buf", S_IFREG | 0400},
      {"sessions/NAME/samples", S_IFREG | 0400},
      {"sessions/NAME/sets/", S_IFDIR | 0700},
      {"sessions/NAME/sets/N/", S_IFDIR | 0700},
      {"sessions/NAME/sets/N/pmcN", S_IFREG | 0600},
      {"sessions/NAME/sets/N/pmdN", S_IFREG | 0600},
      {"sessions/NAME/sets/N/regs", S_IFREG | 0600},
      {"sessions/NAME/sets/N/pmds", S_IFREG | 0400},
      {"sessions/NAME/sets/N/switch", S_IFREG | 0600},
      {"sessions/NAME/sets/N/info", S_IFREG | 0400},
  };
  std::map<std::string, mode_t> rows;
  for (const TreeEntry& row : kTree) EXPECT_TRUE(rows.emplace(pathOf(row), row.mode).second) << pathOf(row);
  EXPECT_EQ(rows, expected);
}

TEST(TreeSchema, OnlyTheFilesPfmfs5SaysTakeTheirOpenersRights) {
  std::vector<std::string> judged;
  for (const TreeEntry& row : kTree)
    if (row.rules & kOpenerRights) judged.push_back(pathOf(row));
  EXPECT_EQ(judged,
            (std::vector<std::string>{"sessions/NAME/ctl", "sessions/NAME/sets/N/pmcN", "sessions/NAME/sets/N/regs"}));
}

// The table's own checks, which the header asserts at compile time where
// the compiler can (not under GCC's -fsanitize=undefined): run here in
// every build, so the sanitizer builds check the table too.
TEST(TreeSchema, TheTablesOwnChecksHold) {
  EXPECT_TRUE(tree_checks::parentsAreDirectories());
  EXPECT_TRUE(tree_checks::kindsAgreeOnType());
  EXPECT_TRUE(tree_checks::accessMatchesMode());
  EXPECT_TRUE(tree_checks::namesAreUnique());
  EXPECT_TRUE(tree_checks::sessionsOwnTheirSubtree());
}

TEST(TreeSchema, DirectoriesAreTheKindsWithRowsInThem) {
  for (const TreeEntry& row : kTree) {
    EXPECT_TRUE(isDirectory(row.parent)) << pathOf(row);
    EXPECT_EQ(isDirectory(row.kind), row.isDir()) << pathOf(row);
  }
  EXPECT_TRUE(isDirectory(NodeKind::Root));
}

// ---- the walks ----------------------------------------------------------------------

using Listing = std::vector<std::pair<std::string, mode_t>>;

class TreeWalk : public ::testing::Test {
 protected:
  explicit TreeWalk(pmu::ClockKind clock = pmu::ClockKind::Manual) : sim_(config(clock)), fs_(sim_.engine(), {}) {
    root_.entry = &kRootEntry;
  }
  static testing::SimConfig config(pmu::ClockKind clock) {
    testing::SimConfig c;
    c.clock = clock;
    return c;
  }
  TreeContext ctx() { return TreeContext(fs_); }
  Node at(const std::vector<std::string>& path) {
    Node n = root_;
    for (const auto& name : path) {
      auto child = childOf(ctx(), n, name);
      EXPECT_TRUE(child) << name;
      if (!child) return n;
      n = *child;
    }
    return n;
  }

  testing::SimEngine sim_;
  Filesystem fs_;
  Node root_;
};

TEST_F(TreeWalk, TheRootListsItsRowsInOrder) {
  EXPECT_EQ(childrenOf(ctx(), root_, 1000), (Listing{{"version", S_IFREG}, {"pmu", S_IFDIR}, {"sessions", S_IFDIR}}));
  EXPECT_FALSE(childOf(ctx(), root_, "nope"));
  EXPECT_FALSE(childOf(ctx(), root_, ""));
}

TEST_F(TreeWalk, TheSimDirectoryIsThereUnderTheManualClock) {
  EXPECT_EQ(childrenOf(ctx(), at({"pmu"}), 0),
            (Listing{{"info", S_IFREG}, {"events", S_IFREG}, {"desc", S_IFDIR}, {"sim", S_IFDIR}}));
  Node advance = at({"pmu", "sim", "advance"});
  EXPECT_EQ(advance.kind, NodeKind::SimAdvance);
  EXPECT_TRUE(advance.entry->rules & kRootOnly);
}

TEST_F(TreeWalk, RegisterNamesAreThePmusInPlainDecimal) {
  Node desc = at({"pmu", "desc"});
  Listing listing = childrenOf(ctx(), desc, 0);
  ASSERT_FALSE(listing.empty());
  EXPECT_EQ(listing.front(), (std::pair<std::string, mode_t>{"model", S_IFREG}));
  EXPECT_EQ(listing.size(), 1 + sim_.desc().pmcs.size() + sim_.desc().pmds.size());
  auto pmc0 = childOf(ctx(), desc, "pmc0");
  ASSERT_TRUE(pmc0);
  EXPECT_EQ(pmc0->kind, NodeKind::DescRegDir);
  EXPECT_FALSE(pmc0->pmd);
  auto pmd1 = childOf(ctx(), desc, "pmd1");
  ASSERT_TRUE(pmd1);
  EXPECT_TRUE(pmd1->pmd);
  EXPECT_EQ(pmd1->reg, 1);
  for (const char* bad : {"pmc", "pmc01", "pmc99", "pmc-1", "pmd0x", "pmc 0"})
    EXPECT_FALSE(childOf(ctx(), desc, bad)) << bad;
}

TEST_F(TreeWalk, APmcAndAPmdDirectoryHoldTheirOwnFields) {
  EXPECT_EQ(
      childrenOf(ctx(), at({"pmu", "desc", "pmc0"}), 0),
      (Listing{{"name", S_IFREG}, {"addr", S_IFREG}, {"dfl_val", S_IFREG}, {"rsvd_msk", S_IFREG}, {"pmds", S_IFREG}}));
  EXPECT_EQ(childrenOf(ctx(), at({"pmu", "desc", "pmd0"}), 0),
            (Listing{{"name", S_IFREG}, {"addr", S_IFREG}, {"width", S_IFREG}, {"rsvd_msk", S_IFREG}}));
  EXPECT_FALSE(childOf(ctx(), at({"pmu", "desc", "pmd0"}), "dfl_val"));
  Node width = at({"pmu", "desc", "pmd0", "width"});
  auto text = width.entry->render(ctx(), width);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "48\n");
}

class RealClockTreeWalk : public TreeWalk {
 protected:
  RealClockTreeWalk() : TreeWalk(pmu::ClockKind::Real) {}
};

TEST_F(RealClockTreeWalk, HasNoSimDirectory) {
  Node pmu = at({"pmu"});
  EXPECT_EQ(childrenOf(ctx(), pmu, 0), (Listing{{"info", S_IFREG}, {"events", S_IFREG}, {"desc", S_IFDIR}}));
  EXPECT_FALSE(childOf(ctx(), pmu, "sim"));
}

}  // namespace
}  // namespace pfmfs::fs
