// Who asks: the credentials of the process behind a request, as the fs layer
// learns them from FUSE, reduced to the decisions the engine makes.
#pragma once

#include <sys/types.h>

namespace pfmfs::session {

struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
  bool may_monitor_any_thread = false;  // root or CAP_SYS_PTRACE
  bool may_system_wide = false;         // root or in the daemon's system group
  bool may_count_kernel = false;        // root or the daemon's --allow-kernel

  static Caller root() { return Caller{0, 0, 0, true, true, true}; }
  static Caller user(uid_t uid, gid_t gid) { return Caller{uid, gid, 0, false, false, false}; }
};

}  // namespace pfmfs::session
