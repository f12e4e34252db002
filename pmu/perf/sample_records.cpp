#include "pmu/perf/sample_records.h"

namespace pfmfs::pmu::perf {

std::uint64_t periodFor(std::uint64_t bits) {
  std::uint64_t dist = std::uint64_t{0} - bits;  // 2^64 - bits
  if (bits == 0 || dist > kMaxPeriod) return kMaxPeriod;
  return dist;
}

std::vector<std::uint64_t> childPeriods(std::span<const std::uint64_t> pmd_bits) {
  std::vector<std::uint64_t> periods(pmd_bits.size(), 0);
  for (std::size_t slot = 0; slot < periods.size(); ++slot) {
    const std::uint64_t p = periodFor(pmd_bits[slot]);
    if (p < kMaxPeriod) periods[slot] = p;
  }
  return periods;
}

HwOverflow childSampleOf(const OverflowRecord& r, unsigned index) {
  HwOverflow o;
  o.child_sample = true;
  o.pmds = regBit(index);
  if (r.lost == 0) {
    o.ip = r.ip;
    o.time_ns = r.time_ns;
    o.cpu = static_cast<int>(r.cpu);
    o.pid = static_cast<pid_t>(r.pid);
    o.tid = static_cast<pid_t>(r.tid);
  }
  return o;
}

}  // namespace pfmfs::pmu::perf
