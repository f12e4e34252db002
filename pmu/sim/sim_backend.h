// The sim backend: an emulated Intel architectural-perfmon PMU per attached
// target (SPEC §4), driven by the shared MSR-level driver. Under the manual
// clock every count is exact, which is what the tests stand on.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pmu/backend.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu::sim {

// The most skid --sim-skid takes: under half the range of the narrowest
// counter (--sim-width=16). A counter counts at most the skid, plus what its
// event adds in the nanosecond the interrupt comes, past its wrap: it cannot
// wrap twice unseen, the half-range margin the sampling period keeps too.
// Real skid is tens of events.
inline constexpr std::uint64_t kMaxSkid = 32767;

struct SimOptions {
  intel::Shape shape;               // --sim-counters, --sim-width
  ClockKind clock = ClockKind::Real;  // --sim-clock
  bool interrupts = true;           // false: no overflow interrupts; the engine samples
  std::vector<SimEvent> events;     // --sim-events; empty = defaultEvents()
  std::uint64_t skid = 0;           // --sim-skid: events past a wrap before its interrupt (EmulatedPmu)
};

// Reads a --sim-events file (format: sim::parseEvents). -ENOENT/-EACCES when
// it cannot be read, -EINVAL with the line when it does not parse.
Result<std::vector<SimEvent>> readEventsFile(const std::string& path, unsigned general_counters);

class SimBackend final : public Backend {
 public:
  // -EINVAL for a shape out of range, an event the shape cannot count, or a
  // skid above kMaxSkid.
  static Result<std::unique_ptr<SimBackend>> create(SimOptions options);

  std::string name() const override { return "sim"; }
  const PmuDescription& description() const override { return desc_; }
  ClockKind clock() const override { return options_.clock; }
  bool interruptsOnOverflow() const override { return options_.interrupts; }
  std::uint64_t samplingPeriodNs() const override { return sampling_period_ns_; }
  bool exclusiveThreads() const override { return true; }
  Result<std::unique_ptr<TargetPmu>> attach(const Target& target, std::weak_ptr<TargetListener> listener) override;

  const std::vector<SimEvent>& events() const { return options_.events; }
  std::uint64_t skid() const { return options_.skid; }
  // MSR writes received by every emulated PMU of this backend so far: how the
  // tests and benchmarks see what a set switch costs.
  std::uint64_t msrWrites() const { return msr_writes_.load(std::memory_order_relaxed); }

 private:
  explicit SimBackend(SimOptions options);

  SimOptions options_;
  PmuDescription desc_;
  std::uint64_t sampling_period_ns_ = 0;
  std::atomic<std::uint64_t> msr_writes_{0};
};

}  // namespace pfmfs::pmu::sim
