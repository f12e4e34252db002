// Filesystem's file operations: open and release, reads and writes, and
// poll. What a read of each file shows and what a write does are the
// functions its row of the tree names (tree_schema.h, tree_files.cpp).
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

void Filesystem::open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->isDir()) return (void)fuse_reply_err(req, EISDIR);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  if (n->session && !n->session->alive) return (void)fuse_reply_err(req, ENOENT);
  int acc = fi->flags & O_ACCMODE;
  // Root passes the kernel's mode-bit checks; the file's nature does not change for it.
  const TreeEntry& row = *n->entry;
  if ((acc != O_WRONLY && !row.readable()) || (acc != O_RDONLY && !row.writable()))
    return (void)fuse_reply_err(req, EACCES);
  if ((row.rules & kRootOnly) && fuse_req_ctx(req)->uid != 0) return (void)fuse_reply_err(req, EACCES);
  auto* of = open_files_.add(new OpenFile{n, {}, {}, {}});
  if (acc != O_RDONLY && (row.rules & kOpenerRights)) of->opener = callerOf(req, true);
  fi->fh = reinterpret_cast<std::uint64_t>(of);
  fi->direct_io = 1;  // content changes: no page cache, sizes do not matter
  if (row.messageFile()) fi->nonseekable = 1;
  const bool counted = row.messageFile();
  if (counted) ++n->session->open_files;
  if (fuse_reply_open(req, fi) != 0) {
    if (counted) --n->session->open_files;
    open_files_.remove(of);
    return;
  }
  // The first message file open: the session now lives as long as its handles.
  if (counted)
    if (pid_t c = n->session->creator.exchange(0); c != 0 && watcher_) watcher_->unwatch(c);
}

void Filesystem::release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  std::shared_ptr<SessionEntry> e = of->node->session;
  const bool counted = e && of->node->entry->messageFile();
  if (counted) e->waiters->forgetFile(of);
  open_files_.remove(of);
  fuse_reply_err(req, 0);
  if (!counted || --e->open_files != 0 || !e->alive || !e->session->flags().autoclose) return;
  // autoclose: the last handle on its message files closed (libpfm-compat's descriptor).
  autoclose(e);
}

void Filesystem::read(fuse_req_t req, fuse_ino_t, std::size_t size, off_t off, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  const Node& n = *of->node;
  const TreeEntry& row = *n.entry;
  if (n.session && !n.session->alive && !row.messageFile()) return (void)fuse_reply_err(req, ENOENT);
  if (row.messageFile()) {
    bool binary = (row.rules & kMessageRecords) != 0;
    return n.session->waiters->read(req, size, binary, (fi->flags & O_NONBLOCK) != 0);
  }
  // The reply is sent after the handle is let go of: once the kernel has it,
  // the reader may close, and the release may free `of` on another thread.
  // An error reply too: replying under of->mutex let a release free the
  // mutex before its unlock (seen under TSan in the storm test).
  std::string chunk;
  int error = 0;
  {
    MutexLock lock(of->mutex);
    if (off == 0) {
      auto text = row.render ? row.render(tree(), n) : Result<std::string>(err(EACCES, "not readable"));
      if (text) {
        of->text = std::move(*text);
      } else {
        error = -text.code();
      }
    }
    if (!error && off >= 0 && static_cast<std::size_t>(off) < of->text.size())
      chunk = of->text.substr(static_cast<std::size_t>(off), size);
  }
  if (error) return (void)fuse_reply_err(req, error);
  fuse_reply_buf(req, chunk.data(), chunk.size());
}

void Filesystem::write(fuse_req_t req, fuse_ino_t, const char* buf, std::size_t size, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  const Node& n = *of->node;
  if (n.session && !n.session->alive) return (void)fuse_reply_err(req, ENOENT);
  // The kernel hands a write longer than its max_write (about 1 MiB, less
  // when the buffer is not page-aligned) over in pieces, each a write of its
  // own: of a value padded with blanks the first piece was taken and the
  // rest refused, a partial write that pfmfs(5) says never happens. No value
  // or command comes near kMaxWrite and a first piece is always longer, so
  // such a write is refused at its first piece, and the kernel sends no more.
  if (size > kMaxWrite) {
    Error e = err(EINVAL, "write of {} bytes or more: a value or command is at most {} bytes", size, kMaxWrite);
    if (n.session) (void)n.session->session->refuse(e);
    log(LogLevel::Debug, "write {}: {}", n.name, e.reason);
    return (void)fuse_reply_err(req, EINVAL);
  }
  const TreeEntry& row = *n.entry;
  Status st =
      row.write ? row.write(tree(), n, of->opener, std::string_view(buf, size)) : Status(err(EACCES, "read-only file"));
  // Pollers hear of every message queued before this write (by the ticker,
  // say) before the writer hears of its end: libpfm-compat's pfm_stop relies
  // on it to send a notification's signal before it returns.
  if (n.session) n.session->session->awaitNotifications();
  if (!st) {
    log(LogLevel::Debug, "write {}: {}", n.name, st.error().reason);
    return (void)fuse_reply_err(req, -st.code());
  }
  fuse_reply_write(req, size);
}

void Filesystem::poll(fuse_req_t req, fuse_ino_t, fuse_file_info* fi, fuse_pollhandle* ph) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  if (!of->node->entry->messageFile()) {
    // Other files are always ready, as regular files are.
    if (ph) fuse_pollhandle_destroy(ph);
    return (void)fuse_reply_poll(req, POLLIN | POLLOUT);
  }
  fuse_reply_poll(req, of->node->session->waiters->poll(of, ph));
}

}  // namespace pfmfs::fs
