// Tests of the perf backend following a thread's children (Target::inherit,
// Inheritance::Aggregate) on this machine's software events: a real process
// whose children and grandchildren fault pages and burn CPU, their counts
// per set, the tree clock, set switches reaching the children, reprogramming,
// and a child that outlives the target. The ledger's corner cases are
// child_ledger_test.cpp's.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/perf/perf_backend.h"
#include "pmu/perf_event/perf_event.h"
#include "tests/support/cpu_time.h"
#include "tests/support/task_clock.h"

namespace pfmfs::pmu::perf {
namespace {

using namespace std::chrono_literals;
using Kind = ChildEvent::Kind;

// How long a test waits for what must happen: generous, it costs nothing
// when the thing happens.
constexpr auto kPatience = std::chrono::minutes(1);

constexpr std::uint64_t kUsr = intel::evtsel::kUsr;
constexpr std::uint64_t kEnInt = intel::evtsel::kEn | intel::evtsel::kInt;

// Touches `n` fresh pages once each: n user-level page faults. Raw syscalls
// and no sanitizer instrumentation, so that the ASan build takes no faults of
// its own (shadow memory) in here.
__attribute__((no_sanitize("address", "thread", "undefined"))) void touchPages(std::size_t n) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const long addr = ::syscall(SYS_mmap, nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == -1) std::abort();
  ::syscall(SYS_madvise, addr, n * page, MADV_NOHUGEPAGE);  // one fault per page, not per 2 MiB
  auto* bytes = reinterpret_cast<volatile unsigned char*>(addr);
  for (std::size_t i = 0; i < n; ++i) bytes[i * page] = 1;
  ::syscall(SYS_munmap, addr, n * page);
}

// A forked process (the target) and the children it makes on command, over
// pipes: it waits for each command, so it counts nothing of its own
// meanwhile. Everything in the forked processes is raw syscalls and _exit.
class Family {
 public:
  struct Cmd {
    char op = 0;       // target: S spawn, G grandchild, H hold a child, W wait for it, X exit;
                       // held child: T touch, B burn, X exit
    int n = 0;         // S: children
    int pages = 0;     // S, G, T: pages each touches
    long burn_ns = 0;  // S, B: task-clock each burns (burnTaskClock)
  };

  Family() {
    ::signal(SIGPIPE, SIG_IGN);
    int a[2], b[2], c[2];
    if (::pipe(a) || ::pipe(b) || ::pipe(c)) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(a[1]);
      ::close(b[1]);
      ::close(c[0]);
      targetMain(a[0], b[0], c[1]);
    }
    ::close(a[0]);
    ::close(b[0]);
    ::close(c[1]);
    cmd_ = a[1];
    child_cmd_ = b[1];
    ack_ = c[0];
  }

  ~Family() {
    // EOF on their pipes ends the target and a held child.
    ::close(cmd_);
    ::close(child_cmd_);
    if (!reaped_) {
      for (int i = 0; i < 500 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) std::this_thread::sleep_for(10ms);
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, WNOHANG);
    }
    ::close(ack_);
  }

  pid_t pid() const { return pid_; }

  // A command to the target, or to its held child, and its acknowledgement.
  bool target(Cmd c) { return ::write(cmd_, &c, sizeof c) == sizeof c && ack(); }
  bool child(Cmd c) { return ::write(child_cmd_, &c, sizeof c) == sizeof c && ack(); }
  // The held child exits (no acknowledgement).
  void childExits() {
    Cmd c{'X'};
    (void)!::write(child_cmd_, &c, sizeof c);
  }
  // The target exits; reaps it.
  void exitTarget() {
    Cmd c{'X'};
    (void)!::write(cmd_, &c, sizeof c);
    ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  bool ack() {
    pollfd p{ack_, POLLIN, 0};
    char byte = 0;
    const int ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(kPatience).count());
    return ::poll(&p, 1, ms) == 1 && ::read(ack_, &byte, 1) == 1;
  }

  [[noreturn]] static void targetMain(int cmd, int child_cmd, int ack) {
    pid_t held = 0;
    for (Cmd c; ::read(cmd, &c, sizeof c) == sizeof c;) {
      switch (c.op) {
        case 'S': {
          for (int i = 0; i < c.n; ++i) {
            if (::fork() == 0) {
              touchPages(static_cast<std::size_t>(c.pages));
              ::_exit(pfmfs::testing::burnTaskClock(static_cast<std::uint64_t>(c.burn_ns)) ? 0 : 2);
            }
          }
          while (::wait(nullptr) > 0 || errno == EINTR) {
          }
          break;
        }
        case 'G':
          if (::fork() == 0) {
            if (::fork() == 0) {
              touchPages(static_cast<std::size_t>(c.pages));
              ::_exit(0);
            }
            ::wait(nullptr);
            ::_exit(0);
          }
          ::wait(nullptr);
          break;
        case 'H':
          held = ::fork();
          if (held == 0) heldMain(child_cmd, ack);
          break;
        case 'W':
          ::waitpid(held, nullptr, 0);
          break;
        case 'X':
          ::_exit(0);
      }
      char byte = 1;
      (void)!::write(ack, &byte, 1);
    }
    ::_exit(0);
  }

  [[noreturn]] static void heldMain(int cmd, int ack) {
    for (Cmd c; ::read(cmd, &c, sizeof c) == sizeof c;) {
      if (c.op == 'X') ::_exit(0);
      if (c.op == 'T') touchPages(static_cast<std::size_t>(c.pages));
      if (c.op == 'B' && !pfmfs::testing::burnTaskClock(static_cast<std::uint64_t>(c.burn_ns))) ::_exit(2);
      char byte = 1;
      (void)!::write(ack, &byte, 1);
    }
    ::_exit(0);
  }

  pid_t pid_ = 0;
  int cmd_ = -1, child_cmd_ = -1, ack_ = -1;
  bool reaped_ = false;
};

class CountingListener final : public TargetListener {
 public:
  void attention() override { calls.fetch_add(1); }
  std::atomic<int> calls{0};
};

// A target attached with or without inherit, and the images of its sets.
class TreeRig {
 public:
  TreeRig(pid_t pid, bool inherit, unsigned sets = 1) : listener_(std::make_shared<CountingListener>()) {
    PerfOptions o;
    o.model = Model::Software;
    auto b = PerfBackend::create(o);
    EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().reason);
    if (!b.ok()) return;
    backend_ = std::move(*b);
    const PmuDescription& d = backend_->description();
    pmcs_.assign(sets, std::vector<std::uint64_t>(d.pmcs.size(), 0));
    used_.assign(sets, 0);
    bits_.assign(d.pmds.size(), 0);
    out_.assign(d.pmds.size(), 0);
    auto a = backend_->attach(Target{TargetKind::Thread, pid, inherit}, listener_);
    EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().reason);
    if (a.ok()) pmu_ = std::move(*a);
  }

  bool ok() const { return pmu_ != nullptr; }
  TargetPmu& pmu() { return *pmu_; }
  int calls() const { return listener_->calls.load(); }

  void pmc(std::uint16_t set, unsigned n, std::uint64_t event) {
    pmcs_[set][n] = event | kUsr | kEnInt;
    used_[set] |= regBit(n);
  }
  SetImage image(std::uint16_t set) { return SetImage{set, pmcs_[set], used_[set], bits_}; }
  // As the engine starts an inherit session: every set on the PMU, then the active one.
  Status prepareAndLoad(std::uint16_t set) {
    std::vector<SetImage> all;
    for (std::uint16_t s = 0; s < pmcs_.size(); ++s) all.push_back(image(s));
    if (Status st = pmu_->prepareSets(all); !st) return st;
    return pmu_->loadSet(image(set));
  }
  // A set switch as the engine makes it.
  void switchTo(std::uint16_t set) {
    pmu_->disable();
    EXPECT_TRUE(pmu_->loadSet(image(set)).ok());
    pmu_->enable();
  }
  std::uint64_t read(unsigned n) {
    pmu_->readPmds(regBit(n), out_);
    return out_[n];
  }

  // Takes child events until `done` holds of all taken so far (kPatience at most).
  bool collect(const std::function<bool(const std::vector<ChildEvent>&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    for (;;) {
      pmu_->takeChildEvents(events);
      if (done(events)) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
  }
  bool collectExits(std::size_t n) {
    return collect([n](const std::vector<ChildEvent>& ev) { return exits(ev).size() >= n; });
  }
  // The processes' exits, in order: their main threads. Under TSan each
  // process has a thread of the runtime's too, followed like any other.
  static std::vector<ChildEvent> exits(const std::vector<ChildEvent>& ev) {
    std::vector<ChildEvent> out;
    for (const auto& e : ev)
      if (e.kind == Kind::Exited && e.pid == e.tid) out.push_back(e);
    return out;
  }
  const ChildEvent* created(pid_t tid) const {
    for (const auto& e : events)
      if (e.kind == Kind::Created && e.tid == tid) return &e;
    return nullptr;
  }

  std::vector<ChildEvent> events;

 private:
  std::shared_ptr<CountingListener> listener_;
  std::unique_ptr<PerfBackend> backend_;
  std::unique_ptr<TargetPmu> pmu_;
  std::vector<std::vector<std::uint64_t>> pmcs_;
  std::vector<RegMask> used_;
  std::vector<std::uint64_t> bits_, out_;
};

// A child's count of PMD `slot` in `set`, 0 where its set counted nothing.
std::uint64_t countOf(const ChildEvent& e, std::uint16_t set, std::size_t slot) {
  if (!e.counts) return 0;
  auto it = e.counts->by_set.find(set);
  return it == e.counts->by_set.end() ? 0 : it->second.at(slot);
}

// Page faults a fresh child of the target takes of its own on top of the
// pages it is told to touch (copy-on-write of its stack and data after the
// fork, the exit; the sanitizers' runtimes): an upper bound. About 35 in a
// plain build, 50 under ASan, 410 under TSan; the target takes as many of
// its own at each fork. Tests touch kPages pages, more than all of those.
constexpr std::uint64_t kForkFaults = 1000;
constexpr int kPages = 2000;

TEST(PerfInherit, TheBackendAggregatesAndOnlyForThreads) {
  PerfOptions o;
  o.model = Model::Software;
  auto b = PerfBackend::create(o);
  ASSERT_TRUE(b.ok()) << b.error().reason;
  EXPECT_EQ((*b)->inheritance(), Inheritance::Aggregate);
  auto cpu = (*b)->attach(Target{TargetKind::Cpu, 0, true}, {});
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(cpu.code(), -EINVAL);
}

TEST(PerfInherit, ChildrenReportTheirCountsAndTheTreeClockTheirTime) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  r.pmc(0, 1, PERF_COUNT_SW_TASK_CLOCK);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  const std::uint64_t t0 = r.pmu().timeNs();
  r.pmu().enable();
  constexpr int N = 3, P = kPages;
  constexpr long kBurn = 20'000'000;
  ASSERT_TRUE(f.target({'S', N, P, kBurn}));
  ASSERT_TRUE(r.collectExits(N));
  r.pmu().disable();
  const std::uint64_t t1 = r.pmu().timeNs();
  auto exits = TreeRig::exits(r.events);
  ASSERT_EQ(exits.size(), static_cast<std::size_t>(N));
  std::uint64_t children_cpu = 0;
  for (const auto& e : exits) {
    SCOPED_TRACE(e.tid);
    const ChildEvent* c = r.created(e.tid);
    ASSERT_NE(c, nullptr) << "a Created for each Exited";
    EXPECT_EQ(c->parent_tid, f.pid());
    ASSERT_TRUE(e.counts.has_value());
    EXPECT_TRUE(e.counts->complete);
    EXPECT_GE(countOf(e, 0, 0), static_cast<std::uint64_t>(P));
    EXPECT_LE(countOf(e, 0, 0), P + kForkFaults);
    EXPECT_GE(countOf(e, 0, 1), static_cast<std::uint64_t>(kBurn)) << "its task-clock, ns: at least what it burnt";
    children_cpu += countOf(e, 0, 1);
  }
  // The tree clock: the target's time and its children's, exited ones included.
  EXPECT_GE(t1 - t0, children_cpu);
  EXPECT_LT(r.read(0), static_cast<std::uint64_t>(P)) << "the target's own count has none of its children's faults";
}

TEST(PerfInherit, WithoutInheritNoChildIsFollowed) {
  Family f;
  TreeRig r(f.pid(), false);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  // The target's own task-clock, the kernel's, read around the target's
  // clock (before t0, after t1), both times while the target waits for a
  // command (off the CPU: its task-clock stands still). The target's clock
  // moves as far as that, while each of its children burns kBurn.
  const pfmfs::testing::TaskClock own(f.pid(), false);
  ASSERT_TRUE(own.ok());
  ASSERT_TRUE(pfmfs::testing::waitOffCpu(f.pid()));
  const std::uint64_t own0 = own.ns();
  const std::uint64_t t0 = r.pmu().timeNs();
  r.pmu().enable();
  constexpr int N = 3, P = kPages;
  constexpr long kBurn = 10'000'000;
  ASSERT_TRUE(f.target({'S', N, P, kBurn}));
  std::this_thread::sleep_for(20ms);  // time for wrongly followed children's records to show
  r.pmu().disable();
  r.pmu().takeChildEvents(r.events);
  EXPECT_TRUE(r.events.empty());
  EXPECT_LT(r.read(0), static_cast<std::uint64_t>(P)) << "the children's faults are not the target's";
  ASSERT_TRUE(pfmfs::testing::waitOffCpu(f.pid()));
  const std::uint64_t t1 = r.pmu().timeNs();
  const std::uint64_t own1 = own.ns();
  EXPECT_LE(t1 - t0, own1 - own0) << "the target's own CPU time, not its children's (" << N << " x " << kBurn << " ns)";
}

TEST(PerfInherit, AGrandchildsCountsArriveToo) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  constexpr int P = kPages;
  ASSERT_TRUE(f.target({'G', 0, P, 0}));
  ASSERT_TRUE(r.collectExits(2));
  auto exits = TreeRig::exits(r.events);
  ASSERT_EQ(exits.size(), 2u);
  // The grandchild exits first: its parent waits for it.
  const ChildEvent* child = r.created(exits[1].tid);
  const ChildEvent* grandchild = r.created(exits[0].tid);
  ASSERT_NE(child, nullptr);
  ASSERT_NE(grandchild, nullptr);
  EXPECT_EQ(child->parent_tid, f.pid());
  EXPECT_EQ(grandchild->parent_tid, child->tid);
  EXPECT_TRUE(exits[0].counts && exits[0].counts->complete);
  EXPECT_GE(countOf(exits[0], 0, 0), static_cast<std::uint64_t>(P));
  EXPECT_LE(countOf(exits[0], 0, 0), P + kForkFaults);
  EXPECT_LT(countOf(exits[1], 0, 0), static_cast<std::uint64_t>(P)) << "the child's own faults only";
}

TEST(PerfInherit, ChildrenSwitchSetsWithTheTarget) {
  Family f;
  TreeRig r(f.pid(), true, 2);
  ASSERT_TRUE(r.ok());
  // The same counter, another event in each set: set 1 counts the faults
  // (minor: these pages need no I/O) only while it is on the PMU.
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  r.pmc(1, 0, PERF_COUNT_SW_PAGE_FAULTS_MIN);
  r.pmc(1, 1, PERF_COUNT_SW_TASK_CLOCK);
  ASSERT_TRUE(r.prepareAndLoad(1).ok());
  r.pmu().enable();
  // A child created, faulting and ending while set 1 is loaded.
  constexpr int P = 300;
  ASSERT_TRUE(f.target({'S', 1, P, 1'000'000}));
  ASSERT_TRUE(r.collectExits(1));
  auto only1 = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(only1.counts && only1.counts->complete);
  EXPECT_EQ(countOf(only1, 0, 0), 0u) << "set 0 never counted while it lived";
  EXPECT_GE(countOf(only1, 1, 0), static_cast<std::uint64_t>(P));
  EXPECT_GT(countOf(only1, 1, 1), 0u);

  // A child that lives through switches: 64 pages in set 0, then kPages in
  // set 1, then 32 in set 0.
  r.switchTo(0);
  ASSERT_TRUE(f.target({'H'}));
  ASSERT_TRUE(f.child({'T', 0, 64, 0}));
  r.switchTo(1);
  ASSERT_TRUE(f.child({'T', 0, kPages, 0}));
  r.switchTo(0);
  ASSERT_TRUE(f.child({'T', 0, 32, 0}));
  f.childExits();
  ASSERT_TRUE(f.target({'W'}));
  ASSERT_TRUE(r.collectExits(2));
  auto held = TreeRig::exits(r.events).at(1);
  ASSERT_TRUE(held.counts && held.counts->complete);
  EXPECT_GE(countOf(held, 0, 0), 64u + 32);
  EXPECT_LT(countOf(held, 0, 0), 64u + 32 + kForkFaults) << "set 1's pages are not in set 0";
  EXPECT_GE(countOf(held, 1, 0), static_cast<std::uint64_t>(kPages));
  EXPECT_LE(countOf(held, 1, 0), kPages + kForkFaults);
}

TEST(PerfInherit, ReprogrammingASetWhileAChildLivesLeavesItIncomplete) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.target({'H'}));
  ASSERT_TRUE(f.child({'T', 0, 50, 0}));
  // A PMC write: the engine stops counting, puts every set again, reloads.
  r.pmu().disable();
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS_MIN);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.child({'T', 0, 50, 0}));
  f.childExits();
  ASSERT_TRUE(f.target({'W'}));
  ASSERT_TRUE(r.collectExits(1));
  auto held = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(held.counts.has_value());
  EXPECT_FALSE(held.counts->complete) << "its set 0 was reopened while it lived";
  // A child created after the reprogram counts the new events in full.
  constexpr int P = 200;
  ASSERT_TRUE(f.target({'S', 1, P, 0}));
  ASSERT_TRUE(r.collectExits(2));
  auto fresh = TreeRig::exits(r.events).at(1);
  ASSERT_TRUE(fresh.counts && fresh.counts->complete);
  EXPECT_GE(countOf(fresh, 0, 0), static_cast<std::uint64_t>(P));
}

TEST(PerfInherit, AChildThatOutlivesTheTargetStillReports) {
  Family f;
  TreeRig r(f.pid(), true);
  ASSERT_TRUE(r.ok());
  r.pmc(0, 0, PERF_COUNT_SW_PAGE_FAULTS);
  ASSERT_TRUE(r.prepareAndLoad(0).ok());
  r.pmu().enable();
  ASSERT_TRUE(f.target({'H'}));
  f.exitTarget();
  for (auto deadline = std::chrono::steady_clock::now() + kPatience;
       !r.pmu().gone() && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(r.pmu().gone());
  // The engine catches up on the exit; then only the child's records wake it.
  r.pmu().takeChildEvents(r.events);
  std::this_thread::sleep_for(20ms);
  const int calls = r.calls();
  const std::uint64_t t0 = r.pmu().timeNs();
  constexpr int P = 400;
  constexpr long kBurn = 20'000'000;
  ASSERT_TRUE(f.child({'T', 0, P, 0}));
  ASSERT_TRUE(f.child({'B', 0, 0, kBurn}));
  EXPECT_GE(r.pmu().timeNs() - t0, static_cast<std::uint64_t>(kBurn)) << "the tree clock runs on in the child";
  f.childExits();
  for (auto deadline = std::chrono::steady_clock::now() + kPatience;
       r.calls() == calls && std::chrono::steady_clock::now() < deadline;)
    std::this_thread::sleep_for(1ms);
  EXPECT_GT(r.calls(), calls) << "the child's exit woke the engine";
  ASSERT_TRUE(r.collectExits(1));
  auto held = TreeRig::exits(r.events).at(0);
  ASSERT_TRUE(held.counts && held.counts->complete);
  EXPECT_GE(countOf(held, 0, 0), static_cast<std::uint64_t>(P));
}

}  // namespace
}  // namespace pfmfs::pmu::perf
