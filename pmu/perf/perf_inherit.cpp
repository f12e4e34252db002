// The perf backend's followed children: the tree clock, the tree groups and
// the ledger of the children's task records.
#include "pmu/perf/perf_inherit.h"

#include <cerrno>
#include <fstream>
#include <string>

#include "pmu/perf_event/perf_poller.h"

namespace pfmfs::pmu::perf {

namespace {

// Whether thread `tid` has finished its exit: its /proc/TID/stat is gone
// (reaped) or says Z (zombie) or X (dead). /proc/TID names any thread.
bool exitFinished(pid_t tid) {
  std::ifstream f("/proc/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return true;
  // pid (comm) state ...: comm may hold spaces and parentheses.
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return true;
  const char state = line[close + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

// ---- ChildLedger ------------------------------------------------------------------

void ChildLedger::opened(std::uint64_t id, std::uint16_t set, std::size_t slot) {
  events_[id] = {set, slot};
  // The children alive now were created without it: whatever it counts in
  // the target while they live, they do not.
  for (auto& [tid, c] : children_)
    if (!c.exited) c.counts.complete = false;
}

void ChildLedger::closed(std::uint64_t id) {
  events_.erase(id);
  std::vector<pid_t> done;
  for (auto& [tid, c] : children_) {
    // A child that already read it out keeps its count; the others' copies
    // are freed without a READ.
    if (c.expected.erase(id) == 0) continue;
    c.counts.complete = false;
    if (c.exited && c.expected.empty()) done.push_back(tid);
  }
  for (pid_t tid : done) finish(tid);
}

void ChildLedger::lost() {
  lost_ = true;
  for (auto& [tid, c] : children_) c.counts.complete = false;
}

void ChildLedger::add(const TaskRecord& r, std::uint64_t now_ns) {
  const auto tid = static_cast<pid_t>(r.tid);
  // The target's own EXIT: the engine learns of it from gone().
  if (tid == target_) return;
  auto it = children_.find(tid);
  switch (r.kind) {
    case TaskRecord::Kind::Fork: {
      if (it != children_.end()) {
        // The tid was reused: the child it named ended without our seeing
        // all of it (its records lost, or its READs late).
        it->second.counts.complete = false;
        finish(tid);
      }
      Child c;
      c.pid = static_cast<pid_t>(r.pid);
      c.parent_tid = static_cast<pid_t>(r.ptid);
      for (const auto& [id, where] : events_) c.expected.insert(id);
      children_.emplace(tid, std::move(c));
      ChildEvent e;
      e.kind = ChildEvent::Kind::Created;
      e.pid = static_cast<pid_t>(r.pid);
      e.tid = tid;
      e.parent_tid = static_cast<pid_t>(r.ptid);
      ready_.push_back(std::move(e));
      return;
    }
    case TaskRecord::Kind::Exit:
      if (it == children_.end()) return;  // its FORK was lost: nothing to attribute
      exited(tid, it->second, now_ns);
      return;
    case TaskRecord::Kind::Read: {
      if (it == children_.end()) return;
      Child& c = it->second;
      // An event closed since counted for nothing the engine still has.
      if (auto ev = events_.find(r.id); ev != events_.end()) {
        auto& counts = c.counts.by_set[ev->second.first];
        counts.resize(pmd_slots_, 0);
        counts[ev->second.second] = r.value;
      }
      c.expected.erase(r.id);
      // READs come only as a thread exits: its EXIT may have been lost.
      exited(tid, c, now_ns);
      return;
    }
  }
}

void ChildLedger::exited(pid_t tid, Child& c, std::uint64_t now_ns) {
  if (!c.exited) {
    c.exited = true;
    c.exited_at = now_ns;
  }
  if (c.expected.empty()) finish(tid);
}

void ChildLedger::finish(pid_t tid) {
  auto it = children_.find(tid);
  if (it == children_.end()) return;
  Child& c = it->second;
  ChildEvent e;
  e.kind = ChildEvent::Kind::Exited;
  e.pid = c.pid;
  e.tid = tid;
  e.parent_tid = c.parent_tid;
  // Neither its EXIT nor a READ came: nothing is known of its counts.
  if (c.exited) {
    if (!c.expected.empty()) c.counts.complete = false;
    e.counts = std::move(c.counts);
  }
  ready_.push_back(std::move(e));
  children_.erase(it);
}

void ChildLedger::beginTake(const Finished& finished, std::uint64_t now_ns) {
  for (auto& [tid, c] : children_) {
    if (c.exited) {
      // Here only while READs are missing: rare, and short.
      c.give_up = now_ns - c.exited_at >= kReadWaitNs || finished(tid);
    } else if (lost_) {
      // Its EXIT may have been among the records lost. Asked only then: a
      // look at /proc per live child and take would be too dear.
      c.give_up = finished(tid);
    }
  }
}

void ChildLedger::take(std::vector<ChildEvent>& out) {
  std::vector<pid_t> done;
  for (const auto& [tid, c] : children_)
    if (c.give_up) done.push_back(tid);
  for (pid_t tid : done) finish(tid);
  for (auto& e : ready_) out.push_back(std::move(e));
  ready_.clear();
}

// ---- TreeFollower -----------------------------------------------------------------

TreeFollower::TreeFollower(pid_t tid, int anchor_fd, const PmuDescription& desc, Poller& poller)
    : tid_(tid), desc_(desc), anchor_fd_(anchor_fd), poller_(poller), ledger_(tid, desc.pmds.size()) {}

TreeFollower::~TreeFollower() {
  if (watch_) poller_.unwatch(watch_key_);
  groups_.clear();
}

Result<std::unique_ptr<TreeFollower>> TreeFollower::open(pid_t tid, int anchor_fd, const PmuDescription& desc,
                                                         Poller& poller, std::weak_ptr<TargetListener> listener) {
  std::unique_ptr<TreeFollower> f(new TreeFollower(tid, anchor_fd, desc, poller));
  perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);  // as the anchor
  a.inherit = 1;
  a.task = 1;
  // No inherit_stat: each child's own clock is of no use (its READ would
  // only take room in the ring), and the sum a read() gives is right without.
  auto fd = openEvent(a, tid, -1, -1);
  if (!fd) {
    if (fd.code() == -ESRCH) return err(ESRCH, "no thread {}", tid);
    return err(-fd.code(), "following the children of thread {}: {}", tid, fd.error().reason);
  }
  f->clock_ = std::move(*fd);
  if (Status s = setOutput(f->clock_.get(), anchor_fd); !s) return s.error();
  auto watch = std::make_shared<Watch>();
  watch->listener = std::move(listener);
  auto key = poller.watch(f->clock_.get(), watch);
  if (!key) return key.error();
  f->watch_ = std::move(watch);
  f->watch_key_ = *key;
  return f;
}

bool TreeFollower::has(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted) const {
  auto it = groups_.find(set);
  const std::size_t n = it == groups_.end() ? 0 : it->second.size();
  if (n != wanted.size()) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (it->second[i].slot != wanted[i].first || !(it->second[i].event == wanted[i].second)) return false;
  return true;
}

void TreeFollower::close(std::vector<TreeEvent>& group) {
  for (const TreeEvent& e : group) ledger_.closed(e.id);
  group.clear();
}

Status TreeFollower::put(std::uint16_t set, const std::vector<std::pair<std::size_t, CounterEvent>>& wanted,
                         std::span<const std::uint64_t> periods) {
  if (!periods.empty()) {
    if (!sampler_) sampler_ = std::make_unique<ChildSampler>(tid_, desc_);
    if (Status s = sampler_->put(set, wanted, periods); !s) return s;
  }
  if (has(set, wanted)) return {};
  std::vector<TreeEvent>& g = groups_[set];
  close(g);
  std::vector<TreeEvent> fresh;
  for (const auto& [slot, ev] : wanted) {
    perf_event_attr a = counterAttr(ev, fresh.empty());  // members follow their leader, in every child too
    a.inherit = 1;
    a.inherit_stat = 1;  // a READ of each child's count at its exit
    a.read_format = kTaskReadFormat;
    const int leader = fresh.empty() ? -1 : fresh.front().fd.get();
    auto fd = openEvent(a, tid_, -1, leader);
    if (!fd) {
      return err(fd.code() == -ENOENT || fd.code() == -EINVAL ? EINVAL : -fd.code(), "pmd{} (inherited): {}",
                 desc_.pmds[slot].index, fd.error().reason);
    }
    TreeEvent e;
    e.slot = slot;
    e.event = ev;
    e.fd = std::move(*fd);
    if (Status s = setOutput(e.fd.get(), anchor_fd_); !s) return s;
    auto id = eventId(e.fd.get());
    if (!id) return id.error();
    e.id = *id;
    fresh.push_back(std::move(e));
  }
  // Only now, so that a failure leaves the set without events rather than
  // the ledger expecting some no child carries.
  for (const TreeEvent& e : fresh) ledger_.opened(e.id, set, e.slot);
  g = std::move(fresh);
  return {};
}

std::optional<std::pair<std::uint16_t, std::size_t>> TreeFollower::sampledBy(std::uint64_t id) const {
  return sampler_ ? sampler_->find(id) : std::nullopt;
}

void TreeFollower::takeSamples(std::vector<OverflowRecord>& out) {
  if (sampler_) sampler_->take(out);
}

void TreeFollower::enable(std::uint16_t set) {
  if (sampler_) sampler_->enable(set);
  auto it = groups_.find(set);
  if (it != groups_.end() && !it->second.empty()) (void)enableEvent(it->second.front().fd.get(), false);
}

void TreeFollower::disable(std::uint16_t set) {
  if (sampler_) sampler_->disable(set);
  auto it = groups_.find(set);
  if (it != groups_.end() && !it->second.empty()) (void)disableEvent(it->second.front().fd.get(), false);
}

Result<std::uint64_t> TreeFollower::timeNs() { return readCount(clock_.get()); }

void TreeFollower::beginTake(std::uint64_t now_ns) { ledger_.beginTake(exitFinished, now_ns); }

}  // namespace pfmfs::pmu::perf
