// The PMU of one thread or CPU as perf sees it: one perf group per set, the
// anchor's ring buffer of overflow records, and with inherit the followed
// children (perf_inherit.h).
#include "pmu/perf/perf_target.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <deque>
#include <map>
#include <vector>

#include "pmu/host_info.h"
#include "pmu/perf/perf_inherit.h"
#include "pmu/perf/sample_records.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/perf_event/perf_poller.h"

namespace pfmfs::pmu::perf {

namespace {

// A PERF_RECORD_LOST is replayed as at most this many overflows.
constexpr std::uint64_t kMaxLostReplay = 1024;
// Group ids (FastGroup::id), unique in the daemon.
std::atomic<std::uint64_t> next_group_id{1};

// The PMU of one thread or CPU as perf sees it.
class PerfTarget final : public TargetPmu {
 public:
  PerfTarget(Model model, const PmuDescription& desc, Poller& poller, const Target& target, pid_t tgid, Fd anchor,
             std::unique_ptr<RingBuffer> ring, std::shared_ptr<Watch> watch, std::uint64_t watch_key,
             std::unique_ptr<TreeFollower> tree, OpenSpec at)
      : model_(model),
        desc_(desc),
        poller_(poller),
        target_(target),
        tgid_(tgid),
        anchor_(std::move(anchor)),
        ring_(std::move(ring)),
        watch_(std::move(watch)),
        watch_key_(watch_key),
        tree_(std::move(tree)),
        at_(at) {
    if (target_.kind == TargetKind::Cpu) cpu_checked_at_ = monotonicNs();
  }

  ~PerfTarget() override {
    poller_.unwatch(watch_key_);
    // Groups close their events; the anchor (and its ring buffer) go last.
    groups_.clear();
    tree_.reset();
  }

  Status loadSet(const SetImage& image) override {
    Group& g = groups_[image.set];
    const auto wanted = wantedBy(image);
    // Records already written are from before this load: none is an
    // overflow of the values loaded now.
    dropPending();
    current_set_ = image.set;
    if (tree_) {
      if (Status s = tree_->put(image.set, wanted, treePeriods(image)); !s) {
        current_ = nullptr;
        return s;
      }
    }
    bool same = g.counters.size() == wanted.size();
    for (std::size_t i = 0; same && i < wanted.size(); ++i)
      same = g.counters[i].slot == wanted[i].first && g.counters[i].event == wanted[i].second;
    if (!same) {
      current_ = nullptr;
      g.counters.clear();
      g.frozen_valid = false;
      if (Status s = openGroup(g, wanted, image.pmd_bits); !s) {
        g.counters.clear();
        return s;
      }
      current_ = &g;
      return {};
    }
    if (!g.frozen_valid) {
      if (Status s = readGroup(g); !s) return s;
      g.frozen_valid = true;
    }
    for (Counter& c : g.counters) {
      c.base = image.pmd_bits[c.slot];
      c.ref = c.count;
      c.ovfl_valid = false;
      // The kernel's next overflow is where ours is (a set switched away and
      // back, values untouched): nothing to tell it. Otherwise restart its
      // period from here; the event is disabled, so it starts at the enable.
      std::uint64_t dist = periodFor(c.base);
      if (!inStep(c, dist)) {
        if (Status s = setPeriod(c.fd.get(), dist); !s) return s;
        c.period = dist;
        c.phase_at = c.ref;
        c.phase_known = true;
      }
    }
    current_ = &g;
    return {};
  }

  void reloadPmd(unsigned index, std::uint64_t hw_bits) override {
    Counter* c = counterOf(index);
    if (!c) return;
    c->base = hw_bits;
    // The reset happens at the overflow, as the hardware's reload would:
    // events counted since then stay counted.
    if (c->ovfl_valid) {
      c->ref = c->ovfl_at;
    } else {
      (void)readGroup(*current_);
      c->ref = c->count;
    }
    c->ovfl_valid = false;
    const std::uint64_t dist = periodFor(c->base);
    // The kernel re-armed the counter at the overflow with its period: when
    // that is the new period too (a reset to the same value, the common case)
    // there is nothing to do.
    if (inStep(*c, dist)) return;
    // Otherwise: stop the group (through its leader: a member cannot be
    // switched alone while the leader runs), give the event what is left to
    // the wrap, restart. An active event's period cannot change in place:
    // perf would raise an overflow at its next event.
    const int leader = current_->counters.front().fd.get();
    (void)disableEvent(leader, false);
    (void)readGroup(*current_);
    const std::uint64_t done = c->count - c->ref;
    const std::uint64_t left = done < dist ? dist - done : 1;
    (void)setPeriod(c->fd.get(), left);
    c->period = left;
    c->phase_at = c->count;
    c->phase_known = true;
    dropPending(c->id);
    if (enabled_) (void)enableEvent(leader, false);
  }

  void readPmds(RegMask pmds, std::span<std::uint64_t> out) override {
    if (!current_) return;
    if (enabled_ || !current_->frozen_valid) {
      (void)readGroup(*current_);
      if (!enabled_) current_->frozen_valid = true;
    }
    for (const Counter& c : current_->counters)
      if (pmds & regBit(desc_.pmds[c.slot].index)) out[c.slot] = c.base + (c.count - c.ref);
  }

  void enable() override {
    if (enabled_) return;
    enabled_ = true;
    if (!current_ || current_->counters.empty()) return;
    current_->frozen_valid = false;
    (void)enableEvent(current_->counters.front().fd.get(), false);
    if (tree_) tree_->enable(current_set_);
  }

  void disable() override {
    if (!enabled_) return;
    enabled_ = false;
    if (!current_ || current_->counters.empty()) return;
    (void)disableEvent(current_->counters.front().fd.get(), false);
    if (tree_) tree_->disable(current_set_);
  }

  std::uint64_t timeNs() override {
    if (target_.kind != TargetKind::Thread) {
      last_time_ = std::max(last_time_, monotonicNs());
    } else if (auto t = tree_ ? tree_->timeNs() : readCount(anchor_.get()); t.ok()) {
      // The thread's CPU time: the anchor counts its task-clock; with
      // inherit, the tree clock the whole followed tree's.
      last_time_ = std::max(last_time_, *t);
    }
    return last_time_;
  }

  // perf counts by itself: the present is where it is. The engine asks right
  // after timeNs(), so the time just read is the present, without a second
  // read of the anchor.
  std::uint64_t advanceTo(std::uint64_t /*t*/) override { return last_time_; }
  std::uint64_t nextOverflowNs() override { return kNever; }

  std::optional<HwOverflow> takeOverflow() override {
    for (;;) {
      if (pending_.empty()) {
        drain();
        if (pending_.empty()) return std::nullopt;
      }
      OverflowRecord r = pending_.front();
      pending_.pop_front();
      Counter* c = counterById(r.id);
      if (!c) {
        if (auto o = childSample(r)) return o;
        continue;  // an event of a set that is not loaded, or closed since
      }
      if (r.throttled) {
        ++throttled_;
        // Overflows during the throttle went unreported: where the kernel's
        // period now ends is unknown until the next reload restarts it.
        c->phase_known = false;
        continue;
      }
      if (c->phase_known) {
        // The kernel raised it where its period ended, and re-armed there.
        c->ovfl_at = c->phase_at + c->period;
        c->phase_at = c->ovfl_at;
      } else {
        // After a throttle: the best instant known is now.
        (void)readGroup(*current_);
        c->ovfl_at = c->phase_at = c->count;
      }
      c->ovfl_valid = true;
      HwOverflow o;
      o.pmds = regBit(desc_.pmds[c->slot].index);
      o.ip = r.ip;
      o.time_ns = r.time_ns;
      o.cpu = static_cast<int>(r.lost ? std::max(at_.cpu, 0) : r.cpu);
      if (r.lost == 0) {
        o.pid = static_cast<pid_t>(r.pid);
        o.tid = static_cast<pid_t>(r.tid);
        readValues(r, o);
      } else if (target_.kind == TargetKind::Thread) {
        o.pid = tgid_;
        o.tid = target_.id;
      }
      return o;
    }
  }

  void hold(bool /*held*/) override {}  // PerfBackend::holdsThreads() is false

  bool gone() override {
    if (target_.kind == TargetKind::Thread) return watch_->hup.load();
    if (target_.kind == TargetKind::Cgroup) return false;  // its PerfCgroupTarget looks at the group
    // A CPU going offline says nothing on the perf descriptors: look now and
    // then (hot-unplug is rare; /sys costs a few syscalls).
    std::uint64_t now = monotonicNs();
    if (now - cpu_checked_at_ >= 100'000'000) {
      cpu_checked_at_ = now;
      cpu_gone_ = !cpuOnline(target_.id);
    }
    return cpu_gone_;
  }

  std::uint64_t unscheduledNs() override { return unscheduled_ns_; }
  std::uint64_t throttledCount() override { return throttled_; }

  // readPmds' arithmetic, for a reader of the group's leader: the counts it
  // reads are where count is here. Not with inherit: the children's events
  // are not in the group.
  std::optional<FastGroup> fastGroup() override {
    if (!current_ || current_->counters.empty() || tree_) return std::nullopt;
    FastGroup f;
    f.id = current_->id;
    f.read_format = kGroupReadFormat;
    f.size = current_->counters.size();
    for (std::size_t i = 0; i < current_->counters.size(); ++i) {
      const Counter& c = current_->counters[i];
      f.fds.push_back(c.fd.get());
      f.counters.push_back({c.slot, static_cast<std::uint16_t>(i), c.base, c.ref});
    }
    return f;
  }

  void takeChildEvents(std::vector<ChildEvent>& out) override {
    if (!tree_) return;
    tree_->beginTake(monotonicNs());
    drain();
    tree_->ledger().take(out);
  }

  Status prepareSets(std::span<const SetImage> sets) override {
    if (!tree_) return {};
    // The ledger must know which children were created before the events change.
    drain();
    for (const SetImage& image : sets)
      if (Status s = tree_->put(image.set, wantedBy(image), treePeriods(image)); !s) return s;
    return {};
  }

 private:
  struct Counter {
    std::size_t slot = 0;  // PMD slot in the description
    CounterEvent event;
    Fd fd;
    std::uint64_t id = 0;        // PERF_EVENT_IOC_ID: names it in overflow records
    std::uint64_t base = 0;      // the value loaded (hardware bits)
    std::uint64_t ref = 0;       // the perf count when `base` was loaded
    std::uint64_t count = 0;     // the perf count at the last read
    std::uint64_t period = 0;    // the kernel's sample period
    std::uint64_t phase_at = 0;  // the perf count where the kernel's period started
    bool phase_known = true;     // false after a throttle, until the period is restarted
    std::uint64_t ovfl_at = 0;   // the perf count at the last overflow taken
    bool ovfl_valid = false;     // ovfl_at is the overflow a reload refers to
  };
  struct Group {
    std::vector<Counter> counters;  // in the order opened; the first leads
    bool frozen_valid = false;      // disabled and read since: counts are current
    std::uint64_t time_enabled = 0, time_running = 0;
    std::uint64_t id = 0;  // FastGroup::id: new at every openGroup
  };

  Status openGroup(Group& g, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted,
                   std::span<const std::uint64_t> bits) {
    g.time_enabled = g.time_running = 0;
    g.id = next_group_id.fetch_add(1, std::memory_order_relaxed);
    for (const auto& [slot, ev] : wanted) {
      Counter c;
      c.slot = slot;
      c.event = ev;
      c.base = bits[slot];
      c.period = periodFor(c.base);
      perf_event_attr a = counterAttr(ev, g.counters.empty());
      a.read_format = kGroupReadFormat;
      a.sample_period = c.period;
      a.sample_type = target_.sampling && !target_.inherit ? kSampleReadType : kSampleType;
      // One wakeup per overflow, except when sampling: there the wakeup's
      // irq_work and IPI would cost the sampled thread more than the
      // sample itself, and the engine's tick takes the records instead.
      a.wakeup_events = target_.sampling ? 0 : 1;
      const int leader = g.counters.empty() ? -1 : g.counters.front().fd.get();
      auto fd = openEvent(a, at_.pid, at_.cpu, leader, at_.flags);
      if (!fd) {
        return err(fd.code() == -ENOENT || fd.code() == -EINVAL ? EINVAL : -fd.code(), "pmd{}: {}",
                   desc_.pmds[slot].index, fd.error().reason);
      }
      c.fd = std::move(*fd);
      if (Status s = setOutput(c.fd.get(), anchor_.get()); !s) return s;
      auto id = eventId(c.fd.get());
      if (!id) return id.error();
      c.id = *id;
      g.counters.push_back(std::move(c));
    }
    g.frozen_valid = true;  // fresh and disabled: every count is 0
    return {};
  }

  Status readGroup(Group& g) {
    if (g.counters.empty()) return {};
    if (Status s = perf::readGroup(g.counters.front().fd.get(), g.counters.size(), reading_); !s) return s;
    for (std::size_t i = 0; i < g.counters.size(); ++i) g.counters[i].count = reading_.values[i];
    // perf multiplexes a group it cannot fit on the hardware; we never scale
    // for it, we say it: the enabled time it did not run.
    std::uint64_t de = reading_.time_enabled - g.time_enabled, dr = reading_.time_running - g.time_running;
    if (de > dr) unscheduled_ns_ += de - dr;
    g.time_enabled = reading_.time_enabled;
    g.time_running = reading_.time_running;
    return {};
  }

  // Whether the kernel's next overflow of `c` is where the value's wrap is,
  // `dist` events after c.ref. Counters far from their wrap (2^63 events and
  // more) need no agreement: neither will ever come.
  static bool inStep(const Counter& c, std::uint64_t dist) {
    if (!c.phase_known) return false;
    if (dist == kMaxPeriod && c.period == kMaxPeriod) return true;
    return c.phase_at + c.period == c.ref + dist;
  }

  Counter* counterOf(unsigned pmd_index) {
    if (!current_) return nullptr;
    for (Counter& c : current_->counters)
      if (desc_.pmds[c.slot].index == pmd_index) return &c;
    return nullptr;
  }

  Counter* counterById(std::uint64_t id) {
    if (!current_) return nullptr;
    for (Counter& c : current_->counters)
      if (c.id == id) return &c;
    return nullptr;
  }

  // A sampling session's tree group samples the children (TreeFollower::put).
  std::vector<std::uint64_t> treePeriods(const SetImage& image) const {
    return target_.sampling ? childPeriods(image.pmd_bits) : std::vector<std::uint64_t>{};
  }

  // A record of the tree group's: a child's sample (its copy overflowed).
  // The target's own overflows of those events are its group's to report.
  std::optional<HwOverflow> childSample(const OverflowRecord& r) {
    if (!tree_) return std::nullopt;
    auto by = tree_->sampledBy(r.id);
    if (!by) return std::nullopt;
    if (r.throttled) {
      ++throttled_;
      return std::nullopt;
    }
    if (r.lost == 0 && r.tid == static_cast<std::uint32_t>(target_.id)) return std::nullopt;
    HwOverflow o = childSampleOf(r, desc_.pmds[by->second].index);
    o.set = by->first;
    return o;
  }

  // The sample's group read as the engine's values: each member counted
  // from its last load or reload. A member loaded since the overflow (the
  // record is older than its `ref`) is left to a read now.
  void readValues(const OverflowRecord& r, HwOverflow& o) const {
    if (r.nread == 0 || !current_) return;
    for (std::uint32_t i = 0; i < r.nread; ++i) {
      const auto [id, count] = r.read[i];
      for (const Counter& c : current_->counters) {
        if (c.id != id || count < c.ref) continue;
        if (o.read_values.empty()) o.read_values.assign(desc_.pmds.size(), 0);
        o.read_values[c.slot] = c.base + (count - c.ref);
        o.read_pmds |= regBit(desc_.pmds[c.slot].index);
      }
    }
  }

  // The events a set's image asks for, by PMD slot.
  std::vector<std::pair<std::size_t, CounterEvent>> wantedBy(const SetImage& image) const {
    std::vector<std::pair<std::size_t, CounterEvent>> wanted;
    for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
      if (!(image.pmds & regBit(desc_.pmds[slot].index))) continue;
      if (auto e = counterEvent(model_, desc_, image.pmcs, slot)) wanted.emplace_back(slot, *e);
    }
    return wanted;
  }

  // Takes what the kernel wrote: overflows into pending_ (a loss replayed as
  // overflows of the event it names), task records into the ledger.
  void drain() {
    ring_->take(records_, tree_ ? &tasks_ : nullptr);
    if (tree_) tree_->takeSamples(records_);
    for (const auto& r : records_) {
      if (r.lost == 0) {
        pending_.push_back(r);
        continue;
      }
      if (tree_) tree_->ledger().lost();
      for (std::uint64_t i = 0; i < std::min(r.lost, kMaxLostReplay); ++i) pending_.push_back(r);
    }
    records_.clear();
    if (tasks_.empty()) return;
    const std::uint64_t now = monotonicNs();
    for (const auto& t : tasks_) tree_->ledger().add(t, now);
    tasks_.clear();
  }

  // Forgets the overflow records not yet taken (of one event, or all). A
  // child's samples are kept: they reset nothing, and are samples of the
  // set that took them whatever is loaded now.
  void dropPending(std::optional<std::uint64_t> id = std::nullopt) {
    drain();
    if (!id) {
      std::erase_if(pending_, [&](const OverflowRecord& r) { return !tree_ || !tree_->sampledBy(r.id); });
      return;
    }
    std::erase_if(pending_, [&](const OverflowRecord& r) { return r.id == *id; });
  }

  const Model model_;
  const PmuDescription& desc_;
  Poller& poller_;
  const Target target_;
  const pid_t tgid_;
  Fd anchor_;  // task-clock (thread) or cpu-clock (cpu): the clock and the ring buffer's owner
  std::unique_ptr<RingBuffer> ring_;
  std::shared_ptr<Watch> watch_;
  std::uint64_t watch_key_;
  std::unique_ptr<TreeFollower> tree_;  // with inherit: the children's events and records
  const OpenSpec at_;

  std::map<std::uint16_t, Group> groups_;  // one per set loaded so far
  Group* current_ = nullptr;               // the loaded set's group
  std::uint16_t current_set_ = 0;          // and its id
  bool enabled_ = false;
  std::uint64_t last_time_ = 0;
  std::uint64_t unscheduled_ns_ = 0;
  std::uint64_t throttled_ = 0;  // THROTTLE records of this target's events
  std::uint64_t cpu_checked_at_ = 0;
  bool cpu_gone_ = false;
  GroupReading reading_;
  std::vector<OverflowRecord> records_;
  std::deque<OverflowRecord> pending_;
  std::vector<TaskRecord> tasks_;
};

}  // namespace

std::unique_ptr<TargetPmu> makePerfTarget(Model model, const PmuDescription& desc, Poller& poller, const Target& target,
                                          pid_t tgid, Fd anchor, std::unique_ptr<RingBuffer> ring,
                                          std::shared_ptr<Watch> watch, std::uint64_t watch_key,
                                          std::unique_ptr<TreeFollower> tree, OpenSpec at) {
  return std::make_unique<PerfTarget>(model, desc, poller, target, tgid, std::move(anchor), std::move(ring),
                                      std::move(watch), watch_key, std::move(tree), at);
}

}  // namespace pfmfs::pmu::perf
