// /proc/PID/maps as map lines (proc_maps.h).
#include "pfmstat/proc_maps.h"

#include <cstdio>

#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/mount_files.h"

namespace pfmstat {

std::vector<MapLine> parseProcMaps(std::string_view text, std::uint32_t pid) {
  std::vector<MapLine> out;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string line(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    unsigned long long start, end, off;
    char perms[8];
    int path_at = 0;
    // start-end perms offset dev inode path
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &path_at) != 4) continue;
    if (path_at <= 0 || static_cast<std::size_t>(path_at) >= line.size()) continue;  // anonymous
    if (std::string_view(perms).find('x') == std::string_view::npos || end <= start) continue;
    out.push_back(MapLine{pid, start, end, off, line.substr(static_cast<std::size_t>(path_at))});
  }
  return out;
}

bool ProcMaps::snapshot(pid_t pid, DataWriter& out) {
  std::string maps, comm;
  try {
    maps = readFile(fmt::format("/proc/{}/maps", pid));
    comm = readFile(fmt::format("/proc/{}/comm", pid));
  } catch (const RunError&) {
    return false;  // gone, or not ours to read
  }
  auto p = static_cast<std::uint32_t>(pid);
  if (named_.insert(p).second) {
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    out.comm(CommLine{p, false, comm});
  }
  for (auto& m : parseProcMaps(maps, p))
    if (written_.emplace(m.pid, m.start, m.end, m.pgoff, m.path).second) out.map(m);
  return true;
}

}  // namespace pfmstat
