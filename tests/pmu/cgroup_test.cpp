// Control groups as targets (pmu/cgroup_dir.h; pfmfs(5), CONTROL-GROUP
// LOADS): the PATH rules and the cgroup2 mount's discovery on made-up
// input, golden rows that name their line; the write rule on made-up
// owners and modes; CgroupDir on a real group of this machine's cgroup2
// hierarchy (made and removed by the test: it runs as root, as in CI); and
// the sim's control-group target under both clocks.
#include "pmu/cgroup_dir.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "pmu/host_info.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/sim_backend.h"

namespace pfmfs::pmu {
namespace {

using namespace std::chrono_literals;

// ---------------------------------------------------------------- PATH

struct PathRow {
  int line;
  std::string text;
  std::string root;
  std::string expected;  // "" when refused
};

TEST(CgroupPath, GoldenRows) {
  const std::string long_name(kMaxCgroupPath - 10, 'a');
  const PathRow rows[] = {
      {__LINE__, "/sys/fs/cgroup/a", "/sys/fs/cgroup", "/sys/fs/cgroup/a"},
      {__LINE__, "/sys/fs/cgroup/a/", "/x", "/sys/fs/cgroup/a"},
      {__LINE__, "//sys///fs/cgroup/./a/.", "", "/sys/fs/cgroup/a"},
      {__LINE__, "/", "", "/"},
      {__LINE__, "system.slice/foo.service", "/sys/fs/cgroup", "/sys/fs/cgroup/system.slice/foo.service"},
      {__LINE__, "./a", "/sys/fs/cgroup/unified/", "/sys/fs/cgroup/unified/a"},
      {__LINE__, "a", "/", "/a"},
      {__LINE__, ".", "/sys/fs/cgroup", "/sys/fs/cgroup"},
      {__LINE__, "a..b/..c/c..", "/r", "/r/a..b/..c/c.."},  // only a whole '..' is refused
      {__LINE__, "1234", "/r", "/r/1234"},
      {__LINE__, "/" + long_name, "", "/" + long_name},
      // Refusals.
      {__LINE__, "", "/r", ""},
      {__LINE__, "..", "/r", ""},
      {__LINE__, "/sys/fs/cgroup/../etc", "", ""},
      {__LINE__, "a/..", "/r", ""},
      {__LINE__, "a/../b", "/r", ""},
      {__LINE__, "/a b", "", ""},
      {__LINE__, "/a\tb", "", ""},
      {__LINE__, "/a\nb", "", ""},
      {__LINE__, std::string("/a\0b", 4), "", ""},
      {__LINE__, "/a\x01", "", ""},
      {__LINE__, "/a\x7f", "", ""},
      {__LINE__, "/\xc3\xa9t\xc3\xa9", "", ""},  // printable ASCII only
      {__LINE__, "/" + std::string(kMaxCgroupPath, 'a'), "", ""},
      {__LINE__, long_name, "/sys/fs/cgroup/unified", ""},  // too long once below the root
  };
  for (const auto& r : rows) {
    auto got = resolveCgroupPath(r.text, r.root);
    if (r.expected.empty()) {
      ASSERT_FALSE(got.ok()) << "line " << r.line << ": accepted as " << *got;
      EXPECT_EQ(got.code(), -EINVAL) << "line " << r.line;
      EXPECT_FALSE(got.error().reason.empty()) << "line " << r.line;
      for (char c : got.error().reason)
        EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "line " << r.line << ": " << got.error().reason;
    } else {
      ASSERT_TRUE(got.ok()) << "line " << r.line << ": " << got.error().reason;
      EXPECT_EQ(*got, r.expected) << "line " << r.line;
    }
  }
}

TEST(CgroupPath, MountRootFromMountinfo) {
  const std::string hybrid =
      "25 30 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw\n"
      "35 25 0:30 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755\n"
      "36 35 0:31 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
      "37 35 0:32 / /sys/fs/cgroup/systemd rw shared:11 - cgroup cgroup rw,name=systemd\n";
  EXPECT_EQ(*cgroup2RootIn(hybrid), "/sys/fs/cgroup/unified");
  const std::string unified =
      "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
      "cgroup2 rw,nsdelegate,memory_recursiveprot\n";
  EXPECT_EQ(*cgroup2RootIn(unified), "/sys/fs/cgroup");
  // A bind mount of a group inside the hierarchy does not name groups by
  // their path: skipped. Octal escapes in the mount point are undone.
  const std::string bound =
      "40 30 0:26 /system.slice /mnt/slice rw - cgroup2 cgroup2 rw\n"
      "41 30 0:26 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(*cgroup2RootIn(bound), "/mnt/my cgroups");
  auto none = cgroup2RootIn("25 30 0:23 / /sys rw - sysfs sysfs rw\n37 35 0:32 / /c rw - cgroup cgroup rw\n");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), -ENOENT);
  EXPECT_EQ(cgroup2RootIn("").code(), -ENOENT);
  EXPECT_EQ(cgroup2RootIn("garbage without fields\n- cgroup2\n").code(), -ENOENT);
}

// ---------------------------------------------------------------- write rule

struct stat owned(uid_t uid, gid_t gid, mode_t mode) {
  struct stat st {};
  st.st_uid = uid;
  st.st_gid = gid;
  st.st_mode = S_IFDIR | mode;
  return st;
}

TEST(CgroupWriteRule, OwnerGroupOthersAsTheKernelReadsThem) {
  const uid_t u = 1000, other = 1001;
  const gid_t g = 100, sup = 200;
  EXPECT_TRUE(modeAllows(owned(u, 0, 0755), Access::Write, u, g, {}));
  EXPECT_FALSE(modeAllows(owned(u, 0, 0555), Access::Write, u, g, {}));
  EXPECT_FALSE(modeAllows(owned(0, 0, 0755), Access::Write, u, g, {}));
  EXPECT_FALSE(modeAllows(owned(0, 0, 0555), Access::Write, 0, 0, {})) << "no capability counts here";
  EXPECT_TRUE(modeAllows(owned(0, g, 0775), Access::Write, u, g, {}));
  EXPECT_TRUE(modeAllows(owned(0, sup, 0775), Access::Write, u, g, {sup}));
  EXPECT_FALSE(modeAllows(owned(0, sup, 0775), Access::Write, u, g, {300}));
  EXPECT_TRUE(modeAllows(owned(other, 0, 0757), Access::Write, u, g, {}));
  // The owner's bits decide for the owner, the group's for a member, even
  // when others may write.
  EXPECT_FALSE(modeAllows(owned(u, 0, 0577), Access::Write, u, g, {}));
  EXPECT_FALSE(modeAllows(owned(0, g, 0757), Access::Write, u, g, {}));
  // Search: the x bits, by the same choice of owner, group or others.
  EXPECT_TRUE(modeAllows(owned(0, 0, 0755), Access::Search, u, g, {}));
  EXPECT_FALSE(modeAllows(owned(0, 0, 0700), Access::Search, u, g, {}));
  EXPECT_TRUE(modeAllows(owned(0, sup, 0710), Access::Search, u, g, {sup}));
  EXPECT_FALSE(modeAllows(owned(u, 0, 0677), Access::Search, u, g, {}));
}

// ---------------------------------------------------------------- a real group

// A control group made for the test below the cgroup2 root, removed after.
class TestGroup {
 public:
  explicit TestGroup(const std::string& name) {
    auto root = cgroup2Root();
    EXPECT_TRUE(root.ok()) << (root.ok() ? "" : root.error().reason);
    if (!root.ok()) return;
    path_ = *root + "/pfmfs-unit-" + name + "-" + std::to_string(::getpid());
    (void)::rmdir(path_.c_str());
    EXPECT_EQ(::mkdir(path_.c_str(), 0755), 0) << path_ << ": " << std::strerror(errno);
  }
  ~TestGroup() {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    if (!path_.empty()) (void)::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // A child process that spins in the group until the group goes.
  void spin() {
    child_ = ::fork();
    if (child_ == 0) {
      std::ofstream(path_ + "/cgroup.procs") << ::getpid() << "\n";
      for (;;) {
      }
    }
  }
  void remove() {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
      child_ = 0;
    }
    // A killed process leaves the group a moment after it is reaped.
    for (int i = 0; i < 1000 && ::rmdir(path_.c_str()) != 0; ++i) std::this_thread::sleep_for(1ms);
  }

 private:
  std::string path_;
  pid_t child_ = 0;
};

// A group opened as a load opens it: below the cgroup2 mount.
Result<std::shared_ptr<const CgroupDir>> openGroup(const std::string& path) {
  auto root = cgroup2Root();
  if (!root) return root.error();
  return CgroupDir::open(path, *root);
}

TEST(CgroupDirOpen, ARealGroupAndWhatIsNotOne) {
  ASSERT_EQ(::geteuid(), 0u) << "the test makes control groups: run it as root (CI does)";
  TestGroup g("open");
  auto d = openGroup(g.path());
  ASSERT_TRUE(d.ok()) << d.error().reason;
  EXPECT_EQ((*d)->path(), g.path());
  EXPECT_TRUE(S_ISDIR((*d)->st().st_mode));
  EXPECT_FALSE((*d)->removed());
  ASSERT_TRUE((*d)->usageNs().has_value());
  EXPECT_EQ(*(*d)->usageNs(), 0u) << "an empty new group has run nothing";

  // Nothing outside the hierarchy is opened: a path that exists and one
  // that does not are refused alike, so no one learns which is which.
  for (const char* outside : {"/tmp", "/proc/self", "/root", "/root/no-such-dir"}) {
    auto o = openGroup(outside);
    EXPECT_EQ(o.code(), -EINVAL) << outside;
    if (!o.ok()) {
      EXPECT_NE(o.error().reason.find("is not below the cgroup2 mount"), std::string::npos) << outside;
    }
  }
  EXPECT_EQ(openGroup(g.path() + "/no-such-group").code(), -ENOENT);
  EXPECT_EQ(openGroup(g.path() + "/cgroup.procs").code(), -ENOTDIR);

  g.remove();
  EXPECT_TRUE((*d)->removed());
  EXPECT_FALSE((*d)->usageNs().has_value());
}

TEST(CgroupDirOpen, NoSymbolicLinkIsFollowed) {
  // cgroupfs has no links; below another root, a link to a directory
  // beside it is refused while the directory itself is opened (and then
  // refused as no cgroup2 directory).
  char tmpl[] = "/tmp/pfmfs-cgroup-root-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string root = tmpl;
  ASSERT_EQ(::mkdir((root + "/dir").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((root + "/dir").c_str(), (root + "/link").c_str()), 0);
  auto link = CgroupDir::open(root + "/link", root);
  EXPECT_EQ(link.code(), -EINVAL);
  if (!link.ok()) {
    EXPECT_NE(link.error().reason.find("symbolic link"), std::string::npos) << link.error().reason;
  }
  auto dir = CgroupDir::open(root + "/dir", root);
  EXPECT_EQ(dir.code(), -EINVAL);
  if (!dir.ok()) {
    EXPECT_NE(dir.error().reason.find("cgroup v2"), std::string::npos) << dir.error().reason;
  }
  ::unlink((root + "/link").c_str());
  ::rmdir((root + "/dir").c_str());
  ::rmdir(root.c_str());
}

TEST(CgroupDirOpen, UsageCountsTheGroupsCpuTime) {
  ASSERT_EQ(::geteuid(), 0u);
  TestGroup g("usage");
  auto d = openGroup(g.path());
  ASSERT_TRUE(d.ok()) << d.error().reason;
  g.spin();
  const auto t0 = monotonicNs();
  std::this_thread::sleep_for(300ms);
  const auto u = (*d)->usageNs().value_or(0);
  const auto wall = monotonicNs() - t0;
  EXPECT_GT(u, 30'000'000u) << "the spinner ran at least a tenth of the time";
  EXPECT_LE(u, wall + 50'000'000u) << "one thread cannot run longer than the wall time (plus its start)";
}

// ---------------------------------------------------------------- the sim

std::unique_ptr<sim::SimBackend> sim(ClockKind clock) {
  sim::SimOptions o;
  o.shape = intel::Shape{4, 48};
  o.clock = clock;
  auto b = sim::SimBackend::create(o);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().reason);
  return b.ok() ? std::move(*b) : nullptr;
}

Target groupTarget(const std::shared_ptr<const CgroupDir>& d) {
  Target t{TargetKind::Cgroup, 0};
  t.cgroup = d;
  return t;
}

// Counts cycles (3/ns on the sim) in PMC0 from 0.
void countCycles(TargetPmu& p, const PmuDescription& desc) {
  std::vector<std::uint64_t> pmcs(desc.pmcs.size()), bits(desc.pmds.size());
  pmcs[static_cast<std::size_t>(desc.pmcSlot(0))] =
      intel::event::kUnhaltedCoreCycles | intel::evtsel::kUsr | intel::evtsel::kEn;
  ASSERT_TRUE(p.loadSet(SetImage{0, pmcs, regBit(0), bits}).ok());
  p.enable();
}

std::uint64_t pmd0(TargetPmu& p, const PmuDescription& desc) {
  std::vector<std::uint64_t> out(desc.pmds.size());
  p.readPmds(regBit(0), out);
  return out[static_cast<std::size_t>(desc.pmdSlot(0))];
}

TEST(SimCgroup, ManualClockCountsRateTimesAdvanceUntilRemoved) {
  ASSERT_EQ(::geteuid(), 0u);
  TestGroup g("sim-manual");
  auto d = openGroup(g.path());
  ASSERT_TRUE(d.ok()) << d.error().reason;
  auto b = sim(ClockKind::Manual);
  ASSERT_TRUE(b);
  auto t = b->attach(groupTarget(*d), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TargetPmu& p = **t;
  countCycles(p, b->description());
  EXPECT_EQ(p.timeNs(), 0u);
  EXPECT_EQ(p.advanceTo(1000), 1000u);
  EXPECT_EQ(pmd0(p, b->description()), 3000u);
  EXPECT_FALSE(p.gone());
  g.remove();
  EXPECT_TRUE(p.gone()) << "a removed group ends the target, as a thread's exit";
  // No thread of its own: an overflow names none.
  EXPECT_FALSE(p.takeOverflow().has_value());
}

TEST(SimCgroup, RealClockIsTheGroupsCpuTime) {
  ASSERT_EQ(::geteuid(), 0u);
  TestGroup g("sim-real");
  auto d = openGroup(g.path());
  ASSERT_TRUE(d.ok()) << d.error().reason;
  auto b = sim(ClockKind::Real);
  ASSERT_TRUE(b);
  auto t = b->attach(groupTarget(*d), {});
  ASSERT_TRUE(t.ok()) << t.error().reason;
  TargetPmu& p = **t;
  countCycles(p, b->description());
  // An empty group does not run: its time stands still however long we wait.
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(p.advanceTo(p.timeNs()), 0u);
  g.spin();
  std::this_thread::sleep_for(300ms);
  const std::uint64_t now = p.timeNs();
  EXPECT_GT(now, 30'000'000u);
  (void)p.advanceTo(now);
  EXPECT_EQ(pmd0(p, b->description()), 3 * now) << "rate x the group's CPU time";
  g.remove();
  EXPECT_TRUE(p.gone());
}

TEST(SimCgroup, InheritIsRefused) {
  ASSERT_EQ(::geteuid(), 0u);
  TestGroup g("sim-inherit");
  auto d = openGroup(g.path());
  ASSERT_TRUE(d.ok());
  auto b = sim(ClockKind::Manual);
  ASSERT_TRUE(b);
  Target t = groupTarget(*d);
  t.inherit = true;
  EXPECT_EQ(b->attach(t, {}).code(), -EINVAL);
}

}  // namespace
}  // namespace pfmfs::pmu
