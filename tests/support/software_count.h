// A software perf event a test opens itself: the kernel's own count of
// something a thread does, to hold a backend's count to.
#pragma once

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>

namespace pfmfs::testing {

// One software perf event (PERF_COUNT_SW_*) on thread `tid` (0: the
// calling thread), at user level, counting from its opening; `inherit`:
// with the copies that every thread and process it creates from then on
// carries, and theirs: each copy counts its thread from its creation to its
// exit, and adds that to this event when the thread exits (before it is a
// zombie or gone from /proc). The kernel's own account, for tests to hold
// a count to.
class SoftwareCount {
 public:
  SoftwareCount(pid_t tid, std::uint64_t config, bool inherit) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = config;
    // User level: as the backends count an event with the USR bit alone,
    // and within perf_event_paranoid 2. (Task-clock counts the whole time
    // on a CPU whatever exclude_kernel says, as pmu/perf/task_tracker.cpp's
    // tree event does.)
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.inherit = inherit ? 1 : 0;
    fd_ = static_cast<int>(::syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
  }
  ~SoftwareCount() {
    if (fd_ >= 0) ::close(fd_);
  }
  SoftwareCount(const SoftwareCount&) = delete;
  SoftwareCount& operator=(const SoftwareCount&) = delete;

  bool ok() const { return fd_ >= 0; }
  // The count so far (with inherit: and the copies', exited or not); false
  // if it cannot be read.
  bool read(std::uint64_t& v) const { return ::read(fd_, &v, sizeof v) == static_cast<ssize_t>(sizeof v); }
  std::uint64_t value() const {
    std::uint64_t v = 0;
    return read(v) ? v : 0;
  }

 private:
  int fd_ = -1;
};

}  // namespace pfmfs::testing
