// Golden tests of pfmfs's file texts (pfmfs(5)): every parser against rows of
// {input, expected value or errno}, every formatter against exact strings, and
// the `regs` round trip through a real sim session with the manual clock.
#include "fs/text_format.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"
#include "pmu/sim/sim_backend.h"
#include "session/engine.h"

namespace pfmfs::fs {
namespace {

using session::Flags;
using session::Mode;
using session::PmcWrite;
using session::PmdWrite;
using session::RegWrite;
using session::SwitchSpec;

constexpr std::uint64_t kMax = ~std::uint64_t{0};

pmu::PmuDescription simDesc(unsigned counters = 4, unsigned width = 48) {
  std::vector<pmu::EventDesc> table;
  for (const auto& e : pmu::sim::defaultEvents(counters)) table.push_back(e.desc);
  return pmu::intel::makeDescription(pmu::intel::Shape{counters, width}, std::move(table));
}

std::unique_ptr<pmu::sim::SimBackend> simBackend(unsigned counters = 4, unsigned width = 48) {
  pmu::sim::SimOptions o;
  o.shape.general_counters = counters;
  o.shape.width = width;
  o.clock = pmu::ClockKind::Manual;
  auto b = pmu::sim::SimBackend::create(o);
  EXPECT_TRUE(b.ok());
  return std::move(*b);
}

// Every field of a register write, optional attributes shown only when set
// (so that "notify=0" and no notify differ): how the tables spell expectations.
std::string show(const RegWrite& r) {
  if (const auto* c = std::get_if<PmcWrite>(&r))
    return fmt::format("pmc{} 0x{:x}{}", c->index, c->value, c->no_emul64 ? " no_emul64" : "");
  const auto& d = std::get<PmdWrite>(r);
  std::string s = fmt::format("pmd{} {}", d.index, d.value);
  auto num = [&s](const char* k, const auto& v) {
    if (v) s += fmt::format(" {}={}", k, *v);
  };
  auto hex = [&s](const char* k, const auto& v) {
    if (v) s += fmt::format(" {}=0x{:x}", k, *v);
  };
  num("long_reset", d.long_reset);
  num("short_reset", d.short_reset);
  num("switch_cnt", d.switch_cnt);
  hex("reset_pmds", d.reset_pmds);
  hex("smpl_pmds", d.smpl_pmds);
  hex("random_mask", d.random_mask);
  num("eventid", d.eventid);
  if (d.notify) s += fmt::format(" notify={}", *d.notify ? 1 : 0);
  if (d.random) s += fmt::format(" random={}", *d.random ? 1 : 0);
  return s;
}

std::string show(const std::vector<RegWrite>& regs) {
  std::string s;
  for (const auto& r : regs) s += (s.empty() ? "" : " | ") + show(r);
  return s;
}

// The common check of a refusal: -errnum, and a reason of one printable line.
template <typename T>
void expectRefused(const Result<T>& r, int errnum, const std::string& input) {
  ASSERT_FALSE(r.ok()) << "accepted '" << printable(input) << "'";
  EXPECT_EQ(r.code(), -errnum) << printable(input);
  EXPECT_FALSE(r.error().reason.empty()) << printable(input);
  for (char c : r.error().reason)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "unprintable byte in reason '" << r.error().reason << "'";
}

// ---- parseNumber ---------------------------------------------------------------

struct NumberRow {
  std::string input;
  std::uint64_t value;
  int errnum;  // 0: accepted with `value`
};

void PrintTo(const NumberRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class NumberTest : public ::testing::TestWithParam<NumberRow> {};

TEST_P(NumberTest, Golden) {
  const NumberRow& row = GetParam();
  auto r = parseNumber(row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, row.value);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, NumberTest,
    ::testing::Values(NumberRow{"0", 0, 0}, NumberRow{"42", 42, 0}, NumberRow{"42\n", 42, 0},
                      NumberRow{"  42 \t\n", 42, 0}, NumberRow{"007", 7, 0}, NumberRow{"0x1f", 0x1f, 0},
                      NumberRow{"0X1F", 0x1f, 0}, NumberRow{"0xABCdef", 0xabcdef, 0}, NumberRow{"0x0", 0, 0},
                      NumberRow{"0x000000000000000001", 1, 0}, NumberRow{"0xffffffffffffffff", kMax, 0},
                      NumberRow{"18446744073709551615", kMax, 0}, NumberRow{"-1", kMax, 0},
                      NumberRow{"-1000", kMax - 999, 0}, NumberRow{"-0", 0, 0},
                      NumberRow{"-9223372036854775808", 0x8000000000000000ull, 0},
                      NumberRow{"-18446744073709551615", 1, 0}, NumberRow{"1000000\n", 1000000, 0},
                      // Refusals.
                      NumberRow{"", 0, EINVAL}, NumberRow{" ", 0, EINVAL}, NumberRow{"\n", 0, EINVAL},
                      NumberRow{"0x", 0, EINVAL}, NumberRow{"0X", 0, EINVAL}, NumberRow{"0xg", 0, EINVAL},
                      NumberRow{"0x1g", 0, EINVAL}, NumberRow{"--1", 0, EINVAL}, NumberRow{"-0x5", 0, EINVAL},
                      NumberRow{"-", 0, EINVAL}, NumberRow{"+5", 0, EINVAL}, NumberRow{"+0x5", 0, EINVAL},
                      NumberRow{"18446744073709551616", 0, EINVAL}, NumberRow{"99999999999999999999", 0, EINVAL},
                      NumberRow{"-18446744073709551616", 0, EINVAL}, NumberRow{"0x10000000000000000", 0, EINVAL},
                      NumberRow{"1 2", 0, EINVAL}, NumberRow{"1\n2", 0, EINVAL}, NumberRow{"12a", 0, EINVAL},
                      NumberRow{"a12", 0, EINVAL}, NumberRow{"1.5", 0, EINVAL}, NumberRow{"1e6", 0, EINVAL},
                      NumberRow{"0b101", 0, EINVAL}, NumberRow{"x10", 0, EINVAL}, NumberRow{"- 1", 0, EINVAL},
                      NumberRow{"1,000", 0, EINVAL}, NumberRow{"1_000", 0, EINVAL},
                      NumberRow{std::string("1\0", 2), 0, EINVAL}, NumberRow{"\xff", 0, EINVAL},
                      NumberRow{"0x 1", 0, EINVAL}, NumberRow{"1\r", 0, EINVAL}));

// ---- parseRegList --------------------------------------------------------------

struct ListRow {
  std::string input;
  pmu::RegMask mask;
  int errnum;
};

void PrintTo(const ListRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class RegListTest : public ::testing::TestWithParam<ListRow> {};

TEST_P(RegListTest, Golden) {
  const ListRow& row = GetParam();
  auto r = parseRegList(row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, row.mask);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, RegListTest,
    ::testing::Values(ListRow{"0", 0x1, 0}, ListRow{"1,2", 0x6, 0}, ListRow{"2,1,2", 0x6, 0},
                      ListRow{"16,17,18", 0x70000, 0}, ListRow{"63", 0x8000000000000000ull, 0}, ListRow{"0x6", 0x6, 0},
                      ListRow{"0x0", 0, 0}, ListRow{"0x70000\n", 0x70000, 0}, ListRow{"", 0, EINVAL},
                      ListRow{",", 0, EINVAL}, ListRow{"1,", 0, EINVAL}, ListRow{",1", 0, EINVAL},
                      ListRow{"1,,2", 0, EINVAL}, ListRow{"64", 0, EINVAL}, ListRow{"1,64", 0, EINVAL},
                      ListRow{"-1", 0, EINVAL}, ListRow{"0x", 0, EINVAL}, ListRow{"0x1,2", 0, EINVAL},
                      ListRow{"1, 2", 0, EINVAL}, ListRow{"a", 0, EINVAL}, ListRow{"0x10000000000000000", 0, EINVAL},
                      ListRow{"99999999999999999999", 0, EINVAL}));

// ---- parsePmcWrite -------------------------------------------------------------

struct PmcRow {
  std::string input;
  unsigned index;
  std::string expected;  // show() of the write, or "" when refused
  int errnum;
};

void PrintTo(const PmcRow& r, std::ostream* os) { *os << "pmc" << r.index << " '" << printable(r.input) << "'"; }

class PmcTest : public ::testing::TestWithParam<PmcRow> {};

TEST_P(PmcTest, Golden) {
  const PmcRow& row = GetParam();
  pmu::PmuDescription desc = simDesc();
  auto r = parsePmcWrite(desc, row.index, row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(show(*r), row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, PmcTest,
    ::testing::Values(
        PmcRow{"0x1003c", 0, "pmc0 0x1003c", 0}, PmcRow{"0x1003c\n", 0, "pmc0 0x1003c", 0},
        PmcRow{"65596", 1, "pmc1 0x1003c", 0}, PmcRow{"0x13003c no_emul64", 0, "pmc0 0x13003c no_emul64", 0},
        PmcRow{"  0x13003c\t no_emul64 \n", 2, "pmc2 0x13003c no_emul64", 0}, PmcRow{"0", 3, "pmc3 0x0", 0},
        PmcRow{"UNHALTED_CORE_CYCLES:u", 0, "pmc0 0x1003c", 0}, PmcRow{"UNHALTED_CORE_CYCLES", 0, "pmc0 0x1003c", 0},
        PmcRow{"instruction_retired:u:k", 1, "pmc1 0x300c0", 0},
        PmcRow{"LLC_MISSES:k no_emul64", 3, "pmc3 0x2412e no_emul64", 0}, PmcRow{"SIM_PHASE_A\n", 2, "pmc2 0x101f0", 0},
        PmcRow{"0x222", 16, "pmc16 0x222", 0},
        // Reserved bits are the engine's business: syntax only here.
        PmcRow{"0xffffffffffffffff", 0, "pmc0 0xffffffffffffffff", 0}, PmcRow{"-1", 16, "pmc16 0xffffffffffffffff", 0},
        // Refusals.
        PmcRow{"", 0, "", EINVAL}, PmcRow{"\n", 0, "", EINVAL}, PmcRow{"no_emul64", 0, "", EINVAL},
        PmcRow{"0x1003c no_emul64 no_emul64", 0, "", EINVAL}, PmcRow{"0x1003c emul64", 0, "", EINVAL},
        PmcRow{"0x1003c 5", 0, "", EINVAL}, PmcRow{"0x1003c\n0x1003c", 0, "", EINVAL}, PmcRow{"0xg", 0, "", EINVAL},
        PmcRow{"12abc", 0, "", EINVAL}, PmcRow{"NO_SUCH_EVENT", 0, "", EINVAL},
        PmcRow{"UNHALTED_CORE_CYCLES:x", 0, "", EINVAL}, PmcRow{"UNHALTED_CORE_CYCLES:u:u", 0, "", EINVAL},
        PmcRow{"UNHALTED_CORE_CYCLES", 16, "", EINVAL},  // the fixed control takes numbers only
        PmcRow{"UNHALTED_CORE_CYCLES", 7, "", EINVAL},   // no pmc7 to encode for
        PmcRow{"18446744073709551616", 0, "", EINVAL}, PmcRow{"--1", 0, "", EINVAL},
        PmcRow{"no_emul64 0x1003c", 0, "", EINVAL}, PmcRow{"+0x1003c", 0, "", EINVAL}));

// ---- parsePmdWrite -------------------------------------------------------------

struct PmdRow {
  std::string input;
  std::string expected;
  int errnum;
};

void PrintTo(const PmdRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class PmdTest : public ::testing::TestWithParam<PmdRow> {};

TEST_P(PmdTest, Golden) {
  const PmdRow& row = GetParam();
  auto r = parsePmdWrite(1, row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(show(*r), row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, PmdTest,
    ::testing::Values(
        PmdRow{"0", "pmd1 0", 0}, PmdRow{"5\n", "pmd1 5", 0}, PmdRow{"-1000", "pmd1 18446744073709550616", 0},
        PmdRow{"0x10", "pmd1 16", 0},
        PmdRow{"-100 long_reset=-100 short_reset=-50 switch_cnt=3 reset_pmds=0,2 smpl_pmds=0x5 random_mask=0xff "
               "eventid=7 notify random",
               "pmd1 18446744073709551516 long_reset=18446744073709551516 short_reset=18446744073709551566 "
               "switch_cnt=3 reset_pmds=0x5 smpl_pmds=0x5 random_mask=0xff eventid=7 notify=1 random=1",
               0},
        PmdRow{"1 notify=0 random=1", "pmd1 1 notify=0 random=1", 0},
        PmdRow{"1 random notify=1", "pmd1 1 notify=1 random=1", 0},
        PmdRow{"1 eventid=0 long_reset=0", "pmd1 1 long_reset=0 eventid=0", 0},
        PmdRow{"1 reset_pmds=0x0", "pmd1 1 reset_pmds=0x0", 0},
        PmdRow{"\t7   switch_cnt=0x2\t\n", "pmd1 7 switch_cnt=2", 0},
        // Refusals.
        PmdRow{"", "", EINVAL}, PmdRow{"   \n", "", EINVAL}, PmdRow{"notify", "", EINVAL},
        PmdRow{"long_reset=5", "", EINVAL}, PmdRow{"x", "", EINVAL}, PmdRow{"1 2", "", EINVAL},
        PmdRow{"1 notify notify", "", EINVAL}, PmdRow{"1 notify notify=0", "", EINVAL},
        PmdRow{"1 long_reset=1 long_reset=2", "", EINVAL}, PmdRow{"1 long_reset", "", EINVAL},
        PmdRow{"1 long_reset=", "", EINVAL}, PmdRow{"1 long_reset=x", "", EINVAL},
        PmdRow{"1 short_reset=--1", "", EINVAL}, PmdRow{"1 switch_cnt=0x", "", EINVAL},
        PmdRow{"1 reset_pmds=", "", EINVAL}, PmdRow{"1 reset_pmds=64", "", EINVAL},
        PmdRow{"1 reset_pmds=1,,2", "", EINVAL}, PmdRow{"1 smpl_pmds", "", EINVAL},
        PmdRow{"1 random_mask=18446744073709551616", "", EINVAL}, PmdRow{"1 notify=2", "", EINVAL},
        PmdRow{"1 notify=yes", "", EINVAL}, PmdRow{"1 random=", "", EINVAL}, PmdRow{"1 bogus", "", EINVAL},
        PmdRow{"1 bogus=1", "", EINVAL}, PmdRow{"1 =1", "", EINVAL}, PmdRow{"1 Notify", "", EINVAL},
        PmdRow{"1 long_reset = 5", "", EINVAL}, PmdRow{"1\nnotify", "", EINVAL},
        PmdRow{"1 reset_pmds=1 reset_pmds=2", "", EINVAL}, PmdRow{"1 eventid=1=2", "", EINVAL}));

// ---- parseRegs -----------------------------------------------------------------

struct RegsRow {
  std::string input;
  std::string expected;  // show() of the vector
  int errnum;
  std::string reason_has;  // a refusal's reason contains this
};

void PrintTo(const RegsRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class RegsTest : public ::testing::TestWithParam<RegsRow> {};

TEST_P(RegsTest, Golden) {
  const RegsRow& row = GetParam();
  pmu::PmuDescription desc = simDesc();
  auto r = parseRegs(desc, row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(show(*r), row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
    EXPECT_NE(r.error().reason.find(row.reason_has), std::string::npos) << r.error().reason;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, RegsTest,
    ::testing::Values(
        RegsRow{"pmc0 0x1003c\n", "pmc0 0x1003c", 0, ""},
        RegsRow{"pmc0 0x1003c\npmd0 -10 notify\n", "pmc0 0x1003c | pmd0 18446744073709551606 notify=1", 0, ""},
        RegsRow{"\n  pmc1 INSTRUCTION_RETIRED no_emul64  \n\n\tpmd16 5 long_reset=3\npmc16 0x222",
                "pmc1 0x100c0 no_emul64 | pmd16 5 long_reset=3 | pmc16 0x222", 0, ""},
        RegsRow{"pmd0 1\npmc0 1", "pmd0 1 | pmc0 0x1", 0, ""},  // pmd0 and pmc0 are different registers
        RegsRow{"pmc63 0", "pmc63 0x0", 0, ""},                 // unknown registers: the engine refuses them
        // Refusals name the line.
        RegsRow{"", "", EINVAL, "no register"}, RegsRow{"\n\n  \n", "", EINVAL, "no register"},
        RegsRow{"pmc0", "", EINVAL, "line 1"}, RegsRow{"pmc0\n", "", EINVAL, "line 1"},
        RegsRow{"pmc0 0x1003c\npmc0 0x1003c", "", EINVAL, "line 2: pmc0 named twice"},
        RegsRow{"pmd3 1\n\npmd3 2", "", EINVAL, "line 3: pmd3 named twice"}, RegsRow{"pmc 5", "", EINVAL, "line 1"},
        RegsRow{"pmc64 5", "", EINVAL, "line 1"}, RegsRow{"pmc00 5", "", EINVAL, "line 1"},
        RegsRow{"pmc-1 5", "", EINVAL, "line 1"}, RegsRow{"PMC0 5", "", EINVAL, "line 1"},
        RegsRow{"pmx0 5", "", EINVAL, "line 1"}, RegsRow{"pmc0=5", "", EINVAL, "line 1"},
        RegsRow{"5", "", EINVAL, "line 1"}, RegsRow{"pmc0 5\npmd0", "", EINVAL, "line 2"},
        RegsRow{"pmc0 5\npmd0 1 bogus", "", EINVAL, "line 2"},
        RegsRow{"pmc0 5\n\n\npmc1 NO_SUCH_EVENT", "", EINVAL, "line 4"}, RegsRow{"pmc0 0xg", "", EINVAL, "line 1"},
        RegsRow{"pmd0 1 notify notify", "", EINVAL, "line 1"}, RegsRow{"pmc0 5 no_emul64 x", "", EINVAL, "line 1"},
        RegsRow{"pmc0 5 pmc1 6", "", EINVAL, "line 1"}, RegsRow{"pmc1x 5", "", EINVAL, "line 1"}));

// ---- parseSwitch, parseMode, parseFlags, parseAdvance ------------------------------

struct SwitchRow {
  std::string input;
  SwitchSpec expected;
  int errnum;
};

void PrintTo(const SwitchRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class SwitchTest : public ::testing::TestWithParam<SwitchRow> {};

TEST_P(SwitchTest, Golden) {
  const SwitchRow& row = GetParam();
  auto r = parseSwitch(row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, SwitchTest,
    ::testing::Values(SwitchRow{"none", {}, 0}, SwitchRow{"none\n", {}, 0}, SwitchRow{"ovfl\n", {false, 0, true}, 0},
                      SwitchRow{"time 1000000\n", {true, 1000000, false}, 0}, SwitchRow{"time 1", {true, 1, false}, 0},
                      SwitchRow{" time\t0x10 ", {true, 16, false}, 0}, SwitchRow{"", {}, EINVAL},
                      SwitchRow{"switch time 0", {}, EINVAL}, SwitchRow{"time 0", {}, EINVAL},
                      SwitchRow{"time -1", {}, EINVAL}, SwitchRow{"time", {}, EINVAL}, SwitchRow{"time x", {}, EINVAL},
                      SwitchRow{"time 1 2", {}, EINVAL}, SwitchRow{"time 1 ovfl", {true, 1, true}, 0},
                      SwitchRow{"time 1 ovfl ovfl", {}, EINVAL}, SwitchRow{"time ovfl", {}, EINVAL},
                      SwitchRow{"time 0 ovfl", {}, EINVAL}, SwitchRow{"ovfl 1", {}, EINVAL},
                      SwitchRow{"none ovfl", {}, EINVAL}, SwitchRow{"NONE", {}, EINVAL},
                      SwitchRow{"Time 5", {}, EINVAL}, SwitchRow{"time 18446744073709551616", {}, EINVAL},
                      SwitchRow{"ovfl\nnone", {}, EINVAL}, SwitchRow{"time=5", {}, EINVAL},
                      SwitchRow{"1000", {}, EINVAL}));

TEST(ParseMode, Golden) {
  EXPECT_EQ(*parseMode("thread"), Mode::Thread);
  EXPECT_EQ(*parseMode("thread\n"), Mode::Thread);
  EXPECT_EQ(*parseMode(" system \n"), Mode::System);
  for (std::string bad : {"", "\n", "Thread", "threads", "thread system", "thread\nsystem", "sys", "0", "cpu"})
    expectRefused(parseMode(bad), EINVAL, bad);
}

struct FlagsRow {
  std::string input;
  Flags expected;
  int errnum;
};

void PrintTo(const FlagsRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class FlagsTest : public ::testing::TestWithParam<FlagsRow> {};

TEST_P(FlagsTest, Golden) {
  const FlagsRow& row = GetParam();
  auto r = parseFlags(row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, FlagsTest,
    ::testing::Values(
        FlagsRow{"", {}, 0}, FlagsRow{"\n", {}, 0}, FlagsRow{"none\n", {}, 0},
        FlagsRow{"notify_block", {true, false, false, false}, 0}, FlagsRow{"no_msg\n", {false, true, false, false}, 0},
        FlagsRow{"autoclose", {false, false, true, false}, 0}, FlagsRow{"inherit", {false, false, false, true}, 0},
        FlagsRow{"inherit autoclose no_msg notify_block", {true, true, true, true}, 0},
        FlagsRow{"no_msg,autoclose", {false, true, true, false}, 0},
        FlagsRow{"no_msg , autoclose\tinherit", {false, true, true, true}, 0}, FlagsRow{"bogus", {}, EINVAL},
        FlagsRow{"no_msg bogus", {}, EINVAL}, FlagsRow{"no_msg no_msg", {}, EINVAL},
        FlagsRow{"none no_msg", {}, EINVAL}, FlagsRow{"no_msg none", {}, EINVAL}, FlagsRow{"NO_MSG", {}, EINVAL},
        FlagsRow{"no_msg,", {}, EINVAL}, FlagsRow{",no_msg", {}, EINVAL}, FlagsRow{"no_msg,,inherit", {}, EINVAL},
        FlagsRow{",", {}, EINVAL}, FlagsRow{"no_msg\ninherit", {}, EINVAL}, FlagsRow{"no-msg", {}, EINVAL},
        FlagsRow{"block", {}, EINVAL}, FlagsRow{"notify_block=1", {}, EINVAL}));

TEST(ParseAdvance, Golden) {
  EXPECT_EQ(*parseAdvance("0"), 0u);
  EXPECT_EQ(*parseAdvance("1000000\n"), 1000000u);
  EXPECT_EQ(*parseAdvance("0x10"), 16u);
  EXPECT_EQ(*parseAdvance("18446744073709551615"), kMax);
  for (std::string bad : {"", "\n", "-1", "-0", "x", "1 2", "1\n2", "0x", "18446744073709551616", "1ms", "+1"})
    expectRefused(parseAdvance(bad), EINVAL, bad);
}

TEST(ParseSmplFmt, Golden) {
  using session::SamplingSpec;
  EXPECT_EQ(*parseSmplFmt("none\n"), SamplingSpec{});
  EXPECT_EQ(*parseSmplFmt(" none "), SamplingSpec{});
  EXPECT_EQ(*parseSmplFmt("default buf_size=65536\n"), (SamplingSpec{"default", 65536, 0}));
  EXPECT_EQ(*parseSmplFmt("default\tbuf_flags=0  buf_size=0x1000"), (SamplingSpec{"default", 4096, 0}));
  // Any word is a format name here, any flags: the engine refuses them.
  EXPECT_EQ(*parseSmplFmt("pebs buf_size=1 buf_flags=0xffffffff"), (SamplingSpec{"pebs", 1, 0xffffffff}));
  for (std::string bad : {"",
                          "\n",
                          "none x",
                          "none buf_size=1",
                          "default",
                          "default buf_flags=0",
                          "buf_size=1",
                          "default buf_size",
                          "default buf_size=",
                          "default buf_size=-1",
                          "default buf_size=+1",
                          "default buf_size=1x",
                          "default buf_size=18446744073709551616",
                          "default buf_size=1 buf_size=1",
                          "default buf_size=1 buf_flags=0 buf_flags=0",
                          "default buf_size=1 buf_flags=0x100000000",
                          "default size=1",
                          "default buf_size=1 x",
                          "default buf_size=1\nnone",
                          "def\x01"
                          "ault buf_size=1",
                          "d\xc3\xa9"
                          "faut buf_size=1"})
    expectRefused(parseSmplFmt(bad), EINVAL, bad);
}

TEST(Format, SmplFmtAndSamples) {
  EXPECT_EQ(formatSmplFmt({}), "none\n");
  EXPECT_EQ(formatSmplFmt({"default", 65536, 0}), "default buf_size=65536 buf_flags=0\n");
  EXPECT_EQ(formatSamples({}), "");
  session::SampleRecord a;
  a.tid = 4243;
  a.pid = 4242;
  a.pmd = 0;
  a.last_reset = kMax - 299;
  a.ip = 0x4019c0;
  a.tstamp = 100000;
  a.eventid = 7;
  a.smpl_pmds = 0x10002;  // pmd1 and pmd16, in that order
  a.values = {200000, 5};
  session::SampleRecord b = a;
  b.pmd = 16;
  b.cpu = 3;
  b.set = 2;
  b.smpl_pmds = 0;
  b.values = {};
  EXPECT_EQ(formatSamples({a, b}),
            "sample=0 set=0 pmd=0 tid=4243 pid=4242 cpu=0 ip=0x4019c0 tstamp=100000 last_reset=18446744073709551316 "
            "eventid=7 pmd1=200000 pmd16=5\n"
            "sample=1 set=2 pmd=16 tid=4243 pid=4242 cpu=3 ip=0x4019c0 tstamp=100000 "
            "last_reset=18446744073709551316 eventid=7\n");
}

// ---- parseCtl ------------------------------------------------------------------

using K = CtlCommand::Kind;

struct CtlRow {
  std::string input;
  CtlCommand expected;
  int errnum;
};

void PrintTo(const CtlRow& r, std::ostream* os) { *os << "'" << printable(r.input) << "'"; }

class CtlTest : public ::testing::TestWithParam<CtlRow> {};

TEST_P(CtlTest, Golden) {
  const CtlRow& row = GetParam();
  auto r = parseCtl(row.input);
  if (row.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, row.expected);
  } else {
    expectRefused(r, row.errnum, row.input);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rows, CtlTest,
    ::testing::Values(
        CtlRow{"load 1234", {K::Load, 1234, std::nullopt, "1234"}, 0},
        CtlRow{"load 1234\n", {K::Load, 1234, std::nullopt, "1234"}, 0},
        CtlRow{"load 0", {K::Load, 0, std::nullopt, "0"}, 0},
        CtlRow{"load 0x10", {K::Load, 16, std::nullopt, "0x10"}, 0},
        CtlRow{"load 2147483647", {K::Load, 2147483647, std::nullopt, "2147483647"}, 0},
        CtlRow{"load 1234 set=3", {K::Load, 1234, 3u, "1234"}, 0},
        CtlRow{"  load\t7  set=65535 \n", {K::Load, 7, 65535u, "7"}, 0},
        CtlRow{"load 7 set=0", {K::Load, 7, 0u, "7"}, 0}, CtlRow{"start", {K::Start, 0, std::nullopt}, 0},
        CtlRow{"start\n", {K::Start, 0, std::nullopt}, 0}, CtlRow{"start 2", {K::Start, 0, 2u}, 0},
        CtlRow{"start 65535", {K::Start, 0, 65535u}, 0}, CtlRow{"stop", {K::Stop, 0, std::nullopt}, 0},
        CtlRow{"restart\n", {K::Restart, 0, std::nullopt}, 0}, CtlRow{"unload", {K::Unload, 0, std::nullopt}, 0},
        // Refusals.
        CtlRow{"", {}, EINVAL}, CtlRow{"\n", {}, EINVAL}, CtlRow{"load", {}, EINVAL},
        CtlRow{"load abc", {K::Load, -1, std::nullopt, "abc"}, 0},
        CtlRow{"load /sys/fs/cgroup/a.slice set=2", {K::Load, -1, 2u, "/sys/fs/cgroup/a.slice"}, 0},
        CtlRow{"load /a b", {}, EINVAL}, CtlRow{"load /a\nb", {}, EINVAL}, CtlRow{"load /a set=x", {}, EINVAL},
        // Not a thread id or cpu number: a path, which only a cgroup session takes.
        CtlRow{"load -1", {K::Load, -1, std::nullopt, "-1"}, 0},
        CtlRow{"load 2147483648", {K::Load, -1, std::nullopt, "2147483648"}, 0},
        CtlRow{"load 1x", {K::Load, -1, std::nullopt, "1x"}, 0}, CtlRow{"load 1 set=", {}, EINVAL},
        CtlRow{"load 1 set=70000", {}, EINVAL}, CtlRow{"load 1 set=65536", {}, EINVAL},
        CtlRow{"load 1 set=-1", {}, EINVAL}, CtlRow{"load 1 set=x", {}, EINVAL}, CtlRow{"load 1 set 2", {}, EINVAL},
        CtlRow{"load 1 2", {}, EINVAL}, CtlRow{"load 1 set=1 set=2", {}, EINVAL}, CtlRow{"load 1 SET=1", {}, EINVAL},
        CtlRow{"load 1\nstart", {}, EINVAL}, CtlRow{"start\nstop", {}, EINVAL}, CtlRow{"start 1 2", {}, EINVAL},
        CtlRow{"start -1", {}, EINVAL}, CtlRow{"start 65536", {}, EINVAL}, CtlRow{"start x", {}, EINVAL},
        CtlRow{"start set=1", {}, EINVAL}, CtlRow{"stop now", {}, EINVAL}, CtlRow{"restart now", {}, EINVAL},
        CtlRow{"unload 1", {}, EINVAL}, CtlRow{"Start", {}, EINVAL}, CtlRow{"STOP", {}, EINVAL},
        CtlRow{"pause", {}, EINVAL}, CtlRow{"1234", {}, EINVAL}, CtlRow{"loadx 1", {}, EINVAL},
        CtlRow{"load 1.5", {K::Load, -1, std::nullopt, "1.5"}, 0},
        CtlRow{"load 18446744073709551616", {K::Load, -1, std::nullopt, "18446744073709551616"}, 0}));

// Refusals quote the input safely: control bytes as \xNN, long input cut.
TEST(Reasons, QuoteInputPrintably) {
  auto r = parseCtl(std::string("fly\x01\x7f"));
  expectRefused(r, EINVAL, "fly");
  EXPECT_EQ(r.error().reason,
            "ctl: unknown command 'fly\\x01\\x7f' (load TID [set=N], start [N], stop, restart, unload)");
  auto n = parseNumber(std::string(100, '7') + "x");
  expectRefused(n, EINVAL, "long");
  EXPECT_NE(n.error().reason.find("..."), std::string::npos) << n.error().reason;
  auto e = parsePmcWrite(simDesc(), 0, "NO_SUCH_EVENT");
  expectRefused(e, EINVAL, "NO_SUCH_EVENT");
  EXPECT_EQ(e.error().reason, "unknown event 'NO_SUCH_EVENT' (see pmu/events)");
  auto t = parseSwitch("time 0");
  expectRefused(t, EINVAL, "time 0");
  EXPECT_EQ(t.error().reason, "switch time 0: the timeout must be at least 1 ns");
  auto d = parsePmdWrite(3, "1 notify notify");
  expectRefused(d, EINVAL, "notify twice");
  EXPECT_EQ(d.error().reason, "pmd3: notify given twice");
}

// ---- formatters ----------------------------------------------------------------

TEST(Format, Version) { EXPECT_EQ(formatVersion(), "pfmfs 0.1.0\nabi 1\n"); }

TEST(Format, PmuInfo) {
  auto b = simBackend();
  EXPECT_EQ(formatPmuInfo(*b, 1000000),
            "backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 "
            "features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup tick_ns=1000000\n");
  auto small = simBackend(2, 32);
  EXPECT_EQ(formatPmuInfo(*small, 250000),
            "backend=sim model=intel-arch-v2 pmcs=0x10003 pmds=0x70003 counters=2 fixed=3 width=32 "
            "features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup tick_ns=250000\n");
  EXPECT_EQ(formatPmuInfo(*small, 1000000, {"@pfmfs-fastpath.1.00ff", 1, 4294967294u}),
            "backend=sim model=intel-arch-v2 pmcs=0x10003 pmds=0x70003 counters=2 fixed=3 width=32 "
            "features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup,fastpath tick_ns=1000000 "
            "fastpath=@pfmfs-fastpath.1.00ff fastpath_pid=1 fastpath_uid=4294967294\n");
  auto wide = simBackend(8, 64);
  EXPECT_EQ(formatPmuInfo(*wide, 1000000),
            "backend=sim model=intel-arch-v2 pmcs=0x100ff pmds=0x700ff counters=8 fixed=3 width=64 "
            "features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup tick_ns=1000000\n");
}

TEST(Format, Events) {
  EXPECT_EQ(formatEvents(simDesc()),
            "name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc=\"Core cycles while the thread is not halted\" "
            "pmds=0x2000f\n"
            "name=INSTRUCTION_RETIRED code=0xc0 pmcs=0x1000f desc=\"Instructions retired\" pmds=0x1000f "
            "aliases=INSTRUCTIONS_RETIRED\n"
            "name=UNHALTED_REFERENCE_CYCLES code=0x13c pmcs=0x1000f desc=\"Reference cycles at the TSC rate while "
            "the thread is not halted\" pmds=0x4000f\n"
            "name=LLC_REFERENCES code=0x4f2e pmcs=0xf desc=\"Last-level cache references\" pmds=0xf "
            "aliases=LAST_LEVEL_CACHE_REFERENCES\n"
            "name=LLC_MISSES code=0x412e pmcs=0xf desc=\"Last-level cache misses\" pmds=0xf "
            "aliases=LAST_LEVEL_CACHE_MISSES\n"
            "name=BRANCH_INSTRUCTIONS_RETIRED code=0xc4 pmcs=0xf desc=\"Branch instructions retired\" pmds=0xf\n"
            "name=BRANCH_MISSES_RETIRED code=0xc5 pmcs=0xf desc=\"Mispredicted branch instructions retired\" pmds=0xf "
            "aliases=MISPREDICTED_BRANCH_RETIRED,RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS\n"
            "name=SIM_PHASE_A code=0x1f0 pmcs=0xf desc=\"Simulated event at 4/ns in the first half of every 2 "
            "ms\" pmds=0xf\n"
            "name=SIM_PHASE_B code=0x2f0 pmcs=0xf desc=\"Simulated event at 4/ns in the second half of every 2 "
            "ms\" pmds=0xf\n");
  // pmcs= maps the counters to the PMCs that configure them, pmds= lists the
  // counters themselves (libpfm-compat's dispatch); desc is quoted
  // as a --sim-events file quotes it, and stays on one line.
  pmu::PmuDescription d = simDesc(2);
  d.events = {pmu::EventDesc{"ONLY_PMD1", 0x11, 0x2, "say \"hi\" \\ now"},
              pmu::EventDesc{"FIXED_ONLY", 0x22, 0x20000, "tab\there\nnewline"}, pmu::EventDesc{"NONE", 0x33, 0, ""}};
  EXPECT_EQ(formatEvents(d),
            "name=ONLY_PMD1 code=0x11 pmcs=0x2 desc=\"say \\\"hi\\\" \\\\ now\" pmds=0x2\n"
            "name=FIXED_ONLY code=0x22 pmcs=0x10000 desc=\"tab here newline\" pmds=0x20000\n"
            "name=NONE code=0x33 pmcs=0x0 desc=\"\" pmds=0x0\n");
}

TEST(Format, ModeAndFlags) {
  EXPECT_EQ(formatMode(Mode::Thread), "thread\n");
  EXPECT_EQ(formatMode(Mode::System), "system\n");
  EXPECT_EQ(formatFlags({}), "\n");
  EXPECT_EQ(formatFlags({true, false, false, false}), "notify_block\n");
  EXPECT_EQ(formatFlags({false, true, false, false}), "no_msg\n");
  EXPECT_EQ(formatFlags({false, false, true, false}), "autoclose\n");
  EXPECT_EQ(formatFlags({false, false, false, true}), "inherit\n");
  EXPECT_EQ(formatFlags({true, true, false, false}), "notify_block no_msg\n");
  EXPECT_EQ(formatFlags({false, true, false, true}), "no_msg inherit\n");
  EXPECT_EQ(formatFlags({true, true, true, true}), "notify_block no_msg autoclose inherit\n");
  // Every combination reads back to itself.
  for (int bits = 0; bits < 16; ++bits) {
    Flags f{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0};
    auto back = parseFlags(formatFlags(f));
    ASSERT_TRUE(back.ok()) << formatFlags(f);
    EXPECT_EQ(*back, f) << formatFlags(f);
  }
}

TEST(Format, State) {
  session::StateInfo s;
  EXPECT_EQ(formatState(s), "state=unloaded mode=thread target=- set=0 queued=0 lost=0\n");
  s.state = session::State::Active;
  s.target = 4242;
  s.set = 3;
  s.queued = 2;
  s.lost = 7;
  EXPECT_EQ(formatState(s), "state=active mode=thread target=4242 set=3 queued=2 lost=7\n");
  s.state = session::State::Masked;
  s.mode = Mode::System;
  s.target = 0;
  EXPECT_EQ(formatState(s), "state=masked mode=system target=0 set=3 queued=2 lost=7\n");
  s.state = session::State::Loaded;
  EXPECT_EQ(formatState(s), "state=loaded mode=system target=0 set=3 queued=2 lost=7\n");
  session::StateInfo gone;
  gone.exited = true;
  gone.set = 65535;
  gone.lost = kMax;
  EXPECT_EQ(formatState(gone),
            "state=unloaded mode=thread target=- set=65535 queued=0 lost=18446744073709551615 exited=1\n");
  // perf could not schedule the active set for a while: said, after every other key.
  s.unscheduled_ns = 1500;
  EXPECT_EQ(formatState(s), "state=loaded mode=system target=0 set=3 queued=2 lost=7 unscheduled_ns=1500\n");
  // inherit: the children followed, merged and dropped, at the very end.
  s.mode = Mode::Thread;
  s.unscheduled_ns = 0;
  s.inherit = true;
  s.followed = 2;
  s.merged = 5;
  s.dropped = 1;
  EXPECT_EQ(formatState(s), "state=loaded mode=thread target=0 set=3 queued=2 lost=7 followed=2 merged=5 dropped=1\n");
  // The target gone, its children still followed: said before them.
  s.target_exited = true;
  EXPECT_EQ(formatState(s),
            "state=loaded mode=thread target=0 set=3 queued=2 lost=7 target_exited=1 followed=2 merged=5 dropped=1\n");
  // A sampling format: its keys after every other.
  s.sampling = true;
  s.smpl_count = 3;
  s.smpl_overflows = 1;
  EXPECT_EQ(formatState(s),
            "state=loaded mode=thread target=0 set=3 queued=2 lost=7 target_exited=1 followed=2 merged=5 dropped=1 "
            "smpl_count=3 smpl_overflows=1\n");
  // perf's throttles, last of all.
  s.throttled = 4;
  EXPECT_EQ(formatState(s),
            "state=loaded mode=thread target=0 set=3 queued=2 lost=7 target_exited=1 followed=2 merged=5 dropped=1 "
            "smpl_count=3 smpl_overflows=1 throttled=4\n");
  // Samples dropped while masked, only when there are some.
  s.smpl_dropped = 9;
  EXPECT_EQ(formatState(s),
            "state=loaded mode=thread target=0 set=3 queued=2 lost=7 target_exited=1 followed=2 merged=5 dropped=1 "
            "smpl_count=3 smpl_overflows=1 smpl_dropped=9 throttled=4\n");
  session::StateInfo fresh;
  fresh.sampling = true;
  EXPECT_EQ(formatState(fresh),
            "state=unloaded mode=thread target=- set=0 queued=0 lost=0 smpl_count=0 smpl_overflows=0\n");
}

TEST(Format, Counts) {
  EXPECT_EQ(formatCounts({}), "");
  std::vector<session::CountLine> lines = {
      {0, 0, 3000, 2000, 1000, 6000, std::nullopt, std::nullopt},
      {0, 16, 0, 2000, 1000, 0, std::nullopt, std::nullopt},
      {1, 1, 0, 2000, 0, std::nullopt, std::nullopt, std::nullopt},
      {65535, 18, kMax, kMax, kMax, kMax, std::nullopt, std::nullopt},
  };
  EXPECT_EQ(formatCounts(lines),
            "set=0 pmd=0 value=3000 enabled_ns=2000 running_ns=1000 scaled=6000\n"
            "set=0 pmd=16 value=0 enabled_ns=2000 running_ns=1000 scaled=0\n"
            "set=1 pmd=1 value=0 enabled_ns=2000 running_ns=0 scaled=-\n"
            "set=65535 pmd=18 value=18446744073709551615 enabled_ns=18446744073709551615 "
            "running_ns=18446744073709551615 scaled=18446744073709551615\n");
  // inherit: the children's counts and the tree's estimate, after every other key.
  std::vector<session::CountLine> inherited = {
      {0, 0, 3000, 2000, 1000, 6000, 500, 7000},
      {1, 1, 0, 2000, 0, std::nullopt, 0, std::nullopt},
  };
  EXPECT_EQ(formatCounts(inherited),
            "set=0 pmd=0 value=3000 enabled_ns=2000 running_ns=1000 scaled=6000 children=500 total_scaled=7000\n"
            "set=1 pmd=1 value=0 enabled_ns=2000 running_ns=0 scaled=- children=0 total_scaled=-\n");
}

TEST(Format, SwitchSetInfoPmcPmd) {
  EXPECT_EQ(formatSwitch({}), "none\n");
  EXPECT_EQ(formatSwitch({true, 1000000, false}), "time 1000000\n");
  EXPECT_EQ(formatSwitch({false, 0, true}), "ovfl\n");
  EXPECT_EQ(formatSwitch({true, 7, true}), "time 7 ovfl\n");
  for (const SwitchSpec& s : {SwitchSpec{}, SwitchSpec{true, 1, false}, SwitchSpec{true, kMax, false},
                              SwitchSpec{false, 0, true}, SwitchSpec{true, 9, true}}) {
    auto back = parseSwitch(formatSwitch(s));
    ASSERT_TRUE(back.ok()) << formatSwitch(s);
    EXPECT_EQ(*back, s);
  }

  session::PmdLine p0{0, 0, {}};
  session::PmdLine p16{16, 0, {}};
  p16.value = 5;
  p16.state.long_reset = 0xfffffffffffffc18;  // -1000
  p16.state.short_reset = 7;
  p16.state.last_reset = 7;
  p16.state.switch_cnt = 3;
  p16.state.switch_left = 1;
  EXPECT_EQ(formatPmdStates({}), "");
  EXPECT_EQ(formatPmdStates({p0, p16}),
            "pmd=0 value=0 long_reset=0 short_reset=0 last_reset=0 switch_cnt=0 switch_left=0\n"
            "pmd=16 value=5 long_reset=18446744073709550616 short_reset=7 last_reset=7 switch_cnt=3 switch_left=1\n");

  session::SetInfo i;
  EXPECT_EQ(formatSetInfo(i), "runs=0 duration_ns=0 timeout_ns=0 ovfl_pmds=0x0 avail_pmcs=0x0 avail_pmds=0x0\n");
  i.runs = 3;
  i.duration_ns = 3000000;
  i.timeout_ns = 1000000;
  i.ovfl_pmds = 0x10001;
  i.avail_pmcs = 0x1000f;
  i.avail_pmds = 0x7000f;
  EXPECT_EQ(formatSetInfo(i),
            "runs=3 duration_ns=3000000 timeout_ns=1000000 ovfl_pmds=0x10001 avail_pmcs=0x1000f "
            "avail_pmds=0x7000f\n");

  EXPECT_EQ(formatPmc({0x13003c, false}), "0x13003c\n");
  EXPECT_EQ(formatPmc({0x13003c, true}), "0x13003c no_emul64\n");
  EXPECT_EQ(formatPmc({0, false}), "0x0\n");
  EXPECT_EQ(formatPmd(0), "0\n");
  EXPECT_EQ(formatPmd(3000), "3000\n");
  EXPECT_EQ(formatPmd(kMax - 999), "18446744073709550616\n");
}

TEST(Format, Regs) {
  EXPECT_EQ(formatRegs({}), "");
  PmdWrite all;
  all.index = 2;
  all.value = kMax - 99;
  all.long_reset = kMax - 99;
  all.short_reset = 5;
  all.switch_cnt = 3;
  all.reset_pmds = 0x5;
  all.smpl_pmds = 0x70000;
  all.random_mask = 0xff;
  all.eventid = 42;
  all.notify = true;
  all.random = true;
  // As EventSet::nonDefaultRegisters fills it: every attribute present, most 0.
  PmdWrite plain;
  plain.index = 16;
  plain.value = 7;
  plain.long_reset = plain.short_reset = plain.switch_cnt = plain.random_mask = plain.eventid = 0;
  plain.reset_pmds = plain.smpl_pmds = 0;
  plain.notify = plain.random = false;
  PmdWrite bare;  // as a parse of "pmd1 0" leaves it
  bare.index = 1;
  std::vector<RegWrite> regs = {PmcWrite{0, 0x1003c, false}, PmcWrite{16, 0x222, true}, all, plain, bare};
  EXPECT_EQ(formatRegs(regs),
            "pmc0 0x1003c\n"
            "pmc16 0x222 no_emul64\n"
            "pmd2 18446744073709551516 long_reset=18446744073709551516 short_reset=5 switch_cnt=3 reset_pmds=0x5 "
            "smpl_pmds=0x70000 random_mask=0xff eventid=42 notify random\n"
            "pmd16 7\n"
            "pmd1 0\n");
  auto back = parseRegs(simDesc(), formatRegs(regs));
  ASSERT_TRUE(back.ok()) << back.error().reason;
  EXPECT_EQ(show(*back),
            "pmc0 0x1003c | pmc16 0x222 no_emul64 | pmd2 18446744073709551516 long_reset=18446744073709551516 "
            "short_reset=5 switch_cnt=3 reset_pmds=0x5 smpl_pmds=0x70000 random_mask=0xff eventid=42 notify=1 "
            "random=1 | pmd16 7 | pmd1 0");
}

// ---- through a real session ------------------------------------------------------

class SimSession : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = simBackend();
    engine_ = std::make_unique<session::Engine>(*backend_, session::EngineOptions{});
    auto s = engine_->createSession(session::Caller::root(), "t");
    ASSERT_TRUE(s.ok()) << s.error().reason;
    session_ = *s;
  }

  void TearDown() override {
    session_.reset();
    engine_.reset();
  }

  std::string regsText(unsigned set) {
    auto r = session_->regs(set);
    EXPECT_TRUE(r.ok());
    return r.ok() ? formatRegs(*r) : std::string("<error>");
  }

  // What the fs does for a write to sets/SET/regs.
  Status writeRegsText(unsigned set, std::string_view text) {
    auto w = parseRegs(backend_->description(), text);
    if (!w) return w.error();
    return session_->writeRegs(session::Caller::root(), set, *w);
  }

  std::unique_ptr<pmu::sim::SimBackend> backend_;
  std::unique_ptr<session::Engine> engine_;
  std::shared_ptr<session::Session> session_;
};

// `cat sets/0/regs > sets/1/regs` copies a set: the text of a fresh copy is the
// text of the original, register for register and attribute for attribute.
TEST_F(SimSession, RegsRoundTripCopiesASet) {
  EXPECT_EQ(regsText(0), "");  // a fresh set: nothing differs from the defaults
  Status st = writeRegsText(0,
                            "pmc0 UNHALTED_CORE_CYCLES:u\n"
                            "pmc1 0x1100c0 no_emul64\n"  // INT bit, which the engine owns: kept as written
                            "pmc16 0x222\n"
                            "pmd0 -1000 long_reset=-1000 short_reset=-500 switch_cnt=2 reset_pmds=1,16 notify\n"
                            "pmd1 12345 smpl_pmds=0x3 random_mask=0xf0 random eventid=9\n"
                            "pmd17 0 long_reset=-7\n");
  ASSERT_TRUE(st.ok()) << st.error().reason;
  const std::string expected =
      "pmc0 0x1003c\n"
      "pmc1 0x1100c0 no_emul64\n"
      "pmc16 0x222\n"
      "pmd0 18446744073709550616 long_reset=18446744073709550616 short_reset=18446744073709551116 switch_cnt=2 "
      "reset_pmds=0x10002 notify\n"
      "pmd1 12345 smpl_pmds=0x3 random_mask=0xf0 eventid=9 random\n"
      "pmd17 0 long_reset=18446744073709551609\n";
  EXPECT_EQ(regsText(0), expected);

  ASSERT_TRUE(session_->createSet(1).ok());
  st = writeRegsText(1, regsText(0));
  ASSERT_TRUE(st.ok()) << st.error().reason;
  EXPECT_EQ(regsText(1), expected);
  // And attribute by attribute, as the engine holds them.
  auto p0 = session_->readPmd(1, 0);
  ASSERT_TRUE(p0.ok());
  EXPECT_EQ(p0->value, 0xfffffffffffffc18u);
  EXPECT_EQ(p0->state.long_reset, 0xfffffffffffffc18u);
  EXPECT_EQ(p0->state.short_reset, 0xfffffffffffffe0cu);
  EXPECT_EQ(p0->state.switch_cnt, 2u);
  EXPECT_EQ(p0->state.reset_pmds, 0x10002u);
  EXPECT_TRUE(p0->state.notify);
  EXPECT_FALSE(p0->state.random);
  auto c1 = session_->readPmc(1, 1);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(formatPmc(*c1), "0x1100c0 no_emul64\n");

  // A copy of the copy is the same text again.
  ASSERT_TRUE(session_->createSet(2).ok());
  st = writeRegsText(2, regsText(1));
  ASSERT_TRUE(st.ok()) << st.error().reason;
  EXPECT_EQ(regsText(2), expected);
}

// The fs shows what the engine holds: state, switch, info and counts of a
// session loaded on this thread, advanced by the manual clock.
TEST_F(SimSession, FormatsEngineState) {
  EXPECT_EQ(formatState(session_->state()), "state=unloaded mode=thread target=- set=0 queued=0 lost=0\n");
  EXPECT_EQ(formatMode(session_->mode()), "thread\n");
  EXPECT_EQ(formatFlags(session_->flags()), "\n");
  ASSERT_TRUE(session_->setFlags(*parseFlags("no_msg inherit\n")).ok());
  EXPECT_EQ(formatFlags(session_->flags()), "no_msg inherit\n");
  ASSERT_TRUE(session_->setFlags(*parseFlags("none\n")).ok());
  ASSERT_TRUE(session_->setSwitch(0, *parseSwitch("time 5000\n")).ok());
  auto info0 = session_->setInfo(0);
  ASSERT_TRUE(info0.ok());
  EXPECT_EQ(formatSwitch(info0->switch_spec), "time 5000\n");

  auto pmc = parsePmcWrite(backend_->description(), 0, "UNHALTED_CORE_CYCLES:u\n");
  ASSERT_TRUE(pmc.ok());
  ASSERT_TRUE(session_->writePmc(session::Caller::root(), 0, *pmc).ok());
  auto pmd = parsePmdWrite(0, "100\n");
  ASSERT_TRUE(pmd.ok());
  ASSERT_TRUE(session_->writePmd(0, *pmd).ok());

  auto tid = static_cast<int>(::syscall(SYS_gettid));
  auto load = parseCtl(fmt::format("load {}\n", tid));
  ASSERT_TRUE(load.ok());
  ASSERT_EQ(load->kind, K::Load);
  Status st = session_->load(session::Caller::root(), load->target, load->set);
  ASSERT_TRUE(st.ok()) << st.error().reason;
  auto start = parseCtl("start\n");
  ASSERT_TRUE(start.ok());
  st = session_->start(start->set);
  ASSERT_TRUE(st.ok()) << st.error().reason;
  auto ns = parseAdvance("1000\n");
  ASSERT_TRUE(ns.ok());
  ASSERT_TRUE(engine_->advanceManualClock(*ns).ok());

  EXPECT_EQ(formatState(session_->state()),
            fmt::format("state=active mode=thread target={} set=0 queued=0 lost=0\n", tid));
  EXPECT_EQ(formatCounts(session_->counts()), "set=0 pmd=0 value=3100 enabled_ns=1000 running_ns=1000 scaled=3100\n");
  auto v = session_->readPmd(0, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(formatPmd(v->value), "3100\n");
  auto info = session_->setInfo(0);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(formatSetInfo(*info),
            "runs=1 duration_ns=1000 timeout_ns=4000 ovfl_pmds=0x0 avail_pmcs=0x1000f avail_pmds=0x7000f\n");
  ASSERT_TRUE(session_->unload().ok());
  EXPECT_EQ(formatState(session_->state()), "state=unloaded mode=thread target=- set=0 queued=0 lost=0\n");
}

}  // namespace
}  // namespace pfmfs::fs
