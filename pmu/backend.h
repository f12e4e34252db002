// The interface between the engine and whatever counts: the sim backend now,
// perf_event and x86 MSRs later. A Backend knows one PMU description and
// attaches to targets; a TargetPmu is that PMU as one thread or CPU sees it.
// The engine never learns which backend it drives.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pmu/cgroup_dir.h"
#include "pmu/pmu_description.h"
#include "pmu/result.h"

namespace pfmfs::pmu {

inline constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

// Cgroup: every thread of a cgroup v2 control group and of its descendants,
// on every CPU (pfmfs(5), CONTROL-GROUP LOADS).
enum class TargetKind { Thread, Cpu, Cgroup };

struct Target {
  TargetKind kind = TargetKind::Thread;
  int id = 0;  // a thread id (tid) or a cpu number; 0 for a cgroup
  // A thread session's `inherit` flag (pfmfs(5), INHERITANCE): the backend reports the
  // threads and processes the target creates, and theirs, recursively
  // (TargetPmu::takeChildEvents). Only with Backend::inheritance() != None.
  bool inherit = false;
  // The session records samples (pfmfs(5), SAMPLING): its overflows come
  // often and need not each be taken at once, since the engine takes what
  // is pending at every catch-up (its tick, and every read). A backend may
  // then batch its overflow reports: perf wakes pfmfsd per overflow
  // otherwise, which the sampled thread pays for.
  bool sampling = false;
  // Cgroup: the group's directory, opened and checked by the engine; the
  // backend counts what it names (perf: its descriptor), not a path again.
  std::shared_ptr<const CgroupDir> cgroup{};
};

// How a backend follows a thread's children (the `inherit` flag).
enum class Inheritance {
  None,       // it cannot: a load with inherit is refused
  Adopt,      // each child gets a TargetPmu of its own (TargetPmu::adoptChild),
              // which the engine drives like the target's
  Aggregate,  // the backend counts the children itself, switching with the
              // target (perf's inherited events), and reports each child's
              // final counts when it exits; the target's timeNs() is then the
              // CPU time of the whole followed tree
};

// A child's final counts (Inheritance::Aggregate): the events it counted in
// each set, by PMD slot of the description (0 where the set did not count).
struct ChildCounts {
  std::map<std::uint16_t, std::vector<std::uint64_t>> by_set;
  // False when part of its counts is lost: the events of a set were reopened
  // (reprogrammed) after it was created, which the kernel does not carry over.
  bool complete = true;
};

// Something a followed thread did, in the order it happened.
struct ChildEvent {
  enum class Kind { Created, Exited };
  Kind kind = Kind::Created;
  pid_t pid = 0;         // the child's process
  pid_t tid = 0;         // the child thread
  pid_t parent_tid = 0;  // Created: the followed thread that created it
  // Exited, Adopt under a real clock: the child's CPU time at its exit, where
  // the backend learned it (it may be reaped before its clock can be read).
  std::optional<std::uint64_t> final_time_ns;
  // Exited, Aggregate: what it counted; none if the backend could not learn it.
  std::optional<ChildCounts> counts;
};

// One overflow interrupt: the counters whose hardware bits wrapped past
// 2^width, and where the target was when it happened.
struct HwOverflow {
  RegMask pmds = 0;      // counters that wrapped (PMD numbers)
  std::uint64_t ip = 0;  // instruction pointer at the interrupt
  int cpu = 0;           // cpu that took the interrupt
  pid_t pid = 0;         // process (thread group) of the interrupted thread
  pid_t tid = 0;         // the interrupted thread
  // When it happened, in ns of the backend's clock (a sample's tstamp,
  // pfmfs(5) SAMPLING); 0: unknown, the engine uses the target's time.
  std::uint64_t time_ns = 0;
  // The counters' hardware bits at the overflow, by PMD slot, for the PMDs
  // of `read_pmds` (perf: the sample's group read). A sample records these
  // rather than the counters as they are when the engine takes it.
  RegMask read_pmds = 0;
  std::vector<std::uint64_t> read_values;
  // A followed child's overflow that the backend counts itself
  // (Inheritance::Aggregate: perf's inherited events): a sample of `pid`
  // and `tid` for a sampling session, and nothing else. The counts are the
  // kernel's, its copy re-arms itself; the recorded PMDs are unknown (0).
  bool child_sample = false;
  // A child's sample: the set whose event took it. It may be taken after a
  // switch to another set, and still belongs to this one.
  std::uint16_t set = 0;
};

// How a backend tells the engine that something happened on its own threads
// (an overflow interrupt, the target going away). Calls come with no backend
// lock held; the engine then pulls the details (TargetPmu::takeOverflow,
// TargetPmu::gone). A backend holds its listener weakly: a call may come after
// the target was detached, and must then do no harm.
class TargetListener {
 public:
  virtual ~TargetListener() = default;
  virtual void attention() = 0;
};

// One event set as the engine puts it on the PMU.
struct SetImage {
  std::uint16_t set = 0;                    // the set's id: a backend may keep state per set (perf: a group)
  std::span<const std::uint64_t> pmcs;      // the hardware value of every PMC, by description slot
  RegMask pmds = 0;                         // the counters in use (PMD numbers)
  std::span<const std::uint64_t> pmd_bits;  // hardware bits by description slot; those in `pmds` are loaded
};

// A perf group whose read(2) gives a loaded set's hardware bits: counter
// `slot` reads base + (the count of group member `member` - ref).
struct FastGroup {
  struct Counter {
    std::size_t slot = 0;  // PMD slot in the description
    std::uint16_t member = 0;
    std::uint64_t base = 0;
    std::uint64_t ref = 0;
  };
  std::vector<int> fds;  // every member's, in the group's read order (the leader first); the daemon keeps them open
  std::uint64_t id = 0;  // a new number for every group the daemon opens
  std::uint64_t read_format = 0;  // the leader's perf_event_attr.read_format
  std::size_t size = 0;           // members
  std::vector<Counter> counters;
};

// The PMU of one attached target. All calls come from the engine with the
// owning session's lock held, so implementations need no locking of their own
// for these calls.
class TargetPmu {
 public:
  virtual ~TargetPmu() = default;

  // Puts one set on the PMU: its PMCs and the bits of its counters. Called
  // only while counting is disabled, so that a set switch is atomic: the
  // engine disables, reads the old set (readPmds), loads the next and enables.
  // Register-level backends write only what differs from what the hardware
  // holds (perfctr's control cache); perf keeps one group per set. Fails
  // only where the kernel refuses (perf: out of descriptors, say).
  virtual Status loadSet(const SetImage& image) = 0;

  // The reset of PMD `index` after its overflow, while counting: the hardware
  // would have reloaded it at the interrupt, so a backend that learns of
  // overflows late (perf) keeps the events counted since then.
  virtual void reloadPmd(unsigned index, std::uint64_t hw_bits) = 0;

  // The hardware bits of the counters in `pmds` of the loaded set, into
  // out[slot] by description slot (out has one entry per PMD of the
  // description). PMD values are the implemented bits only (the engine keeps
  // the upper bits). A backend that can read them in one go (a perf group) does.
  virtual void readPmds(RegMask pmds, std::span<std::uint64_t> out) = 0;

  // Global enable: the loaded set counts only between enable() and disable().
  virtual void enable() = 0;
  virtual void disable() = 0;

  // The target's time in ns: its CPU time for a thread, wall time for a CPU
  // (and for a control group on perf; the sim takes the group's CPU time);
  // virtual time under a manual clock. Only differences matter.
  virtual std::uint64_t timeNs() = 0;

  // Backends that replay time (the sim) move their hardware to target time
  // `t` and report overflows at their exact instants: advanceTo stops at t and
  // nextOverflowNs says when the next interrupt is due. Hardware backends
  // count on their own: advanceTo returns timeNs() and nextOverflowNs kNever.
  virtual std::uint64_t advanceTo(std::uint64_t t) = 0;
  virtual std::uint64_t nextOverflowNs() = 0;

  // The oldest overflow raised and not yet taken; the hardware has
  // acknowledged it. Called after advanceTo and after attention().
  virtual std::optional<HwOverflow> takeOverflow() = 0;

  // Interrupt skid (the sim's --sim-skid): counters that have wrapped (their
  // status is set) while their interrupt is yet to come. A read adds their
  // carry. Before the engine takes the loaded set off the PMU (stop, switch,
  // register write, unload) it raises that interrupt now and takes it, so
  // that an overflow is handled in the set that counted it, as perfmon2 took
  // a set's pending overflows when it saved the set. Backends whose
  // interrupts the engine hears of otherwise have nothing in skid.
  virtual RegMask overflowsInSkid() { return 0; }
  virtual void raiseOverflowInSkid() {}

  // notify_block: hold the monitored thread until released.
  virtual void hold(bool held) = 0;

  // True once the target (thread, cpu) no longer exists; for a control
  // group, once it was removed.
  virtual bool gone() = 0;

  // Target time during which the loaded set was enabled but the hardware
  // could not count it (perf's own multiplexing when counters are short).
  // Counts are never scaled for it; `state` reports it.
  virtual std::uint64_t unscheduledNs() { return 0; }

  // Times the kernel throttled the loaded counters' overflow reports
  // (perf's PERF_RECORD_THROTTLE): overflows went unreported for a while,
  // so samples are missing. `state` says so.
  virtual std::uint64_t throttledCount() { return 0; }

  // The fast path (fastpath/fast_page.h): how a reader outside the daemon
  // computes readPmds' bits of the loaded set until the engine next calls
  // this PMU, from a read(2) of one perf group it may be given. nullopt:
  // this backend or this moment has none (only the engine can read).
  virtual std::optional<FastGroup> fastGroup() { return std::nullopt; }

  // ---- inheritance (Target::inherit) ----
  // Appends the children created and exited since the last call, oldest
  // first. A backend that learns of them on a thread of its own calls the
  // listener's attention(). Events of a child go on arriving after the target
  // itself has exited (gone()).
  virtual void takeChildEvents(std::vector<ChildEvent>& /*out*/) {}

  // Inheritance::Adopt: the PMU of a child just reported Created, with nothing
  // loaded and counting disabled. Its time starts at the child's creation
  // (under the manual clock: at 0, moved by advanceTo like the target's).
  // A child already gone may still be adopted (the sim's is, and learns its
  // time from childExited) or refused with -ESRCH: the engine then counts
  // it as dropped.
  virtual Result<std::unique_ptr<TargetPmu>> adoptChild(pid_t /*tid*/, std::weak_ptr<TargetListener> /*listener*/) {
    return err(EOPNOTSUPP, "this backend does not adopt children");
  }

  // On an adopted child's PMU: the child exited (its Exited event); its time
  // stops at `final_time_ns` when given, else where it was last read.
  virtual void childExited(std::optional<std::uint64_t> /*final_time_ns*/) {}

  // Inheritance::Adopt, on the target's PMU, for backends whose children
  // count from their creation, before the engine hears of them (x86: the
  // helper module attaches a child at fork with an image given beforehand):
  // what a child created from now on starts with, the active set with every
  // PMD at its initial value (SetImage::pmd_bits), counting or not. The
  // engine calls it whenever either changes. A backend that honours it
  // makes the child's first loadSet and enable of that same image keep the
  // counts the child already has. A failure leaves children created from now
  // on with the image given before; the engine reports it and gives the
  // image again at the end of its next operation.
  virtual Status setChildImage(const SetImage& /*image*/, bool /*counting*/) { return {}; }

  // Inheritance::Aggregate, on the target's PMU: put every set on the PMU once
  // (counting disabled) so that children created from now on carry all of
  // them; the engine then loads the active set again. Called at start and
  // after a set is reprogrammed.
  virtual Status prepareSets(std::span<const SetImage> /*sets*/) { return {}; }
};

enum class ClockKind {
  Real,    // target time moves by itself; the engine's timer thread ticks
  Manual,  // target time moves only by Engine::advanceManualClock()
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;  // "sim", "perf", "x86"
  virtual const PmuDescription& description() const = 0;
  virtual ClockKind clock() const = 0;

  // Whether counters interrupt on wrap. Without interrupts the engine samples
  // every counter at least every samplingPeriodNs() of target time so that no
  // wrap goes unseen.
  virtual bool interruptsOnOverflow() const = 0;
  virtual std::uint64_t samplingPeriodNs() const = 0;

  // Whether a thread can carry only one loaded session (as on a perfmon2
  // kernel, where a thread has one PMU state).
  virtual bool exclusiveThreads() const = 0;

  // Whether TargetPmu::hold can stop a monitored thread (notify_block). perf
  // cannot: it has no way to keep a thread from running.
  virtual bool holdsThreads() const { return true; }

  // Whether a mapped page (fastpath/fast_page.h) can tell a reader how to
  // read its counts without the mount: what the fast path serves.
  virtual bool mappedReads() const { return true; }

  // How it follows children (the `inherit` flag); None refuses such loads.
  virtual Inheritance inheritance() const { return Inheritance::None; }

  // The memory the kernel locks for pfmfsd while `target` is attached, when
  // the target samples (Target::sampling): perf's ring pages. The engine
  // charges it to the session's owner with the sampling buffers
  // (--max-smpl-bytes-per-user), since any user can make the daemon lock it.
  virtual std::uint64_t samplingKernelBytes(const Target& /*target*/) const { return 0; }

  // Attaches to a target. -ESRCH: no such thread; -EINVAL: no such online cpu;
  // -EOPNOTSUPP: a control group, on a backend that cannot count one (its
  // description's features then lack "cgroup");
  // -EPERM/-EACCES: the kernel refused the daemon; -ESHUTDOWN: after shutdown().
  virtual Result<std::unique_ptr<TargetPmu>> attach(const Target& target, std::weak_ptr<TargetListener> listener) = 0;

  // Stops every thread the backend started and joins it: when it returns, no
  // listener is in a call and none is called again, so whatever listeners
  // call into may be destroyed. A listener call under way ends first: the
  // caller holds no lock a listener takes. Targets attached before may still
  // be used and detached; attach() is refused from then on. Idempotent. The
  // engine calls it before it unloads its sessions (Engine::shutdown).
  virtual void shutdown() = 0;
};

}  // namespace pfmfs::pmu
