// MSR-level programming shared by the sim and x86 backends.
#include "pmu/intel_arch_driver.h"

#include <cassert>

#include "pmu/intel_arch_perfmon.h"

namespace pfmfs::pmu::intel {

std::uint64_t IntelArchDriver::globalBit(unsigned pmd_index) {
  if (pmd_index >= kFixedPmd0) return std::uint64_t{1} << (kGlobalFixedShift + pmd_index - kFixedPmd0);
  return std::uint64_t{1} << pmd_index;
}

IntelArchDriver::IntelArchDriver(const PmuDescription& desc, MsrAccess& msrs)
    : desc_(desc),
      msrs_(msrs),
      pmc_(desc.pmcs.size()),
      pmd_(desc.pmds.size()),
      pmc_known_(desc.pmcs.size()),
      pmd_known_(desc.pmds.size()) {
  for (const auto& d : desc_.pmds) all_counters_ |= globalBit(d.index);
}

void IntelArchDriver::writePmc(unsigned index, std::uint64_t value) {
  int slot = desc_.pmcSlot(index);
  assert(slot >= 0);
  auto s = static_cast<std::size_t>(slot);
  msrs_.writeMsr(desc_.pmcs[s].addr, value);
  pmc_[s] = value;
  pmc_known_[s] = true;
}

void IntelArchDriver::writePmd(unsigned index, std::uint64_t hw_bits) {
  int slot = desc_.pmdSlot(index);
  assert(slot >= 0);
  auto s = static_cast<std::size_t>(slot);
  std::uint64_t bits = hw_bits & desc_.pmds[s].widthMask();
  msrs_.writeMsr(desc_.pmds[s].addr, bits);
  pmd_[s] = bits;
  pmd_known_[s] = true;
}

std::uint64_t IntelArchDriver::readPmd(unsigned index) {
  int slot = desc_.pmdSlot(index);
  assert(slot >= 0);
  auto s = static_cast<std::size_t>(slot);
  std::uint64_t bits = msrs_.readMsr(desc_.pmds[s].addr) & desc_.pmds[s].widthMask();
  pmd_[s] = bits;
  pmd_known_[s] = true;
  return bits;
}

void IntelArchDriver::readPmds(RegMask pmds, std::span<std::uint64_t> out) {
  std::uint32_t addrs[kMaxRegIndex];
  std::uint64_t values[kMaxRegIndex];
  std::size_t slots[kMaxRegIndex];
  std::size_t n = 0;
  for (std::size_t s = 0; s < desc_.pmds.size(); ++s) {
    if (!(pmds & regBit(desc_.pmds[s].index))) continue;
    addrs[n] = desc_.pmds[s].addr;
    slots[n++] = s;
  }
  if (n == 0) return;
  msrs_.readMsrs(std::span(addrs, n), std::span(values, n));
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t s = slots[i];
    pmd_[s] = values[i] & desc_.pmds[s].widthMask();
    pmd_known_[s] = true;
    out[s] = pmd_[s];
  }
}

void IntelArchDriver::loadImage(std::span<const std::uint64_t> pmcs, RegMask pmds,
                                std::span<const std::uint64_t> pmd_bits) {
  for (std::size_t s = 0; s < desc_.pmcs.size(); ++s)
    if (!pmc_known_[s] || pmc_[s] != pmcs[s]) writePmc(desc_.pmcs[s].index, pmcs[s]);
  for (std::size_t s = 0; s < desc_.pmds.size(); ++s) {
    const PmdDesc& d = desc_.pmds[s];
    if (!(pmds & regBit(d.index))) continue;
    std::uint64_t bits = pmd_bits[s] & d.widthMask();
    if (!pmd_known_[s] || pmd_[s] != bits) writePmd(d.index, bits);
  }
}

void IntelArchDriver::enable() { msrs_.writeMsr(kPerfGlobalCtrl, all_counters_); }
void IntelArchDriver::disable() { msrs_.writeMsr(kPerfGlobalCtrl, 0); }

RegMask IntelArchDriver::takeOverflowStatus() {
  std::uint64_t status = msrs_.readMsr(kPerfGlobalStatus) & all_counters_;
  if (status == 0) return 0;
  msrs_.writeMsr(kPerfGlobalOvfCtrl, status);
  return statusToPmds(status);
}

RegMask IntelArchDriver::statusToPmds(std::uint64_t status) const {
  RegMask pmds = 0;
  for (const auto& d : desc_.pmds)
    if (status & globalBit(d.index)) pmds |= regBit(d.index);
  return pmds;
}

}  // namespace pfmfs::pmu::intel
