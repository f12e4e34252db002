// The rules of a session's life as a user meets them (pfmfs(5), sessions/):
// every ctl command's state requirements and errors (load of a thread or a
// cpu, start, stop, restart, unload) and the mode and flags rules. Every
// failure must change nothing and leave a reason in error()
// (session_rules_fixture.h).
#include "tests/session/session_rules_fixture.h"

namespace {

using namespace pfmfs::testing::rules;

// ---- a fresh session ------------------------------------------------------------------

TEST_F(SessionRules, FreshSessionIsUnloadedWithSetZeroAndDefaults) {
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_EQ(i.mode, Mode::Thread);
  EXPECT_FALSE(i.target.has_value());
  EXPECT_EQ(i.set, 0u);
  EXPECT_EQ(i.queued, 0u);
  EXPECT_EQ(i.lost, 0u);
  EXPECT_FALSE(i.exited);
  EXPECT_EQ(s().mode(), Mode::Thread);
  EXPECT_EQ(s().flags(), Flags{});
  EXPECT_EQ(s().setIds(), (std::vector<std::uint16_t>{0}));
  EXPECT_EQ(s().error(), "");
  for (const auto& c : sim().desc().pmcs) EXPECT_EQ(pmcValue(s(), 0, c.index), c.dfl_val) << "pmc" << c.index;
  for (const auto& d : sim().desc().pmds) EXPECT_EQ(pmdValue(s(), 0, d.index), 0u) << "pmd" << d.index;
  EXPECT_TRUE(s().counts().empty());
  EXPECT_TRUE(regsText(s(), 0).empty());
}

// ---- load (thread) -------------------------------------------------------------------

TEST_F(SessionRules, LoadOwnThreadAsRoot) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Loaded);
  EXPECT_EQ(i.mode, Mode::Thread);
  ASSERT_TRUE(i.target.has_value());
  EXPECT_EQ(*i.target, gettidNow());
  EXPECT_EQ(i.set, 0u);
  EXPECT_FALSE(i.exited);
}

TEST_F(SessionRules, LoadNonexistentThreadIsEsrch) {
  for (int tid : {0x3fffffff, 0, -5, -1, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(tid);
    EXPECT_FAILS_CLEANLY(s().load(kRoot, tid), ESRCH);
  }
}

TEST_F(SessionRules, LoadThreadOfAnotherUidIsEperm) {
  ASSERT_EQ(::getuid(), 0u) << "tests run as root: this thread is uid 0";
  EXPECT_FAILS_CLEANLY(s().load(kUser, gettidNow()), EPERM);
  EXPECT_FAILS_CLEANLY(s().load(Caller::user(1, 0), gettidNow()), EPERM);
}

TEST_F(SessionRules, LoadThreadOfTheSameUidNeedsNoPrivilege) {
  ASSERT_EQ(::getuid(), 0u);
  // uid 0 without any privilege flag: the same uid is enough.
  ASSERT_TRUE(s().load(Caller::user(0, 0), gettidNow()).ok());
  EXPECT_EQ(s().state().state, State::Loaded);
}

TEST_F(SessionRules, LoadAnyThreadWithPtracePrivilege) {
  Caller c = Caller::user(12345, 12345);
  c.may_monitor_any_thread = true;  // CAP_SYS_PTRACE
  ASSERT_TRUE(s().load(c, gettidNow()).ok());
  EXPECT_EQ(s().state().state, State::Loaded);
}

TEST_F(SessionRules, LoadProcessOfAnotherUser) {
  ASSERT_EQ(::geteuid(), 0u);
  UidChild child(12345, 12345);
  ASSERT_TRUE(child.ok());
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  // Its owner may monitor it; another unprivileged user may not.
  EXPECT_FAILS_CLEANLY(s().load(Caller::user(23456, 23456), child.pid()), EPERM);
  ASSERT_TRUE(s().load(Caller::user(12345, 12345), child.pid()).ok());
  EXPECT_EQ(*s().state().target, child.pid());
  ASSERT_TRUE(s().unload().ok());
  // Root may monitor anything.
  ASSERT_TRUE(other->load(kRoot, child.pid()).ok());
}

TEST_F(SessionRules, LoadSetuidProcessIsEpermForItsRealUid) {
  // Real uid 12345, effective uid 0 (a setuid-root program): its real user may
  // not monitor it, as ptrace would not let them.
  ASSERT_EQ(::geteuid(), 0u);
  UidChild child(12345, 0);
  ASSERT_TRUE(child.ok());
  EXPECT_FAILS_CLEANLY(s().load(Caller::user(12345, 12345), child.pid()), EPERM);
  ASSERT_TRUE(s().load(kRoot, child.pid()).ok());
}

TEST_F(SessionRules, LoadWhileLoadedIsEbusy) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow()), EBUSY);
  EXPECT_FAILS_CLEANLY(s().load(kRoot, 0x3fffffff), EBUSY);
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow()), EBUSY);
}

TEST_F(SessionRules, LoadWhileMaskedIsEbusy) {
  makeMasked();
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow()), EBUSY);
}

TEST_F(SessionRules, LoadThreadTakenByAnotherSessionIsEbusy) {
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow()), EBUSY);
  ASSERT_TRUE(other->start().ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow()), EBUSY);
  // Once the other session lets go, the thread is free.
  ASSERT_TRUE(other->unload().ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_EQ(s().state().state, State::Loaded);
}

TEST_F(SessionRules, DestroyingALoadedSessionFreesItsThread) {
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(other->start().ok());
  ASSERT_TRUE(sim().engine().destroySession("other").ok());
  EXPECT_EQ(other->state().state, State::Unloaded);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
}

TEST_F(SessionRules, LoadWithMissingSetIsEinval) {
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow(), 1u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow(), 65535u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow(), 65536u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().load(kRoot, gettidNow(), UINT_MAX), EINVAL);
  EXPECT_THAT(s().error(), HasSubstr(std::to_string(UINT_MAX)));
}

TEST_F(SessionRules, LoadWithSetMakesItTheFirstActiveSet) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow(), 2u).ok());
  EXPECT_EQ(s().state().set, 2u);
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 2u);
  EXPECT_EQ(s().setInfo(2)->runs, 1u);
  EXPECT_EQ(s().setInfo(0)->runs, 0u);
  EXPECT_EQ(s().setInfo(1)->runs, 0u);
}

TEST_F(SessionRules, LoadSetZeroExplicitly) {
  ASSERT_TRUE(s().load(kRoot, gettidNow(), 0u).ok());
  EXPECT_EQ(s().state().set, 0u);
}

TEST_F(SessionRules, FailedLoadIsNotAFirstLoad) {
  ASSERT_EQ(s().load(kRoot, 0x3fffffff).code(), -ESRCH);
  ASSERT_EQ(s().load(kUser, gettidNow()).code(), -EPERM);
  // The mode is writable until a load succeeds.
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  EXPECT_EQ(s().mode(), Mode::System);
}

// ---- load (system) ---------------------------------------------------------------------

TEST_F(SessionRules, SystemLoadCpuZeroAsRoot) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  ASSERT_TRUE(s().load(kRoot, 0).ok());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Loaded);
  EXPECT_EQ(i.mode, Mode::System);
  ASSERT_TRUE(i.target.has_value());
  EXPECT_EQ(*i.target, 0);
}

TEST_F(SessionRules, SystemLoadByPlainUserIsEperm) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  EXPECT_FAILS_CLEANLY(s().load(kUser, 0), EPERM);
  Caller ptrace = kUser;
  ptrace.may_monitor_any_thread = true;  // ptrace is not the system group
  EXPECT_FAILS_CLEANLY(s().load(ptrace, 0), EPERM);
}

TEST_F(SessionRules, SystemLoadBySystemGroupMember) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  Caller c = kUser;
  c.may_system_wide = true;
  ASSERT_TRUE(s().load(c, 0).ok());
  EXPECT_EQ(s().state().state, State::Loaded);
}

TEST_F(SessionRules, SystemLoadOfCpuNotOnlineIsEinval) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  for (int cpu : {100000, -1, INT_MAX, INT_MIN}) {
    SCOPED_TRACE(cpu);
    EXPECT_FAILS_CLEANLY(s().load(kRoot, cpu), EINVAL);
  }
}

TEST_F(SessionRules, SystemLoadWithMissingSetIsEinval) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, 0, 4u), EINVAL);
}

TEST_F(SessionRules, SecondSystemSessionOnTheSameCpuIsEbusy) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->setMode(Mode::System).ok());
  ASSERT_TRUE(other->load(kRoot, 0).ok());
  EXPECT_FAILS_CLEANLY(s().load(kRoot, 0), EBUSY);
  ASSERT_TRUE(other->unload().ok());
  ASSERT_TRUE(s().load(kRoot, 0).ok());
  EXPECT_EQ(other->load(kRoot, 0).code(), -EBUSY);
}

TEST_F(SessionRules, SystemSessionsOnDifferentCpusCoexist) {
  // One system-wide session per online cpu: none blocks another.
  std::vector<std::shared_ptr<Session>> per_cpu;
  for (int cpu = 0; cpu < 1024; ++cpu) {
    if (!pfmfs::pmu::cpuOnline(cpu)) continue;
    auto x = sim().newSession("cpu" + std::to_string(cpu));
    ASSERT_NE(x, nullptr);
    ASSERT_TRUE(x->setMode(Mode::System).ok());
    ASSERT_TRUE(x->load(kRoot, cpu).ok()) << "cpu " << cpu << ": " << x->error();
    per_cpu.push_back(x);
  }
  ASSERT_FALSE(per_cpu.empty());
  for (auto& x : per_cpu) EXPECT_EQ("cpu" + std::to_string(*x->state().target), x->name());
}

TEST_F(SessionRules, SystemAndThreadSessionsDoNotShareTargets) {
  // cpu 0 and this thread are different kinds of target: neither blocks the other.
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  ASSERT_TRUE(s().load(kRoot, 0).ok());
  auto thread = sim().newSession("thread");
  ASSERT_NE(thread, nullptr);
  ASSERT_TRUE(thread->load(kRoot, gettidNow()).ok());
  // A thread exiting does not unload the system session on the cpu of the same number.
  sim().engine().threadExited(0);
  EXPECT_EQ(s().state().state, State::Loaded);
  EXPECT_FALSE(s().state().exited);
}

// ---- start, stop ---------------------------------------------------------------------------

TEST_F(SessionRules, StartUnloadedIsEinval) {
  EXPECT_FAILS_CLEANLY(s().start(), EINVAL);
  EXPECT_FAILS_CLEANLY(s().start(0u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().start(9u), EINVAL);
}

TEST_F(SessionRules, StartAfterUnloadIsEinval) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_FAILS_CLEANLY(s().start(), EINVAL);
}

TEST_F(SessionRules, StartWithMissingSetIsEinval) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().start(1u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().start(65536u), EINVAL);
  EXPECT_FAILS_CLEANLY(s().start(UINT_MAX), EINVAL);
  EXPECT_EQ(s().state().state, State::Loaded);
}

TEST_F(SessionRules, StartWithMissingSetWhileActiveIsEinval) {
  makeRichActive();
  EXPECT_FAILS_CLEANLY(s().start(1u), EINVAL);
}

TEST_F(SessionRules, StartCounts) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().state, State::Active);
  sim().advance(100);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  EXPECT_EQ(s().setInfo(0)->runs, 1u);
}

TEST_F(SessionRules, StartWhileActiveIsHarmless) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().state, State::Active);
  EXPECT_EQ(s().setInfo(0)->runs, 1u);  // not a new activation
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 60u);
}

TEST_F(SessionRules, StartNChoosesTheSet) {
  ASSERT_TRUE(s().createSet(4).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start(4u).ok());
  EXPECT_EQ(s().state().set, 4u);
  EXPECT_EQ(s().setInfo(4)->runs, 1u);
  EXPECT_EQ(s().setInfo(0)->runs, 0u);
  // start without N resumes the last active set.
  ASSERT_TRUE(s().stop().ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 4u);
  EXPECT_EQ(s().setInfo(4)->runs, 2u);
  EXPECT_EQ(s().setInfo(0)->runs, 0u);
}

TEST_F(SessionRules, StartNWhileActiveSwitchesToN) {
  ASSERT_TRUE(s().createSet(4).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 0u);
  ASSERT_TRUE(s().start(4u).ok());
  EXPECT_EQ(s().state().state, State::Active);
  EXPECT_EQ(s().state().set, 4u);
  EXPECT_EQ(s().setInfo(4)->runs, 1u);
}

TEST_F(SessionRules, FirstStartIsInTheLowestSet) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 0u);
}

TEST_F(SessionRules, FirstStartIsInTheLowestSetEvenAfterSetZeroWasReplaced) {
  // pfmfs(5), ctl: `start` with no N starts "the last active set (the lowest on
  // first start)". Set 0 deleted, sets 5 then 2 created: the lowest is 2.
  ASSERT_TRUE(s().createSet(5).ok());
  ASSERT_TRUE(s().deleteSet(0).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_EQ(s().setIds(), (std::vector<std::uint16_t>{2, 5}));
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 2u);
  EXPECT_EQ(s().setInfo(2)->runs, 1u);
  EXPECT_EQ(s().setInfo(5)->runs, 0u);
}

TEST_F(SessionRules, StartWhileMaskedIsEbusy) {
  makeMasked();
  EXPECT_FAILS_CLEANLY(s().start(), EBUSY);
  EXPECT_FAILS_CLEANLY(s().start(0u), EBUSY);
  EXPECT_EQ(s().state().state, State::Masked);
}

TEST_F(SessionRules, StopUnloadedIsEinval) {
  EXPECT_FAILS_CLEANLY(s().stop(), EINVAL);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_FAILS_CLEANLY(s().stop(), EINVAL);
}

TEST_F(SessionRules, StopWhenLoadedIsHarmless) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  std::string before = snap();
  ASSERT_TRUE(s().stop().ok());
  ASSERT_TRUE(s().stop().ok());
  EXPECT_EQ(snap(), before);
}

TEST_F(SessionRules, StopFreezesCountsThatStayReadable) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);
  ASSERT_TRUE(s().stop().ok());
  EXPECT_EQ(s().state().state, State::Loaded);
  sim().advance(100);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  EXPECT_EQ(countOf(s(), 0, 0), 300u);
  ASSERT_TRUE(s().stop().ok());  // again: harmless
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
}

TEST_F(SessionRules, StopWhileMaskedStaysMaskedUntilRestart) {
  makeMasked();
  ASSERT_TRUE(s().stop().ok());
  EXPECT_EQ(s().state().state, State::Masked);
  EXPECT_FAILS_CLEANLY(s().start(), EBUSY);
  ASSERT_TRUE(s().restart().ok());
  EXPECT_EQ(s().state().state, State::Loaded);
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);
}

TEST_F(SessionRules, UnloadForgetsAStoppedMask) {
  makeMasked();
  ASSERT_TRUE(s().stop().ok());
  ASSERT_TRUE(s().unload().ok());
  PmdWrite w = pmd(0, kMinus10);
  w.notify = true;
  ASSERT_TRUE(s().writePmd(0, w).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  ASSERT_EQ(s().state().state, State::Masked);
  ASSERT_TRUE(s().restart().ok());
  EXPECT_EQ(s().state().state, State::Active);
}

// ---- restart ----------------------------------------------------------------------------------

TEST_F(SessionRules, RestartWithNothingPendingIsEbusy) {
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);  // unloaded
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);  // loaded
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);  // active
}

// A notification can reach the program after it unloaded the session
// (libpfm-compat signals from a thread of its own): the restart that
// acknowledges it is accepted once and changes nothing.
TEST_F(SessionRules, ARestartAfterUnloadingAMaskedSessionIsALateAcknowledgement) {
  makeMasked();
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().restart().ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);
}

TEST_F(SessionRules, OnlyAMaskedUnloadLeavesARestartToAcknowledge) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);
  makeMasked();
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());  // a new load: the old notification is history
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);
}

TEST_F(SessionRules, RestartWhenMaskedResumesFromTheLongReset) {
  makeMasked(s(), 1000);
  EXPECT_EQ(s().state().queued, 1u);
  ASSERT_TRUE(s().restart().ok());
  EXPECT_EQ(s().state().state, State::Active);
  EXPECT_EQ(pmdValue(s(), 0, 0), 1000u);
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 1030u);
  // Nothing pending any more.
  EXPECT_FAILS_CLEANLY(s().restart(), EBUSY);
}

// ---- unload -------------------------------------------------------------------------------------

TEST_F(SessionRules, UnloadUnloadedIsHarmless) {
  makeRich();
  std::string before = snap();
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(snap(), before);
  EXPECT_EQ(s().error(), "");
}

TEST_F(SessionRules, UnloadFromEveryState) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  EXPECT_FALSE(s().state().target.has_value());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
}

TEST_F(SessionRules, UnloadWhileMasked) {
  makeMasked();
  ASSERT_TRUE(s().unload().ok());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_EQ(i.queued, 1u);  // the notification stays readable
  EXPECT_FALSE(i.exited);
  EXPECT_TRUE(s().restart().ok());  // its late acknowledgement, once
  EXPECT_EQ(s().restart().code(), -EBUSY);
}

TEST_F(SessionRules, UnloadKeepsCountsAndLoadAgainContinues) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2)).ok());  // FIXED_CTR0: instructions, 2/ns
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  EXPECT_EQ(pmdValue(s(), 0, 16), 200u);
  sim().advance(100);  // nothing counts while unloaded
  auto counts = s().counts();
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0].pmd, 0u);
  EXPECT_EQ(counts[0].value, 300u);
  EXPECT_EQ(counts[0].enabled_ns, 100u);
  EXPECT_EQ(counts[0].running_ns, 100u);
  EXPECT_EQ(counts[1].pmd, 16u);
  EXPECT_EQ(counts[1].value, 200u);

  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  ASSERT_TRUE(s().start().ok());
  sim().advance(50);
  EXPECT_EQ(pmdValue(s(), 0, 0), 450u);
  EXPECT_EQ(pmdValue(s(), 0, 16), 300u);
  EXPECT_EQ(countOf(s(), 0, 0), 450u);
  auto again = s().counts();
  ASSERT_FALSE(again.empty());
  EXPECT_EQ(again[0].enabled_ns, 150u);
  EXPECT_EQ(again[0].running_ns, 150u);
}

TEST_F(SessionRules, LoadAgainInAnotherSetAfterUnload) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 1, pmc(1, kInstructions)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow(), 1u).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 1u);
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 1, 1), 20u);
}

// ---- mode ------------------------------------------------------------------------------------------

TEST_F(SessionRules, ModeIsWritableBeforeTheFirstLoad) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  EXPECT_EQ(s().mode(), Mode::System);
  EXPECT_EQ(s().state().mode, Mode::System);
  ASSERT_TRUE(s().setMode(Mode::Thread).ok());
  EXPECT_EQ(s().mode(), Mode::Thread);
  ASSERT_TRUE(s().setMode(Mode::Thread).ok());
  EXPECT_EQ(s().mode(), Mode::Thread);
}

TEST_F(SessionRules, ModeWhileLoadedIsEbusy) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::System), EBUSY);
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::Thread), EBUSY);
}

TEST_F(SessionRules, ModeAfterTheFirstLoadIsEbusyEvenUnloaded) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::System), EBUSY);
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::Thread), EBUSY);
  EXPECT_EQ(s().mode(), Mode::Thread);
}

TEST_F(SessionRules, SystemModeAfterTheFirstLoadIsEbusyEvenUnloaded) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  ASSERT_TRUE(s().load(kRoot, 0).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::Thread), EBUSY);
  EXPECT_EQ(s().mode(), Mode::System);
}

TEST_F(SessionRules, SystemModeWithNotifyBlockIsEinval) {
  ASSERT_TRUE(s().setFlags(Flags{true, false, false, false}).ok());
  EXPECT_FAILS_CLEANLY(s().setMode(Mode::System), EINVAL);
  EXPECT_EQ(s().mode(), Mode::Thread);
  // Without notify_block it is fine.
  ASSERT_TRUE(s().setFlags(Flags{false, true, false, false}).ok());
  ASSERT_TRUE(s().setMode(Mode::System).ok());
}

// ---- flags ----------------------------------------------------------------------------------------------

TEST_F(SessionRules, FlagsAreWritableWhileUnloaded) {
  Flags f{true, true, true, true};
  ASSERT_TRUE(s().setFlags(f).ok());
  EXPECT_EQ(s().flags(), f);
  ASSERT_TRUE(s().setFlags(Flags{}).ok());
  EXPECT_EQ(s().flags(), Flags{});
}

TEST_F(SessionRules, FlagsWhileLoadedAreEbusy) {
  ASSERT_TRUE(s().setFlags(Flags{false, true, false, false}).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{}), EBUSY);
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{false, true, false, false}), EBUSY);
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{}), EBUSY);
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().setFlags(Flags{false, false, true, false}).ok());
  EXPECT_EQ(s().flags(), (Flags{false, false, true, false}));
}

TEST_F(SessionRules, FlagsWhileMaskedAreEbusy) {
  makeMasked();
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{false, true, false, false}), EBUSY);
}

TEST_F(SessionRules, NotifyBlockInSystemModeIsEinval) {
  ASSERT_TRUE(s().setMode(Mode::System).ok());
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{true, false, false, false}), EINVAL);
  EXPECT_FAILS_CLEANLY(s().setFlags(Flags{true, true, true, false}), EINVAL);
  EXPECT_EQ(s().flags(), Flags{});
  ASSERT_TRUE(s().setFlags(Flags{false, true, true, false}).ok());
  EXPECT_EQ(s().flags(), (Flags{false, true, true, false}));
}

}  // namespace
