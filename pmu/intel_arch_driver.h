// Programs an Intel architectural-perfmon PMU through MSR reads and writes.
// The sim backend runs it over its emulated PMU and the x86 backend over real
// MSRs, so the code that touches MSRs is the code the tests exercise.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pmu/pmu_description.h"

namespace pfmfs::pmu::intel {

// Access to one PMU's model-specific registers. Writes take effect in order;
// an implementation that talks to a kernel (the x86 backend) may queue them
// and send them in one batch before the next read or at flush().
class MsrAccess {
 public:
  virtual ~MsrAccess() = default;
  virtual void writeMsr(std::uint32_t addr, std::uint64_t value) = 0;
  virtual std::uint64_t readMsr(std::uint32_t addr) = 0;
  // Several reads, in one go where the implementation can.
  virtual void readMsrs(std::span<const std::uint32_t> addrs, std::span<std::uint64_t> out) {
    for (std::size_t i = 0; i < addrs.size(); ++i) out[i] = readMsr(addrs[i]);
  }
  // Makes every queued write take effect.
  virtual void flush() {}
};

class IntelArchDriver {
 public:
  // `desc` must come from intel::makeDescription and outlive the driver.
  IntelArchDriver(const PmuDescription& desc, MsrAccess& msrs);

  void writePmc(unsigned index, std::uint64_t value);
  void writePmd(unsigned index, std::uint64_t hw_bits);
  std::uint64_t readPmd(unsigned index);
  // The counters in `pmds`, read in one go, into out[slot] by description slot.
  void readPmds(RegMask pmds, std::span<std::uint64_t> out);

  // Puts a register image on the PMU, writing only the registers whose value
  // differs from what the hardware is known to hold (perfctr's control
  // cache): a switch between sets that share their configuration costs only
  // their PMDs. `pmcs` and `pmd_bits` are by description slot; only the PMDs
  // in `pmds` are loaded. Nothing is known until first written or read.
  void loadImage(std::span<const std::uint64_t> pmcs, RegMask pmds, std::span<const std::uint64_t> pmd_bits);

  // PERF_GLOBAL_CTRL: every implemented counter on, or all off. Individual
  // counters are then on when their PERFEVTSEL.EN or fixed field says so.
  void enable();
  void disable();

  // Reads PERF_GLOBAL_STATUS, acknowledges it through PERF_GLOBAL_OVF_CTRL and
  // returns the overflowed counters as PMD numbers (0 if none).
  RegMask takeOverflowStatus();

  // The PMDs whose bits are set in a PERF_GLOBAL_STATUS value.
  RegMask statusToPmds(std::uint64_t status) const;

  // Global-register bit of PMD `index` (bit n for general counter n, 32 + n
  // for fixed counter n).
  static std::uint64_t globalBit(unsigned pmd_index);

 private:
  const PmuDescription& desc_;
  MsrAccess& msrs_;
  std::uint64_t all_counters_ = 0;  // PERF_GLOBAL_CTRL value with every counter on
  // What the hardware holds, by slot, where known.
  std::vector<std::uint64_t> pmc_;
  std::vector<std::uint64_t> pmd_;
  std::vector<bool> pmc_known_;
  std::vector<bool> pmd_known_;
};

}  // namespace pfmfs::pmu::intel
