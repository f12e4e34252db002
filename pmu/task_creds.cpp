// Reads a thread's credentials from /proc (see task_creds.h).
#include "pmu/task_creds.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "pmu/host_info.h"

namespace pfmfs::pmu {

namespace {

// The numbers after `key` on its line of /proc/TID/status, in `base`; how
// many were read (at most out.size()).
template <typename T, std::size_t N>
std::size_t fieldNumbers(std::string_view status, std::string_view key, std::array<T, N>& out, int base = 10) {
  std::size_t at = 0;
  while (at < status.size()) {
    std::size_t end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, key.size()) != key) continue;
    std::string rest(line.substr(key.size()));
    const char* p = rest.c_str();
    std::size_t n = 0;
    while (n < N) {
      char* next = nullptr;
      errno = 0;
      unsigned long long v = std::strtoull(p, &next, base);
      if (next == p || errno != 0) break;
      out[n++] = static_cast<T>(v);
      p = next;
    }
    return n;
  }
  return 0;
}

unsigned countFields(std::string_view status, std::string_view key) {
  std::array<unsigned long long, 64> levels{};
  return static_cast<unsigned>(fieldNumbers(status, key, levels));
}

}  // namespace

Result<TaskCreds> readTaskCreds(pid_t tid) {
  if (tid <= 0) return err(ESRCH, "no thread {}", tid);
  const std::string dir = fmt::format("/proc/{}", tid);
  // The owner of a file in /proc/TID (not of the directory, which always
  // shows the effective ids), brought up to date by the path's lookup.
  const std::string owned = dir + "/status";
  struct stat before {};
  struct stat after {};
  errno = 0;
  if (::stat(owned.c_str(), &before) != 0) {
    int e = errno;
    if (e == EMFILE || e == ENFILE)
      return err(e, "cannot read {}: {}: the daemon is out of file descriptors", dir, std::strerror(e));
    return err(ESRCH, "no thread {}", tid);
  }
  errno = 0;
  std::string status = readSmallFile(dir + "/status");
  if (status.empty()) {
    int e = errno;
    if (e == EMFILE || e == ENFILE)
      return err(e, "cannot read {}/status: {}: the daemon is out of file descriptors", dir, std::strerror(e));
    return err(ESRCH, "no thread {}", tid);
  }
  // The owner again: an exec between the two readings changes one or the
  // other, and is then seen by whoever reads next (the load checks again
  // once it is attached).
  if (::stat(owned.c_str(), &after) != 0) return err(ESRCH, "no thread {}", tid);

  TaskCreds c;
  std::array<unsigned long long, 1> one{};
  std::array<unsigned long long, 3> three{};
  if (fieldNumbers(status, "Tgid:", one) != 1) return err(ESRCH, "no thread {}", tid);
  c.tgid = static_cast<pid_t>(one[0]);
  if (fieldNumbers(status, "Uid:", three) != 3) return err(ESRCH, "no thread {}", tid);
  for (std::size_t i = 0; i < 3; ++i) c.uids[i] = static_cast<uid_t>(three[i]);
  if (fieldNumbers(status, "Gid:", three) != 3) return err(ESRCH, "no thread {}", tid);
  for (std::size_t i = 0; i < 3; ++i) c.gids[i] = static_cast<gid_t>(three[i]);
  if (fieldNumbers(status, "CapEff:", one, 16) == 1) c.cap_effective = one[0];
  c.pid_ns_levels = std::max(1U, countFields(status, "NSpid:"));
  c.dumpable = before.st_uid == after.st_uid && before.st_gid == after.st_gid && before.st_uid == c.uids[1] &&
               before.st_gid == c.gids[1];
  return c;
}

}  // namespace pfmfs::pmu
