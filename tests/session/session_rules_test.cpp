// The rules of the session engine as a user meets them (pfmfs(5), sessions/):
// every ctl command's state requirements and errors, mode/flags/sets rules,
// session names and limits, register validation, regs copying, and what
// happens when a monitored thread exits. Every failure must change nothing and
// leave a reason in error().
#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "pmu/host_info.h"
#include "session/engine.h"
#include "session/session.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::session::Caller;
using pfmfs::session::CountLine;
using pfmfs::session::Engine;
using pfmfs::session::Flags;
using pfmfs::session::Message;
using pfmfs::session::MessageType;
using pfmfs::session::Mode;
using pfmfs::session::PmcWrite;
using pfmfs::session::PmdWrite;
using pfmfs::session::RegWrite;
using pfmfs::session::Session;
using pfmfs::session::State;
using pfmfs::session::StateInfo;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::gettidNow;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::kOs;
using pfmfs::testing::kUsr;
using pfmfs::testing::SimConfig;
using pfmfs::testing::SimEngine;
using ::testing::HasSubstr;

constexpr std::uint64_t kMinus10 = ~std::uint64_t{0} - 9;  // 2^64 - 10: overflows after 10 events
constexpr std::uint64_t kEn = 1ull << 22;
constexpr std::uint64_t kInt = 1ull << 20;

const Caller kRoot = Caller::root();
const Caller kUser = Caller::user(12345, 12345);

// ---- helpers -----------------------------------------------------------------

PmcWrite pmc(unsigned index, std::uint64_t value, bool no_emul64 = false) {
  PmcWrite w;
  w.index = index;
  w.value = value;
  w.no_emul64 = no_emul64;
  return w;
}

PmdWrite pmd(unsigned index, std::uint64_t value) {
  PmdWrite w;
  w.index = index;
  w.value = value;
  return w;
}

SwitchSpec timeSwitch(std::uint64_t ns) {
  SwitchSpec s;
  s.on_time = true;
  s.timeout_ns = ns;
  return s;
}

SwitchSpec ovflSwitch() {
  SwitchSpec s;
  s.on_ovfl = true;
  return s;
}

std::string flagsText(const Flags& f) {
  return fmt::format("notify_block={} no_msg={} autoclose={} inherit={}", f.notify_block, f.no_msg, f.autoclose,
                     f.inherit);
}

// One register write as text, absent attributes shown as their defaults: two
// writes with the same text have the same effect on a fresh set.
std::string regText(const RegWrite& w) {
  if (const auto* c = std::get_if<PmcWrite>(&w))
    return fmt::format("pmc{} 0x{:x}{}", c->index, c->value, c->no_emul64 ? " no_emul64" : "");
  const auto& d = std::get<PmdWrite>(w);
  return fmt::format(
      "pmd{} {} long_reset={} short_reset={} switch_cnt={} reset_pmds=0x{:x} smpl_pmds=0x{:x} random_mask=0x{:x} "
      "eventid={} notify={} random={}",
      d.index, d.value, d.long_reset.value_or(0), d.short_reset.value_or(0), d.switch_cnt.value_or(0),
      d.reset_pmds.value_or(0), d.smpl_pmds.value_or(0), d.random_mask.value_or(0), d.eventid.value_or(0),
      d.notify.value_or(false), d.random.value_or(false));
}

std::vector<std::string> regsText(Session& s, unsigned set) {
  auto r = s.regs(set);
  EXPECT_TRUE(r.ok()) << "regs(" << set << ")";
  std::vector<std::string> out;
  if (r.ok())
    for (const auto& w : *r) out.push_back(regText(w));
  return out;
}

// Everything a user can observe of a session, as text: what a failing
// operation must leave exactly as it was.
std::string snapshot(SimEngine& sim, Session& s) {
  std::string out;
  StateInfo i = s.state();
  out += fmt::format("state={} mode={} target={} set={} queued={} lost={} exited={}\n", toString(i.state),
                     toString(i.mode), i.target ? std::to_string(*i.target) : "-", i.set, i.queued, i.lost, i.exited);
  out += fmt::format("mode()={} flags={}\n", toString(s.mode()), flagsText(s.flags()));
  for (std::uint16_t id : s.setIds()) {
    auto info = s.setInfo(id);
    EXPECT_TRUE(info.ok()) << "setInfo(" << id << ")";
    if (!info.ok()) continue;
    out += fmt::format("set {} on_time={} timeout={} on_ovfl={} runs={} duration={} timeout_ns={} ovfl=0x{:x}\n", id,
                       info->switch_spec.on_time, info->switch_spec.timeout_ns, info->switch_spec.on_ovfl, info->runs,
                       info->duration_ns, info->timeout_ns, info->ovfl_pmds);
    for (const auto& c : sim.desc().pmcs) {
      auto v = s.readPmc(id, c.index);
      EXPECT_TRUE(v.ok());
      if (v.ok()) out += fmt::format("  pmc{}=0x{:x}{}\n", c.index, v->value, v->no_emul64 ? " no_emul64" : "");
    }
    for (const auto& d : sim.desc().pmds) {
      auto v = s.readPmd(id, d.index);
      EXPECT_TRUE(v.ok());
      if (!v.ok()) continue;
      const auto& p = v->state;
      out += fmt::format(
          "  pmd{}={} long={} short={} last={} swcnt={} swleft={} reset=0x{:x} smpl=0x{:x} rmask=0x{:x} eventid={} "
          "notify={} random={} written={}\n",
          d.index, v->value, p.long_reset, p.short_reset, p.last_reset, p.switch_cnt, p.switch_left, p.reset_pmds,
          p.smpl_pmds, p.random_mask, p.eventid, p.notify, p.random, p.written);
    }
  }
  for (const CountLine& c : s.counts())
    out += fmt::format("count set={} pmd={} value={} enabled={} running={}\n", c.set, c.pmd, c.value, c.enabled_ns,
                       c.running_ns);
  for (const auto& n : sim.engine().sessionNames()) out += "session " + n + "\n";
  return out;
}

std::uint64_t pmdValue(Session& s, unsigned set, unsigned index) {
  auto v = s.readPmd(set, index);
  EXPECT_TRUE(v.ok()) << "readPmd(" << set << ", " << index << ")";
  return v.ok() ? v->value : 0xdeadbeef;
}

std::uint64_t pmcValue(Session& s, unsigned set, unsigned index) {
  auto v = s.readPmc(set, index);
  EXPECT_TRUE(v.ok()) << "readPmc(" << set << ", " << index << ")";
  return v.ok() ? v->value : 0xdeadbeef;
}

// The PMDs listed by counts() for `set`.
std::vector<unsigned> countedPmds(Session& s, unsigned set) {
  std::vector<unsigned> out;
  for (const auto& c : s.counts())
    if (c.set == set) out.push_back(c.pmd);
  return out;
}

std::uint64_t countOf(Session& s, unsigned set, unsigned pmd_index) {
  for (const auto& c : s.counts())
    if (c.set == set && c.pmd == pmd_index) return c.value;
  ADD_FAILURE() << "no count for set " << set << " pmd" << pmd_index;
  return 0xdeadbeef;
}

// Waits (a minute at most) until /proc no longer knows thread `tid`.
bool waitThreadGone(pid_t tid) {
  for (int i = 0; i < 60000; ++i) {
    if (!pfmfs::pmu::threadIds(tid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// A forked child process running with the given real and effective uid until
// destroyed. Needs root.
class UidChild {
 public:
  UidChild(uid_t ruid, uid_t euid) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      long r = ::syscall(SYS_setresgid, ruid, euid, euid);
      if (r == 0) r = ::syscall(SYS_setresuid, ruid, euid, euid);
      // Changing ids left it undumpable; a user's own process is dumpable
      // (its exec made it so), a set-uid one is not.
      if (r == 0 && ruid == euid) r = ::prctl(PR_SET_DUMPABLE, 1);
      char c = r == 0 ? 'y' : 'n';
      if (::write(fds[1], &c, 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(fds[1]);
    char c = 0;
    if (pid_ > 0 && ::read(fds[0], &c, 1) == 1) ok_ = c == 'y';
    ::close(fds[0]);
  }
  ~UidChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  UidChild(const UidChild&) = delete;
  UidChild& operator=(const UidChild&) = delete;

  bool ok() const { return ok_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

// ---- fixture -------------------------------------------------------------------------

class SessionRules : public ::testing::Test {
 protected:
  void SetUp() override { make(SimConfig{}); }

  void make(const SimConfig& config) {
    s_.reset();
    sim_ = std::make_unique<SimEngine>(config);
    s_ = sim_->newSession("s");
    ASSERT_NE(s_, nullptr);
  }

  Session& s() { return *s_; }
  SimEngine& sim() { return *sim_; }
  std::string snap() { return snapshot(*sim_, *s_); }

  // Set 0: pmc0 counts cycles into pmd0, which notifies on overflow after 10
  // events (long reset `long_reset`). Loaded on this thread, started, and
  // advanced 10 ns: masked with one ovfl message queued.
  void makeMasked(Session& x, std::uint64_t long_reset = 0) {
    ASSERT_TRUE(x.writePmc(kRoot, 0, pmc(0, kCycles)).ok());
    PmdWrite w = pmd(0, kMinus10);
    w.notify = true;
    w.long_reset = long_reset;
    ASSERT_TRUE(x.writePmd(0, w).ok());
    ASSERT_TRUE(x.load(kRoot, gettidNow()).ok());
    ASSERT_TRUE(x.start().ok());
    sim_->advance(10);
    ASSERT_EQ(x.state().state, State::Masked);
  }
  void makeMasked() { makeMasked(*s_); }

  // A session with something in every part of it: two sets with registers,
  // a switch spec, flags.
  void makeRich(Session& x) {
    ASSERT_TRUE(x.setFlags(Flags{false, false, true, false}).ok());
    ASSERT_TRUE(x.createSet(3).ok());
    ASSERT_TRUE(x.setSwitch(0, timeSwitch(500)).ok());
    ASSERT_TRUE(x.writePmc(kRoot, 0, pmc(0, kCycles)).ok());
    ASSERT_TRUE(x.writePmc(kRoot, 0, pmc(16, 0x22)).ok());  // fixed ctr0 and ctr1, user
    PmdWrite w = pmd(0, 100);
    w.long_reset = 7;
    w.short_reset = 9;
    w.reset_pmds = 0x2;
    w.eventid = 42;
    ASSERT_TRUE(x.writePmd(0, w).ok());
    ASSERT_TRUE(x.writePmc(kRoot, 3, pmc(1, kInstructions, true)).ok());
    ASSERT_TRUE(x.writePmd(3, pmd(1, 5)).ok());
  }
  void makeRich() { makeRich(*s_); }

  void makeRichActive() {
    makeRich();
    ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
    ASSERT_TRUE(s().start().ok());
    sim_->advance(100);
    ASSERT_EQ(s().state().state, State::Active);
  }

  std::unique_ptr<SimEngine> sim_;
  std::shared_ptr<Session> s_;
};

// Asserts that `op` fails with `code`, leaves a reason in error() and changes
// nothing observable.
#define EXPECT_FAILS_CLEANLY(op, errnum)                                       \
  do {                                                                       \
    std::string before_ = snap();                                            \
    EXPECT_EQ((op).code(), -(errnum)) << #op;                                \
    EXPECT_FALSE(s().error().empty()) << #op << " left no reason";           \
    EXPECT_EQ(snap(), before_) << #op << " changed the session";             \
  } while (0)

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
  sim_->advance(10);
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

// ---- sets -------------------------------------------------------------------------------------------------

TEST_F(SessionRules, SetsAreKeptInIncreasingOrder) {
  ASSERT_TRUE(s().createSet(5).ok());
  ASSERT_TRUE(s().createSet(65535).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  EXPECT_EQ(s().setIds(), (std::vector<std::uint16_t>{0, 2, 5, 65535}));
  // A new set is a fresh image.
  for (const auto& c : sim().desc().pmcs) EXPECT_EQ(pmcValue(s(), 65535, c.index), c.dfl_val);
  EXPECT_TRUE(regsText(s(), 65535).empty());
  EXPECT_EQ(s().setInfo(65535)->switch_spec, SwitchSpec{});
}

TEST_F(SessionRules, CreateExistingSetIsEexist) {
  EXPECT_FAILS_CLEANLY(s().createSet(0), EEXIST);
  ASSERT_TRUE(s().createSet(7).ok());
  EXPECT_FAILS_CLEANLY(s().createSet(7), EEXIST);
}

TEST_F(SessionRules, CreateSetAbove65535IsEinval) {
  EXPECT_FAILS_CLEANLY(s().createSet(65536), EINVAL);
  EXPECT_FAILS_CLEANLY(s().createSet(0x10000 + 7), EINVAL);  // not set 7 truncated
  EXPECT_FAILS_CLEANLY(s().createSet(UINT_MAX), EINVAL);
}

TEST_F(SessionRules, CreateSetWhileLoadedIsEbusy) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().createSet(1), EBUSY);
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().createSet(1), EBUSY);
  ASSERT_TRUE(s().unload().ok());
  ASSERT_TRUE(s().createSet(1).ok());
}

TEST_F(SessionRules, CreateSetWhileMaskedIsEbusy) {
  makeMasked();
  EXPECT_FAILS_CLEANLY(s().createSet(1), EBUSY);
}

TEST_F(SessionRules, CreateSetBeyondMaxSetsIsEnospc) {
  SimConfig c;
  c.engine.max_sets = 3;
  make(c);
  ASSERT_TRUE(s().createSet(10).ok());
  ASSERT_TRUE(s().createSet(20).ok());
  EXPECT_FAILS_CLEANLY(s().createSet(30), ENOSPC);
  ASSERT_TRUE(s().deleteSet(10).ok());
  ASSERT_TRUE(s().createSet(30).ok());
  EXPECT_EQ(s().setIds(), (std::vector<std::uint16_t>{0, 20, 30}));
  EXPECT_FAILS_CLEANLY(s().createSet(40), ENOSPC);
}

TEST_F(SessionRules, DefaultMaxSetsIs64) {
  for (unsigned id = 1; id < 64; ++id) ASSERT_TRUE(s().createSet(id * 1000).ok()) << id;
  EXPECT_EQ(s().setIds().size(), 64u);
  EXPECT_FAILS_CLEANLY(s().createSet(1), ENOSPC);
}

TEST_F(SessionRules, DeleteSet) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_TRUE(s().deleteSet(1).ok());
  EXPECT_EQ(s().setIds(), (std::vector<std::uint16_t>{0, 2}));
  EXPECT_EQ(s().readPmc(1, 0).code(), -EINVAL);
  EXPECT_EQ(s().setInfo(1).code(), -EINVAL);
  // A set made again with the same id is fresh.
  ASSERT_TRUE(s().writePmc(kRoot, 2, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().deleteSet(2).ok());
  ASSERT_TRUE(s().createSet(2).ok());
  EXPECT_EQ(pmcValue(s(), 2, 0), 0u);
}

TEST_F(SessionRules, DeleteMissingSetIsEnoent) {
  ASSERT_TRUE(s().createSet(1).ok());
  EXPECT_FAILS_CLEANLY(s().deleteSet(7), EINVAL);
  EXPECT_FAILS_CLEANLY(s().deleteSet(65536), EINVAL);
  EXPECT_FAILS_CLEANLY(s().deleteSet(65536 + 1), EINVAL);  // not set 1 truncated
  EXPECT_FAILS_CLEANLY(s().deleteSet(UINT_MAX), EINVAL);
}

TEST_F(SessionRules, DeleteSetWhileLoadedIsEbusy) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().deleteSet(1), EBUSY);
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().deleteSet(1), EBUSY);
  EXPECT_FAILS_CLEANLY(s().deleteSet(0), EBUSY);
}

TEST_F(SessionRules, DeleteTheLastSetIsRefused) {
  // Which errno is not in the spec; the engine says EBUSY.
  EXPECT_FAILS_CLEANLY(s().deleteSet(0), EBUSY);
  ASSERT_TRUE(s().createSet(9).ok());
  ASSERT_TRUE(s().deleteSet(0).ok());
  EXPECT_EQ(s().setIds(), (std::vector<std::uint16_t>{9}));
  EXPECT_FAILS_CLEANLY(s().deleteSet(9), EBUSY);
}

TEST_F(SessionRules, DeletingTheNextSetToRunFallsBackToTheLowest) {
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_TRUE(s().createSet(4).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow(), 4u).ok());
  ASSERT_TRUE(s().unload().ok());
  EXPECT_EQ(s().state().set, 4u);
  ASSERT_TRUE(s().deleteSet(4).ok());
  EXPECT_EQ(s().state().set, 0u);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  EXPECT_EQ(s().state().set, 0u);
}

TEST_F(SessionRules, SetSwitchRules) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().setSwitch(1, timeSwitch(1000)).ok());
  auto i = s().setInfo(1);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->switch_spec, timeSwitch(1000));
  EXPECT_EQ(i->timeout_ns, 1000u);  // manual clock: no rounding to the tick
  ASSERT_TRUE(s().setSwitch(1, ovflSwitch()).ok());
  EXPECT_EQ(s().setInfo(1)->switch_spec, ovflSwitch());
  EXPECT_EQ(s().setInfo(1)->timeout_ns, 0u);
  ASSERT_TRUE(s().setSwitch(1, SwitchSpec{}).ok());
  EXPECT_EQ(s().setInfo(1)->switch_spec, SwitchSpec{});
  ASSERT_TRUE(s().setSwitch(0, timeSwitch(1)).ok());
  EXPECT_EQ(s().setInfo(0)->timeout_ns, 1u);
}

TEST_F(SessionRules, SetSwitchOnMissingSetIsEnoent) {
  EXPECT_FAILS_CLEANLY(s().setSwitch(1, timeSwitch(1000)), EINVAL);
  EXPECT_FAILS_CLEANLY(s().setSwitch(65536, ovflSwitch()), EINVAL);
}

TEST_F(SessionRules, SetSwitchTimeZeroIsEinval) {
  ASSERT_TRUE(s().setSwitch(0, timeSwitch(500)).ok());
  EXPECT_FAILS_CLEANLY(s().setSwitch(0, timeSwitch(0)), EINVAL);
  SwitchSpec both = timeSwitch(0);
  both.on_ovfl = true;
  EXPECT_FAILS_CLEANLY(s().setSwitch(0, both), EINVAL);
  EXPECT_EQ(s().setInfo(0)->switch_spec, timeSwitch(500));
}

TEST_F(SessionRules, SetSwitchWhileLoadedIsEbusy) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FAILS_CLEANLY(s().setSwitch(0, timeSwitch(1000)), EBUSY);
  ASSERT_TRUE(s().start().ok());
  EXPECT_FAILS_CLEANLY(s().setSwitch(0, ovflSwitch()), EBUSY);
}

TEST_F(SessionRules, SetInfoOfMissingSetIsEnoent) {
  EXPECT_FAILS_CLEANLY(s().setInfo(1), EINVAL);
  EXPECT_FAILS_CLEANLY(s().setInfo(65536), EINVAL);
}

TEST_F(SessionRules, SetInfoAvailableRegisters) {
  auto i = s().setInfo(0);
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(i->avail_pmcs, 0x1000full);  // pmc0-3, pmc16
  EXPECT_EQ(i->avail_pmds, 0x7000full);  // pmd0-3, pmd16-18
}

// ---- sessions: names, limits ------------------------------------------------------------------------

TEST_F(SessionRules, BadSessionNamesAreEinval) {
  const std::string bad[] = {
      "", ".", "..", "a/b", "/", std::string(65, 'a'), "a b", " ", "a\tb", "a\nb", "caf\xc3\xa9", "\xe2\x82\xac",
      std::string("a\0b", 3), "a:b", "a*", "a+b", "~",
  };
  for (const auto& name : bad) {
    SCOPED_TRACE(name);
    auto r = sim().engine().createSession(kRoot, name);
    EXPECT_EQ(r.code(), -EINVAL);
    EXPECT_FALSE(Engine::validName(name));
  }
  EXPECT_EQ(sim().engine().sessionNames(), (std::vector<std::string>{"s"}));
}

TEST_F(SessionRules, GoodSessionNames) {
  const std::string good[] = {
      "a", "Z", "0", "_", "-", "...", ".hidden", "a.b", "A-Z_a-z.0-9", std::string(64, 'x'), "..a", "a..",
  };
  for (const auto& name : good) {
    SCOPED_TRACE(name);
    auto r = sim().engine().createSession(kRoot, name);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)->name(), name);
    EXPECT_EQ(sim().engine().find(name), *r);
    EXPECT_TRUE(Engine::validName(name));
  }
  EXPECT_EQ(sim().engine().sessionNames().size(), std::size(good) + 1);
}

TEST_F(SessionRules, SessionOwnerIsTheCaller) {
  auto r = sim().engine().createSession(Caller::user(1000, 2000), "mine");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->uid(), 1000u);
  EXPECT_EQ((*r)->gid(), 2000u);
}

TEST_F(SessionRules, ExistingSessionNameIsEexist) {
  EXPECT_EQ(sim().engine().createSession(kRoot, "s").code(), -EEXIST);
  EXPECT_EQ(sim().engine().createSession(kUser, "s").code(), -EEXIST);  // names are global
  EXPECT_EQ(sim().engine().find("s"), s_);
  EXPECT_EQ(sim().engine().sessionNames(), (std::vector<std::string>{"s"}));
}

TEST_F(SessionRules, SessionsPerUidLimitIsEnospc) {
  SimConfig c;
  c.engine.max_sessions_per_user = 2;
  make(c);  // root has "s"
  Engine& e = sim().engine();
  Caller a = Caller::user(1000, 1000), b = Caller::user(1001, 1001);
  ASSERT_TRUE(e.createSession(a, "a1").ok());
  ASSERT_TRUE(e.createSession(a, "a2").ok());
  EXPECT_EQ(e.createSession(a, "a3").code(), -ENOSPC);
  EXPECT_EQ(e.find("a3"), nullptr);
  // Another uid is not affected.
  ASSERT_TRUE(e.createSession(b, "b1").ok());
  ASSERT_TRUE(e.createSession(b, "b2").ok());
  EXPECT_EQ(e.createSession(b, "b3").code(), -ENOSPC);
  ASSERT_TRUE(e.createSession(kRoot, "r2").ok());
  EXPECT_EQ(e.createSession(kRoot, "r3").code(), -ENOSPC);
  // A destroyed session makes room for its uid.
  ASSERT_TRUE(e.destroySession("a1").ok());
  ASSERT_TRUE(e.createSession(a, "a3").ok());
  EXPECT_EQ(e.createSession(a, "a4").code(), -ENOSPC);
  EXPECT_EQ(e.sessionNames(), (std::vector<std::string>{"a2", "a3", "b1", "b2", "r2", "s"}));
}

TEST_F(SessionRules, DefaultSessionsPerUidIs64) {
  Engine& e = sim().engine();
  Caller a = Caller::user(1000, 1000);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(e.createSession(a, "u" + std::to_string(i)).ok()) << i;
  EXPECT_EQ(e.createSession(a, "u64").code(), -ENOSPC);
  ASSERT_TRUE(e.createSession(Caller::user(1001, 1001), "v0").ok());
}

TEST_F(SessionRules, FailedCreateDoesNotUseTheQuota) {
  SimConfig c;
  c.engine.max_sessions_per_user = 1;
  make(c);
  Engine& e = sim().engine();
  Caller a = Caller::user(1000, 1000);
  EXPECT_EQ(e.createSession(a, "s").code(), -EEXIST);
  EXPECT_EQ(e.createSession(a, "bad name").code(), -EINVAL);
  ASSERT_TRUE(e.createSession(a, "a1").ok());
}

TEST_F(SessionRules, DestroyMissingSessionIsEnoent) {
  Engine& e = sim().engine();
  EXPECT_EQ(e.destroySession("nope").code(), -ENOENT);
  EXPECT_EQ(e.destroySession("").code(), -ENOENT);
  ASSERT_TRUE(e.destroySession("s").ok());
  EXPECT_EQ(e.destroySession("s").code(), -ENOENT);
  EXPECT_EQ(e.find("s"), nullptr);
  EXPECT_TRUE(e.sessionNames().empty());
  // The name is free again.
  ASSERT_TRUE(e.createSession(kRoot, "s").ok());
}

// ---- a failing operation changes nothing --------------------------------------------------------------

struct FailCase {
  const char* name;
  enum Setup { Unloaded, Active, Masked } setup;
  std::function<int(Session&, SimEngine&)> op;
  int expect;  // positive errno
};

class FailuresChangeNothing : public SessionRules, public ::testing::WithParamInterface<FailCase> {};

TEST_P(FailuresChangeNothing, StateRegistersSetsModeAndFlagsStay) {
  const FailCase& c = GetParam();
  if (c.setup == FailCase::Masked) {
    ASSERT_TRUE(s().createSet(3).ok());
    ASSERT_TRUE(s().setFlags(Flags{false, false, true, false}).ok());
    makeMasked(s(), 77);
  } else {
    makeRich();
    if (c.setup == FailCase::Active) {
      ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
      ASSERT_TRUE(s().start().ok());
      sim().advance(100);
    }
  }
  ASSERT_EQ(s().error(), "");
  std::string before = snap();
  EXPECT_EQ(c.op(s(), sim()), -c.expect);
  EXPECT_FALSE(s().error().empty());
  EXPECT_EQ(snap(), before);
  // Counting goes on untouched: cycles at 3 per ns.
  if (c.setup == FailCase::Active) {
    std::uint64_t pmd0 = pmdValue(s(), 0, 0);
    sim().advance(10);
    EXPECT_EQ(pmdValue(s(), 0, 0), pmd0 + 30);
  }
}

int code(const pfmfs::Status& st) { return st.code(); }
template <typename T>
int code(const pfmfs::Result<T>& r) {
  return r.code();
}

#define OP(expr) [](Session & x, SimEngine & sim) -> int { (void)sim; return code(expr); }

const FailCase kFailCases[] = {
    {"LoadBogusTid", FailCase::Unloaded, OP(x.load(kRoot, 0x3fffffff)), ESRCH},
    {"LoadForeignThread", FailCase::Unloaded, OP(x.load(kUser, gettidNow())), EPERM},
    {"LoadMissingSet", FailCase::Unloaded, OP(x.load(kRoot, gettidNow(), 9u)), EINVAL},
    {"LoadWhileActive", FailCase::Active, OP(x.load(kRoot, gettidNow())), EBUSY},
    {"LoadWhileMasked", FailCase::Masked, OP(x.load(kRoot, gettidNow())), EBUSY},
    {"LoadTakenThread", FailCase::Unloaded,
     [](Session& x, SimEngine& sim) {
       auto o = sim.newSession("taker");
       if (!o || !o->load(kRoot, gettidNow()).ok()) return 0;
       // The snapshot lists session names: destroy the other session again
       // so that only x's failure is compared.
       int rc = code(x.load(kRoot, gettidNow()));
       (void)sim.engine().destroySession("taker");
       return rc;
     },
     EBUSY},
    {"LoadNegativeTid", FailCase::Unloaded, OP(x.load(kRoot, -1)), ESRCH},
    {"StartUnloaded", FailCase::Unloaded, OP(x.start()), EINVAL},
    {"StartMissingSet", FailCase::Active, OP(x.start(1u)), EINVAL},
    {"StartMasked", FailCase::Masked, OP(x.start()), EBUSY},
    {"StartMaskedInOtherSet", FailCase::Masked, OP(x.start(3u)), EBUSY},
    {"StopUnloaded", FailCase::Unloaded, OP(x.stop()), EINVAL},
    {"RestartUnloaded", FailCase::Unloaded, OP(x.restart()), EBUSY},
    {"RestartActive", FailCase::Active, OP(x.restart()), EBUSY},
    {"ModeWhileActive", FailCase::Active, OP(x.setMode(Mode::System)), EBUSY},
    {"ModeWhileMasked", FailCase::Masked, OP(x.setMode(Mode::Thread)), EBUSY},
    {"ModeSystemWithNotifyBlock", FailCase::Unloaded,
     [](Session& x, SimEngine&) {
       // Set notify_block, fail, then put the flags back: only setMode's failure is measured.
       Flags f = x.flags();
       Flags nb = f;
       nb.notify_block = true;
       if (!x.setFlags(nb).ok()) return 0;
       int rc = code(x.setMode(Mode::System));
       if (!x.setFlags(f).ok()) return 0;
       return rc;
     },
     EINVAL},
    {"FlagsWhileActive", FailCase::Active, OP(x.setFlags(Flags{})), EBUSY},
    {"FlagsWhileMasked", FailCase::Masked, OP(x.setFlags(Flags{})), EBUSY},
    {"CreateSetWhileActive", FailCase::Active, OP(x.createSet(8)), EBUSY},
    {"CreateSetWhileMasked", FailCase::Masked, OP(x.createSet(8)), EBUSY},
    {"CreateSetExisting", FailCase::Unloaded, OP(x.createSet(3)), EEXIST},
    {"CreateSetTooBig", FailCase::Unloaded, OP(x.createSet(65536)), EINVAL},
    {"DeleteSetWhileActive", FailCase::Active, OP(x.deleteSet(3)), EBUSY},
    {"DeleteSetWhileMasked", FailCase::Masked, OP(x.deleteSet(3)), EBUSY},
    {"DeleteSetMissing", FailCase::Unloaded, OP(x.deleteSet(4)), EINVAL},
    {"SwitchMissingSet", FailCase::Unloaded, OP(x.setSwitch(4, timeSwitch(10))), EINVAL},
    {"SwitchTimeZero", FailCase::Unloaded, OP(x.setSwitch(3, timeSwitch(0))), EINVAL},
    {"SwitchWhileActive", FailCase::Active, OP(x.setSwitch(3, ovflSwitch())), EBUSY},
    {"PmcReservedBit", FailCase::Unloaded, OP(x.writePmc(kRoot, 0, pmc(0, kInstructions | (1ull << 32)))), EINVAL},
    {"PmcReservedBitActive", FailCase::Active, OP(x.writePmc(kRoot, 0, pmc(0, kInstructions | (1ull << 40)))),
     EINVAL},
    {"PmcNoPrivilegeBit", FailCase::Active, OP(x.writePmc(kRoot, 0, pmc(0, 0xc0))), EINVAL},
    {"PmcUnknown", FailCase::Active, OP(x.writePmc(kRoot, 0, pmc(4, kCycles))), EINVAL},
    {"PmcKernelAsUser", FailCase::Active, OP(x.writePmc(kUser, 0, pmc(0, kCycles | kOs))), EPERM},
    {"PmcUnknownSet", FailCase::Active, OP(x.writePmc(kRoot, 1, pmc(0, kCycles))), EINVAL},
    {"PmcWhileMasked", FailCase::Masked, OP(x.writePmc(kRoot, 0, pmc(16, 0x8))), EINVAL},
    {"PmdUnknown", FailCase::Active, OP(x.writePmd(0, pmd(19, 1))), EINVAL},
    {"PmdBadResetPmds", FailCase::Active,
     [](Session& x, SimEngine&) {
       PmdWrite w = pmd(0, 1);
       w.reset_pmds = 0x10;
       return code(x.writePmd(0, w));
     },
     EINVAL},
    {"PmdBadSmplPmds", FailCase::Masked,
     [](Session& x, SimEngine&) {
       PmdWrite w = pmd(0, 1);
       w.smpl_pmds = 1ull << 63;
       return code(x.writePmd(0, w));
     },
     EINVAL},
    {"RegsLastBad", FailCase::Active,
     [](Session& x, SimEngine&) {
       return code(x.writeRegs(kRoot, 0, {pmc(1, kInstructions), pmd(1, 50), pmd(0, 1), pmc(0, 0), pmc(17, 1)}));
     },
     EINVAL},
    {"ReadPmcUnknown", FailCase::Active, OP(x.readPmc(0, 5)), EINVAL},
    {"ReadPmdUnknownSet", FailCase::Active, OP(x.readPmd(2, 0)), EINVAL},
    {"RegsUnknownSet", FailCase::Unloaded, OP(x.regs(1)), EINVAL},
    {"SetInfoUnknownSet", FailCase::Masked, OP(x.setInfo(1)), EINVAL},
};

INSTANTIATE_TEST_SUITE_P(Cases, FailuresChangeNothing, ::testing::ValuesIn(kFailCases),
                         [](const ::testing::TestParamInfo<FailCase>& i) { return std::string(i.param.name); });

TEST_F(SessionRules, ErrorNamesTheProblem) {
  EXPECT_EQ(s().writePmc(kRoot, 0, pmc(0, kCycles | (1ull << 33))).code(), -EINVAL);
  EXPECT_THAT(s().error(), HasSubstr("0x200000000"));  // the reserved bits, by value
  EXPECT_EQ(s().createSet(70000).code(), -EINVAL);
  EXPECT_THAT(s().error(), HasSubstr("70000"));
  EXPECT_EQ(s().deleteSet(12).code(), -EINVAL);
  EXPECT_THAT(s().error(), HasSubstr("12"));
  EXPECT_EQ(s().load(kRoot, 0x3fffffff).code(), -ESRCH);
  EXPECT_THAT(s().error(), HasSubstr(std::to_string(0x3fffffff)));
}

TEST_F(SessionRules, ErrorKeepsTheLastFailure) {
  EXPECT_EQ(s().deleteSet(12).code(), -EINVAL);
  std::string first = s().error();
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(s().start().code(), -EINVAL);
  std::string second = s().error();
  EXPECT_FALSE(second.empty());
  EXPECT_NE(first, second);
}

// ---- register writes: garbage and boundaries ---------------------------------------------------------

struct RegCase {
  const char* name;
  RegWrite write;
  int expect;  // positive errno, 0 for success
  Caller caller = Caller::root();
  unsigned set = 0;
  unsigned counters = 4;
};

PmdWrite withReset(PmdWrite w, pfmfs::pmu::RegMask m) {
  w.reset_pmds = m;
  return w;
}
PmdWrite withSmpl(PmdWrite w, pfmfs::pmu::RegMask m) {
  w.smpl_pmds = m;
  return w;
}
PmdWrite withAll(PmdWrite w) {
  w.long_reset = ~std::uint64_t{0};
  w.short_reset = 1;
  w.switch_cnt = ~std::uint64_t{0};
  w.reset_pmds = 0x7000f;
  w.smpl_pmds = 0x7000f;
  w.random_mask = 0xffff;
  w.eventid = ~std::uint64_t{0};
  w.notify = true;
  w.random = true;
  return w;
}

Caller kernelOnly() {
  Caller c = Caller::user(12345, 12345);
  c.may_count_kernel = true;  // pfmfsd --allow-kernel
  return c;
}

Caller systemWideOnly() {
  Caller c = Caller::user(12345, 12345);
  c.may_system_wide = true;  // pfmfsd --system-group
  return c;
}

const RegCase kRegCases[] = {
    // PERFEVTSEL reserved bits 63:32.
    {"EvtselBit32", pmc(0, kCycles | (1ull << 32)), EINVAL},
    {"EvtselBit33", pmc(1, kCycles | (1ull << 33)), EINVAL},
    {"EvtselBit47", pmc(2, kCycles | (1ull << 47)), EINVAL},
    {"EvtselBit63", pmc(3, kCycles | (1ull << 63)), EINVAL},
    {"EvtselUpperHalfOnly", pmc(0, 0xffffffff00000000ull), EINVAL},
    {"EvtselAllOnes", pmc(0, ~std::uint64_t{0}), EINVAL},
    {"EvtselBit32WithoutPrivilege", pmc(0, 1ull << 32), EINVAL},
    // FIXED_CTR_CTRL: bits above 11 reserved.
    {"FixedBit12", pmc(16, 0x2 | (1ull << 12)), EINVAL},
    {"FixedBit15", pmc(16, 0x2 | (1ull << 15)), EINVAL},
    {"FixedBit32", pmc(16, 0x2 | (1ull << 32)), EINVAL},
    {"FixedBit63", pmc(16, 1ull << 63), EINVAL},
    {"FixedAllOnes", pmc(16, ~std::uint64_t{0}), EINVAL},
    {"Fixed0x1fff", pmc(16, 0x1fff), EINVAL},
    // Registers the description does not list.
    {"Pmc4With4Counters", pmc(4, kCycles), EINVAL},
    {"Pmc7With4Counters", pmc(7, kCycles), EINVAL},
    {"Pmc8With8Counters", pmc(8, kCycles), EINVAL, Caller::root(), 0, 8},
    {"Pmc15", pmc(15, kCycles), EINVAL},
    {"Pmc17", pmc(17, 0x2), EINVAL},
    {"Pmc63", pmc(63, kCycles), EINVAL},
    {"Pmc64", pmc(64, kCycles), EINVAL},
    {"Pmc65", pmc(65, 0), EINVAL},
    {"PmcMaxIndex", pmc(0xffffffffu, kCycles), EINVAL},
    {"Pmc4Zero", pmc(4, 0), EINVAL},
    {"Pmd4With4Counters", pmd(4, 1), EINVAL},
    {"Pmd15", pmd(15, 1), EINVAL},
    {"Pmd19", pmd(19, 1), EINVAL},
    {"Pmd63", pmd(63, 1), EINVAL},
    {"Pmd64", pmd(64, 1), EINVAL},
    {"PmdMaxIndex", pmd(0xffffffffu, 0), EINVAL},
    {"Pmd8With8Counters", pmd(8, 1), EINVAL, Caller::root(), 0, 8},
    // A configured counter with neither USR nor OS.
    {"EvtselEventOnly", pmc(0, 0xc0), EINVAL},
    {"EvtselEventAndUmaskOnly", pmc(0, 0x013c), EINVAL},
    {"EvtselEnableOnly", pmc(0, kEn), EINVAL},
    {"EvtselIntOnly", pmc(0, kInt), EINVAL},
    {"EvtselEnIntEvent", pmc(1, 0x3c | kEn | kInt), EINVAL},
    {"EvtselEdgeOnly", pmc(0, 1ull << 18), EINVAL},
    {"EvtselAnyOnly", pmc(0, 1ull << 21), EINVAL},
    {"EvtselInvOnly", pmc(0, 1ull << 23), EINVAL},
    {"EvtselCmaskOnly", pmc(0, 0xff000000), EINVAL},
    {"EvtselAllButPrivilege", pmc(0, 0xfffcffff), EINVAL},
    {"FixedPmiOnly", pmc(16, 0x8), EINVAL},
    {"FixedAnyOnly", pmc(16, 0x4), EINVAL},
    {"FixedPmiAnyOnly", pmc(16, 0xc), EINVAL},
    {"FixedCtr1PmiOnly", pmc(16, 0x80), EINVAL},
    {"FixedCtr2AnyOnly", pmc(16, 0x400), EINVAL},
    {"FixedCtr0OkCtr1PmiOnly", pmc(16, 0x82), EINVAL},
    {"FixedCtr0PmiOnlyCtr1Ok", pmc(16, 0x28), EINVAL},
    {"FixedCtr2PmiOnlyWithKernelElsewhere", pmc(16, 0x811), EINVAL, Caller::user(12345, 12345)},
    // The OS bit needs may_count_kernel.
    {"EvtselOsAsUser", pmc(0, 0xc0 | kOs), EPERM, Caller::user(12345, 12345)},
    {"EvtselUsrOsAsUser", pmc(0, kCycles | kOs), EPERM, Caller::user(12345, 12345)},
    {"EvtselOsAsRoot", pmc(0, 0xc0 | kOs), 0},
    {"EvtselOsWithAllowKernel", pmc(0, 0xc0 | kOs), 0, kernelOnly()},
    {"FixedCtr0OsAsUser", pmc(16, 0x1), EPERM, Caller::user(12345, 12345)},
    {"FixedCtr2OsAsUser", pmc(16, 0x100), EPERM, Caller::user(12345, 12345)},
    {"FixedCtr1UsrOsAsUser", pmc(16, 0x30), EPERM, Caller::user(12345, 12345)},
    {"FixedOsAsRoot", pmc(16, 0x111), 0},
    {"FixedOsWithAllowKernel", pmc(16, 0x333), 0, kernelOnly()},
    // AnyThread (the core's other hyperthreads) needs may_system_wide, as
    // perf's perf_allow_cpu asks of the bit.
    {"EvtselAnyAsUser", pmc(0, kCycles | (1ull << 21)), EPERM, Caller::user(12345, 12345)},
    {"EvtselAnyWithAllowKernel", pmc(1, kCycles | (1ull << 21)), EPERM, kernelOnly()},
    {"EvtselAnyInSystemGroup", pmc(2, kCycles | (1ull << 21)), 0, systemWideOnly()},
    {"EvtselAnyAsRoot", pmc(3, kCycles | (1ull << 21)), 0},
    {"FixedCtr0AnyAsUser", pmc(16, 0x6), EPERM, Caller::user(12345, 12345)},
    {"FixedCtr2AnyAsUser", pmc(16, 0x622), EPERM, Caller::user(12345, 12345)},
    {"FixedAnyInSystemGroup", pmc(16, 0x666), 0, systemWideOnly()},
    {"ReservedBeatsKernelForUser", pmc(0, kCycles | kOs | (1ull << 40)), EINVAL, Caller::user(12345, 12345)},
    // Boundary values that must succeed.
    {"EvtselZero", pmc(0, 0), 0, Caller::user(12345, 12345)},
    {"EvtselUsrOnly", pmc(0, kUsr), 0, Caller::user(12345, 12345)},
    {"EvtselLow32AllOnesRoot", pmc(0, 0xffffffff), 0},
    {"EvtselLow32AllButOsAnyUser", pmc(0, 0xffddffff), 0, Caller::user(12345, 12345)},
    {"EvtselWithEnAndInt", pmc(3, kCycles | kEn | kInt), 0, Caller::user(12345, 12345)},
    {"EvtselNoEmul64", pmc(1, kInstructions, true), 0},
    {"EvtselZeroNoEmul64", pmc(2, 0, true), 0},
    {"Evtsel7With8Counters", pmc(7, 0xffffffff), 0, Caller::root(), 0, 8},
    {"FixedAllFieldsRoot", pmc(16, 0xfff), 0},
    {"FixedUsrPmiAllUser", pmc(16, 0xaaa), 0, Caller::user(12345, 12345)},
    {"FixedUsrAllUser", pmc(16, 0x222), 0, Caller::user(12345, 12345)},
    {"FixedCtr2Only", pmc(16, 0x200), 0, Caller::user(12345, 12345)},
    {"FixedZero", pmc(16, 0), 0, Caller::user(12345, 12345)},
    {"PmdZero", pmd(0, 0), 0},
    {"PmdMax", pmd(3, ~std::uint64_t{0}), 0},
    {"PmdFixedMax", pmd(18, ~std::uint64_t{0}), 0},
    {"PmdAbove48Bits", pmd(16, 1ull << 48), 0},
    {"PmdEveryAttribute", withAll(pmd(1, kMinus10)), 0},
    {"Pmd7With8Counters", withReset(pmd(7, 1), 0x700ff), 0, Caller::root(), 0, 8},
    // reset_pmds / smpl_pmds naming registers that do not exist.
    {"ResetPmdsBit4", withReset(pmd(0, 1), 0x10), EINVAL},
    {"ResetPmdsBit15", withReset(pmd(0, 1), 1ull << 15), EINVAL},
    {"ResetPmdsBit19", withReset(pmd(16, 1), 1ull << 19), EINVAL},
    {"ResetPmdsBit63", withReset(pmd(0, 1), 1ull << 63), EINVAL},
    {"ResetPmdsAll", withReset(pmd(0, 1), ~pfmfs::pmu::RegMask{0}), EINVAL},
    {"ResetPmdsValid", withReset(pmd(0, 1), 0x7000f), 0},
    {"SmplPmdsBit4", withSmpl(pmd(0, 1), 0x10), EINVAL},
    {"SmplPmdsBit19", withSmpl(pmd(2, 1), 0x80000), EINVAL},
    {"SmplPmdsBit63", withSmpl(pmd(0, 1), 1ull << 63), EINVAL},
    {"SmplPmdsValid", withSmpl(pmd(0, 1), 0x10001), 0},
    {"ResetPmdsBit7With4Counters", withReset(pmd(0, 1), 0x80), EINVAL},
    // Unknown sets.
    {"PmcSet1", pmc(0, kCycles), EINVAL, Caller::root(), 1},
    {"PmcSet65535", pmc(0, kCycles), EINVAL, Caller::root(), 65535},
    {"PmcSet65536", pmc(0, kCycles), EINVAL, Caller::root(), 65536},
    {"PmdSet65536", pmd(0, 1), EINVAL, Caller::root(), 65536},
    {"PmdSetMax", pmd(0, 1), EINVAL, Caller::root(), UINT_MAX},
};

enum class WritePath { Single, Vector };

class RegisterWrites : public ::testing::TestWithParam<std::tuple<RegCase, WritePath>> {};

TEST_P(RegisterWrites, AreValidated) {
  const auto& [c, path] = GetParam();
  SimConfig config;
  config.counters = c.counters;
  SimEngine sim(config);
  auto s = sim.newSession("s");
  ASSERT_NE(s, nullptr);
  // Something in every register kind, so that a write that should not happen shows.
  ASSERT_TRUE(s->writePmc(kRoot, 0, pmc(0, kInstructions)).ok());
  ASSERT_TRUE(s->writePmc(kRoot, 0, pmc(16, 0x20)).ok());
  ASSERT_TRUE(s->writePmd(0, pmd(0, 5)).ok());
  ASSERT_TRUE(s->writePmd(0, pmd(16, 6)).ok());
  std::string before = snapshot(sim, *s);

  pfmfs::Status st;
  if (path == WritePath::Vector) {
    st = s->writeRegs(c.caller, c.set, {c.write});
  } else if (const auto* w = std::get_if<PmcWrite>(&c.write)) {
    st = s->writePmc(c.caller, c.set, *w);
  } else {
    // writePmd takes no caller: PMD writes need no privilege.
    st = s->writePmd(c.set, std::get<PmdWrite>(c.write));
  }
  EXPECT_EQ(st.code(), -c.expect);

  if (c.expect != 0) {
    EXPECT_FALSE(s->error().empty());
    EXPECT_EQ(snapshot(sim, *s), before);
    return;
  }
  EXPECT_EQ(s->error(), "");
  if (const auto* w = std::get_if<PmcWrite>(&c.write)) {
    auto v = s->readPmc(c.set, w->index);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->value, w->value);
    EXPECT_EQ(v->no_emul64, w->no_emul64);
  } else {
    const auto& d = std::get<PmdWrite>(c.write);
    auto v = s->readPmd(c.set, d.index);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->value, d.value);
    EXPECT_EQ(v->state.long_reset, d.long_reset.value_or(0));
    EXPECT_EQ(v->state.short_reset, d.short_reset.value_or(0));
    EXPECT_EQ(v->state.switch_cnt, d.switch_cnt.value_or(0));
    EXPECT_EQ(v->state.reset_pmds, d.reset_pmds.value_or(0));
    EXPECT_EQ(v->state.smpl_pmds, d.smpl_pmds.value_or(0));
    EXPECT_EQ(v->state.random_mask, d.random_mask.value_or(0));
    EXPECT_EQ(v->state.eventid, d.eventid.value_or(0));
    EXPECT_EQ(v->state.notify, d.notify.value_or(false));
    EXPECT_EQ(v->state.random, d.random.value_or(false));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RegisterWrites,
                         ::testing::Combine(::testing::ValuesIn(kRegCases),
                                            ::testing::Values(WritePath::Single, WritePath::Vector)),
                         [](const ::testing::TestParamInfo<std::tuple<RegCase, WritePath>>& i) {
                           return std::string(std::get<0>(i.param).name) +
                                  (std::get<1>(i.param) == WritePath::Single ? "_Single" : "_Vector");
                         });

TEST_F(SessionRules, RegisterWritesGoToTheNamedSetOnly) {
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 1, pmc(2, kCycles)).ok());
  ASSERT_TRUE(s().writePmd(1, pmd(2, 77)).ok());
  EXPECT_EQ(pmcValue(s(), 1, 2), kCycles);
  EXPECT_EQ(pmdValue(s(), 1, 2), 77u);
  EXPECT_EQ(pmcValue(s(), 0, 2), 0u);
  EXPECT_EQ(pmdValue(s(), 0, 2), 0u);
}

TEST_F(SessionRules, BarePmdWriteKeepsAttributes) {
  PmdWrite w = withAll(pmd(1, 10));
  ASSERT_TRUE(s().writePmd(0, w).ok());
  ASSERT_TRUE(s().writePmd(0, pmd(1, 20)).ok());
  auto v = s().readPmd(0, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, 20u);
  EXPECT_EQ(v->state.long_reset, ~std::uint64_t{0});
  EXPECT_EQ(v->state.short_reset, 1u);
  EXPECT_EQ(v->state.switch_cnt, ~std::uint64_t{0});
  EXPECT_EQ(v->state.reset_pmds, 0x7000fu);
  EXPECT_EQ(v->state.smpl_pmds, 0x7000fu);
  EXPECT_EQ(v->state.random_mask, 0xffffu);
  EXPECT_EQ(v->state.eventid, ~std::uint64_t{0});
  EXPECT_TRUE(v->state.notify);
  EXPECT_TRUE(v->state.random);
  // Attributes can be turned off again explicitly.
  PmdWrite off = pmd(1, 20);
  off.notify = false;
  off.random = false;
  off.reset_pmds = 0;
  ASSERT_TRUE(s().writePmd(0, off).ok());
  v = s().readPmd(0, 1);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->state.notify);
  EXPECT_FALSE(v->state.random);
  EXPECT_EQ(v->state.reset_pmds, 0u);
  EXPECT_EQ(v->state.smpl_pmds, 0x7000fu);
}

TEST_F(SessionRules, ReadOfUnknownRegisterIsEnoent) {
  EXPECT_FAILS_CLEANLY(s().readPmc(0, 4), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmc(0, 64), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmc(0, UINT_MAX), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmd(0, 19), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmd(0, UINT_MAX), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmc(1, 0), EINVAL);
  EXPECT_FAILS_CLEANLY(s().readPmd(65536, 0), EINVAL);
}

// ---- writeRegs: all or nothing -----------------------------------------------------------------------------

class RegsAllOrNothing : public SessionRules {
 protected:
  // Good writes to every kind of register, then `last`.
  std::vector<RegWrite> goodThen(const RegWrite& last) {
    PmdWrite p0 = pmd(0, 1000);
    p0.notify = true;
    p0.long_reset = 5;
    return {pmc(0, kCycles), p0, pmc(1, kInstructions), pmd(1, 2000), pmc(16, 0x2), pmd(16, 3000), last};
  }
};

TEST_F(RegsAllOrNothing, LastElementReservedBits) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, goodThen(pmc(2, kCycles | (1ull << 32)))), EINVAL);
  EXPECT_TRUE(regsText(s(), 0).empty());
}

TEST_F(RegsAllOrNothing, LastElementUnknownPmc) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, goodThen(pmc(17, 0x2))), EINVAL);
  EXPECT_TRUE(regsText(s(), 0).empty());
}

TEST_F(RegsAllOrNothing, LastElementUnknownPmd) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, goodThen(pmd(4, 1))), EINVAL);
}

TEST_F(RegsAllOrNothing, LastElementNoPrivilegeBit) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kUser, 0, goodThen(pmc(16, 0x2 | 0x80))), EINVAL);
}

TEST_F(RegsAllOrNothing, LastElementKernelBitAsUser) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kUser, 0, goodThen(pmc(3, kCycles | kOs))), EPERM);
}

TEST_F(RegsAllOrNothing, LastElementBadResetPmds) {
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, goodThen(withReset(pmd(2, 1), 0x100))), EINVAL);
}

TEST_F(RegsAllOrNothing, FirstElementBad) {
  std::vector<RegWrite> v = goodThen(pmd(2, 1));
  v.insert(v.begin(), RegWrite{pmc(0, 0x400000)});
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, v), EINVAL);
}

TEST_F(RegsAllOrNothing, UnknownSet) {
  ASSERT_TRUE(s().createSet(1).ok());
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 2, goodThen(pmd(2, 1))), EINVAL);
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 2, {}), EINVAL);
}

TEST_F(RegsAllOrNothing, EmptyVectorChangesNothing) {
  makeRich();
  std::string before = snap();
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {}).ok());
  EXPECT_EQ(snap(), before);
}

TEST_F(RegsAllOrNothing, GoodVectorAppliesEveryWrite) {
  ASSERT_TRUE(s().writeRegs(kUser, 0, goodThen(pmd(2, 4000))).ok());
  EXPECT_EQ(pmcValue(s(), 0, 0), kCycles);
  EXPECT_EQ(pmcValue(s(), 0, 1), kInstructions);
  EXPECT_EQ(pmcValue(s(), 0, 16), 0x2u);
  EXPECT_EQ(pmdValue(s(), 0, 0), 1000u);
  EXPECT_EQ(pmdValue(s(), 0, 1), 2000u);
  EXPECT_EQ(pmdValue(s(), 0, 16), 3000u);
  EXPECT_EQ(pmdValue(s(), 0, 2), 4000u);
  auto p0 = s().readPmd(0, 0);
  ASSERT_TRUE(p0.ok());
  EXPECT_TRUE(p0->state.notify);
  EXPECT_EQ(p0->state.long_reset, 5u);
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0, 1, 16}));
}

TEST_F(RegsAllOrNothing, LaterWriteOfTheSameRegisterWins) {
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {pmc(0, kCycles), pmd(0, 1), pmc(0, kInstructions), pmd(0, 2)}).ok());
  EXPECT_EQ(pmcValue(s(), 0, 0), kInstructions);
  EXPECT_EQ(pmdValue(s(), 0, 0), 2u);
}

TEST_F(RegsAllOrNothing, BadVectorOnTheActiveSetLeavesCountingAlone) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  EXPECT_FAILS_CLEANLY(s().writeRegs(kRoot, 0, {pmc(0, 0), pmc(1, kInstructions), pmd(0, 0), pmc(99, 1)}), EINVAL);
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 60u);
  EXPECT_EQ(pmdValue(s(), 0, 1), 0u);
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0}));
}

TEST_F(RegsAllOrNothing, GoodVectorOnTheActiveSetTakesEffectAtOnce) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {pmc(1, kInstructions), pmd(1, 100), pmd(0, 1000)}).ok());
  EXPECT_EQ(pmdValue(s(), 0, 0), 1000u);
  EXPECT_EQ(pmdValue(s(), 0, 1), 100u);
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 1030u);
  EXPECT_EQ(pmdValue(s(), 0, 1), 120u);
}

// ---- writing 0 frees a counter; read-back is what was written ----------------------------------------------

TEST_F(SessionRules, WritingZeroToAPmcFreesTheCounter) {
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {pmc(0, kCycles), pmc(1, kInstructions), pmc(16, 0x22)}).ok());
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0, 1, 16, 17}));
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(1, 0)).ok());
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0, 16, 17}));
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x20)).ok());  // ctr0's field cleared
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0, 17}));
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, 0)).ok());
  EXPECT_TRUE(s().counts().empty());
  EXPECT_EQ(pmcValue(s(), 0, 0), 0u);
}

TEST_F(SessionRules, CountersOfEverySetAreListed) {
  ASSERT_TRUE(s().createSet(2).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(3, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 2, pmc(16, 0x200)).ok());
  auto c = s().counts();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].set, 0u);
  EXPECT_EQ(c[0].pmd, 3u);
  EXPECT_EQ(c[0].value, 0u);
  EXPECT_FALSE(c[0].scaled.has_value());  // never ran
  EXPECT_EQ(c[1].set, 2u);
  EXPECT_EQ(c[1].pmd, 18u);
}

TEST_F(SessionRules, FreeingAnActiveCounterStopsItAndKeepsItsValue) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(1, kInstructions)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, 0)).ok());
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{1}));
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 30u);  // frozen at the free
  EXPECT_EQ(pmdValue(s(), 0, 1), 40u);  // the other one goes on
  // Configured again, it counts on from its value.
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 60u);
  EXPECT_EQ(countedPmds(s(), 0), (std::vector<unsigned>{0, 1}));
}

TEST_F(SessionRules, EnableBitIsNotNeededToCount) {
  ASSERT_EQ(kCycles & kEn, 0u);
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  EXPECT_EQ(pmdValue(s(), 0, 16), 200u);
}

TEST_F(SessionRules, PmcReadsBackExactlyWhatWasWritten) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(1, kInstructions | kEn | kInt)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(2, kCycles | kInt, true)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2a)).ok());  // ctr0 user, ctr1 user + PMI
  auto check = [&] {
    EXPECT_EQ(pmcValue(s(), 0, 0), kCycles);
    EXPECT_EQ(pmcValue(s(), 0, 1), kInstructions | kEn | kInt);
    EXPECT_EQ(pmcValue(s(), 0, 2), kCycles | kInt);
    EXPECT_TRUE(s().readPmc(0, 2)->no_emul64);
    EXPECT_FALSE(s().readPmc(0, 0)->no_emul64);
    EXPECT_EQ(pmcValue(s(), 0, 16), 0x2au);
  };
  check();
  // The engine adds its enable and interrupt bits on the hardware only.
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  check();
  ASSERT_TRUE(s().stop().ok());
  check();
  ASSERT_TRUE(s().unload().ok());
  check();
}

TEST_F(SessionRules, PmcWriteWithoutNoEmul64ClearsIt) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles, true)).ok());
  EXPECT_TRUE(s().readPmc(0, 0)->no_emul64);
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  EXPECT_FALSE(s().readPmc(0, 0)->no_emul64);
}

// ---- regs -----------------------------------------------------------------------------------------------------

TEST_F(SessionRules, RegsListsExactlyWhatDiffersFromDefaults) {
  EXPECT_TRUE(regsText(s(), 0).empty());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(2, 0, true)).ok());  // value default, no_emul64 not
  PmdWrite p0 = pmd(0, 100);
  p0.long_reset = 7;
  p0.notify = true;
  p0.reset_pmds = 0x2;
  ASSERT_TRUE(s().writePmd(0, p0).ok());
  PmdWrite p17 = pmd(17, 0);
  p17.eventid = 9;  // value 0 but an attribute set
  ASSERT_TRUE(s().writePmd(0, p17).ok());
  ASSERT_TRUE(s().writePmd(0, pmd(1, 0)).ok());  // written, but to its default
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(3, 0)).ok());

  EXPECT_EQ(regsText(s(), 0),
            (std::vector<std::string>{
                "pmc0 0x1003c",
                "pmc2 0x0 no_emul64",
                "pmc16 0x2",
                "pmd0 100 long_reset=7 short_reset=0 switch_cnt=0 reset_pmds=0x2 smpl_pmds=0x0 random_mask=0x0 "
                "eventid=0 notify=true random=false",
                "pmd17 0 long_reset=0 short_reset=0 switch_cnt=0 reset_pmds=0x0 smpl_pmds=0x0 random_mask=0x0 "
                "eventid=9 notify=false random=false",
            }));

  // Back to the defaults: gone from the list.
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, 0)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(2, 0)).ok());
  PmdWrite clear = pmd(0, 0);
  clear.long_reset = 0;
  clear.notify = false;
  clear.reset_pmds = 0;
  ASSERT_TRUE(s().writePmd(0, clear).ok());
  EXPECT_EQ(regsText(s(), 0).size(), 2u);
  EXPECT_EQ(regsText(s(), 0)[0], "pmc16 0x2");
}

TEST_F(SessionRules, RegsOfUnknownSetIsEnoent) {
  EXPECT_FAILS_CLEANLY(s().regs(1), EINVAL);
  EXPECT_FAILS_CLEANLY(s().regs(65536), EINVAL);
}

TEST_F(SessionRules, RegsCopiesASet) {
  PmdWrite p0 = withAll(pmd(0, kMinus10));
  p0.reset_pmds = 0x3;
  ASSERT_TRUE(s().writeRegs(kRoot, 0,
                            {pmc(0, kCycles | kOs), pmc(1, kInstructions, true), pmc(16, 0xbbb), p0, pmd(1, 12345),
                             withSmpl(pmd(18, 0), 0x40000)})
                  .ok());
  ASSERT_TRUE(s().setSwitch(0, timeSwitch(100)).ok());
  ASSERT_TRUE(s().createSet(1).ok());
  auto r = s().regs(0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 6u);
  ASSERT_TRUE(s().writeRegs(kRoot, 1, *r).ok());
  EXPECT_EQ(regsText(s(), 1), regsText(s(), 0));
  for (const auto& c : sim().desc().pmcs) {
    SCOPED_TRACE(c.index);
    EXPECT_EQ(pmcValue(s(), 1, c.index), pmcValue(s(), 0, c.index));
    EXPECT_EQ(s().readPmc(1, c.index)->no_emul64, s().readPmc(0, c.index)->no_emul64);
  }
  for (const auto& d : sim().desc().pmds) {
    SCOPED_TRACE(d.index);
    EXPECT_EQ(pmdValue(s(), 1, d.index), pmdValue(s(), 0, d.index));
    EXPECT_EQ(s().readPmd(1, d.index)->state.smpl_pmds, s().readPmd(0, d.index)->state.smpl_pmds);
  }
  EXPECT_EQ(countedPmds(s(), 1), countedPmds(s(), 0));
}

TEST_F(SessionRules, RegsCopiesIntoAnotherSession) {
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {pmc(0, kCycles), pmc(16, 0x20), withReset(pmd(0, 99), 0x20000)}).ok());
  auto other = sim().newSession("copy");
  ASSERT_NE(other, nullptr);
  auto r = s().regs(0);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(other->writeRegs(kRoot, 0, *r).ok());
  EXPECT_EQ(regsText(*other, 0), regsText(s(), 0));
}

TEST_F(SessionRules, RegsOfAnActiveSetShowLiveValues) {
  ASSERT_TRUE(s().writeRegs(kRoot, 0, {pmc(0, kCycles), pmd(0, 100)}).ok());
  ASSERT_TRUE(s().createSet(1).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  auto r = s().regs(0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  ASSERT_TRUE(std::holds_alternative<PmdWrite>((*r)[1]));
  EXPECT_EQ(std::get<PmdWrite>((*r)[1]).value, 130u);
  ASSERT_TRUE(s().writeRegs(kRoot, 1, *r).ok());
  EXPECT_EQ(pmdValue(s(), 1, 0), 130u);
  EXPECT_EQ(pmcValue(s(), 1, 0), kCycles);
}

TEST_F(SessionRules, RegsWithKernelBitsCannotBeCopiedByAPlainUser) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles | kOs)).ok());
  ASSERT_TRUE(s().createSet(1).ok());
  auto r = s().regs(0);
  ASSERT_TRUE(r.ok());
  EXPECT_FAILS_CLEANLY(s().writeRegs(kUser, 1, *r), EPERM);
}

// ---- the monitored thread exits ----------------------------------------------------------------------------------

TEST_F(SessionRules, ThreadExitUnloadsKeepsCountsAndQueuesEnd) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);
  sim().engine().threadExited(gettidNow());

  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_FALSE(i.target.has_value());
  EXPECT_EQ(i.queued, 1u);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  sim().advance(100);  // nothing counts any more
  EXPECT_EQ(countOf(s(), 0, 0), 300u);
  EXPECT_EQ(s().counts()[0].enabled_ns, 100u);

  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::End);
  EXPECT_EQ(ms[0].seq, 1u);
  EXPECT_EQ(toText(ms[0]), "type=end seq=1\n");
  EXPECT_EQ(s().queuedMessages(), 0u);

  // Commands see an unloaded session.
  EXPECT_EQ(s().start().code(), -EINVAL);
  EXPECT_EQ(s().stop().code(), -EINVAL);
  ASSERT_TRUE(s().unload().ok());
}

TEST_F(SessionRules, ThreadExitReleasesTheThread) {
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  sim().engine().threadExited(gettidNow());
  ASSERT_TRUE(other->load(kRoot, gettidNow()).ok());
  EXPECT_EQ(other->state().state, State::Loaded);
}

TEST_F(SessionRules, LoadAgainAfterExitClearsExited) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  sim().engine().threadExited(gettidNow());
  ASSERT_TRUE(s().state().exited);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Loaded);
  EXPECT_FALSE(i.exited);
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 60u);
}

TEST_F(SessionRules, ThreadExitOfAnotherThreadChangesNothing) {
  makeRichActive();
  std::string before = snap();
  sim().engine().threadExited(0x3fffffff);
  sim().engine().threadExited(gettidNow() + 1);
  sim().engine().threadExited(0);
  EXPECT_EQ(snap(), before);
}

TEST_F(SessionRules, ThreadExitAfterUnloadChangesNothing) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  std::string before = snap();
  sim().engine().threadExited(gettidNow());
  EXPECT_EQ(snap(), before);
  EXPECT_FALSE(s().state().exited);
  EXPECT_EQ(s().queuedMessages(), 0u);
}

TEST_F(SessionRules, ThreadExitWhileMaskedQueuesEndAfterTheOverflow) {
  makeMasked();
  sim().engine().threadExited(gettidNow());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].type, MessageType::Overflow);
  EXPECT_EQ(ms[0].seq, 1u);
  EXPECT_EQ(ms[0].pmds, 0x1u);
  EXPECT_EQ(ms[0].tid, gettidNow());
  EXPECT_EQ(ms[0].pid, ::getpid());
  EXPECT_EQ(ms[1].type, MessageType::End);
  EXPECT_EQ(ms[1].seq, 2u);
  EXPECT_TRUE(s().restart().ok());  // the overflow's late acknowledgement, once
  EXPECT_EQ(s().restart().code(), -EBUSY);
}

TEST_F(SessionRules, EndMessageThatDoesNotFitIsCountedLost) {
  SimConfig c;
  c.engine.max_messages = 1;
  make(c);
  makeMasked();
  ASSERT_EQ(s().state().queued, 1u);
  sim().engine().threadExited(gettidNow());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_EQ(i.queued, 1u);
  EXPECT_EQ(i.lost, 1u);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::Overflow);
  EXPECT_EQ(ms[0].seq, 1u);
}

TEST_F(SessionRules, RealThreadThatExits) {
  std::promise<pid_t> started;
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::thread t([&started, go] {
    started.set_value(gettidNow());
    go.wait();
  });
  pid_t tid = started.get_future().get();
  ASSERT_NE(tid, gettidNow());

  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2)).ok());
  ASSERT_TRUE(s().load(kRoot, tid).ok());
  EXPECT_EQ(*s().state().target, tid);
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);

  release.set_value();
  t.join();
  ASSERT_TRUE(waitThreadGone(tid));
  sim().engine().threadExited(tid);

  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_FALSE(i.target.has_value());
  EXPECT_EQ(countOf(s(), 0, 0), 300u);
  EXPECT_EQ(countOf(s(), 0, 16), 200u);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::End);
  EXPECT_EQ(ms[0].seq, 1u);

  // The thread is gone: it cannot be loaded again; another one can.
  EXPECT_FAILS_CLEANLY(s().load(kRoot, tid), ESRCH);
  EXPECT_TRUE(s().state().exited);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FALSE(s().state().exited);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
}

TEST_F(SessionRules, DestroySessionWhateverItsState) {
  makeMasked();
  ASSERT_TRUE(sim().engine().destroySession("s").ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  EXPECT_EQ(sim().engine().find("s"), nullptr);
  auto again = sim().engine().createSession(kRoot, "s");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->load(kRoot, gettidNow()).ok());
}

}  // namespace

namespace pfmfs::testing {

// A load that loses the race with the session's destruction must not claim
// the thread for a session nobody can reach any more.
TEST(SessionDestroy, ADestroyedSessionRefusesToLoadAndLeavesTheThreadFree) {
  SimEngine e;
  auto s = e.newSession("gone");
  ASSERT_TRUE(e.engine().destroySession("gone").ok());
  Status st = s->load(session::Caller::root(), gettidNow());
  EXPECT_EQ(st.code(), -ENOENT);
  EXPECT_EQ(s->error(), "session gone was destroyed");
  EXPECT_EQ(s->state().state, session::State::Unloaded);
  auto other = e.newSession("other");
  EXPECT_TRUE(other->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(other->unload().ok());
}

TEST(SessionDestroy, DestroyingALoadedSessionUnloadsItAndFreesTheThread) {
  SimEngine e;
  auto s = e.newSession("a");
  ASSERT_TRUE(s->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(e.engine().destroySession("a").ok());
  EXPECT_EQ(s->state().state, session::State::Unloaded);
  auto b = e.newSession("b");
  EXPECT_TRUE(b->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(b->unload().ok());
}

}  // namespace pfmfs::testing
