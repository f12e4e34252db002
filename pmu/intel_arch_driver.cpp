// MSR-level programming shared by the sim and x86 backends.
#include "pmu/intel_arch_driver.h"

#include <cassert>

#include "pmu/intel_arch_perfmon.h"

namespace pfmfs::pmu::intel {

std::uint64_t IntelArchDriver::globalBit(unsigned pmd_index) {
  if (pmd_index >= kFixedPmd0) return std::uint64_t{1} << (kGlobalFixedShift + pmd_index - kFixedPmd0);
  return std::uint64_t{1} << pmd_index;
}

IntelArchDriver::IntelArchDriver(const PmuDescription& desc, MsrAccess& msrs) : desc_(desc), msrs_(msrs) {
  for (const auto& d : desc_.pmds) all_counters_ |= globalBit(d.index);
}

void IntelArchDriver::writePmc(unsigned index, std::uint64_t value) {
  const PmcDesc* c = desc_.pmc(index);
  assert(c != nullptr);
  msrs_.writeMsr(c->addr, value);
}

void IntelArchDriver::writePmd(unsigned index, std::uint64_t hw_bits) {
  const PmdDesc* d = desc_.pmd(index);
  assert(d != nullptr);
  msrs_.writeMsr(d->addr, hw_bits & d->widthMask());
}

std::uint64_t IntelArchDriver::readPmd(unsigned index) {
  const PmdDesc* d = desc_.pmd(index);
  assert(d != nullptr);
  return msrs_.readMsr(d->addr) & d->widthMask();
}

void IntelArchDriver::enable() { msrs_.writeMsr(kPerfGlobalCtrl, all_counters_); }
void IntelArchDriver::disable() { msrs_.writeMsr(kPerfGlobalCtrl, 0); }

RegMask IntelArchDriver::takeOverflowStatus() {
  std::uint64_t status = msrs_.readMsr(kPerfGlobalStatus) & all_counters_;
  if (status == 0) return 0;
  msrs_.writeMsr(kPerfGlobalOvfCtrl, status);
  RegMask pmds = 0;
  for (const auto& d : desc_.pmds)
    if (status & globalBit(d.index)) pmds |= regBit(d.index);
  return pmds;
}

}  // namespace pfmfs::pmu::intel
