// Lookups and the consistency check of a PMU description.
#include "pmu/pmu_description.h"

#include <cctype>

#include <strings.h>

#include <fmt/format.h>

namespace pfmfs::pmu {

namespace {

bool isEventName(std::string_view s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_')) return false;
  return true;
}

template <typename Reg>
int slotOf(const std::vector<Reg>& regs, unsigned index) {
  // Tables are short (a dozen registers): a scan beats any index structure.
  for (std::size_t i = 0; i < regs.size(); ++i)
    if (regs[i].index == index) return static_cast<int>(i);
  return -1;
}

template <typename Reg>
RegMask maskOf(const std::vector<Reg>& regs) {
  RegMask m = 0;
  for (const auto& r : regs)
    if (r.index < kMaxRegIndex) m |= regBit(r.index);  // validate() reports the others
  return m;
}

}  // namespace

int PmuDescription::pmcSlot(unsigned index) const { return slotOf(pmcs, index); }
int PmuDescription::pmdSlot(unsigned index) const { return slotOf(pmds, index); }

const PmcDesc* PmuDescription::pmc(unsigned index) const {
  int s = pmcSlot(index);
  return s < 0 ? nullptr : &pmcs[static_cast<std::size_t>(s)];
}

const PmdDesc* PmuDescription::pmd(unsigned index) const {
  int s = pmdSlot(index);
  return s < 0 ? nullptr : &pmds[static_cast<std::size_t>(s)];
}

RegMask PmuDescription::pmcMask() const { return maskOf(pmcs); }
RegMask PmuDescription::pmdMask() const { return maskOf(pmds); }

const EventDesc* PmuDescription::findEvent(std::string_view name) const {
  // Case-insensitive, and '-' matches '_' so that perf's spellings
  // (page-faults) name our events (PAGE_FAULTS).
  auto fold = [](char c) { return c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  auto same = [&](std::string_view a) {
    if (a.size() != name.size()) return false;
    for (std::size_t i = 0; i < name.size(); ++i)
      if (fold(a[i]) != fold(name[i])) return false;
    return true;
  };
  for (const auto& e : events)
    if (same(e.name)) return &e;
  for (const auto& e : events)
    for (const auto& a : e.aliases)
      if (same(a)) return &e;
  return nullptr;
}

RegMask PmuDescription::pmdsOfPmc(unsigned index) const {
  RegMask m = 0;
  for (const auto& d : pmds)
    if (d.ctl_pmc == index && d.index < kMaxRegIndex) m |= regBit(d.index);
  return m;
}

unsigned PmuDescription::width() const {
  unsigned w = 0;
  for (const auto& d : pmds) w = d.width > w ? d.width : w;
  return w;
}

std::vector<std::string> PmuDescription::validate() const {
  std::vector<std::string> bad;
  auto fail = [&bad](std::string s) { bad.push_back(std::move(s)); };

  if (model.empty()) fail("model has no name");
  if (pmcs.empty()) fail("no PMC");
  if (pmds.empty()) fail("no PMD");

  auto checkOrder = [&](const auto& regs, const char* kind) {
    for (std::size_t i = 0; i < regs.size(); ++i) {
      const auto& r = regs[i];
      if (r.index >= kMaxRegIndex) fail(fmt::format("{}{}: index >= {}", kind, r.index, kMaxRegIndex));
      if (i > 0 && regs[i - 1].index >= r.index)
        fail(fmt::format("{}{}: not in increasing index order", kind, r.index));
      if (r.name.empty()) fail(fmt::format("{}{}: no name", kind, r.index));
    }
  };
  checkOrder(pmcs, "pmc");
  checkOrder(pmds, "pmd");

  for (const auto& c : pmcs) {
    if (c.dfl_val & c.rsvd_mask)
      fail(fmt::format("pmc{}: default value 0x{:x} sets reserved bits", c.index, c.dfl_val));
    if (pmdsOfPmc(c.index) == 0) fail(fmt::format("pmc{}: configures no counter", c.index));
  }

  for (const auto& d : pmds) {
    const PmcDesc* c = pmc(d.ctl_pmc);
    if (d.width < 1 || d.width > 64) fail(fmt::format("pmd{}: width {} not in 1..64", d.index, d.width));
    if (!c) {
      fail(fmt::format("pmd{}: controlling pmc{} does not exist", d.index, d.ctl_pmc));
      continue;
    }
    if (d.field_mask == 0) fail(fmt::format("pmd{}: empty field", d.index));
    if (d.field_mask & c->rsvd_mask) fail(fmt::format("pmd{}: field overlaps reserved bits", d.index));
    std::uint64_t owned = d.usr_bits | d.os_bits | d.enable_bits | d.int_bits | d.any_bits;
    if (owned & ~d.field_mask) fail(fmt::format("pmd{}: control bits outside its field", d.index));
    if (d.usr_bits == 0 || d.os_bits == 0 || (d.usr_bits & d.os_bits))
      fail(fmt::format("pmd{}: needs distinct user and kernel privilege bits", d.index));
    if (d.int_bits == 0) fail(fmt::format("pmd{}: no interrupt bit", d.index));
    for (const auto& o : pmds)
      if (o.index != d.index && o.ctl_pmc == d.ctl_pmc && (o.field_mask & d.field_mask))
        fail(fmt::format("pmd{}: field overlaps pmd{}", d.index, o.index));
  }

  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (e.name.empty())
      fail(fmt::format("event #{}: no name", i));
    else if (!isEventName(e.name))
      fail(fmt::format("event {}: name must be [A-Z0-9_]", e.name));
    if (e.counters == 0) fail(fmt::format("event {}: no counter can count it", e.name));
    if (e.counters & ~pmdMask()) fail(fmt::format("event {}: names counters that do not exist", e.name));
    for (const auto& d : pmds)
      if (d.index < kMaxRegIndex && (e.counters & regBit(d.index)) && d.isFixed() && d.fixed_code != e.code)
        fail(fmt::format("event {}: fixed pmd{} counts another event", e.name, d.index));
    if (findEvent(e.name) != &e) fail(fmt::format("event {}: listed twice", e.name));
    // An alias never hides an event's own name, nor another alias.
    for (const auto& a : e.aliases) {
      if (!isEventName(a))
        fail(fmt::format("event {}: alias '{}' must be [A-Z0-9_]", e.name, a));
      else if (findEvent(a) != &e)
        fail(fmt::format("event {}: alias {} names another event", e.name, a));
    }
  }
  return bad;
}

}  // namespace pfmfs::pmu
