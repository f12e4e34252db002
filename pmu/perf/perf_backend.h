// The perf backend: real counts of real threads and CPUs through
// perf_event_open(2), without our kernel module (docs/backends.md).
//
// Each set is one perf group, opened the first time the set is loaded and
// kept: a set switch disables one group and enables the next (two ioctls, on
// the leaders: members are opened enabled and follow their leader, as the
// perf tool does; a member enabled while its leader runs would not count on
// this kernel until its next context switch, or at all on a CPU).
// A counter's 64-bit value is base + (perf count - ref), so a PMD write costs
// no syscall. Overflows: every counter samples with the period that ends at
// its 64-bit wrap; the kernel writes a record into the target's ring buffer
// and the poller thread tells the engine, which takes the record.
// With Target::inherit the set's events are also inherited by the thread's
// children, and each child's final counts come back as it exits
// (Inheritance::Aggregate; perf_inherit.h).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "pmu/backend.h"
#include "pmu/backend_entry.h"
#include "pmu/perf/perf_models.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

class Poller;

struct PerfOptions {
  std::optional<Model> model;  // nullopt: perf-x86 where the machine has a hardware PMU, else perf-sw
};

// perf's entry in the backend registry (perf_entry.cpp): --perf-model.
const BackendEntry& backendEntry();

// PerfOptions from the values of --perf-model, if given.
PerfOptions perfOptions(const OptionValues& given);

// Whether this process may open perf events on itself (a task-clock): what
// --pmu=auto asks before it picks perf. The error says why not.
Status perfUsable();

// perf-x86 where the kernel exposes a hardware PMU ("cpu" event source) and
// CPUID reports architectural counters, perf-sw elsewhere.
Model detectModel();

class PerfBackend final : public Backend {
 public:
  // Fails (with the kernel's reason) where perf events cannot be opened, or
  // perf-x86 is asked for on a machine without a hardware PMU.
  static Result<std::unique_ptr<PerfBackend>> create(PerfOptions options);
  ~PerfBackend() override;

  std::string name() const override { return "perf"; }
  const PmuDescription& description() const override { return desc_; }
  ClockKind clock() const override { return ClockKind::Real; }
  bool interruptsOnOverflow() const override { return true; }
  std::uint64_t samplingPeriodNs() const override { return 1'000'000'000; }  // unused: perf interrupts
  bool exclusiveThreads() const override { return false; }  // perf counts any number of sessions per thread
  bool holdsThreads() const override { return false; }
  // perf's inherited events count the children, switching with the target.
  Inheritance inheritance() const override { return Inheritance::Aggregate; }
  std::uint64_t samplingKernelBytes(const Target& target) const override;
  Result<std::unique_ptr<TargetPmu>> attach(const Target& target, std::weak_ptr<TargetListener> listener) override;
  void shutdown() override;

  Model model() const { return model_; }

 private:
  PerfBackend(Model model, PmuDescription desc, std::unique_ptr<Poller> poller);

  Model model_;
  PmuDescription desc_;
  std::unique_ptr<Poller> poller_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace pfmfs::pmu::perf
