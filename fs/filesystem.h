// The pfmfs tree (pfmfs(5)) as libfuse low-level operations over the engine.
// Each operation finds its node in the inode table, checks who asks, calls
// the engine, and answers with exactly one reply; engine errors become that
// reply's errno here and nowhere else. Which files there are, their modes and
// what reading and writing each does are the rows of tree_schema.h: the
// operations walk them and know no file by name.
//
// Lock order (a lock may be taken while holding only locks above it):
//   1. MessageWaiters::mutex_   one session's kept reads and poll handles
//      InodeTable::mutex_       (a lookup makes nodes under it, asking the
//                               registry and a session which sets exist)
//      SessionEntry::fast_mutex one session's fast-path page
//   2. Session::mutex_          (the engine's, see session/engine.h)
//   3. leaves: Filesystem::registry_mutex_, the Handles mutexes,
//      ThreadWatcher::mutex_, the engine's leaves
// No fs lock is held while calling the engine except (1), and the engine
// calls messagesQueued() with none of its locks held.
// Every one of these is a pfmfs::Mutex (base/mutex.h) with the fields it
// guards declared, checked by clang's analysis; the order across objects of
// different classes is this comment's, and TSan's at run time.
#pragma once

#include <fuse_lowlevel.h>
#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "fs/inode_table.h"
#include "fs/text_format.h"
#include "fs/thread_watcher.h"
#include "fs/tree_context.h"
#include "session/engine.h"

namespace pfmfs::fs {

struct FilesystemConfig {
  bool allow_kernel = false;          // --allow-kernel: anyone may set the OS bit
  std::optional<gid_t> system_group;  // --system-group: who may load system-wide
};

class Filesystem final : public session::SessionObserver {
 public:
  Filesystem(session::Engine& engine, FilesystemConfig config);
  ~Filesystem() override;
  Filesystem(const Filesystem&) = delete;
  Filesystem& operator=(const Filesystem&) = delete;

  // The table to give fuse_session_new with `this` as userdata.
  static const fuse_lowlevel_ops& operations();
  void attach(fuse_session* se) { se_ = se; }
  void setWatcher(ThreadWatcher* watcher) { watcher_ = watcher; }
  // The fast-path socket for pmu/info (fastpath_server.h); set once, before
  // the mount serves.
  void setFastPathEndpoint(FastPathEndpoint e) { fastpath_ = std::move(e); }
  // Stops, unloads and destroys every session; answers every kept read.
  void shutdown();
  std::size_t sessionCount() const;
  // From the thread watcher: destroys the sessions made with the sticky bit
  // by `tid` that no message file was opened on yet.
  void threadExited(pid_t tid);

  // session::SessionObserver
  void messagesQueued(session::Session& session) override;

  // The fast path (fastpath_server.h), for a client of user `uid`: a new
  // descriptor of session `name`'s page, made at the first request, or of
  // every member of its perf group `id` (the leader first). Only the
  // session's owner and root: EACCES for anyone else, ENOENT for no such
  // session.
  Result<pmu::Fd> fastPage(uid_t uid, std::string_view name);
  Result<std::vector<pmu::Fd>> fastGroup(uid_t uid, std::string_view name, std::uint64_t id);
  // The sampling buffer's memfd (pfmfs(5), SAMPLING), for libpfm-compat's
  // mmap of a context: its owner and root only, as for the page.
  Result<pmu::Fd> sampleBuffer(uid_t uid, std::string_view name);

  // What the operations do; public for the trampolines in filesystem.cpp.
  struct OpenFile;
  struct OpenDir;
  void lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  void forget(fuse_ino_t ino, std::uint64_t n) { inodes_.forget(ino, n); }
  void getattr(fuse_req_t req, fuse_ino_t ino);
  void setattr(fuse_req_t req, fuse_ino_t ino, const struct stat* attr, int to_set);
  void mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  void rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void read(fuse_req_t req, fuse_ino_t ino, std::size_t size, off_t off, fuse_file_info* fi);
  void write(fuse_req_t req, fuse_ino_t ino, const char* buf, std::size_t size, fuse_file_info* fi);
  void release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void poll(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, fuse_pollhandle* ph);
  void opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void readdir(fuse_req_t req, fuse_ino_t ino, std::size_t size, off_t off, fuse_file_info* fi);
  void releasedir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);

 private:
  // What the functions of the tree's rows see (tree_context.h): engine,
  // PMU, settings, registry.
  friend class TreeContext;
  TreeContext tree() { return TreeContext(*this); }
  // The fast path (filesystem_fastpath.cpp).
  std::shared_ptr<SessionEntry> fastEntry(uid_t uid, std::string_view name, Error& why);
  void dropFastPage(SessionEntry& e);
  struct stat attrOf(const Node& n) const;
  bool mayUse(fuse_req_t req, const Node& n) const;  // owner or root, for session nodes
  session::Caller callerOf(fuse_req_t req, bool for_load) const;
  std::shared_ptr<SessionEntry> findEntry(std::string_view name) const;
  void destroy(const std::shared_ptr<SessionEntry>& e);
  void autoclose(const std::shared_ptr<SessionEntry>& e);  // destroy, and tell the kernel
  void replyEntry(fuse_req_t req, const NodePtr& n);

  session::Engine& engine_;
  const pmu::PmuDescription& desc_;
  const FilesystemConfig config_;
  FastPathEndpoint fastpath_;
  const bool manual_clock_;
  const struct timespec started_;
  fuse_session* se_ = nullptr;
  ThreadWatcher* watcher_ = nullptr;
  InodeTable inodes_;
  std::atomic<fuse_ino_t> sessions_ino_{0};  // sessions/, once the kernel looked it up

  // Open handles of one kind, so that those the kernel never releases (open
  // at exit) are freed with the filesystem. The mutex is a leaf.
  template <typename T>
  class Handles {
   public:
    ~Handles() {
      for (T* h : set_) delete h;
    }
    T* add(T* h) {
      MutexLock lock(mutex_);
      set_.insert(h);
      return h;
    }
    void remove(T* h) {  // and delete
      {
        MutexLock lock(mutex_);
        set_.erase(h);
      }
      delete h;
    }

   private:
    Mutex mutex_;
    std::unordered_set<T*> set_ GUARDED_BY(mutex_);
  };
  Handles<OpenFile> open_files_;
  Handles<OpenDir> open_dirs_;

  mutable Mutex registry_mutex_;  // a leaf
  std::map<std::string, std::shared_ptr<SessionEntry>, std::less<>> registry_ GUARDED_BY(registry_mutex_);
};

}  // namespace pfmfs::fs
