// The one splitter of pfmstat's comma lists (-p/-t ids, -C cpus, -e events,
// the mount's features= and aliases=): the items between commas, empty ones
// kept, so that each caller's own check says what is wrong with "a,,b".
#pragma once

#include <string>
#include <vector>

namespace pfmstat {

// "a,b" -> {"a", "b"}; "" -> {""}; "a," -> {"a", ""}.
inline std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

}  // namespace pfmstat
