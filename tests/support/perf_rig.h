// What the perf backend's tests of children share: a real process whose
// children and grandchildren fault pages and burn CPU on command, and a
// target attached to it with the images of its sets, driven as the engine
// drives it (perf_inherit_test.cpp, perf_child_sampling_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/perf/perf_backend.h"
#include "tests/support/task_clock.h"

namespace pfmfs::pmu::perf::perf_rig {

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
inline __attribute__((no_sanitize("address", "thread", "undefined"))) void touchPages(std::size_t n) {
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
  TreeRig(pid_t pid, bool inherit, unsigned sets = 1, bool sampling = false)
      : listener_(std::make_shared<CountingListener>()) {
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
    Target t{TargetKind::Thread, pid, inherit};
    t.sampling = sampling;
    auto a = backend_->attach(t, listener_);
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
  // PMD `slot`'s hardware bits in every set's image: -P samples every P.
  void bits(std::size_t slot, std::uint64_t value) { bits_[slot] = value; }
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

// Page faults a fresh child of the target takes of its own on top of the
// pages it is told to touch (copy-on-write of its stack and data after the
// fork, the exit; the sanitizers' runtimes): an upper bound. About 35 in a
// plain build, 50 under ASan, 410 under TSan; the target takes as many of
// its own at each fork. Tests touch kPages pages, more than all of those.
constexpr std::uint64_t kForkFaults = 1000;
constexpr int kPages = 2000;

}  // namespace pfmfs::pmu::perf::perf_rig
