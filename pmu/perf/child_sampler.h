// A sampling session's samples of the children it follows on perf
// (Target::sampling with inherit): per online cpu, one inherited event per
// sampling PMD of each set, each sampling with its PMD's period, writing
// into a ring buffer of that cpu. A ring per cpu because the kernel writes
// an inherited copy's samples into its parent's ring from the cpu the child
// runs on, and a ring takes one writer at a time (which is why perf refuses
// to map an inherited event that is not bound to a cpu): children running
// side by side on two cpus into one ring lose records, and at worst the
// ring's order. The copies re-arm themselves with the period at every
// overflow; the kernel gives no handle on them to reset or read.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/perf/perf_models.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

class ChildSampler {
 public:
  ChildSampler(pid_t tid, const PmuDescription& desc) : tid_(tid), desc_(desc) {}

  // Opens `set`'s sampling events, disabled, where `periods` (by slot) has a
  // period: once per set, unless its events changed (the children created
  // before then lose their copies, as with the tree group).
  Status put(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted,
             std::span<const std::uint64_t> periods);
  void enable(std::uint16_t set);
  void disable(std::uint16_t set);
  // The set and slot of sampling event `id`, if it is one of any set's: a
  // record may be taken after its set was switched out.
  std::optional<std::pair<std::uint16_t, std::size_t>> find(std::uint64_t id) const;
  // Every cpu's records written since the last call.
  void take(std::vector<OverflowRecord>& out);
  // The rings' pages, metadata included, on the cpus online now: what the
  // kernel locks once a set samples.
  static std::uint64_t ringBytes();

 private:
  struct Event {
    std::size_t slot = 0;
    CounterEvent event;
    Fd fd;
    std::uint64_t id = 0;
  };
  struct Cpu {
    Fd owner;  // a dummy event that owns the ring; the samplers write into it
    std::unique_ptr<RingBuffer> ring;
  };
  Status openRing(int cpu, Cpu& c);

  const pid_t tid_;
  const PmuDescription& desc_;
  std::map<int, Cpu> cpus_;  // by cpu, opened with the first set
  struct SetEvents {
    std::vector<std::pair<std::size_t, CounterEvent>> wanted;  // the set's (slot, event) when opened
    std::vector<Event> events;                                 // every cpu's
  };
  std::map<std::uint16_t, SetEvents> sets_;
};

}  // namespace pfmfs::pmu::perf
