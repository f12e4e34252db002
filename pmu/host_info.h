// What the backends and the engine need to know about the host's threads and
// CPUs, read from /proc and /sys.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::pmu {

struct ThreadIds {
  pid_t tgid = 0;  // the process
  uid_t uid = 0;   // real uid
  uid_t euid = 0;  // effective uid
};

// A small file (/proc, /sys) read whole; empty on failure, with errno from
// the open if that is what failed.
std::string readSmallFile(const std::string& path);

// The ids of thread `tid` (any thread of any process). ESRCH: no such thread;
// EMFILE or ENFILE: /proc could not be read for want of a file descriptor,
// which says nothing of the thread (a daemon whose perf counters hold every
// descriptor it may have must not answer "no thread" for one that runs).
Result<ThreadIds> threadIds(pid_t tid);

// Whether `cpu` is online.
bool cpuOnline(int cpu);
// The online cpus, in increasing order.
std::vector<int> onlineCpus();

// CLOCK_MONOTONIC in ns: a CPU target's time.
std::uint64_t monotonicNs();

// A thread's CPU time in ns (sum_exec_runtime, /proc/TID/schedstat), kept
// open so that each reading is one pread. The kernel brings a running
// thread's figure up to date at its ticks and switches.
class ThreadCpuTime {
 public:
  // nullopt: no such thread.
  static std::optional<ThreadCpuTime> open(pid_t tid);
  // nullopt once the thread has been reaped.
  std::optional<std::uint64_t> read() const;

 private:
  explicit ThreadCpuTime(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace pfmfs::pmu
