#include "pmu/backend_registry.h"

#include <fmt/format.h>
#include <cerrno>

#include "pmu/perf/perf_backend.h"
#include "pmu/sim/sim_backend.h"
#include "pmu/x86/x86_backend.h"

namespace pfmfs::pmu {

namespace {

// An entry's own options among `given`.
OptionValues ownOptions(const BackendEntry& e, const OptionValues& given) {
  OptionValues out;
  for (const auto& spec : e.options)
    if (auto it = given.find(spec.name); it != given.end()) out.insert(*it);
  return out;
}

}  // namespace

std::span<const BackendEntry* const> backendEntries() {
  static const BackendEntry* const kEntries[] = {&x86::backendEntry(), &perf::backendEntry(), &sim::backendEntry()};
  return kEntries;
}

const BackendEntry* findBackend(std::string_view name) {
  for (const BackendEntry* e : backendEntries())
    if (e->name == name) return e;
  return nullptr;
}

const BackendEntry* backendOfOption(std::string_view option) {
  for (const BackendEntry* e : backendEntries())
    for (const auto& spec : e->options)
      if (spec.name == option) return e;
  return nullptr;
}

const BackendEntry* backendChosenBy(const OptionValues& given) {
  for (const BackendEntry* e : backendEntries())
    if (e->chosen_by_its_options && !ownOptions(*e, given).empty()) return e;
  return nullptr;
}

Result<std::unique_ptr<Backend>> createBackend(std::string_view choice, const OptionValues& given,
                                               const std::function<void(const std::string&)>& passed_over) {
  const BackendEntry* named = choice == "auto" ? backendChosenBy(given) : findBackend(choice);
  if (choice != "auto" && !named) return err(EINVAL, "--pmu={}: no such backend", printable(choice));
  if (named) {
    auto b = named->create(ownOptions(*named, given));
    if (!b && choice != "auto") return err(-b.code(), "--pmu={}: {}", named->name, b.error().reason);
    return b;
  }
  Error last = err(ENODEV, "no backend serves here");
  for (const BackendEntry* e : backendEntries()) {
    if (e->usable) {
      if (Status st = e->usable(); !st) {
        passed_over(fmt::format("not using {}: {}", e->name, st.error().reason));
        last = st.error();
        continue;
      }
    }
    auto b = e->create(ownOptions(*e, given));
    if (b) return b;
    // Usable, yet not made: its options ask for what it cannot do here
    // (perf's --perf-model=x86 without a hardware PMU), which auto does
    // not overrule.
    if (e->usable) return err(-b.code(), "--pmu={}: {}", e->name, b.error().reason);
    passed_over(fmt::format("not using {}: {}", e->name, b.error().reason));
    last = b.error();
  }
  return last;
}

}  // namespace pfmfs::pmu
