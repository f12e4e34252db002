// Control-group paths and directories (see cgroup_dir.h).
#include "pmu/cgroup_dir.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "pmu/host_info.h"

namespace pfmfs::pmu {

namespace {

// A short, printable echo of a refused path for the `error` file.
std::string shown(std::string_view text) {
  std::string out;
  for (char ch : text.substr(0, 64)) {
    auto c = static_cast<unsigned char>(ch);
    out += c > 0x20 && c < 0x7f ? std::string(1, ch) : fmt::format("\\x{:02x}", c);
  }
  if (text.size() > 64) out += "...";
  return out;
}

// mountinfo's octal escapes (\040 for a blank, \011, \012, \134).
std::string unescapeMount(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() + 1 && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      out += static_cast<char>(std::strtol(std::string(s.substr(i + 1, 3)).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

Result<std::string> resolveCgroupPath(std::string_view text, std::string_view root) {
  if (text.empty()) return err(EINVAL, "load: a control group path is empty");
  if (text.size() > kMaxCgroupPath)
    return err(EINVAL, "load: a control group path is longer than {} bytes", kMaxCgroupPath);
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f)
      return err(EINVAL, "load: '{}' has a blank or an unprintable byte: control group paths are printable words",
                 shown(text));
  }
  std::string out;
  if (text.front() != '/') out = std::string(root);
  while (!out.empty() && out.back() == '/') out.pop_back();
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t slash = text.find('/', start);
    std::string_view part =
        text.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (part == "..") return err(EINVAL, "load: '{}' has a '..' component", shown(text));
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (out.empty()) out.push_back('/');
  if (out.size() > kMaxCgroupPath)
    return err(EINVAL, "load: '{}' is longer than {} bytes below {}", shown(text), kMaxCgroupPath, root);
  return out;
}

Result<std::string> cgroup2RootIn(std::string_view mountinfo) {
  std::size_t start = 0;
  while (start < mountinfo.size()) {
    std::size_t nl = mountinfo.find('\n', start);
    std::string_view line = mountinfo.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? mountinfo.size() : nl + 1;
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER
    std::vector<std::string_view> f;
    std::size_t i = 0;
    while (i < line.size()) {
      std::size_t sp = line.find(' ', i);
      if (sp == std::string_view::npos) sp = line.size();
      if (sp > i) f.push_back(line.substr(i, sp - i));
      i = sp + 1;
    }
    auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
    if (f.size() < 5 || dash == f.end() || dash + 1 == f.end() || dash - f.begin() < 6) continue;
    if (*(dash + 1) != "cgroup2") continue;
    // Only a mount of the hierarchy's root names every group by its path.
    if (f[3] != "/") continue;
    return unescapeMount(f[4]);
  }
  return err(ENOENT, "no cgroup v2 hierarchy is mounted (/proc/self/mountinfo has no cgroup2 mount)");
}

Result<std::string> cgroup2Root() {
  std::string text = readSmallFile("/proc/self/mountinfo");
  if (text.empty()) return err(ENOENT, "cannot read /proc/self/mountinfo");
  return cgroup2RootIn(text);
}

bool modeAllows(const struct stat& st, Access what, uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
  const auto bit = static_cast<mode_t>(what);  // the others' bit: 2 write, 1 search
  if (st.st_uid == uid) return (st.st_mode & (bit << 6)) != 0;
  bool member = st.st_gid == gid || std::find(groups.begin(), groups.end(), st.st_gid) != groups.end();
  if (member) return (st.st_mode & (bit << 3)) != 0;
  return (st.st_mode & bit) != 0;
}

Result<std::shared_ptr<const CgroupDir>> CgroupDir::open(const std::string& path, const std::string& root,
                                                         const MayEnter& may_enter) {
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::string rel;
  if (path == base) {
    rel = ".";
  } else if (base == "/" && path.size() > 1 && path.front() == '/') {
    rel = path.substr(1);
  } else if (path.size() > base.size() + 1 && path.compare(0, base.size(), base) == 0 && path[base.size()] == '/') {
    rel = path.substr(base.size() + 1);
  } else {
    return err(EINVAL, "load: {} is not below the cgroup2 mount {}", path, base);
  }
  // One name at a time from the mount, each directory's search right
  // asked before the next name is looked up: a caller learns nothing of a
  // directory it may not search, not even whether a name exists there.
  Fd cur(::open(base.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur) return err(errno, "load: cannot open the cgroup2 mount {}: {}", base, std::strerror(errno));
  struct stat cur_st {};
  if (::fstat(cur.get(), &cur_st) != 0) return err(errno, "load: cannot stat {}: {}", base, std::strerror(errno));
  const dev_t dev = cur_st.st_dev;
  std::string walked = base;
  std::size_t start = 0;
  while (rel != "." && start <= rel.size()) {
    std::size_t slash = rel.find('/', start);
    std::string name = rel.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? rel.size() + 1 : slash + 1;
    if (may_enter && !may_enter(cur_st))
      return err(EACCES, "load: you may not search {} (owner uid {}, gid {}, mode {:o})", walked, cur_st.st_uid,
                 cur_st.st_gid, cur_st.st_mode & 07777);
    walked += (walked == "/" ? "" : "/") + name;
    Fd next(::openat(cur.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) {
      int e = errno;
      struct stat link {};
      if (e == ENOTDIR && ::fstatat(cur.get(), name.c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode))
        return err(EINVAL, "load: {} is a symbolic link: a group is named by its own path", walked);
      if (e == ENOTDIR) return err(ENOTDIR, "load: {} is not a directory", walked);
      if (e == ENOENT) return err(ENOENT, "load: no control group {}", walked);
      return err(e, "load: cannot open {}: {}", walked, std::strerror(e));
    }
    if (::fstat(next.get(), &cur_st) != 0) return err(errno, "load: cannot stat {}: {}", walked, std::strerror(errno));
    if (cur_st.st_dev != dev) return err(EINVAL, "load: {} is another mount than the cgroup2 mount {}", walked, base);
    cur = std::move(next);
  }
  std::shared_ptr<CgroupDir> d(new CgroupDir());
  d->path_ = path;
  // perf takes a readable descriptor of the group, not an O_PATH one.
  int fd = ::openat(cur.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return err(errno, "load: pfmfsd cannot open {}: {}", path, std::strerror(errno));
  d->fd_ = Fd(fd);
  struct statfs sf {};
  if (::fstatfs(fd, &sf) != 0 || sf.f_type != CGROUP2_SUPER_MAGIC)
    return err(EINVAL, "load: {} is not a control group of a cgroup v2 hierarchy", path);
  if (::fstat(fd, &d->st_) != 0) return err(errno, "load: cannot stat {}: {}", path, std::strerror(errno));
  if (::fstatat(fd, "cgroup.procs", &d->procs_st_, 0) != 0)
    return err(EINVAL, "load: {} has no cgroup.procs: not a control group", path);
  d->cpu_stat_ = Fd(::openat(fd, "cpu.stat", O_RDONLY | O_CLOEXEC));
  return std::shared_ptr<const CgroupDir>(std::move(d));
}

bool CgroupDir::removed() const { return ::faccessat(fd_.get(), "cgroup.procs", F_OK, 0) != 0 && errno == ENOENT; }

std::optional<std::uint64_t> CgroupDir::usageNs() const {
  char buf[512];
  ssize_t n = cpu_stat_ ? ::pread(cpu_stat_.get(), buf, sizeof buf - 1, 0) : -1;
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  const char* p = std::strstr(buf, "usage_usec ");
  if (!p) return std::nullopt;
  return std::strtoull(p + 11, nullptr, 10) * 1000;
}

}  // namespace pfmfs::pmu
