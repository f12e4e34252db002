// What a backend says of itself to pfmfsd, as data: its name, its options,
// the capabilities it needs, whether it can serve on this machine and how it
// is made. Each backend defines its entry next to its code
// (pmu/*/…_entry.cpp); pmu/backend_registry.h lists them in --pmu=auto's
// order. Nothing above pmu/ names a backend.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "pmu/backend.h"
#include "pmu/option_spec.h"
#include "pmu/result.h"

namespace pfmfs::pmu {

struct BackendEntry {
  std::string_view name;  // --pmu=NAME, Backend::name(), pmu/info's backend=
  std::string_view what;  // in messages: "the simulator"
  // Its own options (--NAME-...); create() gets the ones given.
  std::span<const OptionSpec> options;
  // Under --pmu=auto, giving one of its options asks for it (the sim's
  // --sim-clock=manual is asking for the sim).
  bool chosen_by_its_options = false;
  // The capabilities (linux/capability.h) pfmfsd keeps for it after
  // mounting; every other one is dropped.
  std::span<const int> capabilities;
  // Under --pmu=auto: whether it can serve on this machine, and why not;
  // once it says yes, a failure to create it is pfmfsd's failure. Null: try
  // to create it, and pass it over if that fails.
  Status (*usable)() = nullptr;
  // The backend, from the values of its options that were given.
  Result<std::unique_ptr<Backend>> (*create)(const OptionValues& values) = nullptr;
};

}  // namespace pfmfs::pmu
