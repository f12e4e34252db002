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

Status mayMonitorCgroup(const Caller& caller, const pmu::CgroupDir& dir) {
  if (caller.may_any_cgroup) return {};
  const struct stat& st = dir.st();
  if (pmu::modeAllowsWrite(st, caller.uid, caller.gid, caller.groups)) return {};
  return err(EPERM,
             "control group {} is not delegated to you: its directory (owner uid {}, gid {}, mode {:o}) is not "
             "writable by uid {}; a group of another user needs CAP_PERFMON or pfmfsd's --system-group",
             dir.path(), st.st_uid, st.st_gid, st.st_mode & 07777, caller.uid);
}

}  // namespace pfmfs::session
