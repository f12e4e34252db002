// Register images and bookkeeping of one event set.
#include "session/event_set.h"

#include <cassert>

namespace pfmfs::session {

using pmu::regBit;

EventSet::EventSet(std::uint16_t id, const pmu::PmuDescription& desc)
    : id_(id), desc_(desc), pmcs_(desc.pmcs.size()), pmds_(desc.pmds.size()) {
  for (std::size_t i = 0; i < pmcs_.size(); ++i) pmcs_[i].value = desc.pmcs[i].dfl_val;
  recomputeUsed();
}

void EventSet::setPmc(const PmcWrite& w) {
  int slot = desc_.pmcSlot(w.index);
  assert(slot >= 0);
  pmcs_[static_cast<std::size_t>(slot)] = PmcState{w.value, w.no_emul64};
}

std::size_t EventSet::setPmd(const PmdWrite& w) {
  int slot = desc_.pmdSlot(w.index);
  assert(slot >= 0);
  PmdState& p = pmds_[static_cast<std::size_t>(slot)];
  p.initial = w.value;
  p.children = 0;  // a written value starts the count afresh, children's part included
  p.written = true;
  if (w.long_reset) p.long_reset = *w.long_reset;
  if (w.short_reset) p.short_reset = *w.short_reset;
  if (w.switch_cnt) p.switch_cnt = p.switch_left = *w.switch_cnt;
  if (w.reset_pmds) p.reset_pmds = *w.reset_pmds;
  if (w.smpl_pmds) p.smpl_pmds = *w.smpl_pmds;
  if (w.random_mask) p.random_mask = *w.random_mask;
  if (w.eventid) p.eventid = *w.eventid;
  if (w.notify) p.notify = *w.notify;
  if (w.random) p.random = *w.random;
  return static_cast<std::size_t>(slot);
}

void EventSet::recomputeUsed() {
  used_pmds_ = 0;
  for (std::size_t i = 0; i < pmcs_.size(); ++i)
    used_pmds_ |= countersEnabledBy(desc_, desc_.pmcs[i].index, pmcs_[i].value);
}

std::uint64_t EventSet::hardwarePmc(std::size_t slot, bool interrupts) const {
  return hardwarePmcValue(desc_, desc_.pmcs[slot].index, pmcs_[slot].value, interrupts);
}

bool EventSet::noEmul64(unsigned pmd_index) const {
  const pmu::PmdDesc* d = desc_.pmd(pmd_index);
  return d && pmcs_[static_cast<std::size_t>(desc_.pmcSlot(d->ctl_pmc))].no_emul64;
}

void EventSet::reloadSwitchCounters() {
  for (auto& p : pmds_) p.switch_left = p.switch_cnt;
}

std::vector<RegWrite> EventSet::nonDefaultRegisters(std::span<const std::uint64_t> pmd_values) const {
  std::vector<RegWrite> out;
  for (std::size_t i = 0; i < pmcs_.size(); ++i) {
    const PmcState& c = pmcs_[i];
    if (c.value != desc_.pmcs[i].dfl_val || c.no_emul64)
      out.push_back(PmcWrite{desc_.pmcs[i].index, c.value, c.no_emul64});
  }
  for (std::size_t i = 0; i < pmds_.size(); ++i) {
    const PmdState& p = pmds_[i];
    const std::uint64_t value = i < pmd_values.size() ? pmd_values[i] : 0;
    bool plain = value == 0 && p.long_reset == 0 && p.short_reset == 0 && p.switch_cnt == 0 && p.reset_pmds == 0 &&
                 p.smpl_pmds == 0 && p.random_mask == 0 && p.eventid == 0 && !p.notify && !p.random;
    if (plain) continue;
    PmdWrite w;
    w.index = desc_.pmds[i].index;
    w.value = value;
    w.long_reset = p.long_reset;
    w.short_reset = p.short_reset;
    w.switch_cnt = p.switch_cnt;
    w.reset_pmds = p.reset_pmds;
    w.smpl_pmds = p.smpl_pmds;
    w.random_mask = p.random_mask;
    w.eventid = p.eventid;
    w.notify = p.notify;
    w.random = p.random;
    out.push_back(w);
  }
  return out;
}

}  // namespace pfmfs::session
