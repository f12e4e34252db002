// The fast path's page of a session (session/session_fast_page.cpp) over the
// sim under the manual clock: after every operation the page answers
// exactly what pmdStates (pfm_read_pmds through the mount) answers at that
// moment, across set switches, overflows with short and long resets, PMD
// writes, stop/start, masking and restart; and it says "ask the mount"
// whenever it cannot answer.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fastpath/fast_page.h"
#include "session/engine.h"
#include "session/session.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::Status;
using pfmfs::fastpath::Page;
using pfmfs::fastpath::Source;
using pfmfs::session::Caller;
using pfmfs::session::Flags;
using pfmfs::session::Mode;
using pfmfs::session::PmcWrite;
using pfmfs::session::PmdWrite;
using pfmfs::session::Session;
using pfmfs::session::State;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::gettidNow;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::neg;
using pfmfs::testing::SimConfig;
using pfmfs::testing::SimEngine;

using u64 = std::uint64_t;

// What pfm_read_pmds returns of one PMD.
struct Read {
  u64 value = 0, last_reset = 0, switch_left = 0;
  bool operator==(const Read&) const = default;
};
using Reads = std::map<unsigned, Read>;

std::ostream& operator<<(std::ostream& os, const Reads& r) {
  for (const auto& [i, v] : r) os << " pmd" << i << "=" << v.value << "/" << v.last_reset << "/" << v.switch_left;
  return os;
}

// A reader of the page as libpfm-compat reads it, for the sim (kPage only).
struct PageView {
  bool usable = false;
  int tid = 0;
  unsigned set = 0;
  Reads reads;
};

PageView view(const Page& shared) {
  Page copy{};
  PageView v;
  EXPECT_TRUE(pfmfs::fastpath::snapshot(shared, copy)) << "no consistent page";
  v.usable = copy.usable != 0;
  if (!v.usable) return v;
  v.tid = copy.target_tid;
  v.set = copy.set;
  EXPECT_LE(copy.pmd_count, pfmfs::fastpath::kMaxPmds);
  for (u64 i = 0; i < copy.pmd_count; ++i) {
    const auto& e = copy.pmds[i];
    EXPECT_EQ(e.source, static_cast<std::uint16_t>(Source::kPage)) << "pmd" << e.index;
    v.reads[e.index] = Read{e.upper | e.base, e.last_reset, e.switch_left};
  }
  return v;
}

class Rig : public pfmfs::testing::SessionRig {
 public:
  explicit Rig(const SimConfig& config = {}) : SessionRig(config), page_(std::make_unique<Page>()) {
    s().setFastPage(page_.get());
  }
  ~Rig() { s().setFastPage(nullptr); }

  Page& page() { return *page_; }

  // What the mount would answer for the active set, now.
  Reads mount(unsigned set) {
    Reads out;
    auto lines = s().pmdStates(set);
    EXPECT_TRUE(lines.ok());
    if (lines.ok())
      for (const auto& l : *lines) out[l.index] = Read{l.value, l.state.last_reset, l.state.switch_left};
    return out;
  }

  // The page, read before anything else touches the session, agrees with
  // the mount's answer at the same moment.
  void expectAgree(const std::string& when) {
    SCOPED_TRACE(when);
    PageView v = view(*page_);
    ASSERT_TRUE(v.usable);
    EXPECT_EQ(v.tid, gettidNow());
    EXPECT_EQ(v.set, s().state().set);
    Reads m = mount(v.set);
    EXPECT_EQ(v.reads, m) << "page:" << v.reads << "\nmount:" << m;
    EXPECT_FALSE(v.reads.empty());
  }
  void expectUnusable(const std::string& when) {
    SCOPED_TRACE(when);
    EXPECT_FALSE(view(*page_).usable);
  }

 private:
  std::unique_ptr<Page> page_;
};

TEST(SessionFastPage, UsableOnlyWhileLoaded) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.pmd(0, 0, 5);
  r.expectUnusable("unloaded");
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.expectAgree("loaded, stopped");
  EXPECT_EQ(view(r.page()).reads.at(0).value, 5u);
  r.ok(r.s().start());
  r.advance(1000);
  r.expectAgree("counting");
  EXPECT_EQ(view(r.page()).reads.at(0).value, 3005u);
  r.ok(r.s().stop());
  r.advance(1000);
  r.expectAgree("stopped");
  EXPECT_EQ(view(r.page()).reads.at(0).value, 3005u);
  r.ok(r.s().unload());
  r.expectUnusable("unloaded again");
}

TEST(SessionFastPage, WrittenAndUsedPmdsAsTheMountListsThem) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.pmc(0, 1, kInstructions);
  r.pmd(0, 3, 77);  // written, not used: its value alone
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  r.advance(10);
  PageView v = view(r.page());
  ASSERT_TRUE(v.usable);
  EXPECT_EQ(v.reads, (Reads{{0, {30, 0, 0}}, {1, {20, 0, 0}}, {3, {77, 0, 0}}}));
  r.expectAgree("three PMDs");
}

TEST(SessionFastPage, FollowsTimeSwitchesAcrossSets) {
  Rig r;
  r.ok(r.s().createSet(1));
  r.pmc(0, 0, kCycles);
  r.pmc(1, 0, kInstructions);
  r.ok(r.s().setSwitch(0, SwitchSpec{true, 100, false}));
  r.ok(r.s().setSwitch(1, SwitchSpec{true, 250, false}));
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  const u64 steps[] = {50, 50, 1, 249, 17, 333, 1000, 3, 97, 150};
  for (u64 ns : steps) {
    r.advance(ns);
    r.expectAgree("after " + std::to_string(ns) + " ns");
  }
}

TEST(SessionFastPage, OverflowsWithShortResetsAtWidth16) {
  SimConfig c;
  c.width = 16;
  Rig r(c);
  r.pmc(0, 0, kCycles);
  PmdWrite w;
  w.index = 0;
  w.value = neg(1000);
  w.short_reset = neg(700);
  r.pmd(0, w);
  r.pmc(0, 1, kInstructions);  // wraps its 16 bits every 32768 ns
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  for (u64 ns : {100, 233, 234, 1, 5000, 40000, 12345, 70000}) {
    r.advance(ns);
    r.expectAgree("after " + std::to_string(ns) + " ns");
  }
  EXPECT_EQ(view(r.page()).reads.at(0).last_reset, neg(700));
}

TEST(SessionFastPage, MaskedIsUnusableUntilRestartThenLongReset) {
  Rig r;
  r.pmc(0, 0, kCycles);
  PmdWrite w;
  w.index = 0;
  w.value = neg(300);
  w.long_reset = neg(600);
  w.notify = true;
  r.pmd(0, w);
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  r.advance(99);
  r.expectAgree("before the overflow");
  r.advance(1);
  EXPECT_EQ(r.s().state().state, State::Masked);
  r.expectUnusable("masked");
  r.ok(r.s().restart());
  r.expectAgree("restarted");
  EXPECT_EQ(view(r.page()).reads.at(0).value, neg(600));
  EXPECT_EQ(view(r.page()).reads.at(0).last_reset, neg(600));
  r.advance(150);
  r.expectAgree("counting after the restart");
}

TEST(SessionFastPage, PmdWritesWhileCounting) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  r.advance(10);
  r.pmd(0, 0, 1u << 20);
  r.expectAgree("after the write");
  EXPECT_EQ(view(r.page()).reads.at(0).value, 1u << 20);
  r.advance(10);
  r.expectAgree("counting from it");
  EXPECT_EQ(view(r.page()).reads.at(0).value, (1u << 20) + 30);
}

TEST(SessionFastPage, OverflowSwitchesCountDown) {
  Rig r;
  r.ok(r.s().createSet(1));
  r.pmc(0, 0, kCycles);
  PmdWrite w;
  w.index = 0;
  w.value = neg(30);
  w.short_reset = neg(30);
  w.switch_cnt = 3;
  r.pmd(0, w);
  r.pmc(1, 0, kInstructions);
  r.ok(r.s().setSwitch(0, SwitchSpec{false, 0, true}));
  r.ok(r.s().setSwitch(1, SwitchSpec{true, 40, false}));
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.ok(r.s().start());
  for (int i = 0; i < 12; ++i) {
    r.advance(7);
    r.expectAgree("step " + std::to_string(i));
  }
}

TEST(SessionFastPage, InheritAndSystemModeAskTheMount) {
  {
    Rig r;
    Flags f;
    f.inherit = true;
    r.ok(r.s().setFlags(f));
    r.pmc(0, 0, kCycles);
    r.ok(r.s().load(Caller::root(), gettidNow()));
    r.expectUnusable("inherit");
  }
  {
    Rig r;
    r.ok(r.s().setMode(Mode::System));
    r.pmc(0, 0, kCycles);
    r.ok(r.s().load(Caller::root(), 0));
    r.expectUnusable("system mode");
  }
}

TEST(SessionFastPage, ThePageLeftBehindSaysAskTheMount) {
  Rig r;
  r.pmc(0, 0, kCycles);
  r.ok(r.s().load(Caller::root(), gettidNow()));
  r.expectAgree("loaded");
  auto other = std::make_unique<Page>();
  r.s().setFastPage(other.get());
  r.expectUnusable("the old page");
  PageView v = view(*other);
  EXPECT_TRUE(v.usable);
  r.s().setFastPage(nullptr);
  EXPECT_FALSE(view(*other).usable);
}

}  // namespace

namespace {

// Without interrupts the engine finds wraps by sampling; with skid an
// overflow's interrupt comes events after its wrap. Either way a read
// through the mount and the page agree.
TEST(SessionFastPage, NoInterruptsAndSkid) {
  for (bool interrupts : {false, true}) {
    SimConfig c;
    c.width = 16;
    c.interrupts = interrupts;
    c.skid = interrupts ? 50 : 0;
    Rig r(c);
    r.pmc(0, 0, kCycles);
    PmdWrite w;
    w.index = 0;
    w.value = neg(1000);
    w.short_reset = neg(900);
    r.pmd(0, w);
    r.pmc(0, 1, kInstructions);
    r.ok(r.s().load(Caller::root(), gettidNow()));
    r.ok(r.s().start());
    for (u64 ns : {300, 33, 1, 2, 5000, 32768, 9, 100000}) {
      r.advance(ns);
      r.expectAgree((interrupts ? "skid 50, after " : "no interrupts, after ") + std::to_string(ns) + " ns");
    }
  }
}

}  // namespace
