// Thread loads follow the kernel's ptrace rule (session/monitor_rule.h,
// pfmfs(5) SECURITY): the rule on made-up credentials, exact for each case;
// readTaskCreds on real processes that change their ids the ways a set-id
// program does; and Session::load refusing what the rule refuses, leaving
// the session as it was. Runs as root (it changes a child's ids).
#include <sys/prctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "pmu/task_creds.h"
#include "session/monitor_rule.h"
#include "session/session.h"
#include "tests/support/forked_child.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::pmu::readTaskCreds;
using pfmfs::pmu::TaskCreds;
using pfmfs::session::Caller;
using pfmfs::session::mayMonitorThread;
using pfmfs::testing::ChildIo;
using pfmfs::testing::ForkedChild;
using pfmfs::testing::kCycles;
using pfmfs::testing::SimEngine;

constexpr uid_t kUser = 65534;
constexpr gid_t kGroup = 65534;
constexpr gid_t kOtherGroup = 65533;
constexpr int kCapSysPtrace = 19;

TaskCreds ownedBy(uid_t u, gid_t g) {
  TaskCreds t;
  t.tgid = 4000;
  t.uids = {u, u, u};
  t.gids = {g, g, g};
  t.dumpable = true;
  return t;
}

Caller user() {
  Caller c = Caller::user(kUser, kGroup);
  c.tgid = 3000;
  return c;
}

int verdict(const Caller& c, const TaskCreds& t) {
  auto s = mayMonitorThread(c, 4001, t);
  return s ? 0 : s.error().code;
}

TEST(MonitorRule, OwnDumpableThreadIsAllowed) { EXPECT_EQ(verdict(user(), ownedBy(kUser, kGroup)), 0); }

TEST(MonitorRule, EveryUidAndGidMustBeTheCallers) {
  for (int i = 0; i < 3; ++i) {
    TaskCreds t = ownedBy(kUser, kGroup);
    t.uids[static_cast<std::size_t>(i)] = 0;
    EXPECT_EQ(verdict(user(), t), -EPERM) << "uid " << i;
    t = ownedBy(kUser, kGroup);
    t.gids[static_cast<std::size_t>(i)] = kOtherGroup;
    EXPECT_EQ(verdict(user(), t), -EPERM) << "gid " << i;
  }
}

TEST(MonitorRule, UndumpableThreadIsRefused) {
  TaskCreds t = ownedBy(kUser, kGroup);
  t.dumpable = false;
  auto s = mayMonitorThread(user(), 4001, t);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, -EPERM);
  EXPECT_NE(s.error().reason.find("not dumpable"), std::string::npos) << s.error().reason;
}

TEST(MonitorRule, TheCallersRealIdsCountNotItsFilesystemIds) {
  // A set-uid program run by kUser has FUSE's (filesystem) uid of its
  // owner: the kernel's REALCREDS rule looks at the real one.
  Caller c = user();
  c.uid = 1234;
  c.gid = 1234;
  EXPECT_EQ(verdict(c, ownedBy(kUser, kGroup)), 0);
  EXPECT_EQ(verdict(c, ownedBy(1234, 1234)), -EPERM);
}

TEST(MonitorRule, OwnProcessIsAllowedWhateverItsIds) {
  TaskCreds t = ownedBy(0, 0);
  t.dumpable = false;
  t.tgid = 3000;
  EXPECT_EQ(verdict(user(), t), 0);
}

TEST(MonitorRule, CapSysPtraceMonitorsAnyThread) {
  Caller c = user();
  c.may_monitor_any_thread = true;
  TaskCreds t = ownedBy(0, 0);
  t.dumpable = false;
  EXPECT_EQ(verdict(c, t), 0);
}

TEST(MonitorRule, AnotherPidNamespaceIsRefusedEvenWithCapabilities) {
  Caller c = Caller::root();
  c.in_daemon_pid_ns = false;
  auto s = mayMonitorThread(c, 4001, ownedBy(0, 0));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, -EPERM);
  EXPECT_NE(s.error().reason.find("pid namespace"), std::string::npos) << s.error().reason;
}

// A child that takes the ids `setup` gives it, then waits for the test.
int childWithIds(const ChildIo& io, bool (*setup)()) {
  if (!setup()) return 2;
  io.report(1);
  io.awaitGo();
  return 0;
}

// A change of ids leaves a process undumpable, as an exec of a set-id
// program does; a process the user started is dumpable again (an exec with
// all ids equal makes it so, here prctl).
bool plainUser() {
  return ::setresgid(kGroup, kGroup, kGroup) == 0 && ::setresuid(kUser, kUser, kUser) == 0 &&
         ::prctl(PR_SET_DUMPABLE, 1) == 0;
}
bool setGidProgram() {  // what exec of a set-gid program owned by kOtherGroup leaves
  return ::setresgid(kGroup, kOtherGroup, kOtherGroup) == 0 && ::setresuid(kUser, kUser, kUser) == 0;
}
bool setGidButDumpable() {  // the ids alone refuse it
  return setGidProgram() && ::prctl(PR_SET_DUMPABLE, 1) == 0;
}
bool undumpable() { return plainUser() && ::prctl(PR_SET_DUMPABLE, 0) == 0; }

TEST(TaskCreds, ReadsTheIdsAProcessRunsWith) {
  auto own = readTaskCreds(::getpid());
  ASSERT_TRUE(own);
  EXPECT_EQ(own->tgid, ::getpid());
  EXPECT_EQ(own->uids[0], ::getuid());
  EXPECT_EQ(own->gids[0], ::getgid());
  EXPECT_EQ(own->pid_ns_levels, 1U);
  EXPECT_TRUE(own->dumpable);
  EXPECT_TRUE(own->hasCapability(kCapSysPtrace));  // the test runs as root

  ForkedChild plain([](const ChildIo& io) { return childWithIds(io, plainUser); });
  ForkedChild setgid([](const ChildIo& io) { return childWithIds(io, setGidProgram); });
  ForkedChild hidden([](const ChildIo& io) { return childWithIds(io, undumpable); });
  ASSERT_EQ(plain.report(), 1U);
  ASSERT_EQ(setgid.report(), 1U);
  ASSERT_EQ(hidden.report(), 1U);

  auto p = readTaskCreds(plain.pid());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->tgid, plain.pid());
  EXPECT_EQ(p->uids, (std::array<uid_t, 3>{kUser, kUser, kUser}));
  EXPECT_EQ(p->gids, (std::array<gid_t, 3>{kGroup, kGroup, kGroup}));
  EXPECT_EQ(p->cap_effective, 0U);
  EXPECT_TRUE(p->dumpable);

  auto s = readTaskCreds(setgid.pid());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->gids, (std::array<gid_t, 3>{kGroup, kOtherGroup, kOtherGroup}));
  EXPECT_FALSE(s->dumpable);  // its change of ids made it so

  auto h = readTaskCreds(hidden.pid());
  ASSERT_TRUE(h);
  EXPECT_EQ(h->gids, (std::array<gid_t, 3>{kGroup, kGroup, kGroup}));
  EXPECT_FALSE(h->dumpable);

  plain.go();
  setgid.go();
  hidden.go();
  EXPECT_EQ(plain.wait(), 0);
  EXPECT_EQ(setgid.wait(), 0);
  EXPECT_EQ(hidden.wait(), 0);
  EXPECT_EQ(readTaskCreds(plain.pid()).code(), -ESRCH);
}

TEST(SessionLoad, FollowsTheRuleAndChangesNothingWhenRefused) {
  SimEngine e;
  auto created = e.engine().createSession(Caller::user(kUser, kGroup), "u");
  ASSERT_TRUE(created);
  auto s = *created;
  ASSERT_TRUE(s->writePmc(Caller::user(kUser, kGroup), 0, {0, kCycles, false}));
  ForkedChild plain([](const ChildIo& io) { return childWithIds(io, plainUser); });
  ForkedChild setgid([](const ChildIo& io) { return childWithIds(io, setGidButDumpable); });
  ForkedChild hidden([](const ChildIo& io) { return childWithIds(io, undumpable); });
  ASSERT_EQ(plain.report(), 1U);
  ASSERT_EQ(setgid.report(), 1U);
  ASSERT_EQ(hidden.report(), 1U);

  Caller me = Caller::user(kUser, kGroup);
  auto refused = s->load(me, setgid.pid());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, -EPERM);
  EXPECT_NE(s->error().find("gid"), std::string::npos) << s->error();
  refused = s->load(me, hidden.pid());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, -EPERM);
  EXPECT_NE(s->error().find("not dumpable"), std::string::npos) << s->error();
  EXPECT_EQ(s->state().state, pfmfs::session::State::Unloaded);
  // The target was not claimed: root loads it from another session.
  auto root = e.newSession("r");
  EXPECT_TRUE(root->load(Caller::root(), setgid.pid()));

  auto loaded = s->load(me, plain.pid());
  ASSERT_TRUE(loaded) << loaded.error().reason;
  EXPECT_EQ(s->state().state, pfmfs::session::State::Loaded);
  plain.go();
  setgid.go();
  hidden.go();
}

}  // namespace
