// One engine over the sim (manual clock), one root session in it, and short
// steps that assert each succeeds: the shared fixture of the session tests.
// A test that needs more (a fast page, a target process) derives from it;
// a gtest fixture that remakes it per configuration holds one
// (SessionRules, tests/session/session_rules_fixture.h).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "session/session.h"
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing {

// -p: the PMD value that overflows after p events.
constexpr std::uint64_t neg(std::uint64_t p) { return std::uint64_t{0} - p; }

// A sim configuration of the given counter width (manual clock).
inline SimConfig simConfig(unsigned width, bool interrupts = true) {
  SimConfig c;
  c.width = width;
  c.interrupts = interrupts;
  return c;
}

// A PMD write of `value`, its attributes left for the test to set.
inline session::PmdWrite pmdWrite(unsigned index, std::uint64_t value) {
  session::PmdWrite w;
  w.index = index;
  w.value = value;
  return w;
}

class SessionRig {
 public:
  explicit SessionRig(const SimConfig& config = {}) : sim_(config), s_(sim_.newSession()) {}

  SimEngine& sim() { return sim_; }
  session::Session& s() { return *s_; }
  // The session as the engine holds it (null if it could not be made).
  const std::shared_ptr<session::Session>& sessionPtr() const { return s_; }

  // Asserts that `st` succeeded, with its reason if not.
  void ok(const Status& st) { ASSERT_TRUE(st.ok()) << st.error().reason; }

  void pmc(unsigned set, unsigned index, std::uint64_t value, bool no_emul64 = false) {
    Status st = s_->writePmc(session::Caller::root(), set, session::PmcWrite{index, value, no_emul64});
    ASSERT_TRUE(st.ok()) << "pmc" << index << ": " << st.error().reason;
  }
  void pmd(unsigned set, const session::PmdWrite& w) {
    Status st = s_->writePmd(set, w);
    ASSERT_TRUE(st.ok()) << "pmd" << w.index << ": " << st.error().reason;
  }
  void pmd(unsigned set, unsigned index, std::uint64_t value) { pmd(set, pmdWrite(index, value)); }
  // A sampling counter: value neg(first), resets neg(short)/neg(long).
  void period(unsigned set, unsigned index, std::uint64_t first, std::optional<std::uint64_t> short_p,
              std::optional<std::uint64_t> long_p, bool notify) {
    session::PmdWrite w = pmdWrite(index, neg(first));
    if (short_p) w.short_reset = neg(*short_p);
    if (long_p) w.long_reset = neg(*long_p);
    w.notify = notify;
    pmd(set, w);
  }
  void createSet(unsigned id) { ok(s_->createSet(id)); }
  void setSwitch(unsigned set, const session::SwitchSpec& spec) { ok(s_->setSwitch(set, spec)); }
  void timeSwitch(unsigned set, std::uint64_t ns) { setSwitch(set, session::SwitchSpec{true, ns, false}); }
  void flags(const session::Flags& f) { ok(s_->setFlags(f)); }
  void load(std::optional<unsigned> set = std::nullopt) { ok(s_->load(session::Caller::root(), gettidNow(), set)); }
  void start(std::optional<unsigned> set = std::nullopt) { ok(s_->start(set)); }
  void loadAndStart() {
    load();
    start();
  }
  void stop() { ok(s_->stop()); }
  void restart() { ok(s_->restart()); }
  void unload() { ok(s_->unload()); }
  void advance(std::uint64_t ns) { sim_.advance(ns); }

  session::PmdValue readFull(unsigned set, unsigned index) {
    auto r = s_->readPmd(set, index);
    EXPECT_TRUE(r.ok()) << "read pmd" << index << " of set " << set;
    return r.ok() ? *r : session::PmdValue{0xdeadbeefdeadbeefull, {}};
  }
  std::uint64_t read(unsigned set, unsigned index) { return readFull(set, index).value; }
  std::uint64_t readPmcValue(unsigned set, unsigned index) {
    auto r = s_->readPmc(set, index);
    EXPECT_TRUE(r.ok()) << "read pmc" << index << " of set " << set;
    return r.ok() ? r->value : 0xdeadbeefdeadbeefull;
  }
  session::SetInfo info(unsigned set) {
    auto r = s_->setInfo(set);
    EXPECT_TRUE(r.ok()) << "setInfo " << set;
    return r.ok() ? *r : session::SetInfo{};
  }
  session::StateInfo state() { return s_->state(); }
  std::vector<session::Message> take() { return s_->takeMessages(1000); }

  // The counts() line of (set, pmd); a failure and an empty line if absent.
  session::CountLine line(unsigned set, unsigned pmd) {
    for (const auto& c : s_->counts())
      if (c.set == set && c.pmd == pmd) return c;
    ADD_FAILURE() << "no counts line for set " << set << " pmd " << pmd;
    return session::CountLine{};
  }

 protected:
  SimEngine sim_;
  std::shared_ptr<session::Session> s_;
};

// An overflow message of this thread.
inline void expectOverflowMessage(const session::Message& m, std::uint64_t seq, std::uint16_t set, pmu::RegMask pmds) {
  EXPECT_EQ(m.type, session::MessageType::Overflow);
  EXPECT_EQ(m.seq, seq);
  EXPECT_EQ(m.set, set) << "seq " << seq;
  EXPECT_EQ(m.pmds, pmds) << "seq " << seq;
  EXPECT_EQ(m.pid, ::getpid()) << "seq " << seq;
  EXPECT_EQ(m.tid, gettidNow()) << "seq " << seq;
  EXPECT_EQ(m.cpu, 0) << "seq " << seq;
}

}  // namespace pfmfs::testing
