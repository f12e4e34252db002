// The emulated MSR-level PMU of the sim backend.
#include "pmu/sim/emulated_pmu.h"

#include <algorithm>

#include "pmu/backend.h"
#include "pmu/intel_arch_perfmon.h"

namespace pfmfs::pmu::sim {

using namespace intel;

EmulatedPmu::EmulatedPmu(const PmuDescription& desc, const std::vector<SimEvent>& events,
                         std::atomic<std::uint64_t>* write_counter, std::uint64_t skid)
    : desc_(desc), events_(events), write_counter_(write_counter), skid_(skid) {
  unsigned general = 0;
  for (const auto& d : desc_.pmds) {
    Counter c;
    c.addr = d.addr;
    c.global_bit = IntelArchDriver::globalBit(d.index);
    c.width_mask = d.widthMask();
    if (d.isFixed()) {
      c.fixed = static_cast<int>(d.index - kFixedPmd0);
    } else {
      c.evtsel_addr = kPerfEvtSel0 + d.index;
      ++general;
    }
    counters_.push_back(c);
  }
  evtsels_.assign(general, 0);
}

EmulatedPmu::Counter* EmulatedPmu::counterAt(std::uint32_t addr) {
  for (auto& c : counters_)
    if (c.addr == addr) return &c;
  return nullptr;
}

std::uint64_t EmulatedPmu::evtsel(const Counter& c) const { return evtsels_[c.evtsel_addr - kPerfEvtSel0]; }

void EmulatedPmu::reconfigure(Counter& c) {
  bool usr = false, os = false, enabled = (global_ctrl_ & c.global_bit) != 0;
  std::uint64_t code = 0;
  if (c.fixed >= 0) {
    std::uint64_t field = (fixed_ctrl_ >> (fixedctl::kFieldBits * static_cast<unsigned>(c.fixed))) & 0xf;
    usr = field & fixedctl::kUsr;
    os = field & fixedctl::kOs;
    c.interrupts = field & fixedctl::kPmi;
    code = fixedCounterCode(static_cast<unsigned>(c.fixed));
  } else {
    std::uint64_t sel = evtsel(c);
    usr = sel & evtsel::kUsr;
    os = sel & evtsel::kOs;
    enabled = enabled && (sel & evtsel::kEn);
    c.interrupts = sel & evtsel::kInt;
    code = sel & evtsel::kCode;
  }
  const SimEvent* ev = findByCode(events_, code);
  // A counter whose privilege bits exclude the level its event occurs at counts
  // nothing: the emulated program never runs at the other level.
  if (ev && !((ev->ring == Ring::User && usr) || (ev->ring == Ring::Kernel && os))) ev = nullptr;
  c.counting = enabled && ev != nullptr;
  c.event = c.counting ? ev : nullptr;
  c.mark = c.counting ? ev->rate.count(now_) : 0;
}

void EmulatedPmu::writeMsr(std::uint32_t addr, std::uint64_t value) {
  ++msr_writes_;
  if (write_counter_) write_counter_->fetch_add(1, std::memory_order_relaxed);

  if (addr == kPerfGlobalCtrl) {
    global_ctrl_ = value;
    for (auto& c : counters_) reconfigure(c);
  } else if (addr == kPerfGlobalOvfCtrl) {
    global_status_ &= ~value;
  } else if (addr == kFixedCtrCtrl) {
    fixed_ctrl_ = value;
    for (auto& c : counters_)
      if (c.fixed >= 0) reconfigure(c);
  } else if (addr >= kPerfEvtSel0 && addr < kPerfEvtSel0 + evtsels_.size()) {
    evtsels_[addr - kPerfEvtSel0] = value;
    for (auto& c : counters_)
      if (c.evtsel_addr == addr) reconfigure(c);
  } else if (Counter* c = counterAt(addr)) {
    c->value = value & c->width_mask;
    if (c->counting) c->mark = c->event->rate.count(now_);
  } else {
    ++faults_;  // GLOBAL_STATUS is read-only; anything else does not exist
  }
}

std::uint64_t EmulatedPmu::readMsr(std::uint32_t addr) {
  if (addr == kPerfGlobalCtrl) return global_ctrl_;
  if (addr == kPerfGlobalStatus) return global_status_;
  if (addr == kFixedCtrCtrl) return fixed_ctrl_;
  if (addr >= kPerfEvtSel0 && addr < kPerfEvtSel0 + evtsels_.size()) return evtsels_[addr - kPerfEvtSel0];
  if (Counter* c = counterAt(addr)) return c->value;
  ++faults_;
  return 0;
}

namespace {

// The instant `rate` reaches occurrence `n`, kNever past what it can count.
std::uint64_t timeOfCount(const EventRate& rate, unsigned __int128 n) {
  return n > kNever ? kNever : rate.timeOfCount(static_cast<std::uint64_t>(n));
}

}  // namespace

// One pass over (now, t] gives what stepping wrap by wrap would: the line goes
// up at the earliest instant a wrap asks for, if that is within t, and the
// wraps after it (status set, line already up) join that interrupt.
void EmulatedPmu::advanceTo(std::uint64_t t) {
  if (t <= now_) return;
  std::uint64_t due = skid_due_;
  std::uint64_t in_skid = skid_status_;
  for (auto& c : counters_) {
    if (!c.counting) continue;
    std::uint64_t n = c.event->rate.count(t);
    unsigned __int128 total = static_cast<unsigned __int128>(c.value) + (n - c.mark);
    if (total > c.width_mask) {  // wrapped past 2^width at least once
      global_status_ |= c.global_bit;
      if (c.interrupts && !interrupt_pending_) {
        // The stream's occurrence that carried out of the top bit first, and
        // the instant the interrupt is due: skid occurrences later.
        unsigned __int128 wrap = static_cast<unsigned __int128>(c.mark) + (c.width_mask - c.value) + 1;
        due = std::min(due, timeOfCount(c.event->rate, wrap + skid_));
        in_skid |= c.global_bit;
      }
    }
    c.value = static_cast<std::uint64_t>(total) & c.width_mask;
    c.mark = n;
  }
  now_ = t;
  if (due <= t) {
    interrupt_pending_ = true;
    due = kNever;
    in_skid = 0;
  }
  skid_due_ = due;
  skid_status_ = in_skid;
}

void EmulatedPmu::endSkid() {
  if (skid_due_ == kNever) return;
  interrupt_pending_ = true;
  skid_due_ = kNever;
  skid_status_ = 0;
}

std::uint64_t EmulatedPmu::nextInterruptNs() const {
  std::uint64_t next = skid_due_;
  for (const auto& c : counters_) {
    if (!c.counting || !c.interrupts) continue;
    // Occurrences still needed to carry out of the top bit, then the skid.
    unsigned __int128 need = static_cast<unsigned __int128>(c.width_mask) - c.value + 1;
    next = std::min(next, timeOfCount(c.event->rate, need + c.mark + skid_));
  }
  return next;
}

}  // namespace pfmfs::pmu::sim
