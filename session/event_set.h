// One event set: a full image of the PMU's registers plus the set's switching
// policy and its accounting (runs, duration, last overflow). The session
// decides when the image is on the hardware; the set only holds it.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "pmu/pmu_description.h"
#include "session/register_rules.h"

namespace pfmfs::session {

struct SwitchSpec {
  bool on_time = false;
  std::uint64_t timeout_ns = 0;  // with on_time: target time to spend in the set
  bool on_ovfl = false;          // switch when a PMD's switch_cnt runs out

  bool operator==(const SwitchSpec&) const = default;
};

struct PmcState {
  std::uint64_t value = 0;  // as the user wrote it
  bool no_emul64 = false;
};

// A PMD's attributes in one set. Its value is each counting thread's own
// (session/driven_thread.h): the target's, and every followed child's.
struct PmdState {
  std::uint64_t long_reset = 0;
  std::uint64_t short_reset = 0;
  std::uint64_t last_reset = 0;   // the reset value used last
  std::uint64_t switch_cnt = 0;   // configured overflows per switch; 0 = never
  std::uint64_t switch_left = 0;  // left in the current activation
  pmu::RegMask reset_pmds = 0;
  pmu::RegMask smpl_pmds = 0;
  std::uint64_t random_mask = 0;
  std::uint64_t eventid = 0;
  std::uint64_t initial = 0;   // the value last written: where a followed child starts (inherit)
  std::uint64_t children = 0;  // events counted by followed children that exited, merged (inherit)
  bool notify = false;
  bool random = false;
  bool written = false;  // the user wrote it at least once
};

class EventSet {
 public:
  EventSet(std::uint16_t id, const pmu::PmuDescription& desc);

  std::uint16_t id() const { return id_; }

  // Registers by dense slot (the position in the description's tables).
  const PmcState& pmc(std::size_t slot) const { return pmcs_[slot]; }
  const PmdState& pmd(std::size_t slot) const { return pmds_[slot]; }
  PmdState& pmd(std::size_t slot) { return pmds_[slot]; }
  std::size_t pmdCount() const { return pmds_.size(); }
  std::size_t pmcCount() const { return pmcs_.size(); }

  // Apply already validated writes, in order. A PMD write's value is the
  // target's, which the set does not keep: `written(slot, value)` is called
  // for each, for the session to store; it is also each new child's start
  // (PmdState::initial). The PMDs the PMCs enable are worked out once, at the
  // end: a whole-set write of 11 registers spent a quarter of its time
  // working them out again after each PMC.
  template <class Written>
  void apply(std::span<const RegWrite> writes, Written&& written) {
    bool pmcs = false;
    for (const RegWrite& w : writes) {
      if (const auto* c = std::get_if<PmcWrite>(&w)) {
        setPmc(*c);
        pmcs = true;
      } else {
        const auto& d = std::get<PmdWrite>(w);
        written(setPmd(d), d.value);
      }
    }
    if (pmcs) recomputeUsed();
  }

  // Counters that count while this set is active (pfmfs(5), sets/N/pmcK), by PMD number.
  pmu::RegMask usedPmds() const { return used_pmds_; }
  // The hardware value of the PMC in `slot` with the engine's bits added.
  std::uint64_t hardwarePmc(std::size_t slot, bool interrupts) const;
  bool noEmul64(unsigned pmd_index) const;

  // Every register whose value or attributes differ from a fresh set, in
  // register order: what `regs` prints. `pmd_values` are the PMDs' values
  // by slot (the target's).
  std::vector<RegWrite> nonDefaultRegisters(std::span<const std::uint64_t> pmd_values) const;

  // Reload the switch counters: done at each activation.
  void reloadSwitchCounters();

  SwitchSpec switch_spec;
  std::uint64_t runs = 0;         // activations
  std::uint64_t duration_ns = 0;  // target time spent active and counting
  pmu::RegMask ovfl_pmds = 0;     // PMDs of the last overflow

 private:
  void setPmc(const PmcWrite& w);
  std::size_t setPmd(const PmdWrite& w);  // its slot
  void recomputeUsed();

  std::uint16_t id_;
  const pmu::PmuDescription& desc_;
  std::vector<PmcState> pmcs_;
  std::vector<PmdState> pmds_;
  pmu::RegMask used_pmds_ = 0;
};

}  // namespace pfmfs::session
