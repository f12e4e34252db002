// What the backends and the engine need to know about the host's threads and
// CPUs, read from /proc and /sys.
#pragma once

#include <sys/types.h>

#include <optional>

namespace pfmfs::pmu {

struct ThreadIds {
  pid_t tgid = 0;  // the process
  uid_t uid = 0;   // real uid
  uid_t euid = 0;  // effective uid
};

// The ids of thread `tid` (any thread of any process), or nullopt if there is
// no such thread.
std::optional<ThreadIds> threadIds(pid_t tid);

// Whether `cpu` is online.
bool cpuOnline(int cpu);

}  // namespace pfmfs::pmu
