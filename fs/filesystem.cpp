// The FUSE operations of pfmfs (see filesystem.h): node resolution, the
// permission checks the kernel cannot make, and the mapping of each file's
// reads and writes onto the engine. This file: the registry of sessions,
// autoclose, shutdown and the operations table; the rest is in
// filesystem_nodes.cpp, filesystem_tree.cpp and filesystem_io.cpp.
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

Filesystem::Filesystem(session::Engine& engine, FilesystemConfig config)
    : engine_(engine),
      desc_(engine.backend().description()),
      config_(config),
      manual_clock_(engine.backend().clock() == pmu::ClockKind::Manual),
      started_([] {
        struct timespec t {};
        clock_gettime(CLOCK_REALTIME, &t);
        return t;
      }()) {}

// Defined here, where OpenFile and OpenDir are complete for Handles to delete.
Filesystem::~Filesystem() = default;

std::size_t Filesystem::sessionCount() const {
  MutexLock lock(registry_mutex_);
  return registry_.size();
}

std::shared_ptr<SessionEntry> Filesystem::findEntry(std::string_view name) const {
  MutexLock lock(registry_mutex_);
  auto it = registry_.find(name);
  return it == registry_.end() ? nullptr : it->second;
}

void Filesystem::messagesQueued(Session& s) {
  auto e = findEntry(s.name());
  if (e && e->session.get() == &s) e->waiters->wake();
}

void Filesystem::threadExited(pid_t tid) {
  std::vector<std::shared_ptr<SessionEntry>> orphans;
  {
    MutexLock lock(registry_mutex_);
    for (const auto& [name, e] : registry_) {
      pid_t expected = tid;
      if (e->creator.compare_exchange_strong(expected, 0) && e->open_files == 0) orphans.push_back(e);
    }
  }
  for (const auto& e : orphans) {
    log(LogLevel::Debug, "session {}: its creating thread {} exited before opening it", e->session->name(), tid);
    autoclose(e);
  }
}

void Filesystem::autoclose(const std::shared_ptr<SessionEntry>& e) {
  std::string name = e->session->name();
  destroy(e);
  fuse_ino_t dir = e->dir_ino, sessions = sessions_ino_;
  if (sessions != 0) {
    inodes_.unlink(sessions, name);
    // Only name inodes the kernel still holds; otherwise dropping the entry is enough.
    // The kernel refuses to delete a directory whose children it still
    // caches (files looked up, a shell's cwd in sets/): forgetting the name
    // is what is left there, and the children go when the kernel drops them.
    // (Asked all the same, it answers ENOTEMPTY, which libfuse prints.)
    const bool deletable = dir != 0 && inodes_.lookupCount(dir) > 0 && !inodes_.hasChildren(dir);
    int rc = deletable ? fuse_lowlevel_notify_delete(se_, sessions, dir, name.data(), name.size())
                       : fuse_lowlevel_notify_inval_entry(se_, sessions, name.data(), name.size());
    if (rc == -ENOTEMPTY) rc = fuse_lowlevel_notify_inval_entry(se_, sessions, name.data(), name.size());
    if (rc != 0 && rc != -ENOENT && rc != -EBADF && rc != -ENODEV)
      logLimited(LogLevel::Warning, "autoclose of {}: kernel notification failed ({})", name, rc);
  }
}

void Filesystem::shutdown() {
  std::vector<std::shared_ptr<SessionEntry>> all;
  {
    MutexLock lock(registry_mutex_);
    for (const auto& [name, e] : registry_) all.push_back(e);
  }
  for (const auto& e : all) destroy(e);
}

// ---- the operations table ------------------------------------------------------------

namespace {

void opInit(void*, fuse_conn_info* conn) {
  // O_TRUNC arrives with open instead of as a separate setattr.
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  // Every write is one command: the kernel must not merge or split them.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
}

void opLookup(fuse_req_t req, fuse_ino_t parent, const char* name) { fsOf(req).lookup(req, parent, name); }
void opForget(fuse_req_t req, fuse_ino_t ino, std::uint64_t n) {
  fsOf(req).forget(ino, n);
  fuse_reply_none(req);
}
void opForgetMulti(fuse_req_t req, std::size_t count, fuse_forget_data* forgets) {
  for (std::size_t i = 0; i < count; ++i) fsOf(req).forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}
void opGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) { fsOf(req).getattr(req, ino); }
void opSetattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info*) {
  fsOf(req).setattr(req, ino, attr, to_set);
}
void opMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  fsOf(req).mkdir(req, parent, name, mode);
}
void opRmdir(fuse_req_t req, fuse_ino_t parent, const char* name) { fsOf(req).rmdir(req, parent, name); }
void opNotPermitted(fuse_req_t req) { fuse_reply_err(req, EPERM); }
void opMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { opNotPermitted(req); }
void opUnlink(fuse_req_t req, fuse_ino_t, const char*) { opNotPermitted(req); }
void opSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { opNotPermitted(req); }
void opRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) { opNotPermitted(req); }
void opLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { opNotPermitted(req); }
void opCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) { opNotPermitted(req); }
void opOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) { fsOf(req).open(req, ino, fi); }
void opRead(fuse_req_t req, fuse_ino_t ino, std::size_t size, off_t off, fuse_file_info* fi) {
  fsOf(req).read(req, ino, size, off, fi);
}
void opWrite(fuse_req_t req, fuse_ino_t ino, const char* buf, std::size_t size, off_t, fuse_file_info* fi) {
  fsOf(req).write(req, ino, buf, size, fi);
}
void opFlush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }
void opRelease(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) { fsOf(req).release(req, ino, fi); }
void opFsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(req, 0); }
void opOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) { fsOf(req).opendir(req, ino, fi); }
void opReaddir(fuse_req_t req, fuse_ino_t ino, std::size_t size, off_t off, fuse_file_info* fi) {
  fsOf(req).readdir(req, ino, size, off, fi);
}
void opReleasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) { fsOf(req).releasedir(req, ino, fi); }
void opPoll(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, fuse_pollhandle* ph) {
  fsOf(req).poll(req, ino, fi, ph);
}

fuse_lowlevel_ops makeOperations() {
  fuse_lowlevel_ops ops{};
  ops.init = opInit;
  ops.lookup = opLookup;
  ops.forget = opForget;
  ops.forget_multi = opForgetMulti;
  ops.getattr = opGetattr;
  ops.setattr = opSetattr;
  ops.mkdir = opMkdir;
  ops.rmdir = opRmdir;
  ops.mknod = opMknod;
  ops.unlink = opUnlink;
  ops.symlink = opSymlink;
  ops.rename = opRename;
  ops.link = opLink;
  ops.create = opCreate;
  ops.open = opOpen;
  ops.read = opRead;
  ops.write = opWrite;
  ops.flush = opFlush;
  ops.release = opRelease;
  ops.fsync = opFsync;
  ops.opendir = opOpendir;
  ops.readdir = opReaddir;
  ops.releasedir = opReleasedir;
  ops.poll = opPoll;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& Filesystem::operations() {
  static const fuse_lowlevel_ops ops = makeOperations();
  return ops;
}

}  // namespace pfmfs::fs
