// FastPagePublisher: a page gets each new content once, an unchanged content
// is not written again (readers would retry for nothing), and a page that is
// replaced is told to send its readers to the mount.
#include "session/fast_page_publisher.h"

#include <gtest/gtest.h>

namespace pfmfs::session {
namespace {

std::uint64_t seqOf(const fastpath::Page& p) { return __atomic_load_n(&p.seq, __ATOMIC_ACQUIRE); }

void fillOne(fastpath::Page& p, std::uint64_t upper) {
  p.usable = 1;
  p.target_tid = 1234;
  p.set = 2;
  p.pmd_count = 1;
  p.pmds[0] = fastpath::PmdEntry{};
  p.pmds[0].index = 16;
  p.pmds[0].upper = upper;
}

TEST(FastPagePublisher, WithoutAPageItPublishesNothing) {
  FastPagePublisher pub;
  EXPECT_FALSE(pub.hasPage());
  EXPECT_FALSE(pub.publish());
}

TEST(FastPagePublisher, WritesTheFirstContentThenOnlyChanges) {
  fastpath::Page shared{};
  FastPagePublisher pub;
  pub.setPage(&shared);
  fillOne(pub.next(), 100);
  EXPECT_TRUE(pub.publish());
  EXPECT_EQ(seqOf(shared), 2u);
  fastpath::Page got{};
  ASSERT_TRUE(fastpath::snapshot(shared, got));
  EXPECT_EQ(got.magic, fastpath::kMagic);
  EXPECT_EQ(got.usable, 1u);
  EXPECT_EQ(got.target_tid, 1234);
  EXPECT_EQ(got.pmds[0].upper, 100u);

  // The same again: not written, so readers do not retry.
  fillOne(pub.next(), 100);
  EXPECT_FALSE(pub.publish());
  EXPECT_EQ(seqOf(shared), 2u);

  fillOne(pub.next(), 101);
  EXPECT_TRUE(pub.publish());
  EXPECT_EQ(seqOf(shared), 4u);
  ASSERT_TRUE(fastpath::snapshot(shared, got));
  EXPECT_EQ(got.pmds[0].upper, 101u);
}

TEST(FastPagePublisher, NextStartsUnusableWithNoPmds) {
  fastpath::Page shared{};
  FastPagePublisher pub;
  pub.setPage(&shared);
  fillOne(pub.next(), 7);
  ASSERT_TRUE(pub.publish());
  fastpath::Page& p = pub.next();
  EXPECT_EQ(p.usable, 0u);
  EXPECT_EQ(p.pmd_count, 0u);
  EXPECT_EQ(p.group, 0u);
  EXPECT_EQ(p.switch_running_ns, ~0ull);
  // Published as it is: the page now says "ask the mount".
  EXPECT_TRUE(pub.publish());
  fastpath::Page got{};
  ASSERT_TRUE(fastpath::snapshot(shared, got));
  EXPECT_EQ(got.usable, 0u);
}

TEST(FastPagePublisher, AReplacedPageSendsItsReadersToTheMount) {
  fastpath::Page first{}, second{};
  FastPagePublisher pub;
  pub.setPage(&first);
  fillOne(pub.next(), 5);
  ASSERT_TRUE(pub.publish());
  pub.setPage(&second);
  fastpath::Page got{};
  ASSERT_TRUE(fastpath::snapshot(first, got));
  EXPECT_EQ(got.usable, 0u);
  EXPECT_EQ(got.pmd_count, 0u);
  // The new page gets the content even though it is what the old one showed.
  fillOne(pub.next(), 5);
  EXPECT_TRUE(pub.publish());
  ASSERT_TRUE(fastpath::snapshot(second, got));
  EXPECT_EQ(got.usable, 1u);
  EXPECT_EQ(got.pmds[0].upper, 5u);
}

TEST(FastPagePublisher, DroppingThePageEndsItsReadsAndPublishing) {
  fastpath::Page shared{};
  FastPagePublisher pub;
  pub.setPage(&shared);
  fillOne(pub.next(), 9);
  ASSERT_TRUE(pub.publish());
  const std::uint64_t seq = seqOf(shared);
  pub.setPage(nullptr);
  EXPECT_FALSE(pub.hasPage());
  EXPECT_EQ(seqOf(shared), seq + 2);  // one last write: unusable
  fastpath::Page got{};
  ASSERT_TRUE(fastpath::snapshot(shared, got));
  EXPECT_EQ(got.usable, 0u);
  EXPECT_FALSE(pub.publish());
  EXPECT_EQ(seqOf(shared), seq + 2);
}

}  // namespace
}  // namespace pfmfs::session
