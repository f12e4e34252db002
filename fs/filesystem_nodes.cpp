// Filesystem's nodes (see filesystem.h): which names a directory has, their
// attributes and modes, and the permission checks the kernel cannot make.
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
#include "pmu/task_creds.h"

namespace pfmfs::fs {

using session::Session;
using namespace detail;

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
      for (const auto& f :
           parent.pmd ? std::span<const DescNameMode>(kPmdFields) : std::span<const DescNameMode>(kPmcFields)) {
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
  // The kernel's rules read the caller's real ids and its capabilities, not
  // the filesystem ids FUSE gives nor whether it is uid 0 (a root service
  // may run without capabilities), and capabilities only where they count:
  // in pfmfsd's user namespace. A caller that cannot be read is gone (it
  // waits in this request while alive): it gets ids that match nothing and
  // no privilege.
  c.real_uid = static_cast<uid_t>(-1);
  c.real_gid = static_cast<gid_t>(-1);
  c.in_daemon_pid_ns = false;
  bool perfmon = false;  // the kernel's perfmon_capable()
  if (auto creds = pmu::readTaskCreds(ctx->pid)) {
    c.real_uid = creds->uids[0];
    c.real_gid = creds->gids[0];
    c.tgid = creds->tgid;
    c.in_daemon_pid_ns = creds->pid_ns_levels == 1;
    bool caps = (creds->hasCapability(CAP_SYS_PTRACE) || creds->hasCapability(CAP_PERFMON) ||
                 creds->hasCapability(CAP_SYS_ADMIN)) &&
                inDaemonUserNamespace(ctx->pid);
    c.may_monitor_any_thread = caps && creds->hasCapability(CAP_SYS_PTRACE);
    perfmon = caps && (creds->hasCapability(CAP_PERFMON) || creds->hasCapability(CAP_SYS_ADMIN));
  }
  c.may_count_kernel = perfmon || config_.allow_kernel;
  if (!for_load) return c;
  c.may_system_wide = perfmon;
  if (!perfmon && config_.system_group) {
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

}  // namespace pfmfs::fs
