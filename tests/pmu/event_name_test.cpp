// Golden tests of event names as users write them into PMCs (pfmfs(5), sets/N/pmcK):
// NAME[:u][:k] -> the PERFEVTSEL value, or the errno of the refusal.
#include "pmu/event_name.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu {
namespace {

constexpr std::uint64_t U = 1ull << 16;  // PERFEVTSEL.USR
constexpr std::uint64_t K = 1ull << 17;  // PERFEVTSEL.OS

PmuDescription simDesc(unsigned counters = 4) {
  std::vector<EventDesc> table;
  for (const auto& e : sim::defaultEvents(counters)) table.push_back(e.desc);
  return intel::makeDescription(intel::Shape{counters, 48}, std::move(table));
}

struct Golden {
  std::string input;
  unsigned pmc;
  std::uint64_t value;  // expected encoding when errnum == 0
  int errnum;           // positive errno expected, 0 for success
};

void PrintTo(const Golden& g, std::ostream* os) {
  std::string shown = g.input.size() > 40 ? g.input.substr(0, 40) + "..." : g.input;
  *os << "\"" << shown << "\" (" << g.input.size() << " chars) on pmc" << g.pmc;
}

std::string longName(std::size_t n) { return std::string(n, 'A'); }

const std::vector<Golden>& goldens() {
  static const std::vector<Golden> g = {
      // The forms of pfmfs(5), sets/N/pmcK: NAME[:u][:k], in either order.
      {"INSTRUCTION_RETIRED:u", 0, 0x100c0, 0},
      {"UNHALTED_CORE_CYCLES:u:k", 0, 0x3003c, 0},
      {"UNHALTED_CORE_CYCLES:k:u", 0, 0x3003c, 0},
      {"INSTRUCTION_RETIRED", 0, 0x100c0, 0},    // bare: user level
      {"INSTRUCTION_RETIRED:k", 0, 0x200c0, 0},  // :k alone: kernel only
      {"UNHALTED_CORE_CYCLES:k", 3, 0x2003c, 0},
      // Case-insensitive names and modifiers.
      {"instruction_retired:U", 0, 0x100c0, 0},
      {"Instruction_Retired:K", 1, 0x200c0, 0},
      {"unhalted_core_cycles:U:K", 2, 0x3003c, 0},
      {"sim_phase_a", 0, 0x101f0, 0},
      // Every architectural event and the phased ones, on every general counter.
      {"UNHALTED_CORE_CYCLES", 0, U | 0x3c, 0},
      {"UNHALTED_REFERENCE_CYCLES", 1, U | 0x013c, 0},
      {"LLC_REFERENCES", 2, U | 0x4f2e, 0},
      {"LLC_MISSES", 3, U | 0x412e, 0},
      {"BRANCH_INSTRUCTIONS_RETIRED", 0, U | 0xc4, 0},
      {"BRANCH_MISSES_RETIRED", 1, U | 0xc5, 0},
      {"SIM_PHASE_A", 2, U | 0x01f0, 0},
      {"SIM_PHASE_B", 3, U | 0x02f0, 0},
      {"LLC_MISSES:u:k", 1, U | K | 0x412e, 0},
      {"SIM_PHASE_B:k", 0, K | 0x02f0, 0},
      {"UNHALTED_REFERENCE_CYCLES:k", 2, K | 0x013c, 0},
      // Refusals: EINVAL.
      {"", 0, 0, EINVAL},
      {"NO_SUCH_EVENT", 0, 0, EINVAL},
      {"NO_SUCH_EVENT:u", 0, 0, EINVAL},
      {":u", 0, 0, EINVAL},
      {":k", 0, 0, EINVAL},
      {":u:k", 0, 0, EINVAL},
      {":", 0, 0, EINVAL},
      {"X:", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED::u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u:", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:x", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u:x", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:uk", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:user", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u:u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:k:k", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u:K:k", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:U:u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u:k:u", 0, 0, EINVAL},
      {"INSTRUCTION RETIRED", 0, 0, EINVAL},
      {" INSTRUCTION_RETIRED", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED ", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED :u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED: u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u ", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED\n", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED\t:u", 0, 0, EINVAL},
      {"INSTRUCTION_RETIREDD", 0, 0, EINVAL},
      {"INSTRUCTION_RETIRE", 0, 0, EINVAL},
      {"0xc0", 0, 0, EINVAL},  // numbers are the caller's business, not an event name
      {longName(300), 0, 0, EINVAL},
      {longName(100000), 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED" + std::string(5000, 'u'), 0, 0, EINVAL},
      {"INSTRUCTION_RETIRED:" + longName(5000), 0, 0, EINVAL},
      // The fixed-counter control takes numbers only.
      {"INSTRUCTION_RETIRED", 16, 0, EINVAL},
      {"UNHALTED_CORE_CYCLES:u", 16, 0, EINVAL},
      // A PMC the PMU does not list: EINVAL (pfmfs(5), sets/N/pmcK; ENOENT is the fs
      // layer's answer for a path that does not exist).
      {"INSTRUCTION_RETIRED", 4, 0, EINVAL},
      {"INSTRUCTION_RETIRED:u", 15, 0, EINVAL},
      {"INSTRUCTION_RETIRED", 17, 0, EINVAL},
  };
  return g;
}

class EventNameGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(EventNameGolden, Encodes) {
  static const PmuDescription desc = simDesc();
  const Golden& g = GetParam();
  auto r = encodeEventName(desc, g.input, g.pmc);
  if (g.errnum == 0) {
    ASSERT_TRUE(r.ok()) << r.error().reason;
    EXPECT_EQ(*r, g.value) << std::hex << "got 0x" << *r << " want 0x" << g.value;
  } else {
    ASSERT_FALSE(r.ok()) << std::hex << "accepted as 0x" << *r;
    EXPECT_EQ(r.code(), -g.errnum) << r.error().reason;
    EXPECT_FALSE(r.error().reason.empty());
    EXPECT_EQ(r.error().reason.find('\n'), std::string::npos) << "reasons are one line";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, EventNameGolden, ::testing::ValuesIn(goldens()));

TEST(EventName, EmbeddedNul) {
  auto desc = simDesc();
  auto r = encodeEventName(desc, std::string_view("INSTRUCTION_RETIRED\0", 20), 0);
  EXPECT_EQ(r.code(), -EINVAL);
  auto m = encodeEventName(desc, std::string_view("INSTRUCTION_RETIRED:u\0", 22), 0);
  EXPECT_EQ(m.code(), -EINVAL);
}

TEST(EventName, ParseGivesTheTableEntryAndLevels) {
  auto desc = simDesc();
  auto bare = parseEventName(desc, "llc_misses");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->event, desc.findEvent("LLC_MISSES"));
  EXPECT_TRUE(bare->usr);
  EXPECT_FALSE(bare->os);

  auto k = parseEventName(desc, "LLC_MISSES:k");
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->usr);
  EXPECT_TRUE(k->os);

  auto uk = parseEventName(desc, "LLC_MISSES:k:U");
  ASSERT_TRUE(uk.ok());
  EXPECT_TRUE(uk->usr);
  EXPECT_TRUE(uk->os);
}

TEST(EventName, EveryEventOnEveryGeneralCounterOfEveryShape) {
  for (unsigned n = 1; n <= 8; ++n) {
    auto desc = simDesc(n);
    for (const auto& e : desc.events)
      for (unsigned pmc = 0; pmc < n; ++pmc) {
        auto r = encodeEventName(desc, e.name + ":u:k", pmc);
        ASSERT_TRUE(r.ok()) << e.name << " pmc" << pmc << ": " << r.error().reason;
        EXPECT_EQ(*r, e.code | U | K);
      }
    // One past the last general counter does not exist.
    EXPECT_EQ(encodeEventName(desc, "INSTRUCTION_RETIRED", n).code(), -EINVAL);
  }
}

TEST(EventName, EventTheCounterCannotCount) {
  // An event restricted to pmd0: pmc0 takes it, pmc1 refuses with EINVAL.
  std::vector<EventDesc> table = {{"ONLY_ZERO", 0x77, regBit(0), "counted by PMC0 only"}};
  auto desc = intel::makeDescription(intel::Shape{2, 48}, table);
  ASSERT_TRUE(desc.validate().empty());
  auto ok = encodeEventName(desc, "ONLY_ZERO", 0);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, U | 0x77);
  EXPECT_EQ(encodeEventName(desc, "ONLY_ZERO", 1).code(), -EINVAL);
  EXPECT_EQ(encodeEventName(desc, "only_zero:k", 1).code(), -EINVAL);
}

TEST(EventName, EncodeEventDirectly) {
  auto desc = simDesc();
  EventSpec spec{desc.findEvent("BRANCH_MISSES_RETIRED"), false, true};
  auto r = encodeEvent(desc, spec, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, K | 0xc5);
  // Neither level: the bare code, which the engine then refuses as a PMC value.
  auto none = encodeEvent(desc, EventSpec{spec.event, false, false}, 2);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 0xc5u);
  EXPECT_EQ(encodeEvent(desc, spec, 16).code(), -EINVAL);
  EXPECT_EQ(encodeEvent(desc, spec, 5).code(), -EINVAL);
}

TEST(EventName, NeverSetsBitsOutsideCodeAndLevels) {
  auto desc = simDesc(8);
  for (const auto& e : desc.events) {
    auto r = encodeEventName(desc, e.name + ":k:u", 7);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r & ~(intel::evtsel::kCode | U | K), 0u) << e.name;
    EXPECT_EQ(*r & desc.pmc(7)->rsvd_mask, 0u) << e.name;
  }
}

}  // namespace
}  // namespace pfmfs::pmu
