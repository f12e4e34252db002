// Saturating time arithmetic of the engine: kNever (UINT64_MAX) stands for
// "never", and a sum that would pass it is never too. Internal to session/.
#pragma once

#include <cstdint>

#include "pmu/backend.h"

namespace pfmfs::session {

inline std::uint64_t saturatingAdd(std::uint64_t a, std::uint64_t b) {
  return a > pmu::kNever - b ? pmu::kNever : a + b;
}

}  // namespace pfmfs::session
