// record's memory maps where perf's mmap records are refused: each
// process's /proc/PID/maps, read when record first sees the process in a
// sample (and again when it is seen later, for libraries opened since). A
// process that has exited by then stays unresolved: record says so.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "pfmstat/data_file.h"

namespace pfmstat {

// The executable mappings of a file (perms with x, a path) in a maps text.
std::vector<MapLine> parseProcMaps(std::string_view text, std::uint32_t pid);

class ProcMaps {
 public:
  // Writes `pid`'s name and executable mappings not written before; false
  // when the process is gone.
  bool snapshot(pid_t pid, DataWriter& out);

 private:
  std::set<std::uint32_t> named_;
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint64_t, std::uint64_t, std::string>> written_;
};

}  // namespace pfmstat
