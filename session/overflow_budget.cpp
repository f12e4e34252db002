// OverflowBudget: perf's sample-rate limit, as a token bucket on target time.
#include "session/overflow_budget.h"

#include <algorithm>

#include "session/saturating.h"

namespace pfmfs::session {

bool OverflowBudget::take(std::uint64_t now_ns) {
  if (refill_ns_ && now_ns > earned_to_) {
    std::uint64_t earned = (now_ns - earned_to_) / refill_ns_;
    tokens_ = std::min(burst_, saturatingAdd(tokens_, earned));
    earned_to_ += earned * refill_ns_;
  }
  if (tokens_ == 0) return false;
  --tokens_;
  return true;
}

}  // namespace pfmfs::session
