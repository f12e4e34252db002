// perf's task-clock, opened by a test as an oracle: the kernel's own account
// of a thread's time on a CPU, by the clock the perf backend and the task
// tracker read (a thread target's time, a followed child's final time).
//
// Why not CLOCK_*_CPUTIME_ID or getrusage: those tell sum_exec_runtime, the
// scheduler's account, which leaves out what task-clock counts (the edges of
// every context switch, time stolen by the hypervisor). Task-clock runs ahead
// of it by more the busier the machine: a bound between the two holds only
// with slack. Between two task-clocks it is exact.
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>

#include "tests/support/software_count.h"

namespace pfmfs::testing {

// The task-clock of thread `tid`, in ns.
class TaskClock : public SoftwareCount {
 public:
  TaskClock(pid_t tid, bool inherit) : SoftwareCount(tid, PERF_COUNT_SW_TASK_CLOCK, inherit) {}
  std::uint64_t ns() const { return value(); }
};

// The task-clock of the threads and processes that thread `tid` creates from
// now on, and of theirs, exited or not: what the READ record of each would
// say, summed (the same clock, started at each one's creation and stopped at
// its exit at the same instant as the task tracker's).
//
// Two events: `tree_`, inherited, opened first; `own_`, not inherited,
// opened second and read first. tree - own is the descendants' total plus
// `tid`'s own task-clock between the two openings and between the two reads
// (none when `tid` is blocked then, or has exited): at least the total, so
// an upper bound on any one descendant's time.
class DescendantsTaskClock {
 public:
  explicit DescendantsTaskClock(pid_t tid = 0) : tree_(tid, true), own_(tid, false) {}

  bool ok() const { return tree_.ok() && own_.ok(); }
  std::uint64_t ns() const {
    const std::uint64_t own = own_.ns();
    const std::uint64_t tree = tree_.ns();
    return tree >= own ? tree - own : 0;
  }

 private:
  TaskClock tree_;
  TaskClock own_;
};

// Spins until the calling thread's task-clock has run `ns` more, by an event
// of its own opened here: any task-clock counting this thread over a span
// that holds the call counts at least `ns`, exactly, whatever the load.
// (burnCpu's CLOCK_THREAD_CPUTIME_ID is another account: task-clock may
// come out a little under it.) False if perf refuses. Raw syscalls only: a
// forked child of a threaded test may call it.
inline bool burnTaskClock(std::uint64_t ns) {
  const TaskClock own(0, false);
  if (!own.ok()) return false;
  volatile std::uint64_t sink = 0;
  for (std::uint64_t used = 0; used < ns;) {
    if (!own.read(used)) return false;
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<std::uint64_t>(i);
  }
  return true;
}

}  // namespace pfmfs::testing
