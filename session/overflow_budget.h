// The overflow interrupts a session may take: a token bucket of
// EngineOptions' overflow_burst tokens, refilled by one every
// overflow_refill_ns of the session's counted time. A session that has
// used them up is masked (session_time.cpp), so that a tiny sampling period
// cannot keep the daemon replaying interrupts for one user (pfmfs(5),
// SECURITY).
#pragma once

#include <cstdint>

namespace pfmfs::session {

class OverflowBudget {
 public:
  // refill_ns 0: the burst is all there is until the next fill().
  OverflowBudget(std::uint64_t burst, std::uint64_t refill_ns) : burst_(burst), refill_ns_(refill_ns) { fill(); }

  // A whole burst, earning again from time 0: at every load.
  void fill() {
    tokens_ = burst_;
    earned_to_ = 0;
  }

  // One token, after those earned up to `now_ns` (the session's counted time,
  // which never runs backwards within a load); false when none is left.
  bool take(std::uint64_t now_ns);

  std::uint64_t burst() const { return burst_; }
  std::uint64_t refillNs() const { return refill_ns_; }
  std::uint64_t left() const { return tokens_; }

 private:
  const std::uint64_t burst_;
  const std::uint64_t refill_ns_;
  std::uint64_t tokens_ = 0;
  // Time up to which tokens were earned: whole periods only, so the part of
  // a period not yet complete still counts towards the next token.
  std::uint64_t earned_to_ = 0;
};

}  // namespace pfmfs::session
