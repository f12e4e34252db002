// Unit tests of PMU descriptions: validate() on every shape the sim offers and
// on tables with each kind of defect, the register mapping of pfmfs(5) ("The sim PMU"), the
// lookups, and the shape limits.
#include "pmu/pmu_description.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr unsigned kWidths[] = {16, 32, 48, 64};

std::vector<EventDesc> simTable(unsigned counters) {
  std::vector<EventDesc> out;
  for (const auto& e : sim::defaultEvents(counters)) out.push_back(e.desc);
  return out;
}

PmuDescription archDesc(unsigned counters = 4, unsigned width = 48) {
  return intel::makeDescription(intel::Shape{counters, width}, intel::architecturalEvents(counters));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// The description must be sound before the defect is introduced, so that the
// report is the defect's and nothing else's.
class Defects : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_THAT(d.validate(), IsEmpty()); }

  // validate() reports at least one line, and one of them names every
  // element of `words` (ignoring case): the register or event at fault.
  void expectReported(std::vector<std::string> words) {
    auto bad = d.validate();
    ASSERT_FALSE(bad.empty()) << "defect not reported";
    auto lower = [](std::string t) {
      for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return t;
    };
    // Whole words only: "pmd1" is not in "pmd16".
    auto hasWord = [&lower](const std::string& line, const std::string& word) {
      const std::string l = lower(line), w = lower(word);
      auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
      for (std::size_t at = l.find(w); at != std::string::npos; at = l.find(w, at + 1)) {
        bool starts = at == 0 || !alnum(l[at - 1]) || !alnum(w.front());
        bool ends = at + w.size() == l.size() || !alnum(l[at + w.size()]) || !alnum(w.back());
        if (starts && ends) return true;
      }
      return false;
    };
    bool found = false;
    for (const auto& line : bad) {
      bool all = true;
      for (const auto& w : words) all = all && hasWord(line, w);
      found = found || all;
    }
    EXPECT_TRUE(found) << "no line names " << ::testing::PrintToString(words) << " in:\n" << joined(bad);
  }

  PmuDescription d = archDesc();
};

// ------------------------------------------------------------ sound tables

TEST(PmuDescriptionValidate, EveryShapeWithArchitecturalEvents) {
  for (unsigned n = 1; n <= 8; ++n)
    for (unsigned w : kWidths) {
      auto d = intel::makeDescription(intel::Shape{n, w}, intel::architecturalEvents(n));
      EXPECT_THAT(d.validate(), IsEmpty()) << n << " counters, width " << w;
      EXPECT_EQ(d.pmcs.size(), n + 1);
      EXPECT_EQ(d.pmds.size(), n + 3);
      EXPECT_EQ(d.events.size(), 7u);
      EXPECT_EQ(d.width(), w);
    }
}

TEST(PmuDescriptionValidate, EveryShapeWithSimDefaultEvents) {
  for (unsigned n = 1; n <= 8; ++n)
    for (unsigned w : kWidths) {
      auto d = intel::makeDescription(intel::Shape{n, w}, simTable(n));
      EXPECT_THAT(d.validate(), IsEmpty()) << n << " counters, width " << w;
      EXPECT_EQ(d.events.size(), 9u);
    }
}

TEST(PmuDescriptionValidate, EmptyEventTableIsSound) {
  // A PMU may list no events: PMCs then take numbers only.
  auto d = intel::makeDescription(intel::Shape{}, {});
  EXPECT_THAT(d.validate(), IsEmpty());
}

// ---------------------------------------------------------------- defects

TEST_F(Defects, DuplicateEvent) {
  d.events.push_back(d.events[1]);
  expectReported({"INSTRUCTION_RETIRED"});
}

TEST_F(Defects, DuplicateEventNameWithAnotherCode) {
  d.events.push_back(EventDesc{"UNHALTED_CORE_CYCLES", 0x77, 0x1, "same name, other code"});
  expectReported({"UNHALTED_CORE_CYCLES"});
}

TEST_F(Defects, EventOnNonexistentGeneralCounter) {
  d.events[3].counters |= regBit(4);  // a 4-counter PMU has pmd0-3
  expectReported({"LLC_REFERENCES"});
}

TEST_F(Defects, EventOnNonexistentFixedCounter) {
  d.events[3].counters = regBit(19);
  expectReported({"LLC_REFERENCES"});
}

TEST_F(Defects, EventWithNoCounter) {
  d.events[4].counters = 0;
  expectReported({"LLC_MISSES"});
}

TEST_F(Defects, EventWithoutName) {
  d.events.push_back(EventDesc{"", 0x55, 1, "nameless"});
  expectReported({"name"});
}

TEST_F(Defects, EventNameNotUpperCase) {
  d.events.push_back(EventDesc{"lower_case", 0x55, 1, ""});
  expectReported({"lower_case"});
  d.events.back().name = "WITH SPACE";
  expectReported({"WITH SPACE"});
  d.events.back().name = "WITH:COLON";
  expectReported({"WITH:COLON"});
}

TEST_F(Defects, AliasNotUpperCase) {
  d.events[0].aliases = {"cycles"};
  expectReported({"UNHALTED_CORE_CYCLES", "cycles"});
}

TEST_F(Defects, AliasThatIsAnotherEventsName) {
  // INSTRUCTION_RETIRED would find event 1, not event 0: a name never hides.
  d.events[0].aliases = {"INSTRUCTION_RETIRED"};
  expectReported({"UNHALTED_CORE_CYCLES", "INSTRUCTION_RETIRED"});
}

TEST_F(Defects, AliasOfTwoEvents) {
  d.events[3].aliases = {"LLC"};
  d.events[4].aliases = {"LLC"};
  expectReported({"LLC_MISSES", "LLC"});
}

TEST_F(Defects, FixedCounterListedForTheWrongEvent) {
  // FIXED_CTR0 (pmd16) counts instructions, not cycles.
  d.events[0].counters |= regBit(16);
  expectReported({"UNHALTED_CORE_CYCLES", "pmd16"});
}

TEST_F(Defects, FixedCounterListedForANonArchitecturalEvent) {
  d.events.push_back(EventDesc{"OTHER", 0x99, regBit(0) | regBit(18), ""});
  expectReported({"OTHER", "pmd18"});
}

TEST_F(Defects, OverlappingFields) {
  d.pmds[4].field_mask |= 0xf0;  // pmd17 (FIXED_CTR1) owns 0xf0; give pmd16 those bits too
  expectReported({"pmd16", "pmd17"});
  expectReported({"pmd17", "pmd16"});
}

TEST_F(Defects, OverlappingFieldsOfGeneralCounterSharingAPmc) {
  d.pmds[1].ctl_pmc = 0;  // pmd1 configured by PERFEVTSEL0 like pmd0: whole-register fields overlap
  expectReported({"pmd1", "pmd0"});
  expectReported({"pmc1"});  // and PERFEVTSEL1 is left configuring nothing
}

TEST_F(Defects, PmdControlledByMissingPmc) {
  d.pmds[2].ctl_pmc = 7;
  expectReported({"pmd2", "pmc7"});
}

TEST_F(Defects, DefaultValueSettingReservedBits) {
  d.pmcs[0].dfl_val = 1ull << 32;
  expectReported({"pmc0", "reserved"});
}

TEST_F(Defects, DefaultValueOfFixedControlSettingReservedBits) {
  d.pmcs[4].dfl_val = 0x1000;  // FIXED_CTR_CTRL implements 0xfff only
  expectReported({"pmc16", "reserved"});
}

TEST_F(Defects, WidthZero) {
  d.pmds[0].width = 0;
  expectReported({"pmd0", "width"});
}

TEST_F(Defects, Width65) {
  d.pmds[6].width = 65;
  expectReported({"pmd18", "65"});
}

TEST_F(Defects, Width1And64AreFine) {
  d.pmds[0].width = 1;
  d.pmds[1].width = 64;
  EXPECT_THAT(d.validate(), IsEmpty());
}

TEST_F(Defects, PmcIndicesOutOfOrder) {
  std::swap(d.pmcs[0], d.pmcs[1]);
  expectReported({"pmc0"});
}

TEST_F(Defects, PmdIndicesOutOfOrder) {
  std::swap(d.pmds[3], d.pmds[4]);  // pmd16 before pmd3
  expectReported({"pmd3"});
}

TEST_F(Defects, DuplicatePmdIndex) {
  d.pmds[1].index = 0;
  expectReported({"pmd0"});
}

TEST_F(Defects, RegisterIndexTooLarge) {
  PmdDesc p = d.pmds.back();
  p.index = 64;
  p.field_mask = 0;
  d.pmds.push_back(p);
  expectReported({"pmd64"});
}

TEST_F(Defects, RegisterWithoutName) {
  d.pmcs[2].name.clear();
  expectReported({"pmc2"});
  d.pmcs[2].name = "PERFEVTSEL2";
  d.pmds[2].name.clear();
  expectReported({"pmd2"});
}

TEST_F(Defects, NoModel) {
  d.model.clear();
  expectReported({"model"});
}

TEST_F(Defects, NoRegisters) {
  d.pmcs.clear();
  expectReported({"pmc"});
  d = archDesc();
  d.pmds.clear();
  expectReported({"pmd"});
}

TEST_F(Defects, PmcConfiguresNoCounter) {
  d.pmcs.push_back(PmcDesc{20, "EXTRA", 0x999, 0, 0});
  expectReported({"pmc20"});
}

TEST_F(Defects, EmptyField) {
  d.pmds[0].field_mask = 0;
  expectReported({"pmd0"});
}

TEST_F(Defects, FieldOverlapsReservedBits) {
  d.pmds[4].field_mask |= 0x1000;  // FIXED_CTR_CTRL bit 12 is reserved
  expectReported({"pmd16", "reserved"});
}

TEST_F(Defects, ControlBitOutsideField) {
  d.pmds[4].int_bits = intel::fixedctl::field(1, intel::fixedctl::kPmi);  // pmd16 using pmd17's PMI bit
  expectReported({"pmd16"});
}

TEST_F(Defects, PrivilegeBits) {
  d.pmds[0].os_bits = 0;
  expectReported({"pmd0"});
  d = archDesc();
  d.pmds[0].os_bits = d.pmds[0].usr_bits;
  expectReported({"pmd0"});
}

TEST_F(Defects, NoInterruptBit) {
  d.pmds[3].int_bits = 0;
  expectReported({"pmd3"});
}

TEST_F(Defects, SoundAfterEachDefectIsUndone) {
  // The report is a function of the table, not of history.
  d.pmds[0].width = 0;
  EXPECT_FALSE(d.validate().empty());
  d.pmds[0].width = 48;
  EXPECT_THAT(d.validate(), IsEmpty());
}

// ------------------------------------------------------- register mapping

TEST(IntelMapping, GeneralCounterRegisters) {
  for (unsigned w : kWidths) {
    auto d = intel::makeDescription(intel::Shape{4, w}, intel::architecturalEvents(4));
    for (unsigned n = 0; n < 4; ++n) {
      const PmcDesc* c = d.pmc(n);
      ASSERT_NE(c, nullptr) << n;
      EXPECT_EQ(c->index, n);
      EXPECT_EQ(c->name, fmt::format("PERFEVTSEL{}", n));
      EXPECT_EQ(c->addr, 0x186u + n);
      EXPECT_EQ(c->dfl_val, 0u);
      EXPECT_EQ(c->rsvd_mask, 0xffffffff00000000ull);

      const PmdDesc* p = d.pmd(n);
      ASSERT_NE(p, nullptr) << n;
      EXPECT_EQ(p->index, n);
      EXPECT_EQ(p->name, fmt::format("PMC{}", n));
      EXPECT_EQ(p->addr, 0xc1u + n);
      EXPECT_EQ(p->width, w);
      EXPECT_EQ(p->widthMask(), w == 64 ? ~0ull : (1ull << w) - 1);
      EXPECT_EQ(p->ctl_pmc, n);
      EXPECT_EQ(p->field_mask, 0xffffffffull);
      EXPECT_EQ(p->usr_bits, 1ull << 16);
      EXPECT_EQ(p->os_bits, 1ull << 17);
      EXPECT_EQ(p->int_bits, 1ull << 20);
      EXPECT_EQ(p->enable_bits, 1ull << 22);
      EXPECT_EQ(p->fixed_code, 0u);
      EXPECT_FALSE(p->isFixed());
    }
  }
}

TEST(IntelMapping, FixedCounterRegisters) {
  auto d = archDesc(4, 40);
  const PmcDesc* c = d.pmc(16);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->name, "FIXED_CTR_CTRL");
  EXPECT_EQ(c->addr, 0x38du);
  EXPECT_EQ(c->dfl_val, 0u);
  EXPECT_EQ(c->rsvd_mask, ~0xfffull);

  const std::uint64_t codes[] = {0xc0, 0x3c, 0x13c};
  for (unsigned n = 0; n < 3; ++n) {
    const PmdDesc* p = d.pmd(16 + n);
    ASSERT_NE(p, nullptr) << n;
    EXPECT_EQ(p->index, 16 + n);
    EXPECT_EQ(p->name, fmt::format("FIXED_CTR{}", n));
    EXPECT_EQ(p->addr, 0x309u + n);
    EXPECT_EQ(p->width, 40u);
    EXPECT_EQ(p->ctl_pmc, 16u);
    EXPECT_EQ(p->field_mask, 0xfull << (4 * n));
    EXPECT_EQ(p->os_bits, 0x1ull << (4 * n));
    EXPECT_EQ(p->usr_bits, 0x2ull << (4 * n));
    EXPECT_EQ(p->int_bits, 0x8ull << (4 * n));
    EXPECT_EQ(p->enable_bits, 0u);  // a privilege bit is the enable
    EXPECT_EQ(p->fixed_code, codes[n]);
    EXPECT_TRUE(p->isFixed());
    EXPECT_EQ(intel::fixedCounterCode(n), codes[n]);
  }
  EXPECT_EQ(intel::fixedCounterCode(3), 0u);
}

TEST(IntelMapping, EightCounters) {
  auto d = archDesc(8, 48);
  std::vector<unsigned> pmcs, pmds;
  for (const auto& c : d.pmcs) pmcs.push_back(c.index);
  for (const auto& p : d.pmds) pmds.push_back(p.index);
  EXPECT_THAT(pmcs, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 16));
  EXPECT_THAT(pmds, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18));
  EXPECT_EQ(d.pmc(7)->addr, 0x18du);
  EXPECT_EQ(d.pmd(7)->addr, 0xc8u);
  EXPECT_EQ(d.pmc(7)->name, "PERFEVTSEL7");
  EXPECT_EQ(d.pmd(7)->name, "PMC7");
  EXPECT_EQ(d.pmcMask(), 0xffull | 1ull << 16);
  EXPECT_EQ(d.pmdMask(), 0xffull | 7ull << 16);
}

TEST(IntelMapping, OneCounter) {
  auto d = archDesc(1, 16);
  EXPECT_EQ(d.pmcMask(), 1ull | 1ull << 16);
  EXPECT_EQ(d.pmdMask(), 1ull | 7ull << 16);
  EXPECT_EQ(d.pmc(1), nullptr);
  EXPECT_EQ(d.pmd(1), nullptr);
}

TEST(IntelMapping, ModelAndFeatures) {
  auto d = archDesc();
  EXPECT_EQ(d.model, "intel-arch-v2");
  EXPECT_THAT(d.features, Contains("fixed_counters"));
}

TEST(IntelMapping, ArchitecturalEvents) {
  auto ev = intel::architecturalEvents(4);
  ASSERT_EQ(ev.size(), 7u);
  struct Want {
    const char* name;
    std::uint64_t code;
    RegMask counters;
  };
  const Want want[] = {
      {"UNHALTED_CORE_CYCLES", 0x3c, 0xfull | regBit(17)},
      {"INSTRUCTION_RETIRED", 0xc0, 0xfull | regBit(16)},
      {"UNHALTED_REFERENCE_CYCLES", 0x013c, 0xfull | regBit(18)},
      {"LLC_REFERENCES", 0x4f2e, 0xf},
      {"LLC_MISSES", 0x412e, 0xf},
      {"BRANCH_INSTRUCTIONS_RETIRED", 0xc4, 0xf},
      {"BRANCH_MISSES_RETIRED", 0xc5, 0xf},
  };
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(ev[i].name, want[i].name);
    EXPECT_EQ(ev[i].code, want[i].code) << want[i].name;
    EXPECT_EQ(ev[i].counters, want[i].counters) << want[i].name;
    EXPECT_FALSE(ev[i].desc.empty()) << want[i].name;
  }
  // The general part follows the counter count.
  for (const auto& e : intel::architecturalEvents(8)) EXPECT_EQ(e.counters & 0xffff, 0xffu) << e.name;
  for (const auto& e : intel::architecturalEvents(1)) EXPECT_EQ(e.counters & 0xffff, 0x1u) << e.name;
}

TEST(IntelMapping, Constants) {
  EXPECT_EQ(intel::kPerfEvtSel0, 0x186u);
  EXPECT_EQ(intel::kPmc0, 0xc1u);
  EXPECT_EQ(intel::kFixedCtr0, 0x309u);
  EXPECT_EQ(intel::kFixedCtrCtrl, 0x38du);
  EXPECT_EQ(intel::kPerfGlobalStatus, 0x38eu);
  EXPECT_EQ(intel::kPerfGlobalCtrl, 0x38fu);
  EXPECT_EQ(intel::kPerfGlobalOvfCtrl, 0x390u);
  EXPECT_EQ(intel::evtsel::kUsr, 1ull << 16);
  EXPECT_EQ(intel::evtsel::kOs, 1ull << 17);
  EXPECT_EQ(intel::evtsel::kEdge, 1ull << 18);
  EXPECT_EQ(intel::evtsel::kPc, 1ull << 19);
  EXPECT_EQ(intel::evtsel::kInt, 1ull << 20);
  EXPECT_EQ(intel::evtsel::kAny, 1ull << 21);
  EXPECT_EQ(intel::evtsel::kEn, 1ull << 22);
  EXPECT_EQ(intel::evtsel::kInv, 1ull << 23);
  EXPECT_EQ(intel::evtsel::kCmask, 0xff000000ull);
  EXPECT_EQ(intel::evtsel::kCode, 0xffffull);
  EXPECT_EQ(intel::fixedctl::field(2, intel::fixedctl::kPmi), 0x800u);
}

// ---------------------------------------------------------------- lookups

TEST(PmuDescriptionLookup, RegistersAndSlots) {
  auto d = archDesc(4, 48);
  EXPECT_EQ(d.pmc(0), &d.pmcs[0]);
  EXPECT_EQ(d.pmc(3), &d.pmcs[3]);
  EXPECT_EQ(d.pmc(16), &d.pmcs[4]);
  EXPECT_EQ(d.pmc(4), nullptr);
  EXPECT_EQ(d.pmc(15), nullptr);
  EXPECT_EQ(d.pmc(17), nullptr);
  EXPECT_EQ(d.pmc(63), nullptr);
  EXPECT_EQ(d.pmc(64), nullptr);
  EXPECT_EQ(d.pmc(~0u), nullptr);
  EXPECT_EQ(d.pmd(18), &d.pmds[6]);
  EXPECT_EQ(d.pmd(19), nullptr);
  EXPECT_EQ(d.pmd(4), nullptr);

  EXPECT_EQ(d.pmcSlot(0), 0);
  EXPECT_EQ(d.pmcSlot(3), 3);
  EXPECT_EQ(d.pmcSlot(16), 4);
  EXPECT_EQ(d.pmcSlot(4), -1);
  EXPECT_EQ(d.pmdSlot(16), 4);
  EXPECT_EQ(d.pmdSlot(17), 5);
  EXPECT_EQ(d.pmdSlot(18), 6);
  EXPECT_EQ(d.pmdSlot(5), -1);
  EXPECT_EQ(d.pmdSlot(19), -1);

  EXPECT_EQ(d.pmcMask(), 0x1000full);
  EXPECT_EQ(d.pmdMask(), 0x7000full);
}

TEST(PmuDescriptionLookup, PmdsOfPmc) {
  auto d = archDesc(4, 48);
  EXPECT_EQ(d.pmdsOfPmc(16), regBit(16) | regBit(17) | regBit(18));
  for (unsigned n = 0; n < 4; ++n) EXPECT_EQ(d.pmdsOfPmc(n), regBit(n)) << n;
  EXPECT_EQ(d.pmdsOfPmc(4), 0u);
  EXPECT_EQ(d.pmdsOfPmc(17), 0u);
}

TEST(PmuDescriptionLookup, FindEventIsCaseInsensitiveAndExact) {
  auto d = intel::makeDescription(intel::Shape{}, simTable(4));
  const EventDesc* e = d.findEvent("INSTRUCTION_RETIRED");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->code, 0xc0u);
  EXPECT_EQ(d.findEvent("instruction_retired"), e);
  EXPECT_EQ(d.findEvent("Instruction_Retired"), e);
  ASSERT_NE(d.findEvent("sim_phase_b"), nullptr);
  EXPECT_EQ(d.findEvent("sim_phase_b")->code, 0x02f0u);
  EXPECT_EQ(d.findEvent("INSTRUCTION_RETIRE"), nullptr);     // prefix
  EXPECT_EQ(d.findEvent("INSTRUCTION_RETIREDX"), nullptr);   // longer
  EXPECT_EQ(d.findEvent("INSTRUCTION_RETIRED:u"), nullptr);  // modifiers are not part of the name
  EXPECT_EQ(d.findEvent(" INSTRUCTION_RETIRED"), nullptr);
  EXPECT_EQ(d.findEvent(""), nullptr);
  EXPECT_EQ(d.findEvent(std::string_view("INSTRUCTION_RETIRED\0", 20)), nullptr);
  // Every event of the table finds itself.
  for (const auto& ev : d.events) EXPECT_EQ(d.findEvent(ev.name), &ev) << ev.name;
}

// libpfm 3.10's names of the architectural events, and PAPI's one other name
// for mispredicted branches: found like the events' own names.
TEST(PmuDescriptionLookup, AliasesFindTheirEvent) {
  auto d = intel::makeDescription(intel::Shape{}, simTable(4));
  EXPECT_EQ(d.findEvent("INSTRUCTIONS_RETIRED"), d.findEvent("INSTRUCTION_RETIRED"));
  EXPECT_EQ(d.findEvent("last_level_cache_references"), d.findEvent("LLC_REFERENCES"));
  EXPECT_EQ(d.findEvent("LAST-LEVEL-CACHE-MISSES"), d.findEvent("LLC_MISSES"));
  EXPECT_EQ(d.findEvent("MISPREDICTED_BRANCH_RETIRED"), d.findEvent("BRANCH_MISSES_RETIRED"));
  EXPECT_EQ(d.findEvent("RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS"), d.findEvent("BRANCH_MISSES_RETIRED"));
  EXPECT_NE(d.findEvent("INSTRUCTIONS_RETIRED"), nullptr);
  EXPECT_EQ(d.findEvent("INSTRUCTIONS_RETIRE"), nullptr);
  EXPECT_EQ(d.events.size(), 9u);  // listed once each: 7 architectural, 2 of the sim
  EXPECT_TRUE(d.validate().empty());
}

TEST(PmuDescriptionLookup, WidthIsTheWidest) {
  auto d = archDesc(4, 32);
  EXPECT_EQ(d.width(), 32u);
  d.pmds[1].width = 40;
  EXPECT_EQ(d.width(), 40u);
  EXPECT_EQ(PmuDescription{}.width(), 0u);
}

TEST(PmuDescriptionLookup, WidthMask) {
  PmdDesc p;
  p.width = 1;
  EXPECT_EQ(p.widthMask(), 1u);
  p.width = 16;
  EXPECT_EQ(p.widthMask(), 0xffffu);
  p.width = 63;
  EXPECT_EQ(p.widthMask(), 0x7fffffffffffffffull);
  p.width = 64;
  EXPECT_EQ(p.widthMask(), ~0ull);
}

// ------------------------------------------------------------------ shapes

TEST(CheckShape, Boundaries) {
  EXPECT_TRUE(intel::checkShape(intel::Shape{1, 48}).ok());
  EXPECT_TRUE(intel::checkShape(intel::Shape{8, 48}).ok());
  EXPECT_TRUE(intel::checkShape(intel::Shape{4, 16}).ok());
  EXPECT_TRUE(intel::checkShape(intel::Shape{4, 64}).ok());
  EXPECT_TRUE(intel::checkShape(intel::Shape{}).ok());  // 4 x 48, the default
  EXPECT_EQ(intel::Shape{}.general_counters, 4u);
  EXPECT_EQ(intel::Shape{}.width, 48u);

  EXPECT_EQ(intel::checkShape(intel::Shape{0, 48}).code(), -EINVAL);
  EXPECT_EQ(intel::checkShape(intel::Shape{9, 48}).code(), -EINVAL);
  EXPECT_EQ(intel::checkShape(intel::Shape{4, 15}).code(), -EINVAL);
  EXPECT_EQ(intel::checkShape(intel::Shape{4, 65}).code(), -EINVAL);
  EXPECT_EQ(intel::checkShape(intel::Shape{4, 0}).code(), -EINVAL);
  EXPECT_EQ(intel::checkShape(intel::Shape{~0u, 48}).code(), -EINVAL);
  Status s = intel::checkShape(intel::Shape{9, 48});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().reason, HasSubstr("9"));
  Status w = intel::checkShape(intel::Shape{4, 65});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.error().reason, HasSubstr("65"));
}

}  // namespace
}  // namespace pfmfs::pmu
