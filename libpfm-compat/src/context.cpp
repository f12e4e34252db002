// Context: helper files opened lazily with one compare-and-swap per cache
// entry, so two threads (or a thread and its own signal handler) racing to
// open the same file both end up using one descriptor and the loser closes
// its own.
#include "context.h"

#include <string.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "context_table.h"
#include "text_builder.h"

namespace pfmcompat {
namespace {

struct SetFileSpec {
  const char* name;
  int flags;
};
constexpr SetFileSpec kSetFiles[kSetFileCount] = {
    {"regs", O_RDWR},    // SetFile::Regs: vector writes, and PMC reads
    {"pmds", O_RDONLY},  // SetFile::Pmds: vector reads of PMDs
    {"info", O_RDONLY},  // SetFile::Info: runs, duration, timeout, masks
    {"switch", O_RDWR},  // SetFile::Switch: the set's switch rule
};

}  // namespace

void Context::init(int user_fd, int dir_fd, const char* name, dev_t dev, ino_t ino, uint32_t generation,
                   bool system_wide, bool fast_path, uint64_t smpl_buf_size) {
  user_fd_ = user_fd;
  dir_fd_ = dir_fd;
  strncpy(name_, name, sizeof name_ - 1);
  name_[sizeof name_ - 1] = '\0';
  dev_ = dev;
  ino_ = ino;
  generation_ = generation;
  system_wide_ = system_wide;
  smpl_buf_size_ = smpl_buf_size;
  loaded_.store(false, std::memory_order_relaxed);
  ctl_fd_.store(-1, std::memory_order_relaxed);
  for (auto& s : slots_) {
    s.set.store(-1, std::memory_order_relaxed);
    for (auto& f : s.fds) f.store(-1, std::memory_order_relaxed);
  }
  fast_.reset(fast_path);
  refs_.store(1, std::memory_order_release);  // the table's reference
}

FdLease Context::ctl() {
  int fd = ctl_fd_.load(std::memory_order_acquire);
  if (fd >= 0) return FdLease::cached(fd);
  int opened = openat(dir_fd_, "ctl", O_WRONLY | O_CLOEXEC);
  if (opened < 0) return FdLease::failed(errno);
  ContextTable::reclaim(opened);
  int expected = -1;
  if (ctl_fd_.compare_exchange_strong(expected, opened, std::memory_order_acq_rel)) return FdLease::cached(opened);
  close(opened);
  return FdLease::cached(expected);
}

Context::SetSlot* Context::findSlot(uint16_t set) {
  for (auto& s : slots_) {
    int32_t id = s.set.load(std::memory_order_acquire);
    if (id == set) return &s;
    if (id < 0) return nullptr;  // slots are claimed in order: the rest are free
  }
  return nullptr;
}

Context::SetSlot* Context::claimSlot(uint16_t set) {
  for (auto& s : slots_) {
    int32_t id = s.set.load(std::memory_order_acquire);
    if (id < 0) {
      int32_t expected = -1;
      if (s.set.compare_exchange_strong(expected, set, std::memory_order_acq_rel)) return &s;
      id = expected;
    }
    if (id == set) return &s;
  }
  return nullptr;
}

FdLease Context::setFile(uint16_t set, SetFile which) {
  const int w = int(which);
  SetSlot* slot = findSlot(set);
  if (slot) {
    int fd = slot->fds[w].load(std::memory_order_acquire);
    if (fd >= 0) return FdLease::cached(fd);
  }
  char path[32];
  TextBuilder p(path, sizeof path);
  p.add("sets/").dec(set).add('/').add(kSetFiles[w].name);
  int opened = openat(dir_fd_, path, kSetFiles[w].flags | O_CLOEXEC);
  if (opened < 0) return FdLease::failed(errno);
  ContextTable::reclaim(opened);
  // Only sets that exist take a cache entry: garbage set numbers cannot
  // fill the cache.
  if (!slot) slot = claimSlot(set);
  if (!slot) return FdLease::owned(opened);
  int expected = -1;
  if (slot->fds[w].compare_exchange_strong(expected, opened, std::memory_order_acq_rel)) return FdLease::cached(opened);
  close(opened);
  return FdLease::cached(expected);
}

FdLease Context::sessionFile(const char* name, int flags) const {
  int fd = openat(dir_fd_, name, flags | O_CLOEXEC);
  if (fd < 0) return FdLease::failed(errno);
  ContextTable::reclaim(fd);
  return FdLease::owned(fd);
}

bool Context::tryRef() {
  uint32_t r = refs_.load(std::memory_order_acquire);
  do {
    if (r == 0) return false;
  } while (!refs_.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel, std::memory_order_acquire));
  return true;
}

void Context::unref() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  retire();
  ContextTable::recycle(this);
}

void Context::retire() {
  int fd = ctl_fd_.exchange(-1, std::memory_order_acq_rel);
  if (fd >= 0) close(fd);
  for (auto& s : slots_) {
    for (auto& f : s.fds) {
      int old = f.exchange(-1, std::memory_order_acq_rel);
      if (old >= 0) close(old);
    }
    s.set.store(-1, std::memory_order_relaxed);
  }
  fast_.release();
  if (dir_fd_ >= 0) close(dir_fd_);
  dir_fd_ = -1;
  user_fd_ = -1;
}

}  // namespace pfmcompat
