// The fast path's reader arithmetic (fastpath/fast_read.h): the group
// read's layout, a PMD's value from the page or its group member, the
// wrap that sends the reader to the mount, and user-level rdpmc's sign
// extension. The rdpmc path cannot run on a machine without a PMU that
// allows it (this one, CI): its arithmetic is checked here against what
// perf's documentation of perf_event_mmap_page says a read must compute,
// with the page's fields as a kernel fills them.
#include "fastpath/fast_read.h"

#include <linux/perf_event.h>

#include <gtest/gtest.h>

namespace pfmfs::fastpath {
namespace {

TEST(FastRead, FormatBitsAreTheKernels) {
  EXPECT_EQ(kFormatTotalTimeEnabled, std::uint64_t{PERF_FORMAT_TOTAL_TIME_ENABLED});
  EXPECT_EQ(kFormatTotalTimeRunning, std::uint64_t{PERF_FORMAT_TOTAL_TIME_RUNNING});
  EXPECT_EQ(kFormatId, std::uint64_t{PERF_FORMAT_ID});
  EXPECT_EQ(kFormatGroup, std::uint64_t{PERF_FORMAT_GROUP});
  EXPECT_EQ(kFormatLost, std::uint64_t{PERF_FORMAT_LOST});
}

// The daemon's format: nr, time_enabled, time_running, {value, id} x nr.
constexpr std::uint64_t kDaemonFormat = kFormatGroup | kFormatTotalTimeEnabled | kFormatTotalTimeRunning | kFormatId;

TEST(FastRead, GroupValuesFollowTheFormat) {
  EXPECT_EQ(groupReadWords(kDaemonFormat, 3), 3u + 2 * 3);
  const std::uint64_t buf[] = {3, 1000, 900, 11, 101, 22, 102, 33, 103};
  std::uint64_t v[3] = {};
  ASSERT_TRUE(groupValues(buf, 9, kDaemonFormat, 3, v));
  EXPECT_EQ(v[0], 11u);
  EXPECT_EQ(v[1], 22u);
  EXPECT_EQ(v[2], 33u);
  // Without the times and ids, with lost records.
  const std::uint64_t f2 = kFormatGroup | kFormatLost;
  EXPECT_EQ(groupReadWords(f2, 2), 1u + 2 * 2);
  const std::uint64_t buf2[] = {2, 7, 0, 8, 5};
  ASSERT_TRUE(groupValues(buf2, 5, f2, 2, v));
  EXPECT_EQ(v[0], 7u);
  EXPECT_EQ(v[1], 8u);
}

TEST(FastRead, AGroupOfAnotherShapeIsRefused) {
  const std::uint64_t buf[] = {3, 1000, 900, 11, 101, 22, 102, 33, 103};
  std::uint64_t v[4] = {};
  EXPECT_FALSE(groupValues(buf, 9, kDaemonFormat, 2, v)) << "the page expects 2 members, the read has 3";
  EXPECT_FALSE(groupValues(buf, 7, kDaemonFormat, 3, v)) << "a short read";
  EXPECT_FALSE(groupValues(buf, 9, kDaemonFormat & ~kFormatGroup, 3, v)) << "not a group read";
}

PmdEntry perfEntry(std::uint64_t upper, std::uint64_t base, std::uint64_t ref, unsigned width, std::uint16_t member) {
  PmdEntry e{};
  e.upper = upper;
  e.base = base;
  e.ref = ref;
  e.width_mask = width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  e.source = static_cast<std::uint16_t>(Source::kPerfGroup);
  e.member = member;
  return e;
}

TEST(FastRead, APagePmdIsUpperOrBase) {
  PmdEntry e{};
  e.source = static_cast<std::uint16_t>(Source::kPage);
  e.upper = 0x7f00'0000'0000'0000;
  e.base = 0x1234;
  std::uint64_t v = 0;
  ASSERT_TRUE(pmdValue(e, nullptr, 0, &v));
  EXPECT_EQ(v, 0x7f00'0000'0000'1234u);
}

TEST(FastRead, AGroupPmdIsBasePlusWhatTheMemberCountedSinceRef) {
  // A 48-bit counter loaded with 2^48 - 1000 (a period of 1000 before the
  // overflow) above 5 x 2^48 of 64-bit value; perf counted 400 since.
  const std::uint64_t w48 = std::uint64_t{1} << 48;
  const PmdEntry e = perfEntry(5 * w48, w48 - 1000, 70'000, 48, 1);
  const std::uint64_t members[] = {123, 70'400};
  std::uint64_t v = 0;
  ASSERT_TRUE(pmdValue(e, members, 2, &v));
  EXPECT_EQ(v, 5 * w48 + w48 - 600);
  // 999 counted: one short of the wrap, still the page's to answer.
  const std::uint64_t at_edge[] = {0, 70'999};
  ASSERT_TRUE(pmdValue(e, at_edge, 2, &v));
  EXPECT_EQ(v, 5 * w48 + w48 - 1);
}

TEST(FastRead, AWrappedCounterIsTheMountsToAnswer) {
  const std::uint64_t w48 = std::uint64_t{1} << 48;
  const PmdEntry e = perfEntry(0, w48 - 1000, 70'000, 48, 0);
  const std::uint64_t wrapped[] = {71'000};
  std::uint64_t v = 0;
  EXPECT_FALSE(pmdValue(e, wrapped, 1, &v)) << "the overflow's reset is the daemon's";
  // A 64-bit counter never wraps here: modulo arithmetic throughout.
  const PmdEntry e64 = perfEntry(0, ~std::uint64_t{0} - 5, 10, 64, 0);
  const std::uint64_t m64[] = {20};
  ASSERT_TRUE(pmdValue(e64, m64, 1, &v));
  EXPECT_EQ(v, 4u);
}

TEST(FastRead, AnEntryForAnUnknownMemberOrSourceIsRefused) {
  const PmdEntry e = perfEntry(0, 0, 0, 48, 2);
  const std::uint64_t members[] = {1, 2};
  std::uint64_t v = 0;
  EXPECT_FALSE(pmdValue(e, members, 2, &v));
  PmdEntry odd = e;
  odd.member = 0;
  odd.source = 7;
  EXPECT_FALSE(pmdValue(odd, members, 2, &v));
}

// perf_event_mmap_page as the kernel fills it for a counting event on
// counter index - 1: the count is offset + the counter sign-extended.
MmapCounter counter(std::uint32_t index, std::int64_t offset, std::uint16_t width, bool cap = true) {
  return MmapCounter{index, offset, width, cap};
}

// A page of `n` entries for pmds idx[0..n), all from the page.
Page pageOf(std::initializer_list<std::uint32_t> idx) {
  Page p{};
  for (std::uint32_t i : idx) {
    PmdEntry& e = p.pmds[p.pmd_count++];
    e.index = i;
    e.source = static_cast<std::uint16_t>(Source::kPage);
  }
  return p;
}

TEST(FastRead, IndexEntriesMapsEachPmdToItsEntry) {
  Page p = pageOf({3, 0, 63, 16});
  p.group_size = 2;
  p.pmds[1] = perfEntry(0, 0, 0, 48, 1);
  p.pmds[1].index = 0;
  std::int8_t where[kMaxPmds];
  ASSERT_TRUE(indexEntries(p, 64, where));
  for (std::uint32_t i = 0; i < kMaxPmds; ++i) {
    const int want = i == 3 ? 0 : i == 0 ? 1 : i == 63 ? 2 : i == 16 ? 3 : -1;
    EXPECT_EQ(where[i], want) << "pmd" << i;
  }
  Page none{};
  ASSERT_TRUE(indexEntries(none, 64, where));
  for (auto w : where) EXPECT_EQ(w, -1);
}

// The page comes from another process: nothing it says may make the reader
// index outside its arrays (the fuzz oracle fastPage tries the rest).
TEST(FastRead, IndexEntriesRefusesAPageThatDoesNotHoldTogether) {
  std::int8_t where[kMaxPmds];
  Page p = pageOf({0});
  p.pmd_count = kMaxPmds + 1;
  EXPECT_FALSE(indexEntries(p, 64, where)) << "more entries than the page has";
  p.pmd_count = ~std::uint64_t{0};
  EXPECT_FALSE(indexEntries(p, 64, where)) << "a count that would wrap";
  EXPECT_FALSE(indexEntries(pageOf({1, 64}), 64, where)) << "pmd64";
  EXPECT_FALSE(indexEntries(pageOf({0xffffffffu}), 64, where)) << "pmd 2^32-1";
  EXPECT_FALSE(indexEntries(pageOf({5, 7, 5}), 64, where)) << "pmd5 twice";
  Page bad_source = pageOf({2});
  bad_source.pmds[0].source = 3;
  EXPECT_FALSE(indexEntries(bad_source, 64, where)) << "source 3";
  bad_source.pmds[0].source = 0;
  EXPECT_FALSE(indexEntries(bad_source, 64, where)) << "source 0";
  Page group = pageOf({});
  group.pmds[0] = perfEntry(0, 0, 0, 48, 2);
  group.pmd_count = 1;
  group.group_size = 2;
  EXPECT_FALSE(indexEntries(group, 64, where)) << "member 2 of 2";
  group.pmds[0].member = 1;
  EXPECT_TRUE(indexEntries(group, 64, where));
  group.group_size = 0;
  EXPECT_FALSE(indexEntries(group, 64, where)) << "a member of an empty group";
  group.group_size = 65;
  EXPECT_FALSE(indexEntries(group, 64, where)) << "more members than the reader can hold";
  group.group_size = 64;
  EXPECT_TRUE(indexEntries(group, 64, where));
  EXPECT_FALSE(indexEntries(group, 63, where));
}

TEST(FastRead, RdpmcNeedsTheCapabilityAndACounter) {
  EXPECT_TRUE(rdpmcUsable(counter(1, 0, 48)));
  EXPECT_FALSE(rdpmcUsable(counter(0, 0, 48))) << "index 0: not on a counter now";
  EXPECT_FALSE(rdpmcUsable(counter(3, 0, 48, false))) << "no cap_user_rdpmc";
  EXPECT_FALSE(rdpmcUsable(counter(3, 0, 0))) << "no width";
  EXPECT_FALSE(rdpmcUsable(counter(3, 0, 65)));
}

TEST(FastRead, RdpmcSignExtendsTheCounterFromItsWidth) {
  // perf programs a counter with -period: a 48-bit counter 100 events
  // before its wrap reads 2^48 - 100, which is -100.
  const std::uint64_t raw = (std::uint64_t{1} << 48) - 100;
  EXPECT_EQ(rdpmcCount(counter(1, 5000, 48), raw), 4900u);
  // The same bits above the width (what rdpmc may return on some parts) do not matter.
  EXPECT_EQ(rdpmcCount(counter(1, 5000, 48), raw | (std::uint64_t{0xabcd} << 48)), 4900u);
  // A positive counter value adds.
  EXPECT_EQ(rdpmcCount(counter(2, 5000, 48), 77), 5077u);
  // 40 and 32 bits (other PMUs), and the full 64.
  EXPECT_EQ(rdpmcCount(counter(1, 1'000'000, 40), (std::uint64_t{1} << 40) - 1), 999'999u);
  EXPECT_EQ(rdpmcCount(counter(1, 100, 32), 0xffff'fff0u), 84u);
  EXPECT_EQ(rdpmcCount(counter(1, 7, 64), 5), 12u);
  // Past 2^48 events the offset carries what the counter cannot hold.
  const std::int64_t big = std::int64_t{3} << 48;
  EXPECT_EQ(rdpmcCount(counter(4, big, 48), (std::uint64_t{1} << 48) - 50), static_cast<std::uint64_t>(big) - 50);
}

}  // namespace
}  // namespace pfmfs::fastpath
