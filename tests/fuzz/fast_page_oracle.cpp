#include "fast_page_oracle.h"

#include <cstdint>
#include <cstring>

#include "fastpath/fast_page.h"
#include "fastpath/fast_read.h"
#include "oracle_check.h"

namespace pfmfs::fuzz {

using fastpath::Page;

namespace {

constexpr std::uint64_t kMembers = 64;  // what libpfm-compat can hold (kMaxChannelFds)

// The bytes as a page, as a reader finds them in its mapping.
void load(std::string_view in, Page& page) {
  std::memset(&page, 0, sizeof page);
  std::memcpy(&page, in.data(), in.size() < sizeof page ? in.size() : sizeof page);
}

}  // namespace

bool fastPage(std::string_view in, Fail fail) {
  Check check{fail, in};
  static Page shared, snap;  // 4 KB each: not on a fuzzer's stack
  load(in, shared);
  if (!fastpath::snapshot(shared, snap, 2)) return false;
  std::int8_t where[fastpath::kMaxPmds];
  if (!fastpath::indexEntries(snap, kMembers, where)) return false;
  check(snap.pmd_count <= fastpath::kMaxPmds, "more entries accepted than the page holds");
  unsigned mapped = 0;
  for (std::uint32_t pmd = 0; pmd < fastpath::kMaxPmds; ++pmd) {
    if (where[pmd] < 0) continue;
    ++mapped;
    check(static_cast<std::uint64_t>(where[pmd]) < snap.pmd_count, "an entry past pmd_count");
    check(snap.pmds[where[pmd]].index == pmd, "an entry of another PMD");
  }
  check(mapped == snap.pmd_count, "entries lost or counted twice");
  // The group's read, from words of the page itself: whatever they say, the
  // reader takes values only from a read of the shape the page announces.
  const std::uint64_t* words = reinterpret_cast<const std::uint64_t*>(&shared);
  const std::size_t n_words = sizeof shared / sizeof(std::uint64_t);
  std::uint64_t members[kMembers] = {};
  std::uint64_t member_count = 0;
  const std::size_t want = fastpath::groupReadWords(snap.read_format, snap.group_size);
  if (snap.group_size <= kMembers && want <= n_words &&
      fastpath::groupValues(words, want, snap.read_format, snap.group_size, members))
    member_count = snap.group_size;
  for (std::uint64_t i = 0; i < snap.pmd_count; ++i) {
    std::uint64_t v = 0;
    if (fastpath::pmdValue(snap.pmds[i], members, member_count, &v) &&
        snap.pmds[i].source == static_cast<std::uint16_t>(fastpath::Source::kPage))
      check(v == (snap.pmds[i].upper | snap.pmds[i].base), "a page value that is not upper | base");
  }
  return true;
}

std::vector<std::string> fastPageSeeds() {
  // A page as pfmfsd publishes it: one PMD from the page, two from a perf
  // group of two members.
  Page p{};
  fastpath::publish(p, [] {
    Page n{};
    n.usable = 1;
    n.target_tid = 4242;
    n.read_format = static_cast<std::uint32_t>(fastpath::kFormatGroup | fastpath::kFormatTotalTimeEnabled |
                                               fastpath::kFormatTotalTimeRunning | fastpath::kFormatId);
    n.group = 1;
    n.group_size = 2;
    n.switch_running_ns = ~std::uint64_t{0};
    n.pmd_count = 3;
    n.pmds[0] = {0, 77, 0, (std::uint64_t{1} << 48) - 1, 0, 0, 16, static_cast<std::uint16_t>(fastpath::Source::kPage),
                 0};
    n.pmds[1] = {1ull << 48, 5, 100, (std::uint64_t{1} << 48) - 1,
                 0,          0, 0,   static_cast<std::uint16_t>(fastpath::Source::kPerfGroup),
                 0};
    n.pmds[2] = {0, 9, 3, ~std::uint64_t{0}, 0, 0, 1, static_cast<std::uint16_t>(fastpath::Source::kPerfGroup), 1};
    return n;
  }());
  std::string full(reinterpret_cast<const char*>(&p), sizeof p);
  std::string head = full.substr(0, offsetof(Page, pmds) + 3 * sizeof(fastpath::PmdEntry));
  return {head, full};
}

}  // namespace pfmfs::fuzz
