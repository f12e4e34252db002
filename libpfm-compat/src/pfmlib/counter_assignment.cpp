// Counter assignment by fewest-choices-first search with a matching check
// (see counter_assignment.h).
#include "counter_assignment.h"

#include <array>
#include <cstdint>

namespace pfmcompat::pfmlib {

namespace {

constexpr unsigned kCounters = 64;
using Mask = std::uint64_t;

bool isFree(Mask used, unsigned c) { return c < kCounters && !(used & (Mask{1} << c)); }

// Kuhn's augmenting paths: can every event of `events` get a distinct
// counter outside `used`?
class Matcher {
 public:
  Matcher(const std::vector<std::vector<unsigned>>& cand, Mask used) : cand_(cand), used_(used) { owner_.fill(-1); }

  bool matchAll(const std::vector<std::size_t>& events) {
    for (std::size_t e : events) {
      Mask seen = 0;
      if (!augment(e, seen)) return false;
    }
    return true;
  }

 private:
  bool augment(std::size_t e, Mask& seen) {
    for (unsigned c : cand_[e]) {
      if (!isFree(used_, c) || (seen & (Mask{1} << c))) continue;
      seen |= Mask{1} << c;
      if (owner_[c] < 0 || augment(static_cast<std::size_t>(owner_[c]), seen)) {
        owner_[c] = static_cast<int>(e);
        return true;
      }
    }
    return false;
  }

  const std::vector<std::vector<unsigned>>& cand_;
  Mask used_;
  std::array<int, kCounters> owner_;  // event holding each counter, -1 none
};

unsigned freeCount(const std::vector<unsigned>& cand, Mask used) {
  unsigned n = 0;
  for (unsigned c : cand) n += isFree(used, c) ? 1 : 0;
  return n;
}

}  // namespace

std::optional<std::vector<unsigned>> assignCounters(const std::vector<std::vector<unsigned>>& candidates) {
  const std::size_t n = candidates.size();
  std::vector<std::size_t> unplaced;
  for (std::size_t i = 0; i < n; ++i) unplaced.push_back(i);
  Mask used = 0;
  if (!Matcher(candidates, used).matchAll(unplaced)) return std::nullopt;

  std::vector<unsigned> result(n, 0);
  while (!unplaced.empty()) {
    // Fewest free candidates next; the first such event on ties.
    std::size_t pick = 0;
    for (std::size_t k = 1; k < unplaced.size(); ++k)
      if (freeCount(candidates[unplaced[k]], used) < freeCount(candidates[unplaced[pick]], used)) pick = k;
    const std::size_t e = unplaced[pick];
    unplaced.erase(unplaced.begin() + static_cast<std::ptrdiff_t>(pick));

    bool placed = false;
    for (unsigned c : candidates[e]) {
      if (!isFree(used, c)) continue;
      Mask trial = used | (Mask{1} << c);
      if (!Matcher(candidates, trial).matchAll(unplaced)) continue;  // would strand another event
      used = trial;
      result[e] = c;
      placed = true;
      break;
    }
    // The matching found before this step guarantees a choice that keeps the
    // rest matchable; not finding one would be a bug in the check.
    if (!placed) return std::nullopt;
  }
  return result;
}

}  // namespace pfmcompat::pfmlib
