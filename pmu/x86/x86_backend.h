// The x86 backend: the Intel architectural PMU programmed through its MSRs,
// by the same IntelArchDriver the sim runs, over pfmfs_helper.ko
// (/dev/pfmfs_helper, helper-kmod/). The module keeps a register image per
// attached thread and loads it on whatever cpu the thread runs, interrupts
// on counter overflow (an NMI through the LVTPC), freezes the target's
// counters there and queues a record that the backend's reader thread hands
// to the engine; it can also hold a thread (notify_block). See
// docs/backends.md.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "helper-kmod/uapi/pfmfs_helper.h"
#include "pmu/backend.h"
#include "pmu/backend_entry.h"
#include "pmu/result.h"
#include "pmu/x86/helper_device.h"

namespace pfmfs::pmu::x86 {

class RecordReader;

struct X86Options {
  std::string device = PFMFS_HELPER_DEVICE;
};

// x86's entry in the backend registry (x86_entry.cpp): no options.
const BackendEntry& backendEntry();

// The description of the PMU the module serves: intel-arch-v2's registers
// in perfmon2's mapping, shaped by CPUID leaf 0xA as the module reports it.
// -ENODEV where the PMU has no general counter.
Result<PmuDescription> describe(const HelperInfo& info);

// What attach refuses before it asks the module: a control group (the module
// attaches to threads and CPUs only; its description has no "cgroup"
// feature), EOPNOTSUPP with the reason.
Status checkTarget(const Target& target);

class X86Backend final : public Backend {
 public:
  // -ENOENT when the module is not loaded, -EPERM/-EACCES when the device
  // may not be opened, -EPROTO for a module of another ABI version.
  static Result<std::unique_ptr<X86Backend>> create(const X86Options& options);
  ~X86Backend() override;

  std::string name() const override { return "x86"; }
  const PmuDescription& description() const override { return desc_; }
  ClockKind clock() const override { return ClockKind::Real; }
  bool interruptsOnOverflow() const override { return true; }
  std::uint64_t samplingPeriodNs() const override { return 1'000'000'000; }  // unused: counters interrupt
  bool exclusiveThreads() const override { return true; }                    // one register image per thread
  bool mappedReads() const override { return false; }                        // counts live in the module's images
  // The module attaches a thread's children at their creation, with the
  // image the engine last gave (setChildImage); each is adopted as a target.
  Inheritance inheritance() const override { return Inheritance::Adopt; }
  Result<std::unique_ptr<TargetPmu>> attach(const Target& target, std::weak_ptr<TargetListener> listener) override;
  void shutdown() override;

  const HelperInfo& info() const { return device_->info(); }
  // ioctls issued so far: what the tests and benchmarks see of a switch's cost.
  std::uint64_t ioctls() const { return device_->ioctls(); }

 private:
  X86Backend(std::unique_ptr<HelperDevice> device, PmuDescription desc);

  std::unique_ptr<HelperDevice> device_;
  PmuDescription desc_;
  std::unique_ptr<RecordReader> reader_;  // after device_: stops before it closes
  std::atomic<bool> shut_down_{false};
};

}  // namespace pfmfs::pmu::x86
