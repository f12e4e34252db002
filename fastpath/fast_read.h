// What a fast-path reader computes from a snapshot of the page
// (fast_page.h) and what it read of the perf group: the arithmetic alone,
// with no system call, so that it is tested here and used by libpfm-compat
// (which has no C++ runtime: nothing here needs one).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fastpath/fast_page.h"

namespace pfmfs::fastpath {

// perf_event_attr.read_format bits (linux/perf_event.h), spelled out so that
// this header does not depend on the kernel's headers.
inline constexpr std::uint64_t kFormatTotalTimeEnabled = 1u << 0;
inline constexpr std::uint64_t kFormatTotalTimeRunning = 1u << 1;
inline constexpr std::uint64_t kFormatId = 1u << 2;
inline constexpr std::uint64_t kFormatGroup = 1u << 3;
inline constexpr std::uint64_t kFormatLost = 1u << 4;

// The words a group read returns for `members` members: nr, the times the
// format asks for, then per member its value, id and lost as asked.
inline std::size_t groupReadWords(std::uint64_t read_format, std::uint64_t members) {
  const std::size_t head =
      1 + ((read_format & kFormatTotalTimeEnabled) ? 1 : 0) + ((read_format & kFormatTotalTimeRunning) ? 1 : 0);
  const std::size_t per = 1 + ((read_format & kFormatId) ? 1 : 0) + ((read_format & kFormatLost) ? 1 : 0);
  return head + per * static_cast<std::size_t>(members);
}

// The members' values out of a group read of `words` words (`values` has
// room for `members`). False unless the read is a group read of exactly
// `members` members in this format: the group changed, ask the mount.
inline bool groupValues(const std::uint64_t* buf, std::size_t words, std::uint64_t read_format, std::uint64_t members,
                        std::uint64_t* values) {
  if (!(read_format & kFormatGroup) || words != groupReadWords(read_format, members) || buf[0] != members) return false;
  const std::size_t head =
      1 + ((read_format & kFormatTotalTimeEnabled) ? 1 : 0) + ((read_format & kFormatTotalTimeRunning) ? 1 : 0);
  const std::size_t per = 1 + ((read_format & kFormatId) ? 1 : 0) + ((read_format & kFormatLost) ? 1 : 0);
  for (std::uint64_t m = 0; m < members; ++m) values[m] = buf[head + per * m];
  return true;
}

// Where each PMD's entry is in a snapshot: where[N] is the place in
// snap.pmds of pmdN's entry, -1 for a PMD the active set does not list.
// The page comes from another process, so everything the reader will index
// with is checked here first: false (ask the mount) when pmd_count exceeds
// kMaxPmds, an index is kMaxPmds or more or listed twice, a source is
// unknown, or a kPerfGroup entry's member is not below group_size, or
// group_size is above max_members (the descriptors a reader can hold).
inline bool indexEntries(const Page& snap, std::uint64_t max_members, std::int8_t (&where)[kMaxPmds]) {
  for (auto& w : where) w = -1;
  if (snap.pmd_count > kMaxPmds) return false;
  for (std::uint64_t i = 0; i < snap.pmd_count; ++i) {
    const PmdEntry& e = snap.pmds[i];
    if (e.index >= kMaxPmds || where[e.index] >= 0) return false;
    switch (static_cast<Source>(e.source)) {
      case Source::kPage:
        break;
      case Source::kPerfGroup:
        if (snap.group_size == 0 || snap.group_size > max_members || e.member >= snap.group_size) return false;
        break;
      default:
        return false;
    }
    where[e.index] = static_cast<std::int8_t>(i);
  }
  return true;
}

// What pfm_read_pmds returns as the PMD's value: from the page alone, or
// from its group member's count. False when the counter has wrapped since
// the daemon last looked (its overflow is the daemon's to handle), or the
// entry names a member or source this reader does not know.
inline bool pmdValue(const PmdEntry& e, const std::uint64_t* member_values, std::uint64_t members,
                     std::uint64_t* value) {
  switch (static_cast<Source>(e.source)) {
    case Source::kPage:
      *value = e.upper | e.base;
      return true;
    case Source::kPerfGroup: {
      if (e.member >= members) return false;
      // perf counts up from `ref`; unsigned arithmetic is the engine's too.
      const std::uint64_t hw = e.base + (member_values[e.member] - e.ref);
      if (hw > e.width_mask) return false;
      *value = e.upper | hw;
      return true;
    }
  }
  return false;
}

// User-level rdpmc (perf_event_mmap_page, "reading the counter from user
// space"): the event's count is the page's offset plus the counter's value,
// sign-extended from its width. `index` is the page's (the counter is
// index - 1; 0: not on a counter now). False when the page does not allow
// rdpmc now: then read() the event.
struct MmapCounter {
  std::uint32_t index;
  std::int64_t offset;
  std::uint16_t pmc_width;
  bool cap_user_rdpmc;
};
inline bool rdpmcUsable(const MmapCounter& m) {
  return m.cap_user_rdpmc && m.index != 0 && m.pmc_width > 0 && m.pmc_width <= 64;
}
inline std::uint64_t rdpmcCount(const MmapCounter& m, std::uint64_t raw_pmc) {
  const unsigned shift = 64u - m.pmc_width;
  // Sign extension from pmc_width bits: perf keeps a counter's value
  // negative (it counts up towards the wrap that interrupts).
  const std::int64_t pmc = static_cast<std::int64_t>(raw_pmc << shift) >> shift;
  return static_cast<std::uint64_t>(m.offset) + static_cast<std::uint64_t>(pmc);  // modulo 2^64, as perf
}

}  // namespace pfmfs::fastpath
