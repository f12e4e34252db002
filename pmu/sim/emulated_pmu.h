// An Intel architectural-perfmon v2 PMU in software, at the MSR level: the
// PERFEVTSEL/PMC pairs, the fixed counters and their control, and the global
// control, status and overflow-control registers. Counters follow the sim's
// deterministic event streams in target time, wrap at 2^width, set their
// GLOBAL_STATUS bit and raise an interrupt when their INT/PMI bit asks for one,
// at the wrap or, with skid, a fixed number of events of the counter's own
// stream after it.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "pmu/backend.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/pmu_description.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu::sim {

class EmulatedPmu final : public intel::MsrAccess {
 public:
  // `desc` (from intel::makeDescription) and `events` must outlive the PMU.
  // `write_counter`, if given, is incremented on every MSR write as well.
  // `skid`: the events of its own stream an interrupting counter counts past
  // its wrap before the interrupt is raised (--sim-skid; 0: at the wrap).
  EmulatedPmu(const PmuDescription& desc, const std::vector<SimEvent>& events,
              std::atomic<std::uint64_t>* write_counter = nullptr, std::uint64_t skid = 0);

  void writeMsr(std::uint32_t addr, std::uint64_t value) override;
  std::uint64_t readMsr(std::uint32_t addr) override;

  // Moves the counters to target time t (>= now()). Each counter counts the
  // occurrences of its event in (now, t] at the privilege levels its control
  // selects.
  void advanceTo(std::uint64_t t);
  std::uint64_t now() const { return now_; }

  // The earliest time after now() at which the interrupt line will be raised
  // (the interrupt in skid, or a counter with its interrupt bit set wrapping,
  // plus the skid), or kNever.
  std::uint64_t nextInterruptNs() const;

  // The interrupt line (LVTPC): raised by a wrap of an interrupting counter
  // (after the skid), lowered by the handler.
  bool interruptPending() const { return interrupt_pending_; }
  void clearInterrupt() { interrupt_pending_ = false; }

  // Skid. Each wrap of an interrupting counter sets its GLOBAL_STATUS bit at
  // once and asks for the interrupt when the counter's event stream has
  // counted `skid` more events. There is one line: it is raised at the first
  // instant any wrap asks for, and the handler finds every status bit set by
  // then; wraps while the line is up join it. So no counter counts more than
  // `skid` events past its wrap before the interrupt: with skid < 2^width
  // none wraps twice unseen (unless software loads it meanwhile). The
  // instant is fixed at the wrap: the
  // interrupt comes whatever happens to the counter meanwhile (disabled,
  // reprogrammed, reloaded); if its status was acknowledged meanwhile, the
  // handler finds nothing.
  std::uint64_t skid() const { return skid_; }
  // GLOBAL_STATUS bits whose interrupt is still in skid.
  std::uint64_t skidStatus() const { return global_status_ & skid_status_; }
  // Raises the interrupt in skid now (if any): what the engine asks for
  // before it takes a set off the PMU.
  void endSkid();

  std::uint64_t msrWrites() const { return msr_writes_; }
  // Accesses to MSRs this PMU does not have (a #GP on hardware).
  std::uint64_t faults() const { return faults_; }

 private:
  struct Counter {
    std::uint32_t addr = 0;        // counter MSR
    std::uint64_t global_bit = 0;  // its bit in GLOBAL_CTRL/STATUS
    std::uint64_t width_mask = 0;
    std::uint64_t value = 0;          // hardware bits as of now_
    const SimEvent* event = nullptr;  // what it counts while counting
    std::uint64_t mark = 0;           // event->rate.count(now_) while counting
    bool counting = false;
    bool interrupts = false;
    int fixed = -1;                 // fixed counter number, or -1
    std::uint32_t evtsel_addr = 0;  // general counters: their PERFEVTSEL
  };

  Counter* counterAt(std::uint32_t addr);
  void reconfigure(Counter& c);  // after a control register changed
  std::uint64_t evtsel(const Counter& c) const;

  const PmuDescription& desc_;
  const std::vector<SimEvent>& events_;
  std::atomic<std::uint64_t>* write_counter_;
  std::vector<Counter> counters_;
  std::vector<std::uint64_t> evtsels_;  // PERFEVTSEL values by general counter number
  std::uint64_t fixed_ctrl_ = 0;
  std::uint64_t global_ctrl_ = 0;
  std::uint64_t global_status_ = 0;
  std::uint64_t now_ = 0;
  std::uint64_t msr_writes_ = 0;
  std::uint64_t faults_ = 0;
  const std::uint64_t skid_;
  std::uint64_t skid_due_ = kNever;  // when the interrupt in skid is raised
  std::uint64_t skid_status_ = 0;    // the status bits set by the wraps in skid
  bool interrupt_pending_ = false;
};

}  // namespace pfmfs::pmu::sim
