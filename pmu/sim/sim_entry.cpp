// The sim in the backend registry: its options as rows, and SimOptions made
// from the ones given.
#include <linux/capability.h>

#include <cerrno>

#include "pmu/sim/sim_backend.h"

namespace pfmfs::pmu::sim {

namespace {

using Kind = OptionSpec::Kind;

constexpr std::string_view kClocks[] = {"real", "manual"};

constexpr OptionSpec kOptions[] = {
    {"sim-clock", Kind::Word, "", "sim time: real CPU/wall time, or moved only by writes to pmu/sim/advance", 0, 0,
     kClocks},
    {"sim-width", Kind::Count, "W", "sim counter width in bits, 16..64 (default 48)", 16, 64},
    {"sim-counters", Kind::Count, "N", "sim general counters, 1..8 (default 4)", 1, 8},
    {"sim-events", Kind::Path, "FILE", "sim event table replacing the default one"},
    {"sim-skid", Kind::Count, "N", "sim overflow interrupts N events after the wrap, 0..32767 (default 0)", 0,
     kMaxSkid},
};

// The sim counts from world-readable /proc files, but watches a loaded
// thread with a perf dummy event (its end and set-id execs) and follows its
// children (flags inherit) with perf's task records: the kernel gives those
// on another user's thread, or on a root process (whose capabilities a
// capability-less daemon does not hold), only with CAP_SYS_PTRACE, and
// where perf_event_paranoid is 3 only with CAP_PERFMON.
constexpr int kCapabilities[] = {CAP_PERFMON, CAP_SYS_PTRACE};

Result<std::unique_ptr<Backend>> create(const OptionValues& given) {
  SimOptions options = simOptions(given);
  if (std::string_view path = textOr(given, "sim-events", ""); !path.empty()) {
    auto events = readEventsFile(std::string(path), options.shape.general_counters);
    if (!events) return err(-events.code(), "--sim-events={}: {}", path, events.error().reason);
    options.events = std::move(*events);
  }
  auto sim = SimBackend::create(std::move(options));
  if (!sim) return sim.error();
  return std::unique_ptr<Backend>(std::move(*sim));
}

}  // namespace

const BackendEntry& backendEntry() {
  static const BackendEntry kEntry{"sim", "the simulator", kOptions, true, kCapabilities, nullptr, create};
  return kEntry;
}

SimOptions simOptions(const OptionValues& given) {
  SimOptions o;
  o.clock = textOr(given, "sim-clock", "real") == "manual" ? ClockKind::Manual : ClockKind::Real;
  o.shape.width = static_cast<unsigned>(countOr(given, "sim-width", o.shape.width));
  o.shape.general_counters = static_cast<unsigned>(countOr(given, "sim-counters", o.shape.general_counters));
  o.skid = countOr(given, "sim-skid", o.skid);
  return o;
}

}  // namespace pfmfs::pmu::sim
