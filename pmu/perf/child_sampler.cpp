#include "pmu/perf/child_sampler.h"

#include <unistd.h>

#include "pmu/host_info.h"

namespace pfmfs::pmu::perf {

namespace {

// 16 pages per cpu, as a sampling target's own ring: some 1300 samples
// between two of the engine's ticks.
constexpr std::size_t kRingPages = 16;

}  // namespace

std::uint64_t ChildSampler::ringBytes() {
  const long n = ::sysconf(_SC_NPROCESSORS_CONF);
  std::uint64_t online = 0;
  for (int cpu = 0; cpu < n; ++cpu) online += cpuOnline(cpu) ? 1 : 0;
  return online * (kRingPages + 1) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

Status ChildSampler::openRing(int cpu, Cpu& c) {
  // Never enabled: it writes nothing of its own. Only its ring is wanted.
  perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_DUMMY);
  a.disabled = 1;
  auto fd = openEvent(a, tid_, cpu, -1);
  if (!fd) return err(-fd.code(), "sampling the children of thread {} on cpu {}: {}", tid_, cpu, fd.error().reason);
  c.owner = std::move(*fd);
  c.ring = std::make_unique<RingBuffer>();
  return c.ring->map(c.owner.get(), kRingPages);
}

Status ChildSampler::put(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted,
                         std::span<const std::uint64_t> periods) {
  // The set's events as they were opened: the periods of a later load (a
  // PMD's value mid-period, after a switch or a restart) change nothing.
  auto same = [&](const SetEvents& s) {
    if (s.wanted.size() != wanted.size()) return false;
    for (std::size_t k = 0; k < wanted.size(); ++k)
      if (s.wanted[k].first != wanted[k].first || !(s.wanted[k].second == wanted[k].second)) return false;
    return true;
  };
  auto it = sets_.find(set);
  if (it != sets_.end()) {
    if (same(it->second)) return {};
    sets_.erase(it);
  }
  std::vector<std::pair<std::size_t, CounterEvent>> sampled;
  for (const auto& w : wanted)
    if (w.first < periods.size() && periods[w.first]) sampled.push_back(w);
  if (cpus_.empty() && !sampled.empty()) {
    const long n = ::sysconf(_SC_NPROCESSORS_CONF);
    for (int cpu = 0; cpu < n; ++cpu) {
      if (!cpuOnline(cpu)) continue;
      if (Status s = openRing(cpu, cpus_[cpu]); !s) {
        cpus_.clear();
        return s;
      }
    }
  }
  SetEvents fresh;
  fresh.wanted = wanted;
  for (auto& [cpu, c] : cpus_) {
    for (const auto& [slot, ev] : sampled) {
      perf_event_attr a = counterAttr(ev, /*leads=*/true);
      a.inherit = 1;
      a.sample_period = periods[slot];
      a.sample_type = kSampleType;
      auto fd = openEvent(a, tid_, cpu, -1);
      if (!fd)
        return err(-fd.code(), "pmd{} (sampling the children) on cpu {}: {}", desc_.pmds[slot].index, cpu,
                   fd.error().reason);
      if (Status s = setOutput(fd->get(), c.owner.get()); !s) return s;
      auto id = eventId(fd->get());
      if (!id) return id.error();
      fresh.events.push_back(Event{slot, ev, std::move(*fd), *id});
    }
  }
  sets_[set] = std::move(fresh);
  return {};
}

void ChildSampler::enable(std::uint16_t set) {
  auto it = sets_.find(set);
  if (it == sets_.end()) return;
  for (const Event& e : it->second.events) (void)enableEvent(e.fd.get(), false);
}

void ChildSampler::disable(std::uint16_t set) {
  auto it = sets_.find(set);
  if (it == sets_.end()) return;
  for (const Event& e : it->second.events) (void)disableEvent(e.fd.get(), false);
}

std::optional<std::pair<std::uint16_t, std::size_t>> ChildSampler::find(std::uint64_t id) const {
  for (const auto& [set, events] : sets_)
    for (const Event& e : events.events)
      if (e.id == id) return std::make_pair(set, e.slot);
  return std::nullopt;
}

void ChildSampler::take(std::vector<OverflowRecord>& out) {
  for (auto& [cpu, c] : cpus_) c.ring->take(out);
}

}  // namespace pfmfs::pmu::perf
