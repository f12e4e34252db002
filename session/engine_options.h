// The engine's limits and timing, all settable on pfmfsd's command line.
#pragma once

#include <cstdint>

namespace pfmfs::session {

struct EngineOptions {
  unsigned max_sessions_per_user = 64;  // mkdir beyond it: ENOSPC
  unsigned max_sets = 64;               // sets per session
  unsigned max_messages = 64;           // queued messages per session
  std::uint64_t tick_ns = 1'000'000;    // real clock: timer period; timeouts round up to it
  // Overflow interrupts a session may take: a burst, refilled by one every
  // overflow_refill_ns of target time (100 000 per second, perf's default
  // sample rate). Beyond it the session is masked, so that a tiny sampling
  // period cannot keep the daemon replaying interrupts for one user.
  std::uint64_t overflow_burst = 1'000'000;
  std::uint64_t overflow_refill_ns = 10'000;
  // Sampling buffers of one user's sessions together, each counted as its
  // memfd (buf_size rounded up to pages): perfmon2 charged them to the
  // caller's RLIMIT_MEMLOCK.
  std::uint64_t max_smpl_bytes_per_user = 64ull << 20;
  // Counters one user's control-group loads may hold, each load charged
  // online cpus x (1 + sets x PMDs): on perf, the descriptors it may open.
  // A group is counted on every cpu, so that without a bound one user's
  // loads could take every descriptor the daemon has.
  std::uint64_t max_cgroup_events_per_user = 4096;
};

}  // namespace pfmfs::session
