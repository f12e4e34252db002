// The oracles of pfmstat's parsers (pfmstat/): its -e lists placed on the
// sim's counters, its -C cpu lists, the mount's counts file it reads, and
// its metrics tables.
#pragma once

#include <string_view>

#include "oracles.h"

namespace pfmfs::fuzz {

bool pfmstatEvents(std::string_view input, Fail fail);   // one -e argument per line
bool pfmstatCpuList(std::string_view input, Fail fail);  // a -C argument
bool pfmstatCounts(std::string_view input, Fail fail);   // a session's counts
bool pfmstatMetrics(std::string_view input, Fail fail);  // a metrics table

}  // namespace pfmfs::fuzz
