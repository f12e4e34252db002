// The ptrace rule for thread loads (see monitor_rule.h).
#include "session/monitor_rule.h"

#include <cerrno>

namespace pfmfs::session {

Status mayMonitorThread(const Caller& caller, pid_t tid, const pmu::TaskCreds& t) {
  if (!caller.in_daemon_pid_ns)
    return err(EPERM, "your pid namespace is not pfmfsd's: thread {} would name another thread here", tid);
  if (caller.tgid != 0 && t.tgid == caller.tgid) return {};  // one's own process, as the kernel allows
  if (caller.may_monitor_any_thread) return {};
  const uid_t u = caller.real_uid;
  const gid_t g = caller.real_gid;
  if (t.uids[0] != u || t.uids[1] != u || t.uids[2] != u)
    return err(EPERM,
               "thread {} runs as uid {} (effective {}, saved {}), not as your uid {}: monitoring it needs "
               "CAP_SYS_PTRACE",
               tid, t.uids[0], t.uids[1], t.uids[2], u);
  if (t.gids[0] != g || t.gids[1] != g || t.gids[2] != g)
    return err(EPERM,
               "thread {} runs as gid {} (effective {}, saved {}), not as your gid {} (a set-gid program?): "
               "monitoring it needs CAP_SYS_PTRACE",
               tid, t.gids[0], t.gids[1], t.gids[2], g);
  if (!t.dumpable)
    return err(EPERM,
               "thread {} is not dumpable (it runs a set-id program or made itself undumpable): monitoring it "
               "needs CAP_SYS_PTRACE",
               tid);
  return {};
}

pmu::CgroupDir::MayEnter mayEnterFor(const Caller& caller) {
  if (caller.may_any_cgroup) return {};
  return [caller](const struct stat& st) {
    return pmu::modeAllows(st, pmu::Access::Search, caller.uid, caller.gid, caller.groups);
  };
}

Status mayMonitorCgroup(const Caller& caller, const pmu::CgroupDir& dir) {
  if (caller.may_any_cgroup) return {};
  const struct stat& st = dir.st();
  const struct stat& procs = dir.procsSt();
  // Delegation is a group's directory and its cgroup.procs handed to a
  // user (cgroups(7)); a root-owned group is handed to no one, root without
  // its capabilities included, which the kernel would not let count
  // other users' threads either.
  bool by_root = st.st_uid == 0 && caller.uid == 0;
  if (!by_root && pmu::modeAllows(st, pmu::Access::Write, caller.uid, caller.gid, caller.groups) &&
      pmu::modeAllows(procs, pmu::Access::Write, caller.uid, caller.gid, caller.groups))
    return {};
  return err(EPERM,
             "control group {} is not delegated to you: its directory (owner uid {}, gid {}, mode {:o}) and its "
             "cgroup.procs (owner uid {}, gid {}, mode {:o}) are not both writable by uid {}{}; a group not "
             "delegated needs CAP_PERFMON or pfmfsd's --system-group",
             dir.path(), st.st_uid, st.st_gid, st.st_mode & 07777, procs.st_uid, procs.st_gid, procs.st_mode & 07777,
             caller.uid, by_root ? " (a root-owned group is delegated to no one)" : "");
}

}  // namespace pfmfs::session
