// Filesystem's nodes (see filesystem.h): their attributes, from their rows
// of the tree (tree_schema.h), and the permission checks the kernel cannot
// make.
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

struct stat Filesystem::attrOf(const Node& n) const {
  struct stat st {};
  st.st_ino = n.ino;
  st.st_mode = n.entry->mode;
  st.st_nlink = n.isDir() ? 2 : 1;
  if (n.entry->owner == Owner::Session) {
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
  if (n.entry->owner != Owner::Session) return true;
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
  c.may_any_cgroup = perfmon;
  // The supplementary groups: a control group's directory may be writable
  // by one of them (session/monitor_rule.h), the system group one of them.
  gid_t groups[256];
  int n = fuse_req_getgroups(req, 256, groups);
  for (int i = 0; i < std::min(n, 256); ++i) c.groups.push_back(groups[i]);
  if (!perfmon && config_.system_group) {
    if (ctx->gid == *config_.system_group) c.may_system_wide = true;
    for (gid_t g : c.groups)
      if (g == *config_.system_group) c.may_system_wide = true;
    // perf's cgroup events are CPU-wide events: the kernel opens them for
    // whoever may count a CPU, which is what the system group grants.
    c.may_any_cgroup = c.may_system_wide;
  }
  return c;
}

}  // namespace pfmfs::fs
