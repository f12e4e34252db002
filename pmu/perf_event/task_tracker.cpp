// Following a thread's descendants with perf task records.
#include "pmu/perf_event/task_tracker.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>

#include "pmu/host_info.h"

namespace pfmfs::pmu::perf {

// ---------------------------------------------------------------- folder

void TaskRecordFolder::beginTake(const Finished& finished, std::uint64_t now_ns) {
  for (auto& [tid, c] : children_) {
    if (c.give_up || !(c.exited || audit_)) continue;
    c.give_up = (c.exited && now_ns - c.exit_seen_ns >= kReadWaitNs) || finished(tid);
  }
  audit_ = false;
}

void TaskRecordFolder::add(const TaskRecord& r, std::uint64_t now_ns, std::vector<ChildEvent>& out) {
  const auto tid = static_cast<pid_t>(r.tid);
  if (tid == target_) return;  // the target's own exit: the engine learns it elsewhere
  auto it = children_.find(tid);
  switch (r.kind) {
    case TaskRecord::Kind::Fork: {
      // A tid comes back only once its thread was reaped, after its READ was
      // written: one still waiting lost its READ.
      if (it != children_.end()) {
        ++reads_lost_;
        exited(tid, it->second, std::nullopt, out);
        children_.erase(it);
      }
      children_[tid] = Child{static_cast<pid_t>(r.pid)};
      ChildEvent e;
      e.kind = ChildEvent::Kind::Created;
      e.pid = static_cast<pid_t>(r.pid);
      e.tid = tid;
      e.parent_tid = static_cast<pid_t>(r.ptid);
      out.push_back(e);
      break;
    }
    case TaskRecord::Kind::Exit:
      if (it != children_.end() && !it->second.exited) {
        it->second.exited = true;
        it->second.exit_seen_ns = now_ns;
      }
      break;
    case TaskRecord::Kind::Read:
      // Also without its EXIT (lost to a full buffer): a READ is written at the exit.
      if (it != children_.end()) {
        exited(tid, it->second, r.value, out);
        children_.erase(it);
      }
      break;
  }
}

void TaskRecordFolder::endTake(std::vector<ChildEvent>& out) {
  for (auto it = children_.begin(); it != children_.end();) {
    if (it->second.give_up) {
      ++reads_lost_;
      exited(it->first, it->second, std::nullopt, out);
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
}

void TaskRecordFolder::exited(pid_t tid, const Child& c, std::optional<std::uint64_t> final_ns,
                              std::vector<ChildEvent>& out) {
  ChildEvent e;
  e.kind = ChildEvent::Kind::Exited;
  e.pid = c.pid;
  e.tid = tid;
  e.final_time_ns = final_ns;
  out.push_back(e);
  if (recent_order_.size() == kRecentExits) {
    // A tid may be here twice (reused): only its newest entry is in recent_.
    pid_t old = recent_order_.front();
    recent_order_.pop_front();
    if (std::find(recent_order_.begin(), recent_order_.end(), old) == recent_order_.end()) recent_.erase(old);
  }
  recent_[tid] = c.pid;
  recent_order_.push_back(tid);
}

std::optional<pid_t> TaskRecordFolder::pidOf(pid_t tid) const {
  if (auto it = children_.find(tid); it != children_.end()) return it->second.pid;
  if (auto it = recent_.find(tid); it != recent_.end()) return it->second;
  return std::nullopt;
}

std::size_t TaskRecordFolder::waitingForRead() const {
  std::size_t n = 0;
  for (const auto& [tid, c] : children_) n += c.exited ? 1 : 0;
  return n;
}

// --------------------------------------------------------------- tracker

bool threadFinished(pid_t tid) {
  char buf[512];
  Fd fd(::open(fmt::format("/proc/{}/stat", tid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return true;  // reaped
  ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0) return true;
  // "tid (comm) S ...": the state follows the last ')', as comm may hold one.
  std::string_view s(buf, static_cast<std::size_t>(n));
  auto paren = s.rfind(')');
  if (paren == std::string_view::npos || paren + 2 >= s.size()) return false;
  char state = s[paren + 2];
  return state == 'Z' || state == 'X';
}

TaskTracker::TaskTracker(pid_t tid, Fd anchor, Fd tree, std::unique_ptr<RingBuffer> ring)
    : folder_(tid), anchor_(std::move(anchor)), tree_(std::move(tree)), ring_(std::move(ring)) {}

Result<std::unique_ptr<TaskTracker>> TaskTracker::open(pid_t tid) {
  auto refused = [tid](const Error& e) {
    if (e.code == -ESRCH) return err(ESRCH, "no thread {}", tid);
    return err(-e.code, "the kernel refused to follow the children of thread {}: {}{}", tid, e.reason, paranoidHint());
  };
  perf_event_attr a = userSoftwareAttr(PERF_COUNT_SW_DUMMY);
  // Every record wakes the poller: the buffer's watermark is one byte, so
  // that a child's exit reaches the engine at once, not when half the buffer
  // is full.
  a.watermark = 1;
  a.wakeup_watermark = 1;
  auto anchor = openEvent(a, tid, -1, -1);
  if (!anchor) return refused(anchor.error());
  auto ring = std::make_unique<RingBuffer>();
  if (Status s = ring->map(anchor->get(), kTrackerPages); !s)
    return err(-s.code(), "{}{}", s.error().reason, paranoidHint());

  // A child's READ of task-clock is its whole CPU time.
  perf_event_attr t = userSoftwareAttr(PERF_COUNT_SW_TASK_CLOCK);
  t.inherit = 1;
  t.inherit_stat = 1;  // a READ of each child's count at its exit
  t.task = 1;          // FORK and EXIT records
  t.sample_id_all = 0;
  t.read_format = kTaskReadFormat;
  // Enabled only once its output has a buffer, so that no record is lost to
  // an event with nowhere to write.
  t.disabled = 1;
  auto tree = openEvent(t, tid, -1, -1);
  if (!tree) return refused(tree.error());
  if (Status s = setOutput(tree->get(), anchor->get()); !s)
    return err(-s.code(), "redirecting the task records of thread {}: {}", tid, s.error().reason);
  if (Status s = enableEvent(tree->get(), false); !s) return refused(s.error());
  return std::unique_ptr<TaskTracker>(new TaskTracker(tid, std::move(*anchor), std::move(*tree), std::move(ring)));
}

void TaskTracker::take(std::vector<ChildEvent>& out) {
  // The tree event hangs up once no followed thread is left (the kernel
  // counts its inherited copies, which write their EXIT and READ before
  // they go): a child still followed then lost its records, however that
  // came, and is looked at as after a loss, so that the session ends.
  if (!tree_hung_up_) {
    pollfd p{tree_.get(), 0, 0};
    if (::poll(&p, 1, 0) == 1 && (p.revents & POLLHUP)) {
      tree_hung_up_ = true;
      folder_.lostRecords();
    }
  }
  for (int round = 0; round < 2; ++round) {
    // Before the drain (see TaskRecordFolder): a child seen finished now has
    // its READ in this drain or never.
    folder_.beginTake(threadFinished, monotonicNs());
    overflows_.clear();
    records_.clear();
    ring_->take(overflows_, &records_);
    std::uint64_t lost = 0;
    for (const auto& o : overflows_) lost += o.lost;
    const std::uint64_t now = monotonicNs();
    for (const auto& r : records_) folder_.add(r, now, out);
    folder_.endTake(out);
    if (lost == 0) break;
    // A child's EXIT and READ may be among the records dropped: a second
    // round looks at every followed child.
    lost_ += lost;
    folder_.lostRecords();
  }
}

}  // namespace pfmfs::pmu::perf
