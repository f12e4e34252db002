// The inodes the kernel knows: explicit numbers, what each names (a row of
// the tree, and the session, set or register its name picked), and the
// kernel's lookup count. A node lives while the kernel holds a lookup on it
// (forget lowers the count) and numbers are never reused, so a stale inode
// can never name a new object.
#pragma once

#include <fuse_lowlevel.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/mutex.h"
#include "fs/fast_page_map.h"
#include "fs/message_waiters.h"
#include "fs/tree_schema.h"
#include "session/session.h"

namespace pfmfs::fs {

// What the fs keeps for one live session, shared by its inodes and open files.
struct SessionEntry {
  explicit SessionEntry(std::shared_ptr<session::Session> s)
      : session(s), waiters(std::make_shared<MessageWaiters>(std::move(s))) {}
  // Normally destroy() has dropped the page; if not, the session must stop
  // publishing into it before it is unmapped.
  ~SessionEntry() {
    if (fast) session->setFastPage(nullptr);
  }
  std::shared_ptr<session::Session> session;
  std::shared_ptr<MessageWaiters> waiters;
  std::atomic<bool> alive{true};        // false once destroyed (rmdir, autoclose, shutdown)
  std::atomic<unsigned> open_files{0};  // handles open on its msg/messages files (autoclose)
  // mkdir with the sticky bit: the thread that made it, until a message file
  // is first opened; its exit before then destroys the session (0: none).
  std::atomic<pid_t> creator{0};
  std::atomic<fuse_ino_t> dir_ino{0};  // the session directory's inode, for invalidation
  // The fast path's page, made at its first request (Filesystem::fastPage)
  // and dropped by destroy. fast_mutex is taken before the session's lock.
  Mutex fast_mutex;
  std::optional<FastPageMap> fast GUARDED_BY(fast_mutex);
};

// One inode: a row of the tree (tree_schema.h) and what its name picked.
struct Node {
  fuse_ino_t ino = 0;
  fuse_ino_t parent = 0;
  NodeKind kind = NodeKind::Root;
  const TreeEntry* entry = nullptr;  // its row: mode, owner, how it reads and writes
  std::string name;
  bool pmd = false;  // a PMD's (pmu/desc/pmdN and its files, sets/N/pmdK), else a PMC's
  std::uint16_t set = 0;
  std::uint16_t reg = 0;
  std::shared_ptr<SessionEntry> session;  // session nodes and everything below

  bool isDir() const { return isDirectory(kind); }
};

using NodePtr = std::shared_ptr<const Node>;

// Thread-safe. Nothing is called while mutex_ is held except the `make`
// function given to lookup, which may take session and registry locks but
// must not call back in (filesystem.h has the lock order).
class InodeTable {
 public:
  InodeTable();  // with the root, FUSE_ROOT_ID, which is never forgotten

  NodePtr get(fuse_ino_t ino) const;
  // The node named `name` in `parent`, with one more lookup: the known one,
  // or a new one made by `make` (nullopt: no such entry, nothing counted).
  NodePtr lookup(fuse_ino_t parent, std::string_view name, const std::function<std::optional<Node>()>& make);
  // The kernel dropped `n` lookups. A count below zero is a bug: abort.
  void forget(fuse_ino_t ino, std::uint64_t n);
  // `name` left `parent` (rmdir, a destroyed session): a later lookup makes a
  // new node; the old one lives on until the kernel forgets it.
  void unlink(fuse_ino_t parent, std::string_view name);
  std::size_t size() const;
  std::uint64_t lookupCount(fuse_ino_t ino) const;  // 0 if unknown
  // Whether some name in `parent` maps to a node the kernel holds.
  bool hasChildren(fuse_ino_t parent) const;

 private:
  struct Slot {
    NodePtr node;
    std::uint64_t nlookup = 0;
    bool linked = true;  // (parent, name) still maps to it
  };
  mutable Mutex mutex_;
  std::map<fuse_ino_t, Slot> nodes_ GUARDED_BY(mutex_);
  std::map<std::pair<fuse_ino_t, std::string>, fuse_ino_t, std::less<>> names_ GUARDED_BY(mutex_);
  fuse_ino_t next_ino_ GUARDED_BY(mutex_) = FUSE_ROOT_ID + 1;
};

}  // namespace pfmfs::fs
