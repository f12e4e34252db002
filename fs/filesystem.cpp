// The FUSE operations of pfmfs (see filesystem.h): node resolution, the
// permission checks the kernel cannot make, and the mapping of each file's
// reads and writes onto the engine.
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
#include "fs/log.h"
#include "fs/text_format.h"

namespace pfmfs::fs {

using session::Session;

// One open regular file. Text files keep the snapshot taken by the read at
// offset 0, so a read in several pieces is consistent and every pread at 0
// is fresh.
struct Filesystem::OpenFile {
  NodePtr node;
  std::mutex mutex;  // guards text
  std::string text;
};

struct Filesystem::OpenDir {
  std::vector<std::pair<std::string, mode_t>> entries;  // taken at opendir
};

namespace {

Filesystem& fsOf(fuse_req_t req) { return *static_cast<Filesystem*>(fuse_req_userdata(req)); }

// How long the kernel may cache names and attributes. Nothing changes behind
// its back: entries go away by rmdir, which it sees, or by autoclose, which
// we tell it about (fuse_lowlevel_notify_delete).
constexpr double kCacheTimeout = 3600.0;

// The longest write taken (pfmfs(5) LIMITS): far above the longest `regs`
// of any PMU, below the smallest piece the kernel splits a write into (31
// pages of an unaligned buffer where it passes 32 pages at a time).
constexpr std::size_t kMaxWrite = 65536;

struct NameMode {
  const char* name;
  SessionFile file;
  mode_t mode;
};
constexpr NameMode kSessionFiles[] = {
    {"mode", SessionFile::Mode, 0600},       {"flags", SessionFile::Flags, 0600},
    {"ctl", SessionFile::Ctl, 0200},         {"state", SessionFile::State, 0400},
    {"error", SessionFile::Error, 0400},     {"counts", SessionFile::Counts, 0400},
    {"messages", SessionFile::Messages, 0400}, {"msg", SessionFile::Msg, 0400},
};

struct SetNameMode {
  const char* name;
  SetFile file;
  mode_t mode;
};
constexpr SetNameMode kSetFiles[] = {
    {"regs", SetFile::Regs, 0600},
    {"pmds", SetFile::Pmds, 0400},
    {"switch", SetFile::Switch, 0600},
    {"info", SetFile::Info, 0400},
};

struct DescNameMode {
  const char* name;
  DescField field;
};
constexpr DescNameMode kPmcFields[] = {
    {"name", DescField::Name}, {"addr", DescField::Addr}, {"dfl_val", DescField::DflVal}, {"rsvd_msk", DescField::RsvdMsk},
    {"pmds", DescField::Pmds}};
constexpr DescNameMode kPmdFields[] = {
    {"name", DescField::Name}, {"addr", DescField::Addr}, {"width", DescField::Width}, {"rsvd_msk", DescField::RsvdMsk}};

// "pmc12" -> 12; nullopt unless PREFIX followed by a canonical decimal.
std::optional<unsigned> indexAfter(std::string_view name, std::string_view prefix, unsigned max) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || v > max) return std::nullopt;
  return v;
}

mode_t fileMode(const Node& n) {
  switch (n.kind) {
    case NodeKind::Root:
    case NodeKind::PmuDir:
    case NodeKind::DescDir:
    case NodeKind::DescRegDir:
    case NodeKind::SimDir:
      return S_IFDIR | 0555;
    case NodeKind::SessionsDir:
      return S_IFDIR | 01777;  // anyone creates, only the owner removes
    case NodeKind::SessionDir:
    case NodeKind::SetsDir:
    case NodeKind::SetDir:
      return S_IFDIR | 0700;
    case NodeKind::SimAdvance:
      return S_IFREG | 0200;
    case NodeKind::SessionFile:
      for (const auto& f : kSessionFiles)
        if (f.file == n.sessionFile()) return S_IFREG | f.mode;
      return S_IFREG | 0400;
    case NodeKind::SetFile:
      if (n.setFile() == SetFile::Pmc || n.setFile() == SetFile::Pmd) return S_IFREG | 0600;
      for (const auto& f : kSetFiles)
        if (f.file == n.setFile()) return S_IFREG | f.mode;
      return S_IFREG | 0400;
    default:
      return S_IFREG | 0444;
  }
}

bool readable(const Node& n) { return (fileMode(n) & 0444) != 0; }
bool writable(const Node& n) { return (fileMode(n) & 0222) != 0; }
bool isMessageFile(const Node& n) {
  return n.kind == NodeKind::SessionFile &&
         (n.sessionFile() == SessionFile::Messages || n.sessionFile() == SessionFile::Msg);
}

Node makeNode(NodeKind kind, std::shared_ptr<SessionEntry> session = nullptr) {
  Node n;
  n.kind = kind;
  n.session = std::move(session);
  return n;
}

std::string hex(std::uint64_t v) { return fmt::format("0x{:x}\n", v); }

}  // namespace

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
  std::lock_guard lock(registry_mutex_);
  return registry_.size();
}

std::shared_ptr<SessionEntry> Filesystem::findEntry(std::string_view name) const {
  std::lock_guard lock(registry_mutex_);
  auto it = registry_.find(name);
  return it == registry_.end() ? nullptr : it->second;
}

void Filesystem::messagesQueued(Session& s) {
  auto e = findEntry(s.name());
  if (e && e->session.get() == &s) e->waiters->wake();
}

// ---- nodes and attributes ----------------------------------------------------

std::optional<Node> Filesystem::makeChild(const Node& parent, std::string_view name) {
  switch (parent.kind) {
    case NodeKind::Root:
      if (name == "version") return makeNode(NodeKind::Version);
      if (name == "pmu") return makeNode(NodeKind::PmuDir);
      if (name == "sessions") return makeNode(NodeKind::SessionsDir);
      return std::nullopt;
    case NodeKind::PmuDir:
      if (name == "info") return makeNode(NodeKind::PmuInfo);
      if (name == "events") return makeNode(NodeKind::PmuEvents);
      if (name == "desc") return makeNode(NodeKind::DescDir);
      if (name == "sim" && manual_clock_) return makeNode(NodeKind::SimDir);
      return std::nullopt;
    case NodeKind::SimDir:
      if (name == "advance") return makeNode(NodeKind::SimAdvance);
      return std::nullopt;
    case NodeKind::DescDir: {
      if (name == "model") return makeNode(NodeKind::DescModel);
      bool is_pmd = name.substr(0, 3) == "pmd";
      auto idx = indexAfter(name, is_pmd ? "pmd" : "pmc", 63);
      if (!idx || (is_pmd ? desc_.pmd(*idx) == nullptr : desc_.pmc(*idx) == nullptr)) return std::nullopt;
      Node n = makeNode(NodeKind::DescRegDir);
      n.pmd = is_pmd;
      n.reg = static_cast<std::uint16_t>(*idx);
      return n;
    }
    case NodeKind::DescRegDir:
      for (const auto& f : parent.pmd ? std::span<const DescNameMode>(kPmdFields) : std::span<const DescNameMode>(kPmcFields)) {
        if (name != f.name) continue;
        Node n = makeNode(NodeKind::DescField);
        n.pmd = parent.pmd;
        n.reg = parent.reg;
        n.field = static_cast<std::uint8_t>(f.field);
        return n;
      }
      return std::nullopt;
    case NodeKind::SessionsDir: {
      auto e = findEntry(name);
      if (!e) return std::nullopt;
      return makeNode(NodeKind::SessionDir, e);
    }
    case NodeKind::SessionDir:
      if (!parent.session->alive) return std::nullopt;
      if (name == "sets") return makeNode(NodeKind::SetsDir, parent.session);
      for (const auto& f : kSessionFiles) {
        if (name != f.name) continue;
        Node n = makeNode(NodeKind::SessionFile, parent.session);
        n.field = static_cast<std::uint8_t>(f.file);
        return n;
      }
      return std::nullopt;
    case NodeKind::SetsDir: {
      if (!parent.session->alive) return std::nullopt;
      auto id = indexAfter(name, "", 0xffff);
      if (!id) return std::nullopt;
      auto ids = parent.session->session->setIds();
      if (std::find(ids.begin(), ids.end(), *id) == ids.end()) return std::nullopt;
      Node n = makeNode(NodeKind::SetDir, parent.session);
      n.set = static_cast<std::uint16_t>(*id);
      return n;
    }
    case NodeKind::SetDir: {
      if (!parent.session->alive) return std::nullopt;
      Node n = makeNode(NodeKind::SetFile, parent.session);
      n.set = parent.set;
      for (const auto& f : kSetFiles) {
        if (name != f.name) continue;
        n.field = static_cast<std::uint8_t>(f.file);
        return n;
      }
      bool is_pmd = name.substr(0, 3) == "pmd";
      auto idx = indexAfter(name, is_pmd ? "pmd" : "pmc", 63);
      if (!idx || (is_pmd ? desc_.pmd(*idx) == nullptr : desc_.pmc(*idx) == nullptr)) return std::nullopt;
      n.field = static_cast<std::uint8_t>(is_pmd ? SetFile::Pmd : SetFile::Pmc);
      n.pmd = is_pmd;
      n.reg = static_cast<std::uint16_t>(*idx);
      return n;
    }
    default:
      return std::nullopt;
  }
}

struct stat Filesystem::attrOf(const Node& n) const {
  struct stat st {};
  st.st_ino = n.ino;
  st.st_mode = fileMode(n);
  st.st_nlink = n.isDir() ? 2 : 1;
  if (n.session) {
    st.st_uid = n.session->session->uid();
    st.st_gid = n.session->session->gid();
  }
  st.st_blksize = 4096;
  st.st_atim = st.st_mtim = st.st_ctim = started_;
  return st;
}

void Filesystem::replyEntry(fuse_req_t req, const NodePtr& n) {
  fuse_entry_param e{};
  e.ino = n->ino;
  e.attr = attrOf(*n);
  e.attr_timeout = kCacheTimeout;
  e.entry_timeout = kCacheTimeout;
  if (fuse_reply_entry(req, &e) != 0) inodes_.forget(n->ino, 1);  // the kernel never got it
}

bool Filesystem::mayUse(fuse_req_t req, const Node& n) const {
  if (!n.session) return true;
  uid_t uid = fuse_req_ctx(req)->uid;
  return uid == 0 || uid == n.session->session->uid();
}

session::Caller Filesystem::callerOf(fuse_req_t req, bool for_load) const {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  session::Caller c{ctx->uid, ctx->gid, ctx->pid, false, false, false};
  bool root = ctx->uid == 0;
  c.may_count_kernel = root || config_.allow_kernel;
  if (!for_load) return c;
  c.may_monitor_any_thread = root || processHasCapability(ctx->pid, CAP_SYS_PTRACE);
  c.may_system_wide = root;
  if (!root && config_.system_group) {
    if (ctx->gid == *config_.system_group) {
      c.may_system_wide = true;
    } else {
      gid_t groups[256];
      int n = fuse_req_getgroups(req, 256, groups);
      for (int i = 0; i < std::min(n, 256); ++i)
        if (groups[i] == *config_.system_group) c.may_system_wide = true;
    }
  }
  return c;
}

// ---- operations ------------------------------------------------------------------

void Filesystem::lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr p = inodes_.get(parent);
  if (!p) return (void)fuse_reply_err(req, ENOENT);
  if (!p->isDir()) return (void)fuse_reply_err(req, ENOTDIR);
  if (p->session && !mayUse(req, *p)) return (void)fuse_reply_err(req, EACCES);
  NodePtr n = inodes_.lookup(parent, name, [&] { return makeChild(*p, name); });
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
  constexpr int kHarmless = FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
                            FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
  if ((to_set & ~kHarmless) != 0) return (void)fuse_reply_err(req, EPERM);
  if ((to_set & FUSE_SET_ATTR_SIZE) && !writable(*n)) return (void)fuse_reply_err(req, EACCES);
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
      std::lock_guard lock(registry_mutex_);
      registry_[name] = entry;
    }
    NodePtr n = inodes_.lookup(parent, name, [&] { return makeNode(NodeKind::SessionDir, entry); });
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
    NodePtr n = inodes_.lookup(parent, name, [&] { return makeChild(*p, name); });
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
  NodePtr child = inodes_.lookup(parent, name, [&] { return makeChild(*p, name); });
  if (!child) return (void)fuse_reply_err(req, ENOENT);
  bool dir = child->isDir();
  inodes_.forget(child->ino, 1);
  fuse_reply_err(req, dir ? EPERM : ENOTDIR);
}

void Filesystem::destroy(const std::shared_ptr<SessionEntry>& e) {
  if (e->alive.exchange(false) == false) return;
  {
    std::lock_guard lock(registry_mutex_);
    auto it = registry_.find(e->session->name());
    if (it != registry_.end() && it->second == e) registry_.erase(it);
  }
  auto target = e->session->loadedTarget();
  if (Status st = engine_.destroySession(e->session->name()); !st)
    log(LogLevel::Warning, "destroying session {}: {}", e->session->name(), st.error().reason);
  if (target && target->kind == pmu::TargetKind::Thread && watcher_) watcher_->unwatch(target->id);
  e->waiters->close();
  log(LogLevel::Debug, "session {} destroyed", e->session->name());
}

void Filesystem::open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->isDir()) return (void)fuse_reply_err(req, EISDIR);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  if (n->session && !n->session->alive) return (void)fuse_reply_err(req, ENOENT);
  int acc = fi->flags & O_ACCMODE;
  // Root passes the kernel's mode-bit checks; the file's nature does not change for it.
  if ((acc != O_WRONLY && !readable(*n)) || (acc != O_RDONLY && !writable(*n)))
    return (void)fuse_reply_err(req, EACCES);
  if (n->kind == NodeKind::SimAdvance && fuse_req_ctx(req)->uid != 0) return (void)fuse_reply_err(req, EACCES);
  auto* of = open_files_.add(new OpenFile{n, {}, {}});
  fi->fh = reinterpret_cast<std::uint64_t>(of);
  fi->direct_io = 1;  // content changes: no page cache, sizes do not matter
  if (isMessageFile(*n)) fi->nonseekable = 1;
  const bool counted = isMessageFile(*n);
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
  if (e && isMessageFile(*of->node)) e->waiters->forgetFile(of);
  const bool counted = e && isMessageFile(*of->node);
  open_files_.remove(of);
  fuse_reply_err(req, 0);
  if (!counted || --e->open_files != 0 || !e->alive || !e->session->flags().autoclose) return;
  // autoclose: the last handle on its message files closed (libpfm-compat's descriptor).
  autoclose(e);
}

void Filesystem::threadExited(pid_t tid) {
  std::vector<std::shared_ptr<SessionEntry>> orphans;
  {
    std::lock_guard lock(registry_mutex_);
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
    int rc = dir != 0 && inodes_.lookupCount(dir) > 0
                 ? fuse_lowlevel_notify_delete(se_, sessions, dir, name.data(), name.size())
                 : fuse_lowlevel_notify_inval_entry(se_, sessions, name.data(), name.size());
    if (rc != 0 && rc != -ENOENT && rc != -EBADF && rc != -ENODEV)
      log(LogLevel::Warning, "autoclose of {}: kernel notification failed ({})", name, rc);
  }
}

Result<std::string> Filesystem::render(const Node& n) {
  switch (n.kind) {
    case NodeKind::Version: return formatVersion();
    case NodeKind::PmuInfo: return formatPmuInfo(engine_.backend());
    case NodeKind::PmuEvents: return formatEvents(desc_);
    case NodeKind::DescModel: return desc_.model + "\n";
    case NodeKind::DescField: {
      if (n.pmd) {
        const pmu::PmdDesc* d = desc_.pmd(n.reg);
        switch (n.descField()) {
          case DescField::Name: return d->name + "\n";
          case DescField::Addr: return hex(d->addr);
          case DescField::Width: return fmt::format("{}\n", d->width);
          case DescField::RsvdMsk: return hex(0);  // every bit of a counter is writable
          case DescField::DflVal:
          case DescField::Pmds: break;
        }
      } else {
        const pmu::PmcDesc* d = desc_.pmc(n.reg);
        switch (n.descField()) {
          case DescField::Name: return d->name + "\n";
          case DescField::Addr: return hex(d->addr);
          case DescField::DflVal: return hex(d->dfl_val);
          case DescField::RsvdMsk: return hex(d->rsvd_mask);
          case DescField::Pmds: {
            // The counters this PMC configures (libpfm-compat's dispatch needs it).
            pmu::RegMask m = 0;
            for (const auto& pmd : desc_.pmds)
              if (pmd.ctl_pmc == d->index) m |= pmu::RegMask{1} << pmd.index;
            return hex(m);
          }
          case DescField::Width: break;
        }
      }
      return err(ENOENT, "no such field");
    }
    case NodeKind::SessionFile: {
      Session& s = *n.session->session;
      switch (n.sessionFile()) {
        case SessionFile::Mode: return formatMode(s.mode());
        case SessionFile::Flags: return formatFlags(s.flags());
        case SessionFile::State: return formatState(s.state());
        case SessionFile::Error: {
          std::string e = s.error();
          return e.empty() ? e : e + "\n";
        }
        case SessionFile::Counts: return formatCounts(s.counts());
        default: break;
      }
      return err(EACCES, "not readable");
    }
    case NodeKind::SetFile: {
      Session& s = *n.session->session;
      switch (n.setFile()) {
        case SetFile::Pmc: {
          auto v = s.readPmc(n.set, n.reg);
          if (!v) return v.error();
          return formatPmc(*v);
        }
        case SetFile::Pmd: {
          auto v = s.readPmd(n.set, n.reg);
          if (!v) return v.error();
          return formatPmd(v->value);
        }
        case SetFile::Regs: {
          auto v = s.regs(n.set);
          if (!v) return v.error();
          return formatRegs(*v);
        }
        case SetFile::Pmds: {
          auto v = s.pmdStates(n.set);
          if (!v) return v.error();
          return formatPmdStates(*v);
        }
        case SetFile::Switch: {
          auto v = s.setInfo(n.set);
          if (!v) return v.error();
          return formatSwitch(v->switch_spec);
        }
        case SetFile::Info: {
          auto v = s.setInfo(n.set);
          if (!v) return v.error();
          return formatSetInfo(*v);
        }
      }
      return err(ENOENT, "no such file");
    }
    default:
      return err(EACCES, "not readable");
  }
}

void Filesystem::read(fuse_req_t req, fuse_ino_t, std::size_t size, off_t off, fuse_file_info* fi) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  const Node& n = *of->node;
  if (n.session && !n.session->alive && !isMessageFile(n)) return (void)fuse_reply_err(req, ENOENT);
  if (isMessageFile(n)) {
    bool binary = n.sessionFile() == SessionFile::Msg;
    return n.session->waiters->read(req, size, binary, (fi->flags & O_NONBLOCK) != 0);
  }
  // The reply is sent after the handle is let go of: once the kernel has it,
  // the reader may close, and the release may free `of` on another thread.
  // An error reply too: replying under of->mutex let a release free the
  // mutex before its unlock (seen under TSan in the storm test).
  std::string chunk;
  int error = 0;
  {
    std::lock_guard lock(of->mutex);
    if (off == 0) {
      auto text = render(n);
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
  Status st = writeTo(req, n, std::string_view(buf, size));
  if (!st) {
    log(LogLevel::Debug, "write {}: {}", n.name, st.error().reason);
    return (void)fuse_reply_err(req, -st.code());
  }
  fuse_reply_write(req, size);
}

Status Filesystem::writeTo(fuse_req_t req, const Node& n, std::string_view text) {
  if (n.kind == NodeKind::SimAdvance) {
    auto ns = parseAdvance(text);
    if (!ns) return ns.error();
    return engine_.advanceManualClock(*ns);
  }
  if (!n.session) return err(EACCES, "read-only file");
  Session& s = *n.session->session;
  if (n.kind == NodeKind::SessionFile) {
    switch (n.sessionFile()) {
      case SessionFile::Mode: {
        auto m = parseMode(text);
        return m ? s.setMode(*m) : s.refuse(m.error());
      }
      case SessionFile::Flags: {
        auto f = parseFlags(text);
        return f ? s.setFlags(*f) : s.refuse(f.error());
      }
      case SessionFile::Ctl:
        return control(req, *n.session, text);
      default:
        return err(EACCES, "read-only file");
    }
  }
  if (n.kind != NodeKind::SetFile) return err(EACCES, "read-only file");
  switch (n.setFile()) {
    case SetFile::Pmc: {
      auto w = parsePmcWrite(desc_, n.reg, text);
      return w ? s.writePmc(callerOf(req, false), n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Pmd: {
      auto w = parsePmdWrite(n.reg, text);
      return w ? s.writePmd(n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Regs: {
      auto w = parseRegs(desc_, text);
      return w ? s.writeRegs(callerOf(req, false), n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Switch: {
      auto w = parseSwitch(text);
      return w ? s.setSwitch(n.set, *w) : s.refuse(w.error());
    }
    case SetFile::Pmds:
    case SetFile::Info:
      break;
  }
  return err(EACCES, "read-only file");
}

Status Filesystem::control(fuse_req_t req, SessionEntry& e, std::string_view text) {
  Session& s = *e.session;
  auto cmd = parseCtl(text);
  if (!cmd) return s.refuse(cmd.error());
  using Kind = CtlCommand::Kind;
  switch (cmd->kind) {
    case Kind::Load: {
      Status st = s.load(callerOf(req, true), cmd->target, cmd->set);
      if (st && s.mode() == session::Mode::Thread && watcher_) watcher_->watch(cmd->target);
      return st;
    }
    case Kind::Start: return s.start(cmd->set);
    case Kind::Stop: return s.stop();
    case Kind::Restart: return s.restart();
    case Kind::Unload: {
      auto target = s.loadedTarget();
      Status st = s.unload();
      if (st && target && target->kind == pmu::TargetKind::Thread && watcher_) watcher_->unwatch(target->id);
      return st;
    }
  }
  return s.refuse(err(EINVAL, "unknown command"));
}

void Filesystem::poll(fuse_req_t req, fuse_ino_t, fuse_file_info* fi, fuse_pollhandle* ph) {
  auto* of = reinterpret_cast<OpenFile*>(fi->fh);
  if (!isMessageFile(*of->node)) {
    // Other files are always ready, as regular files are.
    if (ph) fuse_pollhandle_destroy(ph);
    return (void)fuse_reply_poll(req, POLLIN | POLLOUT);
  }
  fuse_reply_poll(req, of->node->session->waiters->poll(of, ph));
}

void Filesystem::opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr n = inodes_.get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (!n->isDir()) return (void)fuse_reply_err(req, ENOTDIR);
  if (!mayUse(req, *n)) return (void)fuse_reply_err(req, EACCES);
  if (n->session && !n->session->alive) return (void)fuse_reply_err(req, ENOENT);
  auto* d = open_dirs_.add(new OpenDir);
  auto add = [&](std::string name, mode_t mode) { d->entries.emplace_back(std::move(name), mode); };
  add(".", S_IFDIR);
  add("..", S_IFDIR);
  switch (n->kind) {
    case NodeKind::Root:
      add("version", S_IFREG);
      add("pmu", S_IFDIR);
      add("sessions", S_IFDIR);
      break;
    case NodeKind::PmuDir:
      add("info", S_IFREG);
      add("events", S_IFREG);
      add("desc", S_IFDIR);
      if (manual_clock_) add("sim", S_IFDIR);
      break;
    case NodeKind::SimDir:
      add("advance", S_IFREG);
      break;
    case NodeKind::DescDir:
      add("model", S_IFREG);
      for (const auto& pmc : desc_.pmcs) add(fmt::format("pmc{}", pmc.index), S_IFDIR);
      for (const auto& pmd : desc_.pmds) add(fmt::format("pmd{}", pmd.index), S_IFDIR);
      break;
    case NodeKind::DescRegDir:
      for (const auto& f : n->pmd ? std::span<const DescNameMode>(kPmdFields) : std::span<const DescNameMode>(kPmcFields))
        add(f.name, S_IFREG);
      break;
    case NodeKind::SessionsDir: {
      std::lock_guard lock(registry_mutex_);
      for (const auto& [name, e] : registry_) add(name, S_IFDIR);
      break;
    }
    case NodeKind::SessionDir:
      for (const auto& f : kSessionFiles) add(f.name, S_IFREG);
      add("sets", S_IFDIR);
      break;
    case NodeKind::SetsDir:
      for (auto id : n->session->session->setIds()) add(std::to_string(id), S_IFDIR);
      break;
    case NodeKind::SetDir:
      for (const auto& pmc : desc_.pmcs) add(fmt::format("pmc{}", pmc.index), S_IFREG);
      for (const auto& pmd : desc_.pmds) add(fmt::format("pmd{}", pmd.index), S_IFREG);
      for (const auto& f : kSetFiles) add(f.name, S_IFREG);
      break;
    default:
      break;
  }
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

void Filesystem::shutdown() {
  std::vector<std::shared_ptr<SessionEntry>> all;
  {
    std::lock_guard lock(registry_mutex_);
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
void opMkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) { fsOf(req).mkdir(req, parent, name, mode); }
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
