// What the library keeps for one perfmon2 context (one session on the
// mount): the user's descriptor and its identity, the session directory, and
// helper files opened on first use and kept (ctl, and per set regs, pmds,
// info, switch), so that each call is one write or one read on the mount.
//
// Contexts are reference counted and recycled, never freed: a lookup racing
// with a drop may still touch the object (it then sees the count at zero or
// a different descriptor and backs off), and no lock is taken anywhere, so
// that every call is usable from a signal handler. See context_table.h.
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <atomic>

#include "fast_path.h"
#include "fd_lease.h"

namespace pfmcompat {

enum class SetFile : uint8_t { Regs, Pmds, Info, Switch };
constexpr int kSetFileCount = 4;

class Context {
 public:
  // Sets whose helper files are cached; beyond that a call opens and closes
  // its file each time (correct, only slower). The daemon's default limit is
  // 64 sets per session.
  static constexpr int kCachedSets = 64;

  // Called on a fresh or recycled object before it is published; the
  // context takes over dir_fd (O_PATH descriptor of the session directory).
  // fast_path: pfm_read_pmds may use the fast path (fast_path.h).
  // smpl_buf_size: the sampling format's buf_size, 0 without a format.
  void init(int user_fd, int dir_fd, const char* name, dev_t dev, ino_t ino, uint32_t generation, bool system_wide,
            bool fast_path, uint64_t smpl_buf_size);

  int userFd() const { return user_fd_; }
  int dirFd() const { return dir_fd_; }
  const char* name() const { return name_; }  // the session's, in sessions/
  uint32_t generation() const { return generation_; }
  bool systemWide() const { return system_wide_; }
  // The buf_size of the session's sampling buffer (pfm_create_context with
  // a format), which mmap of the descriptor maps; 0: no format.
  uint64_t smplBufSize() const { return smpl_buf_size_; }
  FastPath& fastPath() { return fast_; }
  // Whether the session was left loaded by this library (a load succeeded,
  // no unload since): a closed context that was may still hold its target
  // for the moment the daemon takes to see the close (ContextTable::sweep).
  void setLoaded(bool loaded) { loaded_.store(loaded, std::memory_order_relaxed); }
  bool wasLoaded() const { return loaded_.load(std::memory_order_relaxed); }
  // True when st describes the file this context was created on.
  bool sameFile(dev_t dev, ino_t ino) const { return dev == dev_ && ino == ino_; }

  // The session's ctl file (write only).
  FdLease ctl();
  // sets/SET/<file>; a failed open returns its errno (ENOENT: no such set).
  FdLease setFile(uint16_t set, SetFile which);
  // Any other file of the session, opened for this one use.
  FdLease sessionFile(const char* name, int flags) const;

  // References: the table holds one while the context is installed, each
  // call one while it runs. tryRef fails once the count has reached zero.
  bool tryRef();
  void unref();

  Context* next_free = nullptr;  // the recycling stack's link (context_table.cpp)

 private:
  struct SetSlot {
    std::atomic<int32_t> set{-1};  // set id, -1 while unused
    std::atomic<int> fds[kSetFileCount];
  };

  SetSlot* findSlot(uint16_t set);
  SetSlot* claimSlot(uint16_t set);
  // Closes every descriptor the context owns (the last reference is gone).
  void retire();

  std::atomic<uint32_t> refs_{0};
  int user_fd_ = -1;
  int dir_fd_ = -1;
  char name_[48] = {};  // pfm.PID.N
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  uint32_t generation_ = 0;
  bool system_wide_ = false;
  uint64_t smpl_buf_size_ = 0;
  std::atomic<bool> loaded_{false};
  std::atomic<int> ctl_fd_{-1};
  SetSlot slots_[kCachedSets];
  FastPath fast_;
};

}  // namespace pfmcompat
