// The PMU of one target of the x86 backend: a thread's register image in
// pfmfs_helper.ko, or a cpu's PMU, programmed by the IntelArchDriver through
// the device; and, for a thread with inherit, the children the module
// attaches at their creation (see Family in record_reader.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "pmu/backend.h"
#include "pmu/host_info.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/x86/helper_device.h"
#include "pmu/x86/record_reader.h"

namespace pfmfs::pmu::x86 {

// One target's MSRs through the device. Writes are queued and sent as one
// batch before the next read or at flush(), so that a set switch costs a
// handful of ioctls rather than one per register. A failure is kept for the
// caller to report (the interface of MsrAccess has no error path: the
// registers are checked by the engine before they get here, so what fails
// is the target itself, e.g. a thread that exited and was detached).
class TargetMsrs final : public intel::MsrAccess {
 public:
  TargetMsrs(HelperDevice& device, const Target& target) : device_(device), target_(target) {}

  void writeMsr(std::uint32_t addr, std::uint64_t value) override;
  std::uint64_t readMsr(std::uint32_t addr) override;
  void readMsrs(std::span<const std::uint32_t> addrs, std::span<std::uint64_t> out) override;
  void flush() override;

  // The first failure since the last call, if any.
  Status takeError();
  // The module no longer knows the target: it exited and was detached.
  bool lost() const { return lost_; }

 private:
  void keep(Status st);

  HelperDevice& device_;
  Target target_;
  std::vector<pfmfs_helper_msr> queue_;
  Status error_;
  bool lost_ = false;
};

class X86Target final : public TargetPmu {
 public:
  // `cpu_time`: a thread's CPU-time clock (none for a cpu, or for a child
  // already reaped when adopted). `from_creation`: the thread's time counts
  // from its creation (an adopted child), not from now.
  X86Target(const PmuDescription& desc, HelperDevice& device, RecordReader& reader, const Target& target,
            std::shared_ptr<Watch> watch, std::optional<ThreadCpuTime> cpu_time, bool from_creation);
  ~X86Target() override;

  Status loadSet(const SetImage& image) override;
  void reloadPmd(unsigned index, std::uint64_t hw_bits) override;
  void readPmds(RegMask pmds, std::span<std::uint64_t> out) override;
  void enable() override;
  void disable() override;
  std::uint64_t timeNs() override;
  // Hardware counts on its own: the present is the only time there is.
  std::uint64_t advanceTo(std::uint64_t) override { return timeNs(); }
  std::uint64_t nextOverflowNs() override { return kNever; }
  std::optional<HwOverflow> takeOverflow() override;
  RegMask overflowsInSkid() override;
  void raiseOverflowInSkid() override {}  // raised already: takeOverflow has it
  void hold(bool held) override;
  bool gone() override;

  // Inheritance (the target's PMU; a child's children are its family's).
  void takeChildEvents(std::vector<ChildEvent>& out) override;
  Result<std::unique_ptr<TargetPmu>> adoptChild(pid_t tid, std::weak_ptr<TargetListener> listener) override;
  void childExited(std::optional<std::uint64_t> final_time_ns) override;
  Status setChildImage(const SetImage& image, bool counting) override;

 private:
  // A set image as the engine gave it, kept to compare with a later one.
  struct ImageCopy {
    std::uint16_t set = 0;
    std::vector<std::uint64_t> pmcs;
    RegMask pmds = 0;
    std::vector<std::uint64_t> pmd_bits;  // only those in pmds matter
    bool counting = false;
    static ImageCopy of(const SetImage& image, bool counting);
    bool sameAs(const SetImage& image) const;
  };

  std::uint64_t rawTime();
  std::uint64_t liveTimeNs();
  std::uint64_t freeze(std::optional<std::uint64_t> final_time_ns);
  void report(const Status& st);

  const PmuDescription& desc_;
  HelperDevice& device_;
  RecordReader& reader_;
  Target target_;
  std::shared_ptr<Watch> watch_;
  TargetMsrs msrs_;
  intel::IntelArchDriver driver_;
  std::optional<ThreadCpuTime> cpu_time_;  // threads: their CPU time
  std::uint64_t last_raw_ = 0;
  std::uint64_t base_ = 0;  // raw time that maps to target time 0
  std::uint64_t last_ = 0;
  std::optional<std::uint64_t> frozen_time_;  // a thread that exited
  bool enabled_ = false;                      // the engine's last enable()/disable()
  bool reported_ = false;
  // The target with inherit: the template the module gives children now.
  std::optional<ImageCopy> published_;
  std::uint64_t published_tag_ = 0;
  // An adopted child born with the image the engine now loads: that load,
  // and the enable after it, keep what it counted since its creation.
  std::optional<ImageCopy> born_;
  bool skip_enable_ = false;
};

}  // namespace pfmfs::pmu::x86
