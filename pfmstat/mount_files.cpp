#include "pfmstat/mount_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

bool isPfmfs(const std::string& dir) {
  int fd = ::open((dir + "/version").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[8] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  return n >= 5 && std::memcmp(buf, "pfmfs", 5) == 0;
}

// mountinfo escapes blanks and backslashes as \ooo.
std::string unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() + 0 && s[i + 1] >= '0' && s[i + 1] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string findMount(const std::string& option) {
  auto checked = [](const std::string& dir, const char* from) {
    if (!isPfmfs(dir))
      throw UsageError(fmt::format("{} names '{}', which is not a pfmfs mount (no version file)", from, dir));
    return dir;
  };
  if (!option.empty()) return checked(option, "--mount");
  if (const char* env = std::getenv("PFMFS_MOUNT"); env && *env) return checked(env, "PFMFS_MOUNT");
  if (isPfmfs("/run/pfmfs")) return "/run/pfmfs";
  std::ifstream mi("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mi, line)) {
    // id parent dev root MOUNTPOINT options [optional...] - FSTYPE source super
    std::istringstream fields(line);
    std::string f, mount_point;
    for (int i = 0; i < 5 && fields >> f; ++i) mount_point = f;
    while (fields >> f && f != "-") {
    }
    if (fields >> f && f == "fuse.pfmfs") return unescape(mount_point);
  }
  throw UsageError("no pfmfs mount: start pfmfsd (pfmfsd(8)) or say where it is with --mount or PFMFS_MOUNT");
}

std::string readFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw RunError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      throw RunError(fmt::format("cannot read {}: {}", path, std::strerror(e)));
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

int writeFile(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n;
  do {
    n = ::write(fd, text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  int e = n < 0 ? errno : 0;
  ::close(fd);
  return e;
}

}  // namespace pfmstat
