// Register writes as a user meets them (pfmfs(5), pmcK and pmdK, regs):
// garbage and boundaries of every attribute, writeRegs all or nothing,
// writing 0 frees a counter, and regs read back as written.
#include "tests/session/session_rules_fixture.h"

namespace {

using namespace pfmfs::testing::rules;

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
    // The sim implements every PERFEVTSEL bit of 31:0 but edge (18), pin
    // control (19), invert (23) and the counter mask (31:24).
    {"EvtselAllImplementedRoot", pmc(0, 0x0073ffff), 0},
    {"EvtselAllImplementedButOsAnyUser", pmc(0, 0x0051ffff), 0, Caller::user(12345, 12345)},
    {"EvtselEdgeOnSim", pmc(0, kCycles | (1ull << 18)), EINVAL},
    {"EvtselPinControlOnSim", pmc(0, kCycles | (1ull << 19)), EINVAL},
    {"EvtselInvertOnSim", pmc(0, kCycles | (1ull << 23)), EINVAL},
    {"EvtselCmaskOnSim", pmc(0, kCycles | (1ull << 24)), EINVAL},
    {"EvtselWithEnAndInt", pmc(3, kCycles | kEn | kInt), 0, Caller::user(12345, 12345)},
    {"EvtselNoEmul64", pmc(1, kInstructions, true), 0},
    {"EvtselZeroNoEmul64", pmc(2, 0, true), 0},
    {"Evtsel7With8Counters", pmc(7, 0x0073ffff), 0, Caller::root(), 0, 8},
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

}  // namespace
