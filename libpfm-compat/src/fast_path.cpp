// The fast path's read: a consistent copy of the page, the checks that the
// copy answers this call, the perf group's counts if the page points at
// them, and a last look at the page's sequence to be sure the daemon did
// not change anything while the counts were read (perfctr's retry).
#include "fast_path.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context.h"
#include "fast_channel.h"
#include "fastpath/fast_page.h"
#include "fastpath/fast_read.h"
#include "fastpath/page_fd.h"
#include "text_builder.h"

namespace pfmcompat {

namespace fp = pfmfs::fastpath;

namespace {

constexpr size_t kMaxMembers = kMaxChannelFds;  // a group's members, each a descriptor

// The tid cache: one system call per thread, and again in a fork's child.
__thread int t_tid __attribute__((tls_model("initial-exec"))) = 0;
void forgetTid() { t_tid = 0; }

// Takes the FastPath for one call, or says another call has it.
class Busy {
 public:
  explicit Busy(std::atomic<bool>& flag) : flag_(flag), held_(!flag.exchange(true, std::memory_order_acquire)) {}
  ~Busy() {
    if (held_) flag_.store(false, std::memory_order_release);
  }
  explicit operator bool() const { return held_; }

 private:
  std::atomic<bool>& flag_;
  bool held_;
};

}  // namespace

void prepareCurrentTid() {
  static std::atomic<bool> registered{false};
  if (!registered.exchange(true, std::memory_order_relaxed)) pthread_atfork(nullptr, nullptr, forgetTid);
}

int currentTid() {
  if (t_tid == 0) t_tid = int(syscall(SYS_gettid));
  return t_tid;
}

void FastPath::reset(bool enabled) {
  enabled_ = enabled;
  page_state_ = PageState::Untried;
  page_ = nullptr;
  endpoint_ = Endpoint{};
  group_id_ = 0;
  refused_group_ = 0;  // group ids start at 1 (fast_page.h)
  group_fd_count_ = 0;
  member_page_count_ = 0;
  busy_.store(false, std::memory_order_release);
}

void FastPath::closeGroup() {
  for (int i = 0; i < member_page_count_; ++i)
    munmap(const_cast<perf_event_mmap_page*>(member_pages_[i]), size_t(sysconf(_SC_PAGESIZE)));
  member_page_count_ = 0;
  for (int i = 0; i < group_fd_count_; ++i) close(group_fds_[i]);
  group_fd_count_ = 0;
  group_id_ = 0;
}

void FastPath::release() {
  closeGroup();
  if (page_) munmap(const_cast<fp::Page*>(page_), fp::kPageBytes);
  page_ = nullptr;
  page_state_ = PageState::Unavailable;
}

void FastPath::dropGroup() {
  Busy busy(busy_);
  if (busy) closeGroup();
}

const fp::Page* FastPath::page(const Context& c) {
  if (page_state_ == PageState::Mapped) return page_;
  if (page_state_ == PageState::Unavailable) return nullptr;
  // One try per context: a daemon without the fast path, or one that says
  // no, is not asked again.
  page_state_ = PageState::Unavailable;
  if (!fastPathEndpoint(&endpoint_) || !endpoint_.mapped_reads) return nullptr;
  char request[80];
  TextBuilder t(request, sizeof request);
  t.add("page ").add(c.name());
  int fd;
  if (t.overflowed()) return nullptr;
  int got = fastPathRequest(endpoint_, request, &fd, 1);
  // The endpoint kept from an earlier daemon on this mount (its name now
  // free, or bound by someone else): ask the file again.
  if ((got == -ECONNREFUSED || got == kNotTheDaemon) && fastPathEndpoint(&endpoint_, true))
    got = fastPathRequest(endpoint_, request, &fd, 1);
  if (got != 1) return nullptr;
  // Only a page the daemon could have made: another file could shrink under
  // the mapping (SIGBUS) or change as its owner likes.
  page_ = fp::mapPageFd(fd);
  close(fd);
  if (!page_) return nullptr;
  page_state_ = PageState::Mapped;
  return page_;
}

bool FastPath::group(const Context& c, uint64_t id) {
  if (group_fd_count_ > 0 && group_id_ == id) return true;
  closeGroup();
  if (id == refused_group_) return false;
  char request[112];
  TextBuilder t(request, sizeof request);
  t.add("group ").add(c.name()).add(' ').dec(id);
  int n = t.overflowed() ? -EINVAL : fastPathRequest(endpoint_, request, group_fds_, int(kMaxMembers));
  // Every member must be a perf event: reading anything else (a pipe, a
  // FIFO another process feeds) would block or answer what its writer likes.
  for (int i = 0; n > 0 && i < n; ++i) {
    uint64_t perf_id;
    if (ioctl(group_fds_[i], PERF_EVENT_IOC_ID, &perf_id) != 0) {
      for (int j = 0; j < n; ++j) close(group_fds_[j]);
      n = -EPROTO;
    }
  }
  if (n <= 0) {
    refused_group_ = id;  // stale (the set moved on) or refused: the page will say what is next
    return false;
  }
  group_fd_count_ = n;
  group_id_ = id;
  mapMemberPages();
  return true;
}

namespace {

// The perf page's capabilities word, decoded (cap_user_rdpmc is bit 2).
bool capUserRdpmc(const perf_event_mmap_page* pc) {
  perf_event_mmap_page copy;
  copy.capabilities = __atomic_load_n(&pc->capabilities, __ATOMIC_RELAXED);
  return copy.cap_user_rdpmc;
}

}  // namespace

void FastPath::mapMemberPages() {
  // The leader's page says whether this PMU allows rdpmc at all (perf's
  // software events never do: that is this file's usual answer).
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < group_fd_count_; ++i) {
    void* m = mmap(nullptr, page, PROT_READ, MAP_SHARED, group_fds_[i], 0);
    if (m == MAP_FAILED) break;
    member_pages_[member_page_count_++] = static_cast<const perf_event_mmap_page*>(m);
    if (i == 0 && !capUserRdpmc(member_pages_[0])) break;
  }
  if (member_page_count_ == group_fd_count_ && capUserRdpmc(member_pages_[0])) return;
  for (int i = 0; i < member_page_count_; ++i) munmap(const_cast<perf_event_mmap_page*>(member_pages_[i]), page);
  member_page_count_ = 0;
}

bool FastPath::readByRdpmc(uint64_t* members) const {
#if defined(__x86_64__) || defined(__i386__)
  if (member_page_count_ == 0 || member_page_count_ != group_fd_count_) return false;
  for (int i = 0; i < member_page_count_; ++i) {
    const perf_event_mmap_page* pc = member_pages_[i];
    bool done = false;
    // perf's own sequence lock: the kernel rewrites index and offset when it
    // schedules the event in or out; a changed `lock` means read again.
    for (int tries = 0; tries < 8 && !done; ++tries) {
      const uint32_t seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
      fp::MmapCounter m{__atomic_load_n(&pc->index, __ATOMIC_RELAXED), __atomic_load_n(&pc->offset, __ATOMIC_RELAXED),
                        __atomic_load_n(&pc->pmc_width, __ATOMIC_RELAXED), capUserRdpmc(pc)};
      if (!fp::rdpmcUsable(m)) return false;  // not on a counter now: read(2)
      const uint64_t raw = __builtin_ia32_rdpmc(int(m.index - 1));
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      if (__atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE) != seq) continue;
      members[i] = fp::rdpmcCount(m, raw);
      done = true;
    }
    if (!done) return false;
  }
  return true;
#else
  (void)members;
  return false;
#endif
}

bool FastPath::readGroup(const fp::Page& snap, uint64_t* members) const {
  uint64_t buf[3 + 3 * kMaxMembers];
  const size_t words = fp::groupReadWords(snap.read_format, snap.group_size);
  if (words > sizeof buf / sizeof buf[0]) return false;
  const ssize_t got = ::read(group_fds_[0], buf, words * sizeof(uint64_t));
  return got == ssize_t(words * sizeof(uint64_t)) &&
         fp::groupValues(buf, words, snap.read_format, snap.group_size, members);
}

int FastPath::read(Context& c, void* vec, size_t n, KeyGetter key, PmdSetter put) {
  if (!enabled_ || c.systemWide() || n == 0) return kAskTheMount;
  Busy busy(busy_);
  if (!busy) return kAskTheMount;
  const fp::Page* shared = page(c);
  if (!shared) return kAskTheMount;

  fp::Page snap;  // 4 KB of stack, no allocation: signal handlers call this too
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (!fp::snapshot(*shared, snap)) return kAskTheMount;
    if (!snap.usable || snap.target_tid != currentTid()) {
      closeGroup();  // unloaded, or loaded elsewhere: the events are not ours to keep alive
      return kAskTheMount;
    }
    // Where each PMD of the active set is in the copy; anything else (another
    // set, a PMD the set does not list) is the mount's to answer or refuse,
    // and so is a page whose entries do not hold together.
    int8_t where[fp::kMaxPmds];
    if (!fp::indexEntries(snap, kMaxMembers, where)) return kAskTheMount;
    bool want_group = false;
    for (size_t i = 0; i < n; ++i) {
      const RegKey k = key(vec, i);
      if (k.set != snap.set || k.num >= fp::kMaxPmds || where[k.num] < 0) return kAskTheMount;
      want_group |= snap.pmds[where[k.num]].source == uint16_t(fp::Source::kPerfGroup);
    }
    uint64_t members[kMaxMembers];
    uint64_t member_count = 0;
    if (want_group) {
      if (snap.group_size == 0 || snap.group_size > kMaxMembers || !group(c, snap.group) ||
          uint64_t(group_fd_count_) != snap.group_size)
        return kAskTheMount;
      if (!readByRdpmc(members) && !readGroup(snap, members)) return kAskTheMount;
      member_count = snap.group_size;
    }
    // Every value first, so that nothing is filled when one cannot be had.
    bool all = true;
    for (size_t i = 0; i < n && all; ++i) {
      uint64_t v;
      all = fp::pmdValue(snap.pmds[where[key(vec, i).num]], members, member_count, &v);
    }
    if (!all) return kAskTheMount;  // a wrapped counter: its overflow is the daemon's
    // The counts belong to the copy only if the daemon published nothing since.
    if (__atomic_load_n(&shared->seq, __ATOMIC_ACQUIRE) != snap.seq) continue;
    for (size_t i = 0; i < n; ++i) {
      const fp::PmdEntry& e = snap.pmds[where[key(vec, i).num]];
      PmdValues v;
      fp::pmdValue(e, members, member_count, &v.value);
      v.last_reset = e.last_reset;
      v.switch_left = e.switch_left;
      put(vec, i, v);
    }
    return 0;
  }
  return kAskTheMount;
}

}  // namespace pfmcompat
