// Thread CPU time for tests under the real clock: read it, and burn it.
#pragma once

#include <time.h>

#include <cstdint>

namespace pfmfs::testing {

inline std::uint64_t nowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Spins until the calling thread has used `ns` more CPU time.
inline void burnCpu(std::uint64_t ns) {
  const std::uint64_t end = nowNs(CLOCK_THREAD_CPUTIME_ID) + ns;
  volatile std::uint64_t sink = 0;
  while (nowNs(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 1000; ++i) sink = sink + static_cast<std::uint64_t>(i);
}

}  // namespace pfmfs::testing
