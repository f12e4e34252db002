// Thread CPU time for tests under the real clock: read it, burn it, and know
// when another thread's is exact.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

namespace pfmfs::testing {

inline std::uint64_t nowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Spins until the calling thread has used `ns` more CPU time. Its last look
// at its clock brings the kernel's account of its CPU time (sum_exec_runtime,
// what /proc/TID/schedstat shows) up to the end of the burn.
inline void burnCpu(std::uint64_t ns) {
  const std::uint64_t end = nowNs(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile std::uint64_t sink = 0;
  while (nowNs(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<std::uint64_t>(i);
}

// Thread `tid`'s CPU time (sum_exec_runtime), exact at any moment: the
// kernel brings it up to date for the read. Only for a thread of this
// process (CLOCK_THREAD_CPUTIME_ID of another thread, by tid); 0 if there is
// none.
inline std::uint64_t threadCpuNs(pid_t tid) {
  // MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED), as glibc's pthread_getcpuclockid makes it.
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6);
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The contents of /proc/TID/`file` (any thread of any process), "" if the
// thread is gone.
inline std::string procOf(pid_t tid, const char* file) {
  const std::string path = "/proc/" + std::to_string(tid) + "/" + file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string{};
}

// Thread `tid`'s CPU time as the scheduler accounts it (sum_exec_runtime, the
// first field of /proc/TID/schedstat: what the sim's real clock reads), or
// nullopt once the thread is reaped. While the thread is on a CPU the value
// lags (the kernel brings it up to date at a tick, a switch, or a read of the
// thread's own CPU clock); off the CPU it is exact (waitOffCpu).
inline std::optional<std::uint64_t> schedstatNs(pid_t tid) {
  const std::string s = procOf(tid, "schedstat");
  if (s.empty()) return std::nullopt;
  return std::strtoull(s.c_str(), nullptr, 10);
}

// Waits until thread `tid` sleeps off the CPU: blocked and taken off its run
// queue, which accounts its CPU time to the nanosecond. Its CPU time then
// stands still, exact, until something wakes it. /proc/TID/wchan tells:
// the kernel names where a task sleeps only once it is off its run queue;
// it shows "0" while the task runs or waits for a CPU, and also while it has
// set its sleeping state but not yet left the CPU, when its CPU time may
// still lag. False if the thread is gone, or still runs after `limit`
// (generous: it costs nothing when the thread blocks as it should).
inline bool waitOffCpu(pid_t tid, std::chrono::milliseconds limit = std::chrono::minutes(1)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const std::string w = procOf(tid, "wchan");
    if (w.empty()) return false;  // gone
    if (w != "0") return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// Thread `tid`'s CPU time once it is off the CPU (waitOffCpu): exact, and at
// least its CPU time when this was called. nullopt if it is gone or never
// blocks.
inline std::optional<std::uint64_t> offCpuTimeNs(pid_t tid) {
  if (!waitOffCpu(tid)) return std::nullopt;
  return schedstatNs(tid);
}

// Waits until thread `tid` is gone from /proc: reaped, its exit finished
// (its perf events ended before). False if it is still there after `limit`.
inline bool waitThreadGone(pid_t tid, std::chrono::milliseconds limit = std::chrono::minutes(1)) {
  const std::string path = "/proc/" + std::to_string(tid);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (::access(path.c_str(), F_OK) == 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace pfmfs::testing
