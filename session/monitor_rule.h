// Whether a caller may load a session on a thread: the kernel's rule for
// perf_event_open on a thread (ptrace_may_access with
// PTRACE_MODE_READ_REALCREDS), applied by pfmfsd for its callers because it
// opens counters with rights of its own (pfmfs(5), SECURITY).
#pragma once

#include <sys/types.h>

#include "pmu/cgroup_dir.h"
#include "pmu/result.h"
#include "pmu/task_creds.h"
#include "session/caller.h"

namespace pfmfs::session {

// Allowed: a thread of the caller's own process; or a dumpable thread
// whose real, effective and saved uids are all the caller's real uid and
// whose gids all its real gid; or any thread for a caller holding
// CAP_SYS_PTRACE in pfmfsd's user namespace. Never for a caller in another
// pid namespace, whose thread ids name other threads here. EPERM with the
// reason otherwise.
Status mayMonitorThread(const Caller& caller, pid_t tid, const pmu::TaskCreds& target);

// Whether a caller may load a session on control group `dir`: the kernel's
// delegation rule (cgroups(7)): one may act on a group whose directory and
// cgroup.procs one may write, by their owner, group and mode as they were
// when opened, a root-owned group never by its owner's bits; or any group
// for a caller holding CAP_PERFMON or CAP_SYS_ADMIN in pfmfsd's user
// namespace, or in the daemon's system group (may_any_cgroup; pfmfs(5),
// SECURITY). EPERM with the reason otherwise.
Status mayMonitorCgroup(const Caller& caller, const pmu::CgroupDir& dir);

// What CgroupDir::open asks of each directory on the way to a group: the
// caller's search right, as the kernel would ask it of the caller's own
// lookup; nothing for a caller who may load on any group.
pmu::CgroupDir::MayEnter mayEnterFor(const Caller& caller);

}  // namespace pfmfs::session
