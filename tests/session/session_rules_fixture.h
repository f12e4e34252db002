// The fixture of the session-rules tests (session_rules_test.cpp,
// session_sets_test.cpp, session_registers_test.cpp,
// session_thread_exit_test.cpp): the shared SessionRig (a root session on
// the sim's manual clock) remade per configuration, helpers that build
// writes and read a session back, and EXPECT_FAILS_CLEANLY, which asserts
// that a failing operation changes nothing a user can observe and leaves a
// reason in error().
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing::rules {

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
using pfmfs::testing::SessionRig;
using pfmfs::testing::SimConfig;
using pfmfs::testing::SimEngine;
using ::testing::HasSubstr;

inline constexpr std::uint64_t kMinus10 = ~std::uint64_t{0} - 9;  // 2^64 - 10: overflows after 10 events
inline constexpr std::uint64_t kEn = 1ull << 22;
inline constexpr std::uint64_t kInt = 1ull << 20;

inline const Caller kRoot = Caller::root();
inline const Caller kUser = Caller::user(12345, 12345);

// ---- helpers -----------------------------------------------------------------

inline PmcWrite pmc(unsigned index, std::uint64_t value, bool no_emul64 = false) {
  PmcWrite w;
  w.index = index;
  w.value = value;
  w.no_emul64 = no_emul64;
  return w;
}

inline PmdWrite pmd(unsigned index, std::uint64_t value) {
  PmdWrite w;
  w.index = index;
  w.value = value;
  return w;
}

inline SwitchSpec timeSwitch(std::uint64_t ns) {
  SwitchSpec s;
  s.on_time = true;
  s.timeout_ns = ns;
  return s;
}

inline SwitchSpec ovflSwitch() {
  SwitchSpec s;
  s.on_ovfl = true;
  return s;
}

inline std::string flagsText(const Flags& f) {
  return fmt::format("notify_block={} no_msg={} autoclose={} inherit={}", f.notify_block, f.no_msg, f.autoclose,
                     f.inherit);
}

// One register write as text, absent attributes shown as their defaults: two
// writes with the same text have the same effect on a fresh set.
inline std::string regText(const RegWrite& w) {
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

inline std::vector<std::string> regsText(Session& s, unsigned set) {
  auto r = s.regs(set);
  EXPECT_TRUE(r.ok()) << "regs(" << set << ")";
  std::vector<std::string> out;
  if (r.ok())
    for (const auto& w : *r) out.push_back(regText(w));
  return out;
}

// Everything a user can observe of a session, as text: what a failing
// operation must leave exactly as it was.
inline std::string snapshot(SimEngine& sim, Session& s) {
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

inline std::uint64_t pmdValue(Session& s, unsigned set, unsigned index) {
  auto v = s.readPmd(set, index);
  EXPECT_TRUE(v.ok()) << "readPmd(" << set << ", " << index << ")";
  return v.ok() ? v->value : 0xdeadbeef;
}

inline std::uint64_t pmcValue(Session& s, unsigned set, unsigned index) {
  auto v = s.readPmc(set, index);
  EXPECT_TRUE(v.ok()) << "readPmc(" << set << ", " << index << ")";
  return v.ok() ? v->value : 0xdeadbeef;
}

// The PMDs listed by counts() for `set`.
inline std::vector<unsigned> countedPmds(Session& s, unsigned set) {
  std::vector<unsigned> out;
  for (const auto& c : s.counts())
    if (c.set == set) out.push_back(c.pmd);
  return out;
}

inline std::uint64_t countOf(Session& s, unsigned set, unsigned pmd_index) {
  for (const auto& c : s.counts())
    if (c.set == set && c.pmd == pmd_index) return c.value;
  ADD_FAILURE() << "no count for set " << set << " pmd" << pmd_index;
  return 0xdeadbeef;
}

// Waits (a minute at most) until /proc no longer knows thread `tid`.
inline bool waitThreadGone(pid_t tid) {
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

  // A fresh engine and session ("s") of `config`, in place of the old ones.
  void make(const SimConfig& config) {
    s_.reset();
    rig_.reset();
    rig_ = std::make_unique<SessionRig>(config);
    s_ = rig_->sessionPtr();
    ASSERT_NE(s_, nullptr);
  }

  SessionRig& rig() { return *rig_; }
  Session& s() { return rig_->s(); }
  SimEngine& sim() { return rig_->sim(); }
  std::string snap() { return snapshot(sim(), s()); }

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
    sim().advance(10);
    ASSERT_EQ(x.state().state, State::Masked);
  }
  void makeMasked() { makeMasked(s()); }

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
  void makeRich() { makeRich(s()); }

  void makeRichActive() {
    makeRich();
    ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
    ASSERT_TRUE(s().start().ok());
    sim().advance(100);
    ASSERT_EQ(s().state().state, State::Active);
  }

  // The shared fixture (tests/support/session_rig.h), remade by make(); held,
  // not derived from, so that its steps (pmc(), pmd(), timeSwitch()) do not
  // hide the write builders above in the tests. s_ is its session, for the
  // tests that compare it with what the engine finds.
  std::unique_ptr<SessionRig> rig_;
  std::shared_ptr<Session> s_;
};

}  // namespace pfmfs::testing::rules

// Asserts that `op` fails with `code`, leaves a reason in error() and changes
// nothing observable.
#define EXPECT_FAILS_CLEANLY(op, errnum)                           \
  do {                                                             \
    std::string before_ = snap();                                  \
    EXPECT_EQ((op).code(), -(errnum)) << #op;                      \
    EXPECT_FALSE(s().error().empty()) << #op << " left no reason"; \
    EXPECT_EQ(snap(), before_) << #op << " changed the session";   \
  } while (0)
