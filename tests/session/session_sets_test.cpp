// The rules of event sets (create, delete, switch specs), of sessions' names
// and per-user limits, and the table of failing operations that must change
// nothing observable (pfmfs(5), sessions/NAME/sets/).
#include "tests/session/session_rules_fixture.h"

namespace {

using namespace pfmfs::testing::rules;

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
      "",
      ".",
      "..",
      "a/b",
      "/",
      std::string(65, 'a'),
      "a b",
      " ",
      "a\tb",
      "a\nb",
      "caf\xc3\xa9",
      "\xe2\x82\xac",
      std::string("a\0b", 3),
      "a:b",
      "a*",
      "a+b",
      "~",
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

#define OP(expr)                          \
  [](Session& x, SimEngine& sim) -> int { \
    (void)sim;                            \
    return code(expr);                    \
  }

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

}  // namespace
