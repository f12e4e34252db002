// Event names as users write them into PMCs: NAME, NAME:u, NAME:k, NAME:u:k.
// `u` counts at user level (the default when no modifier is given), `k` at
// kernel level. Names and modifiers are case-insensitive, as in libpfm.
#pragma once

#include <cstdint>
#include <string_view>

#include "pmu/pmu_description.h"
#include "pmu/result.h"

namespace pfmfs::pmu {

struct EventSpec {
  const EventDesc* event = nullptr;
  bool usr = true;
  bool os = false;
};

// Resolves `text` against the description's event table.
Result<EventSpec> parseEventName(const PmuDescription& desc, std::string_view text);

// The value of PMC `pmc_index` that counts `spec`: the event code plus the
// privilege bits. Only PMCs that configure one general counter take event
// names; the event must be countable by that counter.
Result<std::uint64_t> encodeEvent(const PmuDescription& desc, const EventSpec& spec, unsigned pmc_index);

// parseEventName + encodeEvent.
Result<std::uint64_t> encodeEventName(const PmuDescription& desc, std::string_view text, unsigned pmc_index);

}  // namespace pfmfs::pmu
