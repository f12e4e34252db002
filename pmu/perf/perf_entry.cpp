// perf in the backend registry: --perf-model, and usable where this process
// may open perf events.
#include <linux/capability.h>

#include "pmu/perf/perf_backend.h"

namespace pfmfs::pmu::perf {

namespace {

using Kind = OptionSpec::Kind;

constexpr std::string_view kModels[] = {"auto", "sw", "x86"};

constexpr OptionSpec kOptions[] = {
    {"perf-model", Kind::Word, "", "perf register model: x86 where the kernel exposes a hardware PMU, else sw (auto)",
     0, 0, kModels},
};

// CAP_PERFMON lifts perf_event_paranoid for the daemon (system-wide events,
// kernel-level counting, and any counting at all where paranoid is 3) and
// CAP_SYS_PTRACE lets it open events on other users' threads. Who may ask
// for either is decided by our own checks (pfmfs(5), OWNERSHIP AND
// PERMISSIONS).
constexpr int kCapabilities[] = {CAP_PERFMON, CAP_SYS_PTRACE};

Result<std::unique_ptr<Backend>> create(const OptionValues& given) {
  auto perf = PerfBackend::create(perfOptions(given));
  if (!perf) return perf.error();
  return std::unique_ptr<Backend>(std::move(*perf));
}

}  // namespace

const BackendEntry& backendEntry() {
  static const BackendEntry kEntry{"perf", "perf events", kOptions, false, kCapabilities, perfUsable, create};
  return kEntry;
}

PerfOptions perfOptions(const OptionValues& given) {
  PerfOptions o;
  std::string_view model = textOr(given, "perf-model", "auto");
  if (model == "sw") o.model = Model::Software;
  if (model == "x86") o.model = Model::X86;
  return o;
}

}  // namespace pfmfs::pmu::perf
