// A control group of a cgroup v2 hierarchy as a session's target (pfmfs(5),
// CONTROL-GROUP LOADS): the path a user writes, checked and resolved, and
// the group's directory held open so that what was checked is what counts.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::pmu {

// Longest PATH a `load` takes, in bytes (the kernel's PATH_MAX less its NUL).
inline constexpr std::size_t kMaxCgroupPath = 4095;

// The path a `load PATH` names, checked without touching the filesystem:
// printable ASCII without blanks (`state` shows it as one word), at most
// kMaxCgroupPath bytes, no `..` component. An absolute path is taken as it
// is; a relative one is below `root`, the cgroup2 mount (cgroup2Root()).
// Empty and `.` components are dropped: the result is "/a/b" without a
// trailing slash. EINVAL with the reason.
Result<std::string> resolveCgroupPath(std::string_view text, std::string_view root);

// Where the first cgroup2 hierarchy is mounted, from a mountinfo text
// (proc(5): fields, ` - `, fstype; octal escapes such as \040 undone).
// ENOENT: none is mounted.
Result<std::string> cgroup2RootIn(std::string_view mountinfo);
// The same from /proc/self/mountinfo.
Result<std::string> cgroup2Root();

// Whether `st`'s file may be written (a directory searched) by a caller
// with filesystem ids `uid`, `gid` and supplementary `groups`, by its
// permission bits as the kernel reads them (the owner's bits for the
// owner, else the group's for a member, else the others'; cgroupfs has no
// ACLs). No capability counts here.
enum class Access : mode_t { Write = 2, Search = 1 };
bool modeAllows(const struct stat& st, Access what, uid_t uid, gid_t gid, const std::vector<gid_t>& groups);

// An open control-group directory of a cgroup v2 hierarchy.
class CgroupDir {
 public:
  // Whether the caller may search a directory on the way (its stat).
  using MayEnter = std::function<bool(const struct stat&)>;

  // Opens an absolute path (resolveCgroupPath's) below `root`, the cgroup2
  // mount (cgroup2Root()), one name at a time from `root`, following no
  // symbolic link and leaving no mount: the daemon opens what a user names
  // and may look where the user cannot, so it never looks outside the
  // hierarchy, nor (given `may_enter`) into a directory the caller may not
  // search. EINVAL: not below root, a symbolic link or another mount on the
  // way, not a cgroup v2 group; EACCES: `may_enter` refused a directory on
  // the way; ENOENT: no such group; ENOTDIR: not a directory.
  static Result<std::shared_ptr<const CgroupDir>> open(const std::string& path, const std::string& root,
                                                       const MayEnter& may_enter = {});

  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }                      // the directory (perf's PERF_FLAG_PID_CGROUP takes it)
  const struct stat& st() const { return st_; }             // as opened: owner and mode for the permission rule
  const struct stat& procsSt() const { return procs_st_; }  // its cgroup.procs, as opened: the same

  // Whether the group was removed (rmdir) since it was opened: a removed
  // kernfs directory keeps its descriptor but no longer has its files.
  bool removed() const;

  // The group's CPU time in ns, descendants included (cpu.stat's
  // usage_usec, which cgroup v2 always has). nullopt once removed.
  std::optional<std::uint64_t> usageNs() const;

 private:
  CgroupDir() = default;
  std::string path_;
  Fd fd_;
  Fd cpu_stat_;
  struct stat st_ {};
  struct stat procs_st_ {};
};

}  // namespace pfmfs::pmu
