// Control-group loads in the engine (pfmfs(5), CONTROL-GROUP LOADS): the
// delegation rule (session/monitor_rule.h) on real groups whose owner and
// mode the test sets, and Session::loadCgroup on the sim's manual clock:
// its refusals change nothing, a load counts rate x advance and shows the
// path, a removed group unloads the session as a thread's exit does. Runs
// as root (it makes control groups), as in CI.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "pmu/cgroup_dir.h"
#include "pmu/host_info.h"
#include "session/monitor_rule.h"
#include "session/session.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::pmu::CgroupDir;
using pfmfs::session::Caller;
using pfmfs::session::mayMonitorCgroup;
using pfmfs::session::Mode;
using pfmfs::session::State;
using pfmfs::testing::kCycles;
using pfmfs::testing::SimEngine;

constexpr uid_t kUser = 65534;
constexpr gid_t kGroup = 65534;
constexpr gid_t kOtherGroup = 65533;

// A group below the cgroup2 root with the given owner and mode, its
// cgroup.procs handed over with it (as systemd's Delegate= does), removed
// after.
class Group {
 public:
  Group(const std::string& name, uid_t uid, gid_t gid, mode_t mode) {
    auto root = pfmfs::pmu::cgroup2Root();
    EXPECT_TRUE(root.ok()) << (root.ok() ? "" : root.error().reason);
    if (!root.ok()) return;
    root_ = *root;
    path_ = *root + "/pfmfs-unit-" + name + "-" + std::to_string(::getpid());
    (void)::rmdir(path_.c_str());
    EXPECT_EQ(::mkdir(path_.c_str(), 0755), 0) << path_;
    EXPECT_EQ(::chown(path_.c_str(), uid, gid), 0);
    EXPECT_EQ(::chmod(path_.c_str(), mode), 0);
    std::string procs = path_ + "/cgroup.procs";
    EXPECT_EQ(::chown(procs.c_str(), uid, gid), 0);
    EXPECT_EQ(::chmod(procs.c_str(), mode & 0666), 0);
  }
  ~Group() { remove(); }
  void remove() {
    if (!path_.empty()) (void)::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::shared_ptr<const CgroupDir> open() const {
    auto d = CgroupDir::open(path_, root_);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().reason);
    return d.ok() ? *d : nullptr;
  }

 private:
  std::string root_;
  std::string path_;
};

int verdict(const Caller& c, const CgroupDir& d) {
  auto s = mayMonitorCgroup(c, d);
  return s ? 0 : -s.code();
}

TEST(CgroupRule, WhoMayLoadOnAGroup) {
  ASSERT_EQ(::geteuid(), 0u) << "the test makes control groups: run it as root (CI does)";
  Group delegated("rule-delegated", kUser, kGroup, 0755);
  Group roots("rule-root", 0, 0, 0755);
  Group team("rule-team", 0, kOtherGroup, 0775);
  auto d = delegated.open(), r = roots.open(), t = team.open();
  ASSERT_TRUE(d && r && t);
  Caller user = Caller::user(kUser, kGroup);
  EXPECT_EQ(verdict(user, *d), 0);
  EXPECT_EQ(verdict(user, *r), EPERM);
  auto refused = mayMonitorCgroup(user, *r);
  EXPECT_NE(refused.error().reason.find("not delegated"), std::string::npos) << refused.error().reason;
  EXPECT_EQ(verdict(user, *t), EPERM);
  user.groups = {kOtherGroup};
  EXPECT_EQ(verdict(user, *t), 0) << "a supplementary group may write";
  // CAP_PERFMON (or CAP_SYS_ADMIN) in the daemon's namespace, or the
  // daemon's system group (the fs layer sets may_any_cgroup): any group.
  Caller perfmon = Caller::user(kUser + 1, kGroup);
  perfmon.may_any_cgroup = true;
  EXPECT_EQ(verdict(perfmon, *r), 0);
  EXPECT_EQ(verdict(Caller::root(), *d), 0);
  // A directory handed over without its cgroup.procs is not delegated:
  // its user could not move a process in.
  Group half("rule-half", kUser, kGroup, 0755);
  ASSERT_EQ(::chown((half.path() + "/cgroup.procs").c_str(), 0, 0), 0);
  EXPECT_EQ(verdict(Caller::user(kUser, kGroup), *half.open()), EPERM);
  // Root without its capabilities owns root's groups by uid only: the
  // kernel would not let it count other users' threads.
  auto by_root = mayMonitorCgroup(Caller::user(0, 0), *r);
  EXPECT_EQ(by_root.code(), -EPERM);
  EXPECT_NE(by_root.error().reason.find("root-owned"), std::string::npos) << by_root.error().reason;
  // The owner and mode as they were when opened decide.
  ASSERT_EQ(::chmod(delegated.path().c_str(), 0555), 0);
  EXPECT_EQ(verdict(Caller::user(kUser, kGroup), *d), 0);
  EXPECT_EQ(verdict(Caller::user(kUser, kGroup), *delegated.open()), EPERM);
}

TEST(CgroupLoad, RefusalsChangeNothingAndALoadCounts) {
  ASSERT_EQ(::geteuid(), 0u);
  SimEngine e;
  Group g("load", 0, 0, 0755);
  auto s = e.newSession("c");
  ASSERT_TRUE(s->writePmc(Caller::root(), 0, {0, kCycles, false}));
  // Not in mode cgroup: no path.
  auto r = s->loadCgroup(Caller::root(), g.path());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.code(), -EINVAL);
  ASSERT_TRUE(s->setMode(Mode::Cgroup));
  // ... and no thread.
  EXPECT_EQ(s->load(Caller::root(), ::getpid()).code(), -EINVAL);
  const struct {
    std::string path;
    int err;
  } bad[] = {
      {g.path() + "/../x", EINVAL},          {"/tmp", EINVAL}, {g.path() + "/nope", ENOENT},
      {g.path() + "/cgroup.procs", ENOTDIR}, {"/a b", EINVAL}, {"", EINVAL},
  };
  for (const auto& b : bad) {
    auto refused = s->loadCgroup(Caller::root(), b.path);
    ASSERT_FALSE(refused) << b.path;
    EXPECT_EQ(refused.code(), -b.err) << b.path << ": " << refused.error().reason;
    EXPECT_EQ(s->error(), refused.error().reason);
    EXPECT_EQ(s->state().state, State::Unloaded);
  }
  EXPECT_EQ(s->loadCgroup(Caller::user(kUser, kGroup), g.path()).code(), -EPERM);
  EXPECT_EQ(s->state().state, State::Unloaded);

  ASSERT_TRUE(s->loadCgroup(Caller::root(), g.path()));
  auto st = s->state();
  EXPECT_EQ(st.state, State::Loaded);
  EXPECT_EQ(st.target_path, g.path());
  EXPECT_EQ(s->loadCgroup(Caller::root(), g.path()).code(), -EBUSY);
  // Another session counts the same group.
  auto other = e.newSession("d");
  ASSERT_TRUE(other->setMode(Mode::Cgroup));
  ASSERT_TRUE(other->loadCgroup(Caller::root(), g.path()));

  ASSERT_TRUE(s->start());
  e.advance(1000);
  EXPECT_EQ(s->readPmd(0, 0)->value, 3000u);

  g.remove();
  st = s->state();
  EXPECT_EQ(st.state, State::Unloaded);
  EXPECT_TRUE(st.exited);
  EXPECT_TRUE(st.target_path.empty());
  EXPECT_EQ(s->readPmd(0, 0)->value, 3000u) << "the counts stay as they were";
}

// A user's control-group loads hold at most --max-cgroup-events-per-user
// counters, each load charged online cpus x (1 + sets x PMDs) until its
// unload; who may count any group is not charged.
TEST(CgroupLoad, AUsersLoadsShareABudget) {
  ASSERT_EQ(::geteuid(), 0u);
  pfmfs::testing::SimConfig config;
  SimEngine probe;
  const std::uint64_t one_set = pfmfs::pmu::onlineCpus().size() * (1 + probe.desc().pmds.size());
  config.engine.max_cgroup_events_per_user = 2 * one_set;
  SimEngine e(config);
  Group g("budget", kUser, kGroup, 0755);
  const Caller user = Caller::user(kUser, kGroup);
  auto a = e.newSession("a"), b = e.newSession("b"), c = e.newSession("c");
  for (auto& s : {a, b, c}) ASSERT_TRUE(s->setMode(Mode::Cgroup));
  ASSERT_TRUE(b->createSet(1));  // two sets: twice the counters, one anchor per cpu
  ASSERT_TRUE(a->loadCgroup(user, g.path()));
  auto refused = b->loadCgroup(user, g.path());
  EXPECT_EQ(refused.code(), -ENOSPC);
  EXPECT_NE(refused.error().reason.find("--max-cgroup-events-per-user"), std::string::npos) << refused.error().reason;
  EXPECT_EQ(b->state().state, State::Unloaded);
  ASSERT_TRUE(c->loadCgroup(user, g.path())) << "a second one-set load fits";
  EXPECT_EQ(a->loadCgroup(user, g.path()).code(), -EBUSY);
  // Root is not charged; an unload gives its share back.
  ASSERT_TRUE(b->loadCgroup(Caller::root(), g.path()));
  ASSERT_TRUE(b->unload());
  EXPECT_EQ(b->loadCgroup(user, g.path()).code(), -ENOSPC);
  ASSERT_TRUE(a->unload());
  ASSERT_TRUE(c->unload());
  EXPECT_TRUE(b->loadCgroup(user, g.path()));
}

}  // namespace
