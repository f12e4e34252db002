// The sim backend: an emulated Intel architectural-perfmon PMU per attached
// target (pfmfs(5), "The sim PMU"), driven by the shared MSR-level driver. Under the manual
// clock every count is exact, which is what the tests stand on.
//
// With `inherit` (Inheritance::Adopt) a thread target follows its children
// through perf task records (perf::TaskTracker); each child the engine adopts
// gets an emulated PMU of its own, whose time starts at the child's creation.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "pmu/backend.h"
#include "pmu/backend_entry.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu::perf {
class Poller;
}

namespace pfmfs::pmu::sim {

// The most skid --sim-skid takes: under half the range of the narrowest
// counter (--sim-width=16). A counter counts at most the skid, plus what its
// event adds in the nanosecond the interrupt comes, past its wrap: it cannot
// wrap twice unseen, the half-range margin the sampling period keeps too.
// Real skid is tens of events.
inline constexpr std::uint64_t kMaxSkid = 32767;

struct SimOptions {
  intel::Shape shape;                 // --sim-counters, --sim-width
  ClockKind clock = ClockKind::Real;  // --sim-clock
  bool interrupts = true;             // false: no overflow interrupts; the engine samples
  std::vector<SimEvent> events;       // --sim-events; empty = defaultEvents()
  std::uint64_t skid = 0;             // --sim-skid: events past a wrap before its interrupt (EmulatedPmu)
};

// The sim's entry in the backend registry (sim_entry.cpp): --sim-clock,
// --sim-width, --sim-counters, --sim-events and --sim-skid, any of which
// under --pmu=auto asks for the sim.
const BackendEntry& backendEntry();

// SimOptions from the values of those options that were given (the others
// keep their defaults), but for --sim-events: the entry's create() reads
// that file.
SimOptions simOptions(const OptionValues& given);

// Reads a --sim-events file (format: sim::parseEvents). -ENOENT/-EACCES when
// it cannot be read, -EINVAL with the line when it does not parse.
Result<std::vector<SimEvent>> readEventsFile(const std::string& path, unsigned general_counters);

class SimBackend final : public Backend {
 public:
  // -EINVAL for a shape out of range, an event the shape cannot count, or a
  // skid above kMaxSkid.
  static Result<std::unique_ptr<SimBackend>> create(SimOptions options);
  ~SimBackend() override;

  std::string name() const override { return "sim"; }
  const PmuDescription& description() const override { return desc_; }
  ClockKind clock() const override { return options_.clock; }
  bool interruptsOnOverflow() const override { return options_.interrupts; }
  std::uint64_t samplingPeriodNs() const override { return sampling_period_ns_; }
  bool exclusiveThreads() const override { return true; }
  Inheritance inheritance() const override { return Inheritance::Adopt; }
  // A thread target with `inherit` follows its children (TargetPmu::
  // takeChildEvents, adoptChild); a cpu target with it is -EINVAL. Where perf
  // cannot follow them (perf_event_paranoid), the kernel's error.
  Result<std::unique_ptr<TargetPmu>> attach(const Target& target, std::weak_ptr<TargetListener> listener) override
      EXCLUDES(poller_mutex_);
  void shutdown() override EXCLUDES(poller_mutex_);

  const std::vector<SimEvent>& events() const { return options_.events; }
  std::uint64_t skid() const { return options_.skid; }
  // MSR writes received by every emulated PMU of this backend so far: how the
  // tests and benchmarks see what a set switch costs.
  std::uint64_t msrWrites() const { return msr_writes_.load(std::memory_order_relaxed); }

 private:
  explicit SimBackend(SimOptions options);
  Result<perf::Poller*> poller() EXCLUDES(poller_mutex_);

  SimOptions options_;
  PmuDescription desc_;
  std::uint64_t sampling_period_ns_ = 0;
  std::atomic<std::uint64_t> msr_writes_{0};
  // The thread that calls a target's listener when its children's records
  // arrive, so that an exit is handled even when nobody reads a file. Made at
  // the first attach with inherit; targets hold it by pointer, so it lives as
  // long as the backend.
  // A leaf. The Poller itself is safe from any thread: only the pointer is
  // guarded, and Poller::stop() is called without it.
  Mutex poller_mutex_;
  std::unique_ptr<perf::Poller> poller_ GUARDED_BY(poller_mutex_);
  bool shut_down_ GUARDED_BY(poller_mutex_) = false;
};

}  // namespace pfmfs::pmu::sim
