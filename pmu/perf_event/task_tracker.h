// Following a thread's descendants with perf: which threads and processes it
// creates, and theirs, recursively, and what CPU time each had when it
// exited. A backend that adopts children (Inheritance::Adopt: the sim) turns
// them into TargetPmus of their own; the tracker only says who came and went.
//
// Two software events on the target, nothing beyond what perf_event_paranoid
// 2 allows on one's own threads (both count user level only):
// - the anchor: a dummy event, not inherited, whose ring buffer is mapped.
//   The kernel refuses to map an inherited per-task event, so the buffer
//   needs an event of its own.
// - the tree: task-clock with inherit, inherit_stat and task, its output
//   redirected into the anchor's buffer (PERF_EVENT_IOC_SET_OUTPUT). Every
//   followed thread carries an inherited copy, whose records go to the
//   parent event's buffer: PERF_RECORD_FORK when a followed thread creates a
//   thread or process, PERF_RECORD_EXIT when one ends, and then
//   PERF_RECORD_READ with its final task-clock, its CPU time in ns since its
//   creation (inherit_stat). The exiting task writes EXIT, then READ.
//
// A poller watches pollFd(), the tree event, not the anchor: the anchor
// reports POLLHUP for good as soon as the target exits, while the tree event
// stays readable until the last followed thread is gone (the kernel's
// is_event_hup counts an event's inherited children). Records of children go
// on arriving after the target has exited, for as long as the tracker lives.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/perf_event/perf_event.h"
#include "pmu/result.h"

namespace pfmfs::pmu::perf {

// Ring buffer data pages of a tracker (a power of two). A child costs three
// records of 48 bytes (FORK, EXIT, READ): 8 pages hold ~220 children created
// and ended between two takes. perf charges them to the daemon's locked
// memory (perf_event_mlock_kb, then RLIMIT_MEMLOCK; root is not limited).
inline constexpr std::size_t kTrackerPages = 8;

// How long a child whose EXIT was taken may wait for its READ when nothing
// says that the READ is gone (see TaskRecordFolder): a bound for the case the
// tid was reused meanwhile, far above the microseconds between the two.
inline constexpr std::uint64_t kReadWaitNs = 1'000'000'000;

// TaskTracker's records-to-events logic, without the kernel, so that tests
// can give it the orders the kernel rarely produces (a READ in a later take,
// a READ lost). A take is: beginTake (which children still waiting for
// their READ can no longer get it), add (each record, in buffer order),
// endTake (give those up).
//
// Records become events:
// - FORK -> Created{pid, tid, parent_tid = ptid}; the child is followed.
// - EXIT -> nothing yet: the child waits for its READ.
// - READ -> Exited{pid, tid, final_time_ns = the READ's value}.
// Records of the target itself (its own EXIT) and of tids that are not
// followed children (a FORK lost to a full buffer) are skipped: the engine
// learns the target's exit elsewhere and never saw the others.
//
// The exiting task writes its READ right after its EXIT, so a take that runs
// between the two sees only the EXIT. Such a child is reported when its READ
// comes (the READ wakes the poller, whose attention brings the next take).
// When the READ is lost (a full buffer), it is reported without a final time
// at the first take that starts after the task finished its exit: the kernel
// writes the READ before the task becomes a zombie (do_exit calls
// perf_event_exit_task before exit_notify), so a task seen as a zombie or
// reaped at the start of a take has either a READ in the buffer that take
// drains or none at all. kReadWaitNs bounds the wait when that cannot be
// seen (the tid was reused). A FORK of the same tid also ends the wait.
//
// A full buffer drops records (PERF_RECORD_LOST). A child whose FORK was
// dropped is never followed; one whose EXIT and READ were dropped would be
// followed forever: after a loss (lostRecords) the next take looks at every
// followed child, not only those waiting for a READ, and reports those that
// finished their exit without a final time.
class TaskRecordFolder {
 public:
  explicit TaskRecordFolder(pid_t target) : target_(target) {}

  // Whether a thread has finished its exit: a zombie, or reaped.
  using Finished = std::function<bool(pid_t tid)>;

  // Before the buffer is drained: notes the children waiting for a READ that
  // can no longer come (finished, or waiting since kReadWaitNs before now_ns).
  void beginTake(const Finished& finished, std::uint64_t now_ns);
  void add(const TaskRecord& r, std::uint64_t now_ns, std::vector<ChildEvent>& out);
  // After the buffer is drained: those children are reported, without a final time.
  void endTake(std::vector<ChildEvent>& out);
  // The drain met a PERF_RECORD_LOST.
  void lostRecords() { audit_ = true; }

  // The process of a followed child, also of one of the last kRecentExits
  // reported Exited: the engine adopts a child after its take, and it may be
  // gone by then.
  std::optional<pid_t> pidOf(pid_t tid) const;
  static constexpr std::size_t kRecentExits = 1024;
  std::size_t followed() const { return children_.size(); }
  std::size_t waitingForRead() const;
  std::uint64_t readsLost() const { return reads_lost_; }

 private:
  struct Child {
    pid_t pid = 0;
    bool exited = false;  // its EXIT was taken
    std::uint64_t exit_seen_ns = 0;
    bool give_up = false;  // beginTake: its READ cannot come any more
  };
  void exited(pid_t tid, const Child& c, std::optional<std::uint64_t> final_ns, std::vector<ChildEvent>& out);

  pid_t target_;
  std::map<pid_t, Child> children_;  // followed and not reported Exited
  std::map<pid_t, pid_t> recent_;    // tid -> pid of the last kRecentExits reported Exited
  std::deque<pid_t> recent_order_;   // their tids, oldest first
  std::uint64_t reads_lost_ = 0;
  bool audit_ = false;  // records were lost: the next beginTake looks at every child
};

// Follows the descendants of one thread. Calls come from one thread at a time
// (the engine, under the session lock); a poller only waits on pollFd().
class TaskTracker {
 public:
  // -ESRCH: no such thread; otherwise the kernel's refusal, with the
  // perf_event_paranoid level in the reason.
  static Result<std::unique_ptr<TaskTracker>> open(pid_t tid);

  // Appends the children created and exited since the last call, oldest
  // first. After a loss, a second round in the same call reports the
  // children whose exit records were dropped.
  void take(std::vector<ChildEvent>& out);

  // Readable when records arrived; POLLHUP once the target and every
  // followed thread are gone.
  int pollFd() const { return tree_.get(); }
  int anchorFd() const { return anchor_.get(); }

  // Records the kernel could not store (PERF_RECORD_LOST: the buffer was
  // full): children missed, or exits reported without a final time.
  std::uint64_t lost() const { return lost_; }
  std::optional<pid_t> pidOf(pid_t tid) const { return folder_.pidOf(tid); }

 private:
  TaskTracker(pid_t tid, Fd anchor, Fd tree, std::unique_ptr<RingBuffer> ring);

  TaskRecordFolder folder_;
  Fd anchor_;
  Fd tree_;
  bool tree_hung_up_ = false;  // every followed thread is gone
  std::unique_ptr<RingBuffer> ring_;
  std::uint64_t lost_ = 0;
  std::vector<OverflowRecord> overflows_;  // scratch of take()
  std::vector<TaskRecord> records_;
};

// Whether thread `tid` has finished its exit (a zombie, or reaped), from
// /proc/TID/stat: the TaskRecordFolder::Finished of a live tracker.
bool threadFinished(pid_t tid);

}  // namespace pfmfs::pmu::perf
