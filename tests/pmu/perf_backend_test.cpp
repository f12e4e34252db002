// Unit tests of the perf backend on this machine's software events: the
// perf-sw and perf-x86 descriptions and register mappings, exact page-fault
// counts of a real thread, set switches (two ioctls), overflows from the ring
// buffer with resets at the overflow instant, the poller's wake-ups, a thread
// that exits, and CPU targets.
#include "pmu/perf/perf_backend.h"

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "pmu/event_name.h"
#include "pmu/host_info.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/perf/perf_models.h"
#include "pmu/perf_event/perf_event.h"
#include "tests/support/cpu_time.h"
#include "tests/support/software_count.h"
#include "tests/support/task_clock.h"
#include "tests/support/worker_thread.h"

namespace pfmfs::pmu::perf {
namespace {

using namespace std::chrono_literals;
using pfmfs::testing::Worker;

constexpr std::uint64_t kUsr = intel::evtsel::kUsr;
constexpr std::uint64_t kEn = intel::evtsel::kEn;
constexpr std::uint64_t kInt = intel::evtsel::kInt;
constexpr std::uint64_t kPageFaults = PERF_COUNT_SW_PAGE_FAULTS;
constexpr std::uint64_t kTaskClock = PERF_COUNT_SW_TASK_CLOCK;
constexpr std::uint64_t kContextSwitches = PERF_COUNT_SW_CONTEXT_SWITCHES;

// Touches `n` fresh pages once each: n user-level page faults. Raw syscalls
// and no sanitizer instrumentation, so that the ASan and TSan builds take no
// faults of their own (shadow memory) in here.
__attribute__((no_sanitize("address", "thread", "undefined"))) void touchPages(std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const long addr = ::syscall(SYS_mmap, nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == -1) std::abort();
  ::syscall(SYS_madvise, addr, n * page, MADV_NOHUGEPAGE);  // one fault per page, not per 2 MiB
  auto* bytes = reinterpret_cast<volatile unsigned char*>(addr);
  for (std::size_t i = 0; i < n; ++i) bytes[i * page] = 1;
  ::syscall(SYS_munmap, addr, n * page);
}

class CountingListener final : public TargetListener {
 public:
  void attention() override { calls.fetch_add(1); }
  std::atomic<int> calls{0};
};

std::unique_ptr<PerfBackend> makeSw() {
  PerfOptions o;
  o.model = Model::Software;
  auto b = PerfBackend::create(o);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().reason);
  return b.ok() ? std::move(*b) : nullptr;
}

// One attached target with a set image to load: PMC values by index, PMD
// bits by index, as the engine would put them.
class Rig {
 public:
  explicit Rig(const Target& t) : backend_(makeSw()), listener_(std::make_shared<CountingListener>()) {
    const PmuDescription& d = backend_->description();
    pmcs_.assign(d.pmcs.size(), 0);
    bits_.assign(d.pmds.size(), 0);
    out_.assign(d.pmds.size(), 0);
    auto a = backend_->attach(t, listener_);
    EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().reason);
    if (a.ok()) pmu_ = std::move(*a);
  }

  TargetPmu& pmu() { return *pmu_; }
  CountingListener& listener() { return *listener_; }

  void pmc(unsigned n, std::uint64_t event, bool kernel = false) {
    pmcs_[n] = event | kUsr | (kernel ? intel::evtsel::kOs : 0) | kEn | kInt;
    used_ |= regBit(n);
  }
  void pmd(unsigned n, std::uint64_t bits) { bits_[n] = bits; }
  void clear() {
    std::fill(pmcs_.begin(), pmcs_.end(), 0);
    used_ = 0;
  }
  Status load(std::uint16_t set) { return pmu_->loadSet(SetImage{set, pmcs_, used_, bits_}); }
  std::uint64_t read(unsigned n) {
    pmu_->readPmds(regBit(n), out_);
    return out_[n];
  }
  // Takes every overflow, resetting each to `reset` as the engine would
  // without notify; returns how many there were.
  unsigned takeAll(unsigned pmd, std::uint64_t reset) {
    unsigned n = 0;
    while (auto o = pmu_->takeOverflow()) {
      EXPECT_EQ(o->pmds, regBit(pmd));
      pmu_->reloadPmd(pmd, reset);
      ++n;
    }
    return n;
  }

 private:
  std::unique_ptr<PerfBackend> backend_;
  std::shared_ptr<CountingListener> listener_;
  std::unique_ptr<TargetPmu> pmu_;
  std::vector<std::uint64_t> pmcs_, bits_, out_;
  RegMask used_ = 0;
};

Target thread(pid_t tid) { return Target{TargetKind::Thread, tid}; }

// touchPages on a worker, and how many page faults it took. Mostly the
// pages touched; one more now and then on a busy machine, where the kernel
// moved a page under the thread (compaction) and it touched it again. The
// count is the kernel's, by a user-level page-fault event of the test's own
// on the thread, read with the thread asleep before and after: the backend
// counts exactly that where the test enables and disables it between touches.
class Touch {
 public:
  explicit Touch(Worker& w) : w_(w), faults_(w.tid(), kPageFaults, false) {
    EXPECT_TRUE(faults_.ok()) << "perf_event_open: " << std::strerror(errno);
  }

  std::uint64_t operator()(std::size_t n) {
    const std::uint64_t before = faults_.value();
    w_.run([n] { touchPages(n); });
    EXPECT_TRUE(pfmfs::testing::waitOffCpu(w_.tid())) << "the worker sleeps between jobs";
    const std::uint64_t taken = faults_.value() - before;
    EXPECT_GE(taken, n);
    return taken;
  }

 private:
  Worker& w_;
  const pfmfs::testing::SoftwareCount faults_;
};

// ---- descriptions and mappings --------------------------------------------------

TEST(PerfModels, SoftwareDescription) {
  PmuDescription d = softwareDescription();
  EXPECT_TRUE(d.validate().empty());
  EXPECT_EQ(d.model, "perf-sw");
  EXPECT_EQ(d.pmcs.size(), 8u);
  EXPECT_EQ(d.pmds.size(), 8u);
  EXPECT_EQ(d.width(), 64u);
  ASSERT_EQ(d.events.size(), 9u);
  ASSERT_NE(d.findEvent("page-faults"), nullptr) << "perf's spelling names ours";
  EXPECT_EQ(d.findEvent("page-faults")->code, kPageFaults);
  EXPECT_EQ(d.findEvent("Task_Clock")->code, kTaskClock);
  EXPECT_EQ(d.findEvent("CPU_CLOCK")->code, 0u);
  EXPECT_EQ(d.findEvent("cycles"), nullptr);
  // Event names encode to PERFEVTSEL's layout.
  auto v = encodeEventName(d, "context-switches:u:k", 3);
  ASSERT_TRUE(v.ok()) << v.error().reason;
  EXPECT_EQ(*v, kContextSwitches | kUsr | intel::evtsel::kOs);
  EXPECT_EQ(d.pmcs[0].rsvd_mask & 0x100, 0x100u) << "umask bits are reserved: no software event has one";
}

TEST(PerfModels, SoftwareMapping) {
  PmuDescription d = softwareDescription();
  std::vector<std::uint64_t> pmcs(8, 0);
  EXPECT_FALSE(counterEvent(Model::Software, d, pmcs, 2).has_value()) << "a PMC of 0 frees the counter";
  pmcs[2] = kPageFaults | kUsr | kEn | kInt;
  auto e = counterEvent(Model::Software, d, pmcs, 2);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, static_cast<std::uint32_t>(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(e->config, kPageFaults);
  EXPECT_FALSE(e->exclude_user);
  EXPECT_TRUE(e->exclude_kernel);
  pmcs[0] = PERF_COUNT_SW_CPU_CLOCK | intel::evtsel::kOs;  // cpu-clock is code 0: the OS bit alone enables it
  e = counterEvent(Model::Software, d, pmcs, 0);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->config, static_cast<std::uint64_t>(PERF_COUNT_SW_CPU_CLOCK));
  EXPECT_TRUE(e->exclude_user);
  EXPECT_FALSE(e->exclude_kernel);
}

TEST(PerfModels, X86Mapping) {
  PmuDescription d = x86Description(4);
  EXPECT_TRUE(d.validate().empty());
  EXPECT_EQ(d.model, "perf-x86");
  // perf gets edge, invert and the counter mask (kRawBits); pin control and
  // AnyThread it would drop, so they are reserved.
  EXPECT_EQ(d.pmcs[0].rsvd_mask, 0xffffffff00280000ull);
  EXPECT_EQ(d.width(), 64u);
  std::vector<std::uint64_t> pmcs(d.pmcs.size(), 0);
  using namespace intel;
  // PERFEVTSEL1: LLC misses, edge, inv, cmask 2, user and kernel, plus the
  // engine's EN and INT which are not part of the raw event.
  pmcs[1] = event::kLlcMisses | evtsel::kEdge | evtsel::kInv | (2ull << 24) | evtsel::kUsr | evtsel::kOs | kEn | kInt;
  auto e = counterEvent(Model::X86, d, pmcs, 1);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->type, static_cast<std::uint32_t>(PERF_TYPE_RAW));
  EXPECT_EQ(e->config, event::kLlcMisses | evtsel::kEdge | evtsel::kInv | (2ull << 24));
  EXPECT_FALSE(e->exclude_user || e->exclude_kernel);
  // FIXED_CTR_CTRL: fixed 0 (instructions) at user level, fixed 2 (ref cycles) at kernel level.
  pmcs[static_cast<std::size_t>(d.pmcSlot(kFixedCtrlPmc))] =
      fixedctl::field(0, fixedctl::kUsr | fixedctl::kPmi) | fixedctl::field(2, fixedctl::kOs);
  auto instr = counterEvent(Model::X86, d, pmcs, static_cast<std::size_t>(d.pmdSlot(kFixedPmd0)));
  ASSERT_TRUE(instr.has_value());
  EXPECT_EQ(instr->type, static_cast<std::uint32_t>(PERF_TYPE_HARDWARE));
  EXPECT_EQ(instr->config, static_cast<std::uint64_t>(PERF_COUNT_HW_INSTRUCTIONS));
  EXPECT_TRUE(instr->exclude_kernel);
  EXPECT_FALSE(counterEvent(Model::X86, d, pmcs, static_cast<std::size_t>(d.pmdSlot(kFixedPmd0 + 1))).has_value());
  auto ref = counterEvent(Model::X86, d, pmcs, static_cast<std::size_t>(d.pmdSlot(kFixedPmd0 + 2)));
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->config, static_cast<std::uint64_t>(PERF_COUNT_HW_REF_CPU_CYCLES));
  EXPECT_TRUE(ref->exclude_user);
}

TEST(PerfBackend, CreatesWhereTheKernelAllows) {
  ASSERT_TRUE(perfUsable().ok()) << perfUsable().error().reason;
  auto b = makeSw();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->name(), "perf");
  EXPECT_EQ(b->description().model, "perf-sw");
  EXPECT_FALSE(b->holdsThreads());
  EXPECT_FALSE(b->exclusiveThreads());
  EXPECT_TRUE(b->interruptsOnOverflow());
  EXPECT_EQ(b->clock(), ClockKind::Real);
  // perf-x86 only where the kernel exposes a hardware PMU.
  PerfOptions x86;
  x86.model = Model::X86;
  auto hw = PerfBackend::create(x86);
  EXPECT_EQ(hw.ok(), detectModel() == Model::X86);
  if (!hw.ok()) {
    EXPECT_EQ(hw.code(), -ENODEV);
  }
}

// ---- counting ------------------------------------------------------------------------

TEST(PerfTarget, CountsPageFaultsOfAThreadExactly) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kPageFaults);
  r.pmc(1, kTaskClock);
  r.pmd(0, 1000);  // a loaded value is where counting continues from
  ASSERT_TRUE(r.load(0).ok());
  touch(10);  // before enable: not counted
  r.pmu().enable();
  const std::uint64_t n = touch(37);
  EXPECT_EQ(r.read(0), 1000 + n);
  r.pmu().disable();
  touch(5);  // after disable: not counted
  EXPECT_EQ(r.read(0), 1000 + n);
  // The target's clock is its task-clock: both readings of it, and both of
  // the set's task-clock, fall where the set is disabled and the worker
  // waits. The clock ran all along, the set only in the window between, so
  // the clock moved at least as far: no tolerance, whatever the load.
  const std::uint64_t t0 = r.pmu().timeNs();
  const std::uint64_t before = r.read(1);  // the first window's
  r.pmu().enable();
  bool burnt = false;
  w.run([&burnt] { burnt = pfmfs::testing::burnTaskClock(20'000'000); });
  ASSERT_TRUE(burnt);
  r.pmu().disable();
  const std::uint64_t busy = r.read(1) - before;
  EXPECT_GE(busy, 20'000'000u) << "the set's task-clock counts the thread's whole time on a CPU: at least the "
                                  "20 ms its own task-clock saw it burn";
  const std::uint64_t t1 = r.pmu().timeNs();
  EXPECT_GE(t1 - t0, busy);
  EXPECT_EQ(r.pmu().unscheduledNs(), 0u) << "software events always fit";
}

TEST(PerfTarget, SwitchingSetsCostsTwoIoctlsAndKeepsCountsApart) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kPageFaults);
  ASSERT_TRUE(r.load(0).ok());
  r.clear();
  r.pmc(0, kPageFaults);
  r.pmc(1, kTaskClock);
  ASSERT_TRUE(r.load(1).ok());  // opens set 1's group
  r.clear();
  r.pmc(0, kPageFaults);
  r.pmd(0, 0);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  std::uint64_t faults0 = touch(7), faults1 = 0;
  std::uint64_t set0 = 0, set1 = 0;
  for (int round = 0; round < 5; ++round) {
    // As the engine switches: disable, fold, load the next, enable.
    std::uint64_t before = ioctlCount();
    r.pmu().disable();
    set0 = r.read(0);
    r.clear();
    r.pmc(0, kPageFaults);
    r.pmc(1, kTaskClock);
    r.pmd(0, set1);
    ASSERT_TRUE(r.load(1).ok());
    r.pmu().enable();
    EXPECT_EQ(ioctlCount() - before, 2u) << "round " << round;
    faults1 += touch(3);

    before = ioctlCount();
    r.pmu().disable();
    set1 = r.read(0);
    r.clear();
    r.pmc(0, kPageFaults);
    r.pmd(0, set0);
    ASSERT_TRUE(r.load(0).ok());
    r.pmu().enable();
    EXPECT_EQ(ioctlCount() - before, 2u) << "round " << round;
    faults0 += touch(2);
  }
  r.pmu().disable();
  EXPECT_EQ(r.read(0), faults0);  // set 0's faults only (7 + 5 * 2)
  EXPECT_EQ(set1, faults1);       // set 1's (5 * 3)
}

TEST(PerfTarget, ChangedEventsReopenTheGroup) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kContextSwitches, true);  // the scheduler switches in the kernel: :u alone counts none
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  w.run([] { std::this_thread::sleep_for(1ms); });
  ASSERT_TRUE(pfmfs::testing::waitOffCpu(w.tid()));  // asleep before page faults count
  r.pmu().disable();
  EXPECT_GE(r.read(0), 1u);
  r.clear();
  r.pmc(0, kPageFaults);  // the same set, another event: a new group
  r.pmd(0, 0);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  const std::uint64_t n = touch(4);
  r.pmu().disable();
  EXPECT_EQ(r.read(0), n);
}

// ---- the fast path's group (fastGroup) ------------------------------------------

// What a reader outside the daemon computes from its own read(2) of the
// group's leader: readPmds' bits of `slot`, base + (count - ref).
std::uint64_t fastBits(const FastGroup& g, std::size_t slot) {
  EXPECT_EQ(g.read_format, kGroupReadFormat);
  std::uint64_t buf[3 + 2 * 64];
  EXPECT_EQ(g.fds.size(), g.size) << "every member's descriptor, the leader first";
  const ssize_t n = ::read(g.fds.front(), buf, sizeof buf);
  EXPECT_EQ(n, static_cast<ssize_t>(8 * (3 + 2 * g.size)));
  EXPECT_EQ(buf[0], g.size);  // nr, time_enabled, time_running, {value, id}...
  for (const auto& c : g.counters)
    if (c.slot == slot) return c.base + (buf[3 + 2 * c.member] - c.ref);
  ADD_FAILURE() << "slot " << slot << " is not in the group";
  return 0;
}

TEST(PerfTarget, FastGroupGivesReadPmdsBits) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  EXPECT_FALSE(r.pmu().fastGroup().has_value()) << "nothing loaded";
  r.pmc(0, kContextSwitches, true);
  r.pmc(1, kPageFaults);
  r.pmd(1, 1000);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  std::uint64_t n = touch(37);
  auto g = r.pmu().fastGroup();
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->size, 2u);
  EXPECT_EQ(fastBits(*g, 1), 1000 + n);
  EXPECT_EQ(fastBits(*g, 1), r.read(1));
  // Counting on, read by the reader alone: the same arithmetic.
  n += touch(5);
  EXPECT_EQ(fastBits(*g, 1), 1000 + n);
  EXPECT_EQ(r.read(1), 1000 + n);
  r.pmu().disable();
  touch(5);
  EXPECT_EQ(fastBits(*g, 1), 1000 + n);
  // Another set: another group, another id.
  r.clear();
  r.pmc(0, kPageFaults);
  r.pmd(0, 7);
  ASSERT_TRUE(r.load(1).ok());
  auto g1 = r.pmu().fastGroup();
  ASSERT_TRUE(g1.has_value());
  EXPECT_NE(g1->id, g->id);
  EXPECT_NE(g1->fds.front(), g->fds.front());
  r.pmu().enable();
  n = touch(3);
  EXPECT_EQ(fastBits(*g1, 0), 7 + n);
  EXPECT_EQ(r.read(0), 7 + n);
}

TEST(PerfTarget, FastGroupFollowsResetsAtTheOverflow) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  constexpr std::uint64_t P = 10;
  r.pmc(0, kPageFaults);
  r.pmd(0, std::uint64_t{0} - P);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  std::uint64_t n = touch(4);
  ASSERT_LT(n, P);
  auto before = r.pmu().fastGroup();
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(fastBits(*before, 0), std::uint64_t{0} - P + n);
  // Past the wrap, before the engine takes it: base + (count - ref) has
  // carried out of the width (here 64 bits: it went round), which tells the
  // reader to ask the daemon.
  n += touch(23);
  EXPECT_LT(fastBits(*before, 0), std::uint64_t{0} - P);
  EXPECT_EQ(r.takeAll(0, std::uint64_t{0} - P), n / P);  // 2 of 27
  // Reset at the instants of the wraps (20): 7 since.
  auto after = r.pmu().fastGroup();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->id, before->id);
  EXPECT_EQ(fastBits(*after, 0), std::uint64_t{0} - P + n % P);
  EXPECT_EQ(fastBits(*after, 0), r.read(0));
}

// ---- overflows --------------------------------------------------------------------

TEST(PerfTarget, OverflowsArriveAtTheWrapAndResetAtTheirInstant) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  constexpr std::uint64_t P = 10;
  r.pmc(0, kPageFaults);
  r.pmd(0, std::uint64_t{0} - P);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  // 57 faults before anyone looks: the kernel recorded each wrap at its
  // instant, and resets to -P applied at those instants lose nothing.
  std::uint64_t n = touch(57);
  auto o = r.pmu().takeOverflow();
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->pmds, regBit(0));
  EXPECT_EQ(o->tid, w.tid());
  EXPECT_EQ(o->pid, ::getpid());
  EXPECT_NE(o->ip, 0u);
  EXPECT_TRUE(cpuOnline(o->cpu));
  r.pmu().reloadPmd(0, std::uint64_t{0} - P);
  EXPECT_EQ(1 + r.takeAll(0, std::uint64_t{0} - P), n / P);
  EXPECT_EQ(r.read(0), std::uint64_t{0} - P + n % P);
  // And on: 13 more faults, two more wraps (at 60 and 70).
  const std::uint64_t more = touch(13);
  EXPECT_EQ(r.takeAll(0, std::uint64_t{0} - P), (n + more) / P - n / P);
  EXPECT_EQ(r.read(0), std::uint64_t{0} - P + (n + more) % P);
  // The poller wakes the engine for records it has not taken yet.
  const int calls = r.listener().calls.load();
  touch(P);
  for (auto deadline = std::chrono::steady_clock::now() + 1min;
       r.listener().calls.load() == calls && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  EXPECT_GT(r.listener().calls.load(), calls);
  EXPECT_EQ(r.takeAll(0, std::uint64_t{0} - P), 1u);
}

TEST(PerfTarget, ResetToAnotherValueReprogramsThePeriod) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kPageFaults);
  r.pmd(0, std::uint64_t{0} - 5);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  const std::uint64_t first = touch(5);
  ASSERT_EQ(r.takeAll(0, std::uint64_t{0} - 20), 1u);  // after the first wrap, wrap every 20
  // Since that wrap: the faults past it (0, or 1 on a busy machine) and 30
  // more. One wrap, 20 after the first, and reset to 0 there: the value is
  // what came after it.
  const std::uint64_t since = first - 5 + touch(30);
  EXPECT_EQ(r.takeAll(0, 0), 1u);
  EXPECT_EQ(r.read(0), since - 20);
  // Reset to 0: no more wraps.
  const std::uint64_t n = touch(30);
  EXPECT_FALSE(r.pmu().takeOverflow().has_value());
  EXPECT_EQ(r.read(0), since - 20 + n);
}

TEST(PerfTarget, ReloadingASetDropsOverflowsOfTheValuesItReplaces) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kPageFaults);
  r.pmd(0, std::uint64_t{0} - 3);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  touch(3);  // one wrap recorded, not taken
  r.pmu().disable();
  r.pmd(0, 100);  // the user writes a value: the old wrap is history
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  const std::uint64_t n = touch(2);
  EXPECT_FALSE(r.pmu().takeOverflow().has_value());
  EXPECT_EQ(r.read(0), 100 + n);
}

TEST(PerfTarget, SwitchingAwayAndBackKeepsThePeriodWithoutAnIoctl) {
  Worker w;
  Rig r(thread(w.tid()));
  Touch touch(w);
  r.pmc(0, kPageFaults);
  r.pmd(0, std::uint64_t{0} - 8);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  const std::uint64_t n = touch(5);
  ASSERT_LT(n, 8u);
  r.pmu().disable();
  const std::uint64_t folded = r.read(0);
  EXPECT_EQ(folded, std::uint64_t{0} - 8 + n);  // -3
  const std::uint64_t before = ioctlCount();
  r.pmd(0, folded);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  EXPECT_EQ(ioctlCount() - before, 1u) << "the enable only: the kernel's period already ends at the wrap";
  const std::uint64_t total = n + touch(3);
  EXPECT_EQ(r.takeAll(0, std::uint64_t{0} - 8), 1u);
  EXPECT_EQ(r.read(0), std::uint64_t{0} - 8 + (total - 8));
}

// ---- targets ----------------------------------------------------------------------

TEST(PerfTarget, AThreadThatExitsIsGone) {
  auto w = std::make_unique<Worker>();
  Rig r(thread(w->tid()));
  Touch touch(*w);
  r.pmc(0, kPageFaults);
  ASSERT_TRUE(r.load(0).ok());
  r.pmu().enable();
  touch(6);
  EXPECT_FALSE(r.pmu().gone());
  const int calls = r.listener().calls.load();
  w->exitAndJoin();
  // The poller marks the target gone, then wakes the engine: wait for both.
  for (auto deadline = std::chrono::steady_clock::now() + 1min;
       !(r.pmu().gone() && r.listener().calls.load() > calls) && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  EXPECT_TRUE(r.pmu().gone());
  EXPECT_GT(r.listener().calls.load(), calls) << "the hang-up woke the engine";
  EXPECT_GE(r.read(0), 6u) << "counts stay readable";
}

TEST(PerfTarget, RefusesWhatDoesNotExist) {
  auto b = makeSw();
  auto none = b->attach(thread(0x3fffffff), {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.code(), -ESRCH);
  auto cpu = b->attach(Target{TargetKind::Cpu, 100000}, {});
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.code(), -EINVAL);
}

TEST(PerfTarget, CountsACpu) {
  Rig r(Target{TargetKind::Cpu, 0});
  r.pmc(0, PERF_COUNT_SW_CPU_CLOCK);
  r.pmc(1, PERF_COUNT_SW_CPU_CLOCK);  // a group member counts along with its leader
  ASSERT_TRUE(r.load(0).ok());
  const std::uint64_t t0 = r.pmu().timeNs();
  r.pmu().enable();
  std::this_thread::sleep_for(20ms);
  r.pmu().disable();
  const std::uint64_t t1 = r.pmu().timeNs();
  EXPECT_GE(t1 - t0, 20'000'000u) << "a CPU's time is wall time";
  // cpu-clock of a CPU runs with wall time whether the CPU is busy or idle.
  EXPECT_GE(r.read(0), 15'000'000u);
  EXPECT_LE(r.read(0), t1 - t0);
  EXPECT_GE(r.read(1), 15'000'000u);
  EXPECT_LE(r.read(1), t1 - t0);
  EXPECT_FALSE(r.pmu().gone());
}

}  // namespace
}  // namespace pfmfs::pmu::perf
