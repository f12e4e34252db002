// Placing events on counters: the search behind pfm_dispatch_events(), kept
// apart from the encoding so that it is a pure function of its input.
#pragma once

#include <optional>
#include <vector>

namespace pfmcompat::pfmlib {

// candidates[i]: the counters (PMD indices, < 64) event i may use, best
// first. Returns one counter per event, no counter used twice, or nullopt
// when no such assignment exists.
//
// The result is what a depth-first search finds first when it places the
// event with the fewest free candidates next (ties: the lower event index)
// and tries its candidates in the given order. Instead of backtracking, each
// tentative choice is kept only if the events still unplaced can all be
// matched (a bipartite matching check), so the search never dead-ends and
// takes polynomial time whatever the constraints.
std::optional<std::vector<unsigned>> assignCounters(const std::vector<std::vector<unsigned>>& candidates);

}  // namespace pfmcompat::pfmlib
