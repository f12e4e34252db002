// The fast path's page: what pfmfsd publishes for one session so that
// libpfm-compat can read a self-monitoring context's PMDs without a FUSE
// round trip (perfctr's design: the counter state is mapped into the
// process, a read is base + what the hardware counted since, retried if the
// daemon changed the state meanwhile).
//
// A contract between two programs of different builds, like a kernel ABI:
// plain fields of fixed size, a magic and a version, no pointers. pfmfsd
// (fs/) is the only writer; libpfm-compat maps the page read-only. Neither
// links the other: this header is all they share. It needs no C++ runtime
// (libpfm-compat has none).
//
// Consistency is a sequence lock: the writer makes `seq` odd, writes, makes
// it even again; a reader copies the page between two reads of `seq` and
// keeps the copy only if both read the same even number. Every word is read
// and written with an atomic access of its own, so that no access is a data
// race; the writer's are releases and the reader's acquires, which order
// them against `seq` without fences (Boehm, "Can seqlocks get along with
// programming language memory models?", 2012). On x86 they are plain moves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pfmfs::fastpath {

inline constexpr std::uint32_t kMagic = 0x4d465046;  // "PFFM" in memory order
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::size_t kPageBytes = 4096;
inline constexpr std::size_t kMaxPmds = 64;  // perfmon2's PFM_MAX_PMDS of one set, on every model we have

// Where a PMD's value comes from.
enum class Source : std::uint16_t {
  kPage = 1,       // the page alone: the value is `upper | base`
  kPerfGroup = 2,  // upper | hw, hw = base + (the group member's count - ref)
};

// One PMD of the active set, with what pfm_read_pmds returns of it. A
// kPerfGroup value is exactly what the engine computes from the backend's
// hardware value; if hw > width_mask the counter has wrapped and its
// overflow is not processed yet: only the mount knows what the reset makes
// of it.
struct PmdEntry {
  std::uint64_t upper;        // the value's bits above the counter's width
  std::uint64_t base;         // kPage: the value's low bits; kPerfGroup: the hardware value at `ref`
  std::uint64_t ref;          // kPerfGroup: the member's count that maps to `base`
  std::uint64_t width_mask;   // the counter's width: 2^width - 1
  std::uint64_t last_reset;   // reg_last_reset_val
  std::uint64_t switch_left;  // reg_ovfl_switch_cnt
  std::uint32_t index;        // N of pmdN
  std::uint16_t source;       // Source
  std::uint16_t member;       // kPerfGroup: its place in the group's read
};

struct Page {
  std::uint32_t magic;    // kMagic once the page is ready
  std::uint32_t version;  // kVersion
  std::uint64_t seq;      // odd while the daemon writes; read through snapshot()
  // ---- what follows is only meaningful in a consistent snapshot
  std::uint32_t usable;       // 0: the reader must ask the mount (unloaded, masked, ...)
  std::int32_t target_tid;    // the thread the session is loaded on
  std::uint32_t read_format;  // kPerfGroup: the leader's perf_event_attr.read_format
  std::uint32_t set;          // the active set
  std::uint64_t group;        // kPerfGroup: which perf group, never 0 (a new number: new descriptors)
  std::uint64_t group_size;   // kPerfGroup: members in the group's read
  // kPerfGroup: a time switch is due when the group's time_running
  // reaches this (UINT64_MAX: none); from then on only the mount answers.
  std::uint64_t switch_running_ns;
  std::uint64_t pmd_count;  // entries used in pmds
  PmdEntry pmds[kMaxPmds];
};

static_assert(sizeof(Page) <= kPageBytes, "the page is one page");
static_assert(sizeof(Page) % sizeof(std::uint64_t) == 0, "copied as 64-bit words");
static_assert(alignof(Page) == alignof(std::uint64_t));
static_assert(sizeof(PmdEntry) == 56);

namespace detail {

inline constexpr std::size_t kWords = sizeof(Page) / sizeof(std::uint64_t);
inline constexpr std::size_t kSeqWord = offsetof(Page, seq) / sizeof(std::uint64_t);

inline std::uint64_t* words(Page& p) { return reinterpret_cast<std::uint64_t*>(&p); }
inline const std::uint64_t* words(const Page& p) { return reinterpret_cast<const std::uint64_t*>(&p); }

}  // namespace detail

// The writer (one thread at a time: the daemon holds the session's lock).
// `next`'s magic, version and seq are ignored.
inline void publish(Page& shared, const Page& next) {
  using namespace detail;
  std::uint64_t* out = words(shared);
  const std::uint64_t* in = words(next);
  const std::uint64_t seq = __atomic_load_n(&shared.seq, __ATOMIC_RELAXED);
  __atomic_store_n(&shared.seq, seq + 1, __ATOMIC_RELAXED);
  // Releases: a reader that acquires any new word sees the odd seq too.
  for (std::size_t i = kSeqWord + 1; i < kWords; ++i) __atomic_store_n(&out[i], in[i], __ATOMIC_RELEASE);
  __atomic_store_n(&shared.seq, seq + 2, __ATOMIC_RELEASE);
  // magic and version share word 0, written once the first content is.
  const std::uint64_t head = static_cast<std::uint64_t>(kVersion) << 32 | kMagic;
  if (__atomic_load_n(&out[0], __ATOMIC_RELAXED) != head) __atomic_store_n(&out[0], head, __ATOMIC_RELEASE);
}

namespace detail {
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace detail

// The reader: a consistent copy in `out` of the page's header and of its
// first pmd_count entries (the rest of `out.pmds` is left as it was), or
// false if the page is not ready, is of another version, or the writer kept
// changing it for `tries` attempts (`out` then means nothing).
inline bool snapshot(const Page& shared, Page& out, int tries = 64) {
  using namespace detail;
  constexpr std::size_t kHeadWords = offsetof(Page, pmds) / sizeof(std::uint64_t);
  constexpr std::size_t kEntryWords = sizeof(PmdEntry) / sizeof(std::uint64_t);
  const std::uint64_t* in = words(shared);
  std::uint64_t* copy = words(out);
  const std::uint64_t head = static_cast<std::uint64_t>(kVersion) << 32 | kMagic;
  if (__atomic_load_n(&in[0], __ATOMIC_ACQUIRE) != head) return false;
  for (int t = 0; t < tries; ++t) {
    const std::uint64_t before = __atomic_load_n(&shared.seq, __ATOMIC_ACQUIRE);
    if (before & 1) {
      relax();
      continue;
    }
    // Acquires: the second read of seq cannot move before any of them.
    for (std::size_t i = kSeqWord + 1; i < kHeadWords; ++i) copy[i] = __atomic_load_n(&in[i], __ATOMIC_ACQUIRE);
    // A torn pmd_count is caught by seq below; bounded here so the copy
    // stays inside the page whatever it read.
    const std::size_t n = out.pmd_count < kMaxPmds ? out.pmd_count : kMaxPmds;
    for (std::size_t i = kHeadWords; i < kHeadWords + n * kEntryWords; ++i)
      copy[i] = __atomic_load_n(&in[i], __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&shared.seq, __ATOMIC_RELAXED) == before) {
      copy[0] = head;
      out.seq = before;
      return true;
    }
  }
  return false;
}

}  // namespace pfmfs::fastpath
