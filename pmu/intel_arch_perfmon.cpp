// The register tables of Intel architectural perfmon v2 in perfmon2's mapping.
#include "pmu/intel_arch_perfmon.h"

#include <fmt/format.h>

namespace pfmfs::pmu::intel {

namespace {

struct ArchEvent {
  const char* name;
  std::uint64_t code;
  int fixed;  // fixed counter that counts it, or -1
  const char* desc;
  const char* aliases[2];  // unused slots nullptr
};

// Intel SDM vol. 3B, table "UMask and Event Select Encodings for Pre-Defined
// Architectural Performance Events". Aliases: the names libpfm 3.10 gave
// these events on its "Intel architectural PMU" (pfmlib_gen_ia32), which
// perfmon2 tools and PAPI's preset table use; and the one other name PAPI's
// table gives that PMU's mispredicted branches (docs/libpfm-compat.md).
const ArchEvent kArchEvents[] = {
    {"UNHALTED_CORE_CYCLES", event::kUnhaltedCoreCycles, 1, "Core cycles while the thread is not halted", {}},
    {"INSTRUCTION_RETIRED", event::kInstructionRetired, 0, "Instructions retired", {"INSTRUCTIONS_RETIRED"}},
    {"UNHALTED_REFERENCE_CYCLES",
     event::kUnhaltedReferenceCycles,
     2,
     "Reference cycles at the TSC rate while the thread is not halted",
     {}},
    {"LLC_REFERENCES", event::kLlcReferences, -1, "Last-level cache references", {"LAST_LEVEL_CACHE_REFERENCES"}},
    {"LLC_MISSES", event::kLlcMisses, -1, "Last-level cache misses", {"LAST_LEVEL_CACHE_MISSES"}},
    {"BRANCH_INSTRUCTIONS_RETIRED", event::kBranchInstructionsRetired, -1, "Branch instructions retired", {}},
    {"BRANCH_MISSES_RETIRED",
     event::kBranchMissesRetired,
     -1,
     "Mispredicted branch instructions retired",
     {"MISPREDICTED_BRANCH_RETIRED", "RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS"}},
};

constexpr std::uint64_t kFixedCodes[kFixedCounters] = {
    event::kInstructionRetired,       // FIXED_CTR0
    event::kUnhaltedCoreCycles,       // FIXED_CTR1
    event::kUnhaltedReferenceCycles,  // FIXED_CTR2
};

RegMask generalMask(unsigned general_counters) { return (RegMask{1} << general_counters) - 1; }

}  // namespace

std::uint64_t fixedCounterCode(unsigned n) { return n < kFixedCounters ? kFixedCodes[n] : 0; }

std::vector<EventDesc> architecturalEvents(unsigned general_counters, unsigned fixed_counters) {
  std::vector<EventDesc> out;
  for (const auto& a : kArchEvents) {
    RegMask counters = generalMask(general_counters);
    if (a.fixed >= 0 && static_cast<unsigned>(a.fixed) < fixed_counters)
      counters |= regBit(kFixedPmd0 + static_cast<unsigned>(a.fixed));
    EventDesc e{a.name, a.code, counters, a.desc, {}};
    for (const char* alias : a.aliases)
      if (alias) e.aliases.emplace_back(alias);
    out.push_back(std::move(e));
  }
  return out;
}

Status checkShape(const Shape& shape) {
  if (shape.general_counters < 1 || shape.general_counters > kMaxGeneralCounters)
    return err(EINVAL, "{} general counters: must be 1..{}", shape.general_counters, kMaxGeneralCounters);
  if (shape.width < 16 || shape.width > 64) return err(EINVAL, "counter width {}: must be 16..64", shape.width);
  if (shape.fixed_counters > kFixedCounters)
    return err(EINVAL, "{} fixed counters: must be 0..{}", shape.fixed_counters, kFixedCounters);
  if (shape.fixed_width != 0 && (shape.fixed_width < 16 || shape.fixed_width > 64))
    return err(EINVAL, "fixed counter width {}: must be 16..64", shape.fixed_width);
  return {};
}

PmuDescription makeDescription(const Shape& shape, std::vector<EventDesc> events) {
  PmuDescription d;
  d.model = "intel-arch-v2";
  d.features = {"fixed_counters", "global_ctrl", "ovfl_intr"};
  const std::uint64_t evtsel_reserved = evtsel::kReserved | (shape.evtsel_missing & evtsel::kFilters);
  // A fixed counter's field: without AnyThread (before version 3) its bit 2
  // is reserved too.
  const std::uint64_t fixed_field =
      (shape.evtsel_missing & evtsel::kAny) ? fixedctl::kOs | fixedctl::kUsr | fixedctl::kPmi : 0xf;
  for (unsigned n = 0; n < shape.general_counters; ++n) {
    d.pmcs.push_back(PmcDesc{n, fmt::format("PERFEVTSEL{}", n), kPerfEvtSel0 + n, 0, evtsel_reserved});
  }
  // Fixed-counter control: 4 bits per implemented counter, the rest reserved.
  // Hardware without fixed counters has no such register.
  if (shape.fixed_counters > 0) {
    std::uint64_t fixed_used = 0;
    for (unsigned n = 0; n < shape.fixed_counters; ++n) fixed_used |= fixedctl::field(n, fixed_field);
    d.pmcs.push_back(PmcDesc{kFixedCtrlPmc, "FIXED_CTR_CTRL", kFixedCtrCtrl, 0, ~fixed_used});
  }

  for (unsigned n = 0; n < shape.general_counters; ++n) {
    PmdDesc p;
    p.index = n;
    p.name = fmt::format("PMC{}", n);
    p.addr = kPmc0 + n;
    p.width = shape.width;
    p.ctl_pmc = n;
    p.field_mask = ~evtsel_reserved;
    p.usr_bits = evtsel::kUsr;
    p.os_bits = evtsel::kOs;
    p.enable_bits = evtsel::kEn;
    p.int_bits = evtsel::kInt;
    p.any_bits = evtsel::kAny & ~evtsel_reserved;
    d.pmds.push_back(p);
  }
  for (unsigned n = 0; n < shape.fixed_counters; ++n) {
    PmdDesc p;
    p.index = kFixedPmd0 + n;
    p.name = fmt::format("FIXED_CTR{}", n);
    p.addr = kFixedCtr0 + n;
    p.width = shape.fixed_width ? shape.fixed_width : shape.width;
    p.ctl_pmc = kFixedCtrlPmc;
    p.field_mask = fixedctl::field(n, fixed_field);
    p.usr_bits = fixedctl::field(n, fixedctl::kUsr);
    p.os_bits = fixedctl::field(n, fixedctl::kOs);
    p.enable_bits = 0;  // a privilege bit is the enable
    p.int_bits = fixedctl::field(n, fixedctl::kPmi);
    p.any_bits = fixedctl::field(n, fixedctl::kAny & fixed_field);
    p.fixed_code = kFixedCodes[n];
    d.pmds.push_back(p);
  }
  d.events = std::move(events);
  return d;
}

}  // namespace pfmfs::pmu::intel
