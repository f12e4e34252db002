// Validation of register writes and the engine-owned PMC bits.
#include "session/register_rules.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

Status checkPmcWrite(const pmu::PmuDescription& desc, const Caller& caller, const PmcWrite& w) {
  const pmu::PmcDesc* c = desc.pmc(w.index);
  if (!c) return err(EINVAL, "no pmc{} on this PMU", w.index);
  if (w.value & c->rsvd_mask)
    return err(EINVAL, "pmc{}: reserved bits 0x{:x} set in 0x{:x}", w.index, w.value & c->rsvd_mask, w.value);
  bool kernel = false, any_thread = false;
  for (const auto& d : desc.pmds) {
    if (d.ctl_pmc != w.index) continue;
    std::uint64_t field = w.value & d.field_mask;
    std::uint64_t priv = d.usr_bits | d.os_bits;
    if (field != 0 && (field & priv) == 0)
      return err(EINVAL,
                 "pmc{}: pmd{} is configured (0x{:x}) with neither the user (0x{:x}) nor the kernel (0x{:x}) bit",
                 w.index, d.index, field, d.usr_bits, d.os_bits);
    kernel = kernel || (field & d.os_bits);
    any_thread = any_thread || (field & d.any_bits);
    if (field != 0 && desc.event_field && !d.isFixed()) {
      std::uint64_t code = w.value & desc.event_field;
      bool listed = false;
      for (const auto& e : desc.events) listed = listed || (e.code == code && (e.counters & regBit(d.index)));
      if (!listed)
        return err(EINVAL, "pmc{}: event code 0x{:x} is not an event pmd{} can count on this PMU (see pmu/events)",
                   w.index, code, d.index);
    }
  }
  if (kernel && !caller.may_count_kernel)
    return err(EPERM, "pmc{}: kernel-level counting (the OS bit) needs CAP_PERFMON or pfmfsd --allow-kernel", w.index);
  // perf asks the same of the bit (perf_allow_cpu): the other hyperthread
  // runs other users' threads.
  if (any_thread && !caller.may_system_wide)
    return err(EPERM,
               "pmc{}: AnyThread (counting the core's other hyperthreads) needs CAP_PERFMON or pfmfsd's "
               "--system-group, as system-wide counting does",
               w.index);
  return {};
}

Status checkPmdWrite(const pmu::PmuDescription& desc, const PmdWrite& w) {
  if (!desc.pmd(w.index)) return err(EINVAL, "no pmd{} on this PMU", w.index);
  RegMask all = desc.pmdMask();
  if (w.reset_pmds && (*w.reset_pmds & ~all))
    return err(EINVAL, "pmd{}: reset_pmds names registers that do not exist (0x{:x})", w.index, *w.reset_pmds & ~all);
  if (w.smpl_pmds && (*w.smpl_pmds & ~all))
    return err(EINVAL, "pmd{}: smpl_pmds names registers that do not exist (0x{:x})", w.index, *w.smpl_pmds & ~all);
  return {};
}

RegMask countersEnabledBy(const pmu::PmuDescription& desc, unsigned pmc_index, std::uint64_t value) {
  RegMask m = 0;
  for (const auto& d : desc.pmds)
    if (d.ctl_pmc == pmc_index && (value & (d.usr_bits | d.os_bits))) m |= regBit(d.index);
  return m;
}

std::uint64_t hardwarePmcValue(const pmu::PmuDescription& desc, unsigned pmc_index, std::uint64_t value,
                               bool interrupts) {
  std::uint64_t hw = value;
  for (const auto& d : desc.pmds) {
    if (d.ctl_pmc != pmc_index) continue;
    hw &= ~d.int_bits;
    if (value & (d.usr_bits | d.os_bits)) hw |= d.enable_bits | (interrupts ? d.int_bits : 0);
  }
  return hw;
}

}  // namespace pfmfs::session
