// The engine's limits and timing, all settable on pfmfsd's command line.
#pragma once

#include <cstdint>

namespace pfmfs::session {

struct EngineOptions {
  unsigned max_sessions_per_user = 64;  // mkdir beyond it: ENOSPC
  unsigned max_sets = 64;               // sets per session
  unsigned max_messages = 64;           // queued messages per session
  std::uint64_t tick_ns = 1'000'000;    // real clock: timer period; timeouts round up to it
};

}  // namespace pfmfs::session
