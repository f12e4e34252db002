// What every oracle checks with: one input's checks, each false condition one
// failure quoted with the input, and the shape of a refusal's reason.
#pragma once

#include <string>
#include <string_view>

#include "oracles.h"
#include "pmu/result.h"

namespace pfmfs::fuzz {

struct Check {
  Fail fail;
  std::string_view input;

  bool operator()(bool ok, std::string_view what) const {
    if (!ok) fail(std::string(what) + " (input '" + printable(input) + "')");
    return ok;
  }
};

inline bool oneLinePrintable(std::string_view s) {
  for (char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return !s.empty();
}

}  // namespace pfmfs::fuzz
