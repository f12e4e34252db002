// Filesystem's tree operations: lookup, attributes, mkdir and rmdir of
// sessions and sets (and a session's destruction), and directory listings.
// Lookup and listings walk the rows of the tree (tree_schema.h).
#include "fs/filesystem.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <span>
#include <vector>

#include "fs/capabilities.h"
#include "fs/filesystem_internal.h"
#include "fs/log.h"
#include "fs/text_format.h"

namespace pfmfs::fs {

using session::Session;
using namespace detail;

// ---- operations ------------------------------------------------------------------

void Filesystem::lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr p = inodes_.get(parent);
  if (!p) return (void)fuse_reply_err(req, ENOENT);
  if (!p->isDir()) return (void)fuse_reply_err(req, ENOTDIR);
  if (p->session && !mayUse(req, *p)) return (void)fuse_reply_err(req, EACCES);
  NodePtr n = inodes_.lookup(parent, name, [&] { return childOf(tree(), *p, name); });
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  // A known name may outlive what it named (a set deleted while the kernel
  // still caches it is unlinked, so this is only a session gone by
  // autoclose before the kernel heard).
  if (n->session && !n->session->alive && n->kind != NodeKind::SessionDir) {
    inodes_.forget(n->ino, 1);
    return (void)fuse_reply_err(req, ENOENT);
  }
  if (n->kind == NodeKind::SessionsDir) sessions_ino_ = n->ino;
  replyEntry(req, n);
}

void Filesystem::getattr(fuse_req_t req, fuse_ino_t ino) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  struct stat st = attrOf(*n);
  fuse_reply_attr(req, &st, kCacheTimeout);
}

void Filesystem::setattr(fuse_req_t req, fuse_ino_t ino, const struct stat*, int to_set) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  // Truncating a writable file is what a shell's `>` does before writing:
  // harmless, since every write is a whole value. Nothing else changes.
  constexpr int kHarmless = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_ATIME_NOW |
                            FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
  if ((to_set & ~kHarmless) != 0) return (void)fuse_reply_err(req, EPERM);
  if ((to_set & FUSE_SET_ATTR_SIZE) && !n->entry->writable()) return (void)fuse_reply_err(req, EACCES);
  struct stat st = attrOf(*n);
  fuse_reply_attr(req, &st, kCacheTimeout);
}

void Filesystem::mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  NodePtr p = inodes_.get(parent);
  if (!p) return (void)fuse_reply_err(req, ENOENT);
  if (p->kind == NodeKind::SessionsDir) {
    auto created = engine_.createSession(callerOf(req, false), name);
    if (!created) {
      log(LogLevel::Debug, "mkdir sessions/{}: {}", printable(name), created.error().reason);
      return (void)fuse_reply_err(req, -created.code());
    }
    auto entry = std::make_shared<SessionEntry>(*created);
    // The sticky bit asks for a session that cannot outlive its maker
    // (libpfm-compat): autoclose from birth, and bound to the creating thread
    // until a message file is opened, so that no kill between this mkdir and
    // that open leaves it behind.
    pid_t creator = (mode & S_ISVTX) && watcher_ ? fuse_req_ctx(req)->pid : 0;
    if (creator != 0) {
      session::Flags f;
      f.autoclose = true;
      (void)(*created)->setFlags(f);
      entry->creator = creator;
    }
    {
      MutexLock lock(registry_mutex_);
      registry_[name] = entry;
    }
    NodePtr n = inodes_.lookup(parent, name, [&] { return makeNode(rowOf(NodeKind::SessionDir), entry); });
    entry->dir_ino = n->ino;
    log(LogLevel::Debug, "session {} created by uid {}", name, fuse_req_ctx(req)->uid);
    replyEntry(req, n);
    // After the reply: a creator already gone is reported from watch() itself.
    if (creator != 0) watcher_->watch(creator);
    return;
  }
  if (p->kind == NodeKind::SetsDir) {
    if (!mayUse(req, *p)) return (void)fuse_reply_err(req, EACCES);
    Session& s = *p->session->session;
    auto id = indexAfter(name, "", 0xffff);
    if (!id) {
      Status st = s.refuse(err(EINVAL, "set name '{}': sets are named 0..65535 in plain decimal", printable(name)));
      return (void)fuse_reply_err(req, -st.code());
    }
    if (Status st = s.createSet(*id); !st) return (void)fuse_reply_err(req, -st.code());
    NodePtr n = inodes_.lookup(parent, name, [&] { return childOf(tree(), *p, name); });
    if (!n) return (void)fuse_reply_err(req, ENOENT);  // deleted at once by someone else
    return replyEntry(req, n);
  }
  fuse_reply_err(req, EPERM);
}

void Filesystem::rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr p = inodes_.get(parent);
  if (!p) return (void)fuse_reply_err(req, ENOENT);
  if (p->kind == NodeKind::SessionsDir) {
    auto e = findEntry(name);
    if (!e) return (void)fuse_reply_err(req, ENOENT);
    uid_t uid = fuse_req_ctx(req)->uid;
    if (uid != 0 && uid != e->session->uid()) return (void)fuse_reply_err(req, EPERM);
    destroy(e);
    inodes_.unlink(parent, name);
    return (void)fuse_reply_err(req, 0);
  }
  if (p->kind == NodeKind::SetsDir) {
    if (!mayUse(req, *p)) return (void)fuse_reply_err(req, EACCES);
    Session& s = *p->session->session;
    auto id = indexAfter(name, "", 0xffff);
    auto ids = s.setIds();
    if (!id || std::find(ids.begin(), ids.end(), *id) == ids.end()) return (void)fuse_reply_err(req, ENOENT);
    if (Status st = s.deleteSet(*id); !st) return (void)fuse_reply_err(req, -st.code());
    inodes_.unlink(parent, name);
    return (void)fuse_reply_err(req, 0);
  }
  NodePtr child = inodes_.lookup(parent, name, [&] { return childOf(tree(), *p, name); });
  if (!child) return (void)fuse_reply_err(req, ENOENT);
  bool dir = child->isDir();
  inodes_.forget(child->ino, 1);
  fuse_reply_err(req, dir ? EPERM : ENOTDIR);
}

void Filesystem::destroy(const std::shared_ptr<SessionEntry>& e) {
  if (e->alive.exchange(false) == false) return;
  {
    MutexLock lock(registry_mutex_);
    auto it = registry_.find(e->session->name());
    if (it != registry_.end() && it->second == e) registry_.erase(it);
  }
  auto target = e->session->loadedTarget();
  if (Status st = engine_.destroySession(e->session->name()); !st)
    logLimited(LogLevel::Warning, "destroying session {}: {}", e->session->name(), st.error().reason);
  if (target && target->kind == pmu::TargetKind::Thread && watcher_) watcher_->unwatch(target->id);
  dropFastPage(*e);
  e->waiters->close();
  log(LogLevel::Debug, "session {} destroyed", e->session->name());
}

void Filesystem::opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (!n->isDir()) return (void)fuse_reply_err(req, ENOTDIR);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  if (n->session && !n->session->alive) return (void)fuse_reply_err(req, ENOENT);
  auto* d = open_dirs_.add(new OpenDir);
  d->entries.emplace_back(".", S_IFDIR);
  d->entries.emplace_back("..", S_IFDIR);
  for (auto& entry : childrenOf(tree(), *n, fuse_req_ctx(req)->uid)) d->entries.push_back(std::move(entry));
  fi->fh = reinterpret_cast<std::uint64_t>(d);
  if (fuse_reply_open(req, fi) != 0) open_dirs_.remove(d);
}

void Filesystem::readdir(fuse_req_t req, fuse_ino_t, std::size_t size, off_t off, fuse_file_info* fi) {
  auto* d = reinterpret_cast<OpenDir*>(fi->fh);
  std::vector<char> buf(size);
  std::size_t used = 0;
  for (std::size_t i = static_cast<std::size_t>(std::max<off_t>(off, 0)); i < d->entries.size(); ++i) {
    struct stat st {};
    // Listing numbers: informative only (lookup assigns the real ones), and
    // never 0, which some programs take for a deleted entry.
    st.st_ino = 0x8000000000000000ULL | (i + 1);
    st.st_mode = d->entries[i].second;
    std::size_t want = fuse_add_direntry(req, buf.data() + used, size - used, d->entries[i].first.c_str(), &st,
                                         static_cast<off_t>(i + 1));
    if (want > size - used) break;
    used += want;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void Filesystem::releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  open_dirs_.remove(reinterpret_cast<OpenDir*>(fi->fh));
  fuse_reply_err(req, 0);
}

}  // namespace pfmfs::fs
