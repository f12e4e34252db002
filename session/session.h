// A perfmon2 monitoring session: its mode and flags, its event sets, the state
// machine unloaded -> loaded -> active <-> masked, and everything that happens
// to a loaded session: 64-bit emulation, set switching, overflow processing,
// messages and time accounting (pfmfs(5); docs/design.md).
//
// Every public method takes the session's lock and may be called from any
// thread. A failing method changes nothing and leaves its reason in error().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "pmu/backend.h"
#include "pmu/fd.h"
#include "pmu/result.h"
#include "session/caller.h"
#include "session/driven_thread.h"
#include "session/event_set.h"
#include "session/fast_page_publisher.h"
#include "session/inheritance.h"
#include "session/message_queue.h"
#include "session/overflow_budget.h"
#include "session/register_rules.h"
#include "session/sample_buffer.h"

namespace pfmfs::session {

class Engine;

enum class Mode { Thread, System, Cgroup };
enum class State { Unloaded, Loaded, Active, Masked };

const char* toString(Mode m);
const char* toString(State s);

struct Flags {
  bool notify_block = false;  // hold the monitored thread until restart after a notification
  bool no_msg = false;        // queue no overflow messages (masking still happens)
  bool autoclose = false;     // the fs destroys the session when its last file closes
  bool inherit = false;       // follow the thread's children (pfmfs(5), INHERITANCE)

  bool operator==(const Flags&) const = default;
};

struct StateInfo {
  State state = State::Unloaded;
  Mode mode = Mode::Thread;
  std::optional<int> target;  // tid or cpu while loaded (0 for a control group)
  std::string target_path;    // a control group's path while loaded
  std::uint16_t set = 0;      // the active set (the next to run while stopped)
  std::size_t queued = 0;
  std::uint64_t lost = 0;
  bool exited = false;               // the monitored thread exited and unloaded the session
  std::uint64_t unscheduled_ns = 0;  // time the backend could not count the active set (perf's multiplexing)
  // With flags inherit (pfmfs(5), INHERITANCE):
  bool inherit = false;
  bool target_exited = false;  // while loaded: the target exited, children are still followed
  std::size_t followed = 0;    // children followed now
  std::uint64_t merged = 0;    // exited children whose counts were added to `children`
  std::uint64_t dropped = 0;   // exited children whose counts were not (the session was reprogrammed since)
  // With a sampling format (pfmfs(5), SAMPLING): the buffer's entries and fills.
  bool sampling = false;
  std::uint64_t smpl_count = 0;
  std::uint64_t smpl_overflows = 0;
  std::uint64_t smpl_dropped = 0;  // overflows taken while masked: no entry
  std::uint64_t throttled = 0;     // perf, while loaded: times the kernel throttled the overflow reports
};

struct SetInfo {
  std::uint16_t id = 0;
  SwitchSpec switch_spec;
  std::uint64_t runs = 0;
  std::uint64_t duration_ns = 0;
  std::uint64_t timeout_ns = 0;  // effective timeout; while active, what is left of it
  pmu::RegMask ovfl_pmds = 0;
  pmu::RegMask avail_pmcs = 0;
  pmu::RegMask avail_pmds = 0;
};

struct PmdValue {
  std::uint64_t value = 0;  // live while the set is on the hardware
  PmdState state;           // attributes
};

// One PMD of a set as `pmds` shows it: written by the user or counting in the
// set, with its value live while the set is on the hardware.
struct PmdLine {
  unsigned index = 0;
  std::uint64_t value = 0;  // the live 64-bit value
  PmdState state;
};

// One line of `counts`: a used PMD of one set with its scaling.
struct CountLine {
  std::uint16_t set = 0;
  unsigned pmd = 0;
  std::uint64_t value = 0;
  std::uint64_t enabled_ns = 0;         // time the session was active and counting
  std::uint64_t running_ns = 0;         // time this set was active and counting
  std::optional<std::uint64_t> scaled;  // value * enabled / running; none if running == 0
  // With flags inherit: what followed children that exited counted in this
  // PMD, and the estimate of the whole tree, (value + children) * enabled / running.
  std::optional<std::uint64_t> children;
  std::optional<std::uint64_t> total_scaled;
};

class Session final : public std::enable_shared_from_this<Session>, private pmu::TargetListener {
  // For the lock order only: the engine's leaves are declared
  // ACQUIRED_AFTER(Session::mutex_), which clang checks with access rules.
  friend class Engine;

 public:
  // Sessions are made by Engine::createSession.
  Session(Engine& engine, std::string name, uid_t uid, gid_t gid);
  ~Session() override;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& name() const { return name_; }
  uid_t uid() const { return uid_; }
  gid_t gid() const { return gid_; }

  Mode mode() const;
  Status setMode(Mode m);  // EBUSY once loaded before; EINVAL system + notify_block
  Flags flags() const;
  Status setFlags(const Flags& f);  // EBUSY while loaded; EINVAL notify_block in system mode

  // ctl commands (pfmfs(5), sessions/NAME/ctl).
  Status load(const Caller& caller, int target, std::optional<unsigned> set = std::nullopt);
  // Mode cgroup: loads on the control group at `path` (pfmfs(5),
  // CONTROL-GROUP LOADS), absolute or below the cgroup2 mount.
  Status loadCgroup(const Caller& caller, std::string_view path, std::optional<unsigned> set = std::nullopt);
  Status unload();
  Status start(std::optional<unsigned> set = std::nullopt);
  Status stop();
  Status restart();

  // Sets: created and deleted while unloaded only.
  Status createSet(unsigned id);
  Status deleteSet(unsigned id);
  std::vector<std::uint16_t> setIds() const;
  Status setSwitch(unsigned set, const SwitchSpec& spec);  // while unloaded
  Result<SetInfo> setInfo(unsigned set);

  // Registers of any set, in any state; the active set's hardware follows.
  Status writePmc(const Caller& caller, unsigned set, const PmcWrite& w);
  Status writePmd(unsigned set, const PmdWrite& w);
  // Validated as a whole, applied all-or-nothing.
  Status writeRegs(const Caller& caller, unsigned set, const std::vector<RegWrite>& writes);
  Result<PmcState> readPmc(unsigned set, unsigned index);
  Result<PmdValue> readPmd(unsigned set, unsigned index);
  Result<std::vector<RegWrite>> regs(unsigned set);
  // Every PMD written or used in the set, in register order (libpfm's pfm_read_pmds).
  Result<std::vector<PmdLine>> pmdStates(unsigned set);

  StateInfo state();
  std::string error() const;  // the reason of the last failure, "" if none
  // Returns once the observer has been told of every message queued before
  // this call (another thread's operation tells it after releasing the
  // session's lock), or after a second: a reply to a file write sent after
  // it comes after the poll wakeups of what was queued before, as the
  // library's notification fence needs (libpfm-compat's async_notify.h).
  void awaitNotifications() const;
  // A failure found above the engine (a write that does not parse): recorded
  // in error() like the engine's own, and returned.
  Status refuse(Error e);
  std::vector<CountLine> counts();

  // Sampling (pfmfs(5), SAMPLING; session_sampling.cpp). setSampling
  // replaces the buffer with an empty one (or none): EBUSY while loaded,
  // EINVAL a spec the format refuses, ENOMEM past the owner's limit
  // (EngineOptions::max_smpl_bytes_per_user).
  Status setSampling(const SamplingSpec& spec);
  SamplingSpec sampling() const;
  // The buffer as smpl_buf reads (empty with no format), and as samples.
  std::vector<std::uint8_t> sampleBytes();
  std::vector<SampleRecord> samples();
  // A new descriptor of the buffer's sealed memfd, for libpfm-compat's
  // mapping, with its buf_size. ENOENT: no format.
  Result<std::pair<pmu::Fd, std::uint64_t>> sampleBufferFd();

  // Messages: take removes what it returns.
  std::vector<Message> takeMessages(std::size_t max);
  std::vector<Message> takeMessagesWhile(const std::function<bool(const Message&)>& accept);
  std::size_t queuedMessages() const;
  // Masked: a notification waits for restart (what POLLPRI reports on `msg`).
  bool masked() const;

  // Engine hooks.
  // The session leaves the engine: unloaded, and no load succeeds any more
  // (a load racing the destruction would otherwise claim a target for a
  // session nobody can reach). Its state goes too: what is left is what a
  // new session has (its name, owner, an empty set 0), kept only by files
  // the kernel still holds, which answer ENOENT.
  Status retire();
  void advanceBy(std::uint64_t ns);  // manual clock
  void tick();                       // real clock: timer thread
  void targetGone();                 // the monitored thread exited / cpu went away
  std::optional<pmu::Target> loadedTarget() const;

  // The fast path (fastpath/fast_page.h, session_fast_page.cpp): the page
  // the session publishes at the end of every operation from now on, for
  // libpfm-compat's mapped reads. The caller owns `page` and keeps it until
  // it sets another or null; the page it replaces is published unusable
  // first, so a reader still mapping it asks the mount.
  void setFastPage(fastpath::Page* page);
  // New descriptors of every member of perf group `id` (the page's
  // `group`), the leader first, if that is the loaded set's group now;
  // ESTALE if it is not any more. A reader reads the group through the
  // leader, and maps each member's perf page for rdpmc where the PMU allows.
  Result<std::vector<pmu::Fd>> fastGroupFds(std::uint64_t id);

 private:
  // TargetListener: from a backend's own thread (an overflow, the target gone,
  // a child created or exited).
  void attention() override;

  // The lock, and the observer call made after it is released.
  class Op;

  // The threads whose counters run with the session's (driven_thread.h):
  // the target, then every child followed. The target's PMU is there while
  // loaded; it counts until the target exits (on an Aggregate backend also
  // after: its PMU carries the children's).
  DrivenThread& target() REQUIRES(mutex_) { return *threads_.front(); }
  const DrivenThread& target() const REQUIRES(mutex_) { return *threads_.front(); }
  bool isTarget(const DrivenThread& t) const REQUIRES(mutex_) { return &t == threads_.front().get(); }
  template <class Fn>
  void forEachDriven(Fn&& fn) REQUIRES(mutex_) {
    if (target().pmu && (!inheritance_.hasTargetExited() || aggregate_)) fn(target());
    for (std::size_t i = 1; i < threads_.size(); ++i) fn(*threads_[i]);
  }
  std::size_t followedThreads() const REQUIRES(mutex_) { return threads_.size() - 1; }
  // A thread's values of set `s`, by slot.
  std::vector<ThreadPmd>& valuesOf(DrivenThread& t, const EventSet& s) REQUIRES(mutex_) {
    return t.pmds(s.id(), desc_.pmds.size());
  }
  bool anyHeld() const REQUIRES(mutex_);
  void releaseHolds() REQUIRES(mutex_);

  EventSet* findSet(unsigned id) REQUIRES(mutex_);
  Status fail(Error e) REQUIRES(mutex_);
  bool loaded() const REQUIRES(mutex_) { return state_ != State::Unloaded; }
  bool counting() const REQUIRES(mutex_) { return state_ == State::Active; }
  EventSet& activeSet() REQUIRES(mutex_);
  std::uint64_t effectiveTimeout(const SwitchSpec& s) const REQUIRES(mutex_);

  // Time and hardware (session_time.cpp).
  void catchUp() REQUIRES(mutex_);                       // to the present, children's news first
  void catchUpNow() REQUIRES(mutex_);                    // to the present, time only
  void catchUpTo(std::uint64_t t_end) REQUIRES(mutex_);  // lockstep: every thread on the session's time
  void catchUpTree() REQUIRES(mutex_);                   // real clock with followers: each thread on its own
  std::uint64_t catchUpThread(DrivenThread& t) REQUIRES(mutex_);
  void switchIfTimeIsUp() REQUIRES(mutex_);
  std::uint64_t advanceAll(std::uint64_t t) REQUIRES(mutex_);
  std::uint64_t nextOverflowAll() REQUIRES(mutex_);
  bool treeClock() const REQUIRES(mutex_);
  void accountTo(std::uint64_t t) REQUIRES(mutex_);
  void drainOverflows() REQUIRES(mutex_);
  void drainOverflows(DrivenThread& t) REQUIRES(mutex_);
  void mask() REQUIRES(mutex_);  // stop counting until restart
  void handleHwOverflow(DrivenThread& t, const pmu::HwOverflow& o) REQUIRES(mutex_);
  void handleUserOverflow(DrivenThread& t, pmu::RegMask pmds, const pmu::HwOverflow& o) REQUIRES(mutex_);
  pmu::RegMask userVisible(DrivenThread& t, pmu::RegMask pmds) REQUIRES(mutex_);
  void handleChildSample(DrivenThread& t, const pmu::HwOverflow& o) REQUIRES(mutex_);
  void notifyOverflow(DrivenThread& t, pmu::RegMask notify, pmu::RegMask resets, const pmu::HwOverflow& o)
      REQUIRES(mutex_);  // mask, hold, message
  // With a format: one entry per overflowed PMD (session_sampling.cpp).
  // Returns the PMD whose entry filled the buffer, 0 if none did.
  pmu::RegMask recordSamples(DrivenThread& t, EventSet& s, pmu::RegMask pmds, const pmu::HwOverflow& o)
      REQUIRES(mutex_);
  void releaseSampleBuffer() REQUIRES(mutex_);
  void sampleActive() REQUIRES(mutex_);  // no-interrupt backends: catch wraps
  void sampleThread(DrivenThread& t) REQUIRES(mutex_);
  void takeOverflowInSkid() REQUIRES(mutex_);  // before the active set leaves the PMU
  void takeOverflowInSkid(DrivenThread& t) REQUIRES(mutex_);
  void readHw(DrivenThread& t, pmu::RegMask pmds) REQUIRES(mutex_);
  void foldActive(DrivenThread& t) REQUIRES(mutex_);  // hardware bits into the active set's values
  void foldAll() REQUIRES(mutex_);
  Status programActive(DrivenThread& t)
      REQUIRES(mutex_);  // the active set onto one thread's hardware (counting disabled)
  Status programAll() REQUIRES(mutex_);
  void enableAll() REQUIRES(mutex_);
  void disableAll() REQUIRES(mutex_);
  void haltCounting(const Error& e) REQUIRES(mutex_);  // the backend refused a set while counting
  void resetPmds(DrivenThread& t, EventSet& set, pmu::RegMask pmds, bool long_reset) REQUIRES(mutex_);
  std::uint64_t resetValue(const PmdState& p, bool long_reset) REQUIRES(mutex_);
  void switchTo(EventSet& next) REQUIRES(mutex_);
  EventSet& nextSet() REQUIRES(mutex_);
  Status startCounting() REQUIRES(mutex_);
  void stopCounting() REQUIRES(mutex_);
  void unloadLocked(bool exited) REQUIRES(mutex_);
  // load's parts: whether a load may come now, and which set runs first; the
  // attach of a target whose checks passed.
  Result<std::uint16_t> loadableLocked(std::optional<unsigned> set) REQUIRES(mutex_);
  Status attachLocked(const Caller& caller, pmu::Target t, pid_t pid, std::uint16_t first, bool set_given)
      REQUIRES(mutex_);
  std::string describeTarget() const REQUIRES(mutex_);
  void releaseState() REQUIRES(mutex_);
  void queueMessage(const Message& m) REQUIRES(mutex_);
  void liveValues(const EventSet& set, pmu::RegMask pmds) REQUIRES(mutex_);

  // Inheritance (session_children.cpp).
  bool followingChildren() const REQUIRES(mutex_) { return followedThreads() > 0 || inheritance_.aggregateCount() > 0; }
  void drainChildEvents() REQUIRES(mutex_);
  void adoptFollower(const pmu::ChildEvent& e) REQUIRES(mutex_);
  void finishFollower(std::size_t i, std::optional<std::uint64_t> final_time_ns) REQUIRES(mutex_);
  void aggregateExited(const pmu::ChildEvent& e) REQUIRES(mutex_);
  void targetExitedLocked() REQUIRES(mutex_);
  Status prepareSets() REQUIRES(mutex_);
  void dropFollowers() REQUIRES(mutex_);
  Status publishChildImage() REQUIRES(mutex_);
  // The fast path (session_fast_page.cpp).
  void publishFastPage() REQUIRES(mutex_);
  // The end of an operation (Op::publish): the child image, then the fast page.
  Status publish(Status result) REQUIRES(mutex_);
  bool fillFastPage(fastpath::Page& p) REQUIRES(mutex_);

  Engine& engine_;
  const pmu::PmuDescription& desc_;
  const std::string name_;
  const uid_t uid_;
  const gid_t gid_;
  const bool interrupts_;
  const bool aggregate_;  // inheritance: the backend counts children itself (perf)

  mutable Mutex mutex_;  // guards everything below
  Mode mode_ GUARDED_BY(mutex_) = Mode::Thread;
  Flags flags_ GUARDED_BY(mutex_);
  State state_ GUARDED_BY(mutex_) = State::Unloaded;
  bool ever_loaded_ GUARDED_BY(mutex_) = false;
  bool retired_ GUARDED_BY(mutex_) = false;  // destroyed: loads refused
  bool exited_ GUARDED_BY(mutex_) = false;
  std::string error_ GUARDED_BY(mutex_);
  std::map<std::uint16_t, EventSet> sets_ GUARDED_BY(mutex_);
  std::uint16_t active_set_ GUARDED_BY(mutex_) = 0;
  bool set_chosen_ GUARDED_BY(mutex_) = false;  // a start or load set=N has picked the active set
  MessageQueue messages_ GUARDED_BY(mutex_);
  bool notify_pending_ GUARDED_BY(mutex_) = false;  // messages queued since the observer was last told
  // Operations between queueing messages (counted under the lock) and
  // having told the observer (after it).
  mutable std::atomic<unsigned> notifying_{0};

  // The target, always (its values outlive loads), then while loaded every
  // child followed: forEachDriven().
  std::vector<std::unique_ptr<DrivenThread>> threads_ GUARDED_BY(mutex_);
  std::uint64_t next_serial_ GUARDED_BY(mutex_) = 1;  // the next child's DrivenThread::serial

  // While loaded.
  pmu::Target target_ GUARDED_BY(mutex_);
  // Scratch, by slot: hardware bits read or to load, PMC image, 64-bit values.
  std::vector<std::uint64_t> hw_ GUARDED_BY(mutex_);
  std::vector<std::uint64_t> pmc_image_ GUARDED_BY(mutex_);
  std::vector<std::uint64_t> values_ GUARDED_BY(mutex_);
  std::uint64_t counted_to_ GUARDED_BY(mutex_) = 0;    // target time accounted so far while counting
  std::uint64_t set_elapsed_ GUARDED_BY(mutex_) = 0;   // counting time of the active set in this activation
  std::uint64_t last_sample_ GUARDED_BY(mutex_) = 0;   // no-interrupt backends
  OverflowBudget overflow_budget_ GUARDED_BY(mutex_);  // overflow interrupts left, refilled on counted time
  std::uint16_t pending_set_ GUARDED_BY(mutex_) = 0;   // masked: the set whose PMDs restart resets
  pmu::RegMask pending_resets_ GUARDED_BY(mutex_) = 0;
  bool stopped_while_masked_ GUARDED_BY(mutex_) = false;  // masked, then stop: restart leaves the session loaded
  bool late_restart_ok_ GUARDED_BY(mutex_) = false;  // unloaded while masked: one restart is a late acknowledgement

  // Inheritance (inheritance.h): control generations, the children a
  // backend counts itself, merged and dropped figures, the child image.
  Inheritance inheritance_ GUARDED_BY(mutex_);
  std::vector<pmu::ChildEvent> child_events_ GUARDED_BY(mutex_);  // scratch
  std::uint64_t tree_now_ GUARDED_BY(mutex_) = 0;  // treeClock(): the session's time, CPU time of every followed thread
  std::uint64_t pending_thread_ GUARDED_BY(mutex_) = 0;  // masked: the serial of the thread whose PMDs restart resets

  FastPagePublisher fast_page_ GUARDED_BY(mutex_);

  // The sampling format's buffer, if one is chosen; its bytes are charged
  // to the owner at the engine.
  std::unique_ptr<SampleBuffer> sample_buffer_ GUARDED_BY(mutex_);
  // What the loaded target has the kernel lock for samples (perf's rings),
  // charged to uid_ with the buffers until the unload.
  std::uint64_t kernel_smpl_bytes_ GUARDED_BY(mutex_) = 0;
  std::uint64_t cgroup_events_ GUARDED_BY(mutex_) = 0;  // charged by a cgroup load until the unload
  SampleRecord record_ GUARDED_BY(mutex_);              // scratch  // setFastPage(): where the page goes, what it shows

  // Across loads.
  std::uint64_t enabled_ns_ GUARDED_BY(mutex_) = 0;
  // Made at the first random reset: 2.5 KB that most sessions never use.
  std::unique_ptr<std::mt19937_64> random_ GUARDED_BY(mutex_);
};

}  // namespace pfmfs::session
