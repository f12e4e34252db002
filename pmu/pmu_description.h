// The description of one PMU model as data: registers, their bit layouts and
// the event table. Backends program hardware from it and the engine validates
// user writes against it; nothing here touches hardware.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pfmfs::pmu {

// Register indices (perfmon2's pmcN / pmdN numbers) stay below 64 so that a set
// of registers fits one u64 mask everywhere in the engine.
inline constexpr unsigned kMaxRegIndex = 64;
using RegMask = std::uint64_t;

constexpr RegMask regBit(unsigned index) { return RegMask{1} << index; }

struct PmcDesc {
  unsigned index = 0;           // perfmon2 register number: pmcN
  std::string name;             // hardware name, e.g. "PERFEVTSEL0"
  std::uint32_t addr = 0;       // MSR address
  std::uint64_t dfl_val = 0;    // value of a freshly created session
  std::uint64_t rsvd_mask = 0;  // bits that must be written as 0
};

// A counter. Its configuration is a field of one PMC: a general counter owns a
// whole PERFEVTSEL, a fixed counter one 4-bit field of FIXED_CTR_CTRL.
struct PmdDesc {
  unsigned index = 0;             // perfmon2 register number: pmdN
  std::string name;               // hardware name, e.g. "PMC0"
  std::uint32_t addr = 0;         // MSR address
  unsigned width = 0;             // implemented bits; the engine emulates the rest
  unsigned ctl_pmc = 0;           // index of the PMC that configures this counter
  std::uint64_t field_mask = 0;   // the bits of ctl_pmc that belong to this counter
  std::uint64_t usr_bits = 0;     // privilege bit: count at user level
  std::uint64_t os_bits = 0;      // privilege bit: count at kernel level
  std::uint64_t enable_bits = 0;  // set by the engine while the counter is used
  std::uint64_t int_bits = 0;     // set by the engine to get overflow interrupts
  // Count the other hyperthreads of the core too (Intel's AnyThread): what
  // they run is not the caller's to see, so it needs what system-wide
  // counting needs (session/register_rules.cpp). 0: the PMU has no such bit.
  std::uint64_t any_bits = 0;
  std::uint64_t fixed_code = 0;  // fixed counters: the event they count; 0 = general

  bool isFixed() const { return fixed_code != 0; }
  std::uint64_t widthMask() const { return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1; }
};

struct EventDesc {
  std::string name;        // upper case, e.g. "INSTRUCTION_RETIRED"
  std::uint64_t code = 0;  // event select | umask << 8, as PERFEVTSEL holds it
  RegMask counters = 0;    // PMDs that can count it
  std::string desc;        // one line for people
  // Other names it answers to, e.g. libpfm 3.10's for the architectural
  // events (docs/libpfm-compat.md): accepted wherever a name is, never listed
  // as events of their own.
  std::vector<std::string> aliases = {};
};

struct PmuDescription {
  std::string model;          // e.g. "intel-arch-v2"
  std::vector<PmcDesc> pmcs;  // in increasing index order
  std::vector<PmdDesc> pmds;  // in increasing index order
  std::vector<EventDesc> events;
  std::vector<std::string> features;  // words for pmu/info, e.g. "fixed_counters"
  // Where non-zero: the bits of a general counter's PMC that must hold the
  // code of a listed event that counter can count. perf's software PMU knows
  // no other events; a hardware PMU takes any code.
  std::uint64_t event_field = 0;

  // Lookups by register number; nullptr where the description lists none.
  const PmcDesc* pmc(unsigned index) const;
  const PmdDesc* pmd(unsigned index) const;
  // Dense position of a register in pmcs/pmds, or -1.
  int pmcSlot(unsigned index) const;
  int pmdSlot(unsigned index) const;
  RegMask pmcMask() const;
  RegMask pmdMask() const;
  // Case-insensitive exact name match; nullptr if unknown.
  const EventDesc* findEvent(std::string_view name) const;
  // The counters configured by PMC `index`.
  RegMask pmdsOfPmc(unsigned index) const;
  // The widest counter: what pmu/info reports as width=.
  unsigned width() const;

  // Every inconsistency of the tables, one line each; empty when sound.
  std::vector<std::string> validate() const;
};

}  // namespace pfmfs::pmu
