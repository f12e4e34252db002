// The fast path of pfm_read_pmds (docs/libpfm-compat.md, "The fast path"):
// a self-monitoring context's PMDs read from the page pfmfsd publishes for
// its session (fastpath/fast_page.h) and, on perf, from the session's perf
// group read directly, with no FUSE round trip. It answers only what it can
// answer exactly, the mount everything else.
//
// Each context has one FastPath. It is used by one call at a time: a call
// that finds it busy (another thread, or a signal handler interrupting a
// read of its own thread) simply takes the mount. That keeps every field
// plain, and the whole read lock-free and async-signal-safe.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <atomic>

#include "context_ops.h"
#include "fast_channel.h"

struct perf_event_mmap_page;

namespace pfmfs::fastpath {
struct Page;
}

namespace pfmcompat {

class Context;

class FastPath {
 public:
  // A fresh context's: `enabled` unless PFMFS_FASTPATH=0 when it was made.
  void reset(bool enabled);
  // The context's last reference is gone: unmaps and closes what it holds.
  void release();
  // Closes the perf group's descriptors, if no read is using them (unload:
  // they would keep the daemon's closed events alive, counting).
  void dropGroup();

  // The PMDs of vec, exactly as the mount would answer now: 0 when it
  // answered (put was called for every element), kAskTheMount when it cannot.
  static constexpr int kAskTheMount = 1;
  int read(Context& c, void* vec, size_t n, KeyGetter key, PmdSetter put);

 private:
  enum class PageState : uint8_t { Untried, Mapped, Unavailable };

  const pfmfs::fastpath::Page* page(const Context& c);
  // The descriptors of perf group `id`: group_fds_[0] is the leader.
  bool group(const Context& c, uint64_t id);
  void closeGroup();
  // Where the PMU lets user code read counters (rdpmc), each member's perf
  // page; otherwise none, and the group is read with read(2).
  void mapMemberPages();
  // Every member's count by rdpmc, or false: read(2) the group.
  bool readByRdpmc(uint64_t* members) const;
  // One read(2) of the group through its leader.
  bool readGroup(const pfmfs::fastpath::Page& snap, uint64_t* members) const;

  std::atomic<bool> busy_{false};
  // Guarded by busy_.
  bool enabled_ = false;
  PageState page_state_ = PageState::Untried;
  const pfmfs::fastpath::Page* page_ = nullptr;
  Endpoint endpoint_ = {};
  uint64_t group_id_ = 0;
  uint64_t refused_group_ = 0;     // the daemon said no to this group: no asking again
  int group_fds_[kMaxChannelFds];  // leader first, in the group's read order
  int group_fd_count_ = 0;
  const perf_event_mmap_page* member_pages_[kMaxChannelFds];  // all mapped, or none
  int member_page_count_ = 0;
};

// The calling thread's id, without a system call after the first.
// prepareCurrentTid (not async-signal-safe: context creation calls it) makes
// a fork's child forget its parent's.
void prepareCurrentTid();
int currentTid();

}  // namespace pfmcompat
