// The backends pfmfsd can run, in --pmu=auto's order, and how one is chosen
// and made. The only place that names them all.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "pmu/backend.h"
#include "pmu/backend_entry.h"
#include "pmu/option_spec.h"

namespace pfmfs::pmu {

// x86 (the helper module), perf, sim: --pmu=auto takes the first that
// serves here.
std::span<const BackendEntry* const> backendEntries();

// The entry named `name`, or null.
const BackendEntry* findBackend(std::string_view name);

// The entry that owns the option named `option` (without "--"), or null.
const BackendEntry* backendOfOption(std::string_view option);

// The backend whose options choose it (BackendEntry::chosen_by_its_options)
// if one of them is in `given`, or null.
const BackendEntry* backendChosenBy(const OptionValues& given);

// Makes the backend `choice` names ("auto" or an entry's name) from the
// backend options `given` (each backend gets its own). Under auto: the
// backend `given` chooses, if any; else the entries in order: one whose
// usable() says no, or that has no usable() and cannot be created, is
// passed over (told to `passed_over` with its reason); the first other one
// is created, or its failure is the answer. A backend named explicitly that
// cannot be made: its reason, after "--pmu=NAME: ".
Result<std::unique_ptr<Backend>> createBackend(std::string_view choice, const OptionValues& given,
                                               const std::function<void(const std::string&)>& passed_over);

}  // namespace pfmfs::pmu
