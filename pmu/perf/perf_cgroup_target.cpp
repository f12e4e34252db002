// PerfCgroupTarget: a control group's PMU as the sum of one perf group per
// CPU (see perf_cgroup_target.h; pfmfs(5), CONTROL-GROUP LOADS).
#include "pmu/perf/perf_cgroup_target.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "pmu/host_info.h"
#include "pmu/perf/perf_inherit.h"
#include "pmu/perf/perf_target.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/perf_event/perf_poller.h"

namespace pfmfs::pmu::perf {

namespace {

// Every call goes to each CPU's PMU. A counter's value is the value loaded
// plus what every CPU counted since; its sampling period runs on each CPU
// (perf's cgroup mode knows no sum across CPUs), so an overflow on any CPU
// is the counter's overflow, and its reload restarts every CPU's period.
// Until that overflow comes, a sum past the wrap reads as the last value
// below it, never a wrapped one.
class PerfCgroupTarget final : public TargetPmu {
 public:
  PerfCgroupTarget(const PmuDescription& desc, const Target& target, std::vector<std::unique_ptr<TargetPmu>> cpus)
      : desc_(desc), target_(target), cpus_(std::move(cpus)), base_(desc.pmds.size(), 0), tmp_(desc.pmds.size(), 0) {}

  Status loadSet(const SetImage& image) override {
    for (auto& c : cpus_)
      if (Status s = c->loadSet(image); !s) return s;
    std::copy(image.pmd_bits.begin(), image.pmd_bits.begin() + std::min(image.pmd_bits.size(), base_.size()),
              base_.begin());
    return {};
  }

  void reloadPmd(unsigned index, std::uint64_t hw_bits) override {
    // The CPU that overflowed keeps what it counted since the overflow; the
    // others start again from now.
    for (auto& c : cpus_) c->reloadPmd(index, hw_bits);
    for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot)
      if (desc_.pmds[slot].index == index) base_[slot] = hw_bits;
  }

  void readPmds(RegMask pmds, std::span<std::uint64_t> out) override {
    std::vector<std::uint64_t> sum(base_);
    for (auto& c : cpus_) {
      std::copy(base_.begin(), base_.end(), tmp_.begin());
      c->readPmds(pmds, tmp_);
      for (std::size_t slot = 0; slot < base_.size(); ++slot) sum[slot] += tmp_[slot] - base_[slot];
    }
    for (std::size_t slot = 0; slot < desc_.pmds.size() && slot < out.size(); ++slot) {
      if (!(pmds & regBit(desc_.pmds[slot].index))) continue;
      const unsigned w = desc_.pmds[slot].width;
      const std::uint64_t top = w >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << w) - 1;
      // Past the wrap (or past 2^64) before the overflow is taken: hold below it.
      const bool past = sum[slot] > top || sum[slot] < base_[slot];
      out[slot] = past ? top : sum[slot];
    }
  }

  void enable() override {
    for (auto& c : cpus_) c->enable();
  }
  void disable() override {
    for (auto& c : cpus_) c->disable();
  }

  // Wall time, as for a CPU: a group's counts over the time it was loaded.
  std::uint64_t timeNs() override {
    last_time_ = std::max(last_time_, monotonicNs());
    return last_time_;
  }
  std::uint64_t advanceTo(std::uint64_t /*t*/) override { return last_time_; }
  std::uint64_t nextOverflowNs() override { return kNever; }

  // The CPUs in turn, so that a busy one does not hide the others' overflows.
  std::optional<HwOverflow> takeOverflow() override {
    for (std::size_t i = 0; i < cpus_.size(); ++i) {
      const std::size_t k = (next_ + i) % cpus_.size();
      if (auto o = cpus_[k]->takeOverflow()) {
        next_ = (k + 1) % cpus_.size();
        return o;
      }
    }
    return std::nullopt;
  }

  void hold(bool /*held*/) override {}

  // perf's events of a removed group just stop counting: its directory says it.
  bool gone() override { return target_.cgroup->removed(); }

  std::uint64_t unscheduledNs() override {
    std::uint64_t n = 0;
    for (auto& c : cpus_) n = std::max(n, c->unscheduledNs());
    return n;
  }
  std::uint64_t throttledCount() override {
    std::uint64_t n = 0;
    for (auto& c : cpus_) n += c->throttledCount();
    return n;
  }

 private:
  const PmuDescription& desc_;
  const Target target_;
  std::vector<std::unique_ptr<TargetPmu>> cpus_;
  std::vector<std::uint64_t> base_;  // by PMD slot: the value loaded or reloaded
  std::vector<std::uint64_t> tmp_;
  std::size_t next_ = 0;
  std::uint64_t last_time_ = 0;
};

}  // namespace

std::size_t cgroupCpuCount() { return onlineCpus().size(); }

Result<std::unique_ptr<TargetPmu>> attachPerfCgroup(Model model, const PmuDescription& desc, Poller& poller,
                                                    const Target& target, std::weak_ptr<TargetListener> listener,
                                                    std::size_t ring_pages) {
  if (!target.cgroup) return err(EINVAL, "a control group target without its group");
  if (target.inherit) return err(EINVAL, "inherit follows a thread's children: a control group counts them already");
  std::vector<std::unique_ptr<TargetPmu>> cpus;
  for (int cpu : onlineCpus()) {
    const OpenSpec at{target.cgroup->fd(), cpu, PERF_FLAG_PID_CGROUP};
    // Each CPU's anchor owns its ring, where that CPU's overflows go; it
    // counts the group's time on the CPU (the session's time is wall time).
    perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_CPU_CLOCK);
    a.exclude_kernel = 0;
    auto anchor = openEvent(a, at.pid, at.cpu, -1, at.flags);
    if (!anchor)
      return err(-anchor.code(), "the kernel refused to monitor control group {} on cpu {}: {}{}",
                 target.cgroup->path(), cpu, anchor.error().reason, paranoidHint());
    auto ring = std::make_unique<RingBuffer>();
    if (Status s = ring->map(anchor->get(), ring_pages); !s) return s.error();
    auto watch = std::make_shared<Watch>();
    watch->listener = listener;
    auto key = poller.watch(anchor->get(), watch);
    if (!key) return key.error();
    cpus.push_back(makePerfTarget(model, desc, poller, target, 0, std::move(*anchor), std::move(ring), std::move(watch),
                                  *key, nullptr, at));
  }
  if (cpus.empty()) return err(EINVAL, "no cpu is online");
  return std::unique_ptr<TargetPmu>(new PerfCgroupTarget(desc, target, std::move(cpus)));
}

}  // namespace pfmfs::pmu::perf
