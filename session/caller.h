// Who asks: the credentials of the process behind a request, as the fs layer
// learns them from FUSE and /proc, reduced to the decisions the engine makes.
#pragma once

#include <sys/types.h>

#include <vector>

namespace pfmfs::session {

struct Caller {
  uid_t uid = 0;  // FUSE's: the caller's filesystem uid, owner of what it creates
  gid_t gid = 0;
  pid_t pid = 0;                        // the calling thread
  bool may_monitor_any_thread = false;  // CAP_SYS_PTRACE in pfmfsd's user namespace
  bool may_system_wide = false;         // CAP_PERFMON (or CAP_SYS_ADMIN), or in the daemon's system group
  bool may_count_kernel = false;        // CAP_PERFMON (or CAP_SYS_ADMIN), or the daemon's --allow-kernel
  // What a thread load checks as the kernel's ptrace rule does
  // (session/monitor_rule.h): the caller's real ids, its process, and
  // whether the thread ids it writes are pfmfsd's (its pid namespace is).
  uid_t real_uid = 0;
  gid_t real_gid = 0;
  pid_t tgid = 0;
  bool in_daemon_pid_ns = true;
  // What a control-group load checks (session/monitor_rule.h): the
  // caller's supplementary groups (with `uid` and `gid`, the ids the kernel
  // checks a write to the group's directory with), and whether it holds
  // CAP_PERFMON or CAP_SYS_ADMIN in pfmfsd's user namespace, or is in the
  // daemon's system group: what lets it count any group.
  std::vector<gid_t> groups{};
  bool may_any_cgroup = false;

  static Caller root() {
    Caller c{0, 0, 0, true, true, true};
    c.may_any_cgroup = true;
    return c;
  }
  static Caller user(uid_t uid, gid_t gid) { return Caller{uid, gid, 0, false, false, false, uid, gid}; }
};

}  // namespace pfmfs::session
