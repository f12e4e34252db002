// Register writes as the engine takes them, and the rules they must pass
// (pfmfs(5), sets/N/pmcK): reserved bits, unknown registers, privilege bits. Also the
// value a PMC gets on hardware once the engine adds the bits it owns.
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "pmu/pmu_description.h"
#include "pmu/result.h"
#include "session/caller.h"

namespace pfmfs::session {

struct PmcWrite {
  unsigned index = 0;
  std::uint64_t value = 0;
  bool no_emul64 = false;  // a hardware overflow of its counters is a user-visible one
};

// A PMD write. The value is always written; each attribute left empty keeps
// what the register had.
struct PmdWrite {
  unsigned index = 0;
  std::uint64_t value = 0;
  std::optional<std::uint64_t> long_reset;   // loaded by restart after a notification
  std::optional<std::uint64_t> short_reset;  // loaded at once after a silent overflow
  std::optional<std::uint64_t> switch_cnt;   // overflows before an ovfl switch; 0 = never
  std::optional<pmu::RegMask> reset_pmds;    // reset together with this one on its overflow
  std::optional<pmu::RegMask> smpl_pmds;     // recorded with each sample of this PMD (pfmfs(5), SAMPLING)
  std::optional<std::uint64_t> random_mask;  // reset values are lowered by random() & mask
  std::optional<std::uint64_t> eventid;      // opaque to the engine; shown with each sample
  std::optional<bool> notify;                // overflow queues a message and masks
  std::optional<bool> random;                // randomize reset values
};

using RegWrite = std::variant<PmcWrite, PmdWrite>;

Status checkPmcWrite(const pmu::PmuDescription& desc, const Caller& caller, const PmcWrite& w);
Status checkPmdWrite(const pmu::PmuDescription& desc, const PmdWrite& w);

// The counters that PMC `pmc_index` holding `value` makes count: those whose
// field has a privilege bit.
pmu::RegMask countersEnabledBy(const pmu::PmuDescription& desc, unsigned pmc_index, std::uint64_t value);

// What the hardware PMC gets: the user's value with the engine's bits (enable,
// and interrupt when `interrupts`) added for each counter it makes count, and
// the interrupt bits the user set removed where the engine does not want them.
std::uint64_t hardwarePmcValue(const pmu::PmuDescription& desc, unsigned pmc_index, std::uint64_t value,
                               bool interrupts);

}  // namespace pfmfs::session
