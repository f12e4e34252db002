// A thread's credentials as the kernel's ptrace access check reads them
// (PTRACE_MODE_READ_REALCREDS, which perf_event_open applies to a thread
// it is asked to count), learnt from /proc: pfmfsd counts with its own
// rights, so it must apply the kernel's rule for its callers itself
// (session/monitor_rule.h).
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>

#include "pmu/result.h"

namespace pfmfs::pmu {

struct TaskCreds {
  pid_t tgid = 0;               // the thread's process
  std::array<uid_t, 3> uids{};  // real, effective, saved
  std::array<gid_t, 3> gids{};  // real, effective, saved
  std::uint64_t cap_effective = 0;
  // Whether its memory is dumpable for its own user (SUID_DUMP_USER). The
  // kernel gives the files in /proc/TID the thread's effective ids as owner
  // while it is, and root (of the user namespace its memory belongs to)
  // once a set-id exec or prctl(PR_SET_DUMPABLE, 0) made it not: the test
  // ptrace itself makes. (/proc/TID itself always shows the effective ids.)
  bool dumpable = false;
  // Entries of NSpid: 1 when the thread's pid namespace is the one this
  // /proc shows (pfmfsd's), more when it is a namespace below it.
  unsigned pid_ns_levels = 1;

  bool hasCapability(int cap) const { return cap >= 0 && cap < 64 && ((cap_effective >> cap) & 1U) != 0; }
};

// ESRCH: no such thread (or it went while being read); EMFILE, ENFILE: the
// daemon is out of descriptors, which says nothing of the thread.
Result<TaskCreds> readTaskCreds(pid_t tid);

}  // namespace pfmfs::pmu
