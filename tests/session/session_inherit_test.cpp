// Inheritance (flags inherit, pfmfs(5) INHERITANCE) in the engine over the sim backend
// under the manual clock: real processes and threads, created and ended by a
// forked target in step with the test, counted exactly.
//
// Every followed thread moves with each advance; counts are rate x time
// (cycles: 3 per ns). A child is followed from the moment the engine has
// heard of it: the tests wait for `followed` to say so before advancing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "session/engine.h"
#include "session/session.h"
#include "tests/support/forked_child.h"
#include "tests/support/session_rig.h"
#include "tests/support/sim_fixture.h"

namespace {

using pfmfs::Status;
using pfmfs::session::Caller;
using pfmfs::session::CountLine;
using pfmfs::session::Flags;
using pfmfs::session::MessageType;
using pfmfs::session::PmcWrite;
using pfmfs::session::PmdWrite;
using pfmfs::session::Session;
using pfmfs::session::State;
using pfmfs::session::StateInfo;
using pfmfs::session::SwitchSpec;
using pfmfs::testing::ChildIo;
using pfmfs::testing::ForkedChild;
using pfmfs::testing::kCycles;
using pfmfs::testing::kInstructions;
using pfmfs::testing::SimEngine;

using u64 = std::uint64_t;

extern "C" char** environ;

// Starts argv with its stdin on `in` and its stdout on /dev/null. Children
// are spawned, not forked, and run programs that are not instrumented: the
// sanitizers' runtimes start a thread of their own in a forked child, which
// inheritance would follow like any other.
pid_t spawn(int in, std::vector<const char*> argv) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  argv.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char* const*>(argv.data()), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// A child that waits for one go() on the target's pipe, then exits.
pid_t forkWaiter(const ChildIo& io) { return spawn(io.go_fd, {"/usr/bin/head", "-c", "1"}); }

// The target most tests use: on the first go it creates one child, which
// the second go ends, then it reports and waits for a third go to exit.
int oneChild(const ChildIo& io) {
  if (!io.awaitGo()) return 1;
  pid_t c = forkWaiter(io);
  io.report(static_cast<u64>(c));
  ::waitpid(c, nullptr, 0);  // the next go is the child's
  io.report(0);
  return io.awaitGo() ? 0 : 1;
}

// The shared fixture, with the steps inheritance needs: a notifying PMD with
// both resets, a load on another process's thread, waits for the engine to
// hear of children.
class Inherit : public ::testing::Test, public pfmfs::testing::SessionRig {
 protected:
  void flagsInherit() {
    Flags f;
    f.inherit = true;
    flags(f);
  }
  void pmd(unsigned set, unsigned index, u64 value, bool notify = false, u64 reset = 0) {
    PmdWrite w = pfmfs::testing::pmdWrite(index, value);
    w.notify = notify;
    w.short_reset = reset;
    w.long_reset = reset;
    SessionRig::pmd(set, w);
  }
  void load(pid_t tid) { ok(s_->load(Caller::root(), tid)); }
  // Waits (a minute at most) until the engine's state satisfies `ok`.
  StateInfo waitState(const std::function<bool(const StateInfo&)>& ok) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    StateInfo i = s_->state();
    while (!ok(i) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      i = s_->state();
    }
    return i;
  }
  StateInfo waitFollowed(std::size_t n) {
    return waitState([n](const StateInfo& i) { return i.followed == n; });
  }
  u64 value(unsigned set, unsigned pmd) {
    auto r = s_->readPmd(set, pmd);
    EXPECT_TRUE(r.ok());
    return r ? r->value : 0;
  }
};

// A child counts from its creation with the session's control and fresh
// counts; its final counts join `children` when it exits; the target's own
// values stay its own.
TEST_F(Inherit, ChildCountsAreMergedAtItsExitAndTheTargetKeepsItsOwn) {
  ForkedChild target(oneChild);
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  sim_.advance(1000);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  StateInfo i = waitFollowed(1);
  ASSERT_EQ(i.followed, 1u);
  EXPECT_TRUE(i.inherit);
  sim_.advance(2000);  // target and child: 6000 cycles each
  EXPECT_EQ(value(0, 0), 9000u);
  target.go();  // the child exits
  ASSERT_TRUE(target.report().has_value());
  i = waitState([](const StateInfo& s) { return s.followed == 0 && s.merged == 1; });
  EXPECT_EQ(i.followed, 0u);
  EXPECT_EQ(i.merged, 1u);
  EXPECT_EQ(i.dropped, 0u);
  sim_.advance(1000);  // the target alone
  CountLine c = line(0, 0);
  EXPECT_EQ(c.value, 12000u);
  ASSERT_TRUE(c.children.has_value());
  EXPECT_EQ(*c.children, 6000u);
  EXPECT_EQ(c.enabled_ns, 4000u);
  EXPECT_EQ(c.running_ns, 4000u);
  ASSERT_TRUE(c.total_scaled.has_value());
  EXPECT_EQ(*c.total_scaled, 18000u);
  EXPECT_EQ(value(0, 0), 12000u);
  EXPECT_EQ(s_->state().state, State::Active);
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// Without inherit a child is neither followed nor counted, and the lines
// carry no children keys.
TEST_F(Inherit, WithoutInheritNothingIsFollowed) {
  ForkedChild target(oneChild);
  ASSERT_TRUE(target.ok());
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  target.go();
  ASSERT_TRUE(target.report().has_value());
  sim_.advance(1000);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  sim_.advance(1000);
  StateInfo i = s_->state();
  EXPECT_FALSE(i.inherit);
  EXPECT_EQ(i.followed, 0u);
  CountLine c = line(0, 0);
  EXPECT_EQ(c.value, 6000u);
  EXPECT_FALSE(c.children.has_value());
  EXPECT_FALSE(c.total_scaled.has_value());
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// A PMC write while a child lives is a new control: that child's result is
// dropped, and counted as dropped; a child created after it is merged.
TEST_F(Inherit, AChildOfAnOlderControlIsDropped) {
  ForkedChild target([](const ChildIo& io) {
    for (int round = 0; round < 2; ++round) {
      if (!io.awaitGo()) return 1;
      pid_t c = forkWaiter(io);
      io.report(static_cast<u64>(c));
      ::waitpid(c, nullptr, 0);
      io.report(0);
    }
    return io.awaitGo() ? 0 : 1;
  });
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  target.go();
  ASSERT_TRUE(target.report().has_value());
  ASSERT_EQ(waitFollowed(1).followed, 1u);
  sim_.advance(1000);
  pmc(0, 0, kCycles);  // the same value: still a reprogramming
  sim_.advance(1000);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  StateInfo i = waitState([](const StateInfo& s) { return s.followed == 0 && s.dropped == 1; });
  EXPECT_EQ(i.dropped, 1u);
  EXPECT_EQ(i.merged, 0u);
  EXPECT_EQ(*line(0, 0).children, 0u);
  // A child of the new control.
  target.go();
  ASSERT_TRUE(target.report().has_value());
  ASSERT_EQ(waitFollowed(1).followed, 1u);
  sim_.advance(500);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  i = waitState([](const StateInfo& s) { return s.followed == 0 && s.merged == 1; });
  EXPECT_EQ(i.merged, 1u);
  EXPECT_EQ(i.dropped, 1u);
  EXPECT_EQ(*line(0, 0).children, 1500u);
  EXPECT_EQ(line(0, 0).value, 7500u);
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// Grandchildren are followed too, and their counts reach the session.
TEST_F(Inherit, GrandchildrenAreFollowed) {
  ForkedChild target([](const ChildIo& io) {
    if (!io.awaitGo()) return 1;
    // The child: a shell whose first head is the grandchild (the first go is
    // its); then the shell becomes a head itself (the second go).
    pid_t c = spawn(io.go_fd, {"/bin/sh", "-c", "head -c 1; exec head -c 1"});
    ::waitpid(c, nullptr, 0);
    io.report(0);
    return io.awaitGo() ? 0 : 1;
  });
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  target.go();
  ASSERT_EQ(waitFollowed(2).followed, 2u);
  sim_.advance(1000);  // three threads
  target.go();         // the grandchild exits
  ASSERT_EQ(waitState([](const StateInfo& s) { return s.followed == 1; }).followed, 1u);
  sim_.advance(1000);  // two
  target.go();         // the child exits
  ASSERT_TRUE(target.report().has_value());
  StateInfo i = waitState([](const StateInfo& s) { return s.followed == 0 && s.merged == 2; });
  EXPECT_EQ(i.merged, 2u);
  CountLine c = line(0, 0);
  EXPECT_EQ(c.value, 6000u);
  EXPECT_EQ(*c.children, 3000u + 6000u);
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// Threads are children like processes; each is counted with fresh counts
// starting at the value last written.
TEST_F(Inherit, ThreadsStartAtTheWrittenValue) {
  // The target: python3 (not instrumented, see spawn), which on its first
  // byte starts two threads that each wait for one more, and says so.
  int go[2], rep[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(rep, O_CLOEXEC), 0);
  const char* script =
      "import os, threading\n"
      "os.write(3, b'r')\n"
      "os.read(0, 1)\n"
      "ts = [threading.Thread(target=os.read, args=(0, 1)) for _ in range(2)]\n"
      "[t.start() for t in ts]\n"
      "os.write(3, b't')\n"
      "[t.join() for t in ts]\n";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, go[0], 0);
  posix_spawn_file_actions_adddup2(&fa, rep[1], 3);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const char* argv[] = {"/usr/bin/python3", "-S", "-c", script, nullptr};
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char* const*>(argv), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(go[0]);
  ::close(rep[1]);
  // A failed assertion ends the test early: the target, blocked on its
  // stdin, is killed then, so that the failure shows instead of a hang.
  std::shared_ptr<void> reap(nullptr, [&pid](void*) {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  });
  auto said = [&] {
    char c = 0;
    return ::read(rep[0], &c, 1) == 1 ? c : '\0';
  };
  ASSERT_EQ(said(), 'r');
  flagsInherit();
  pmc(0, 0, kCycles);
  pmd(0, 0, 100);
  load(pid);
  start();
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ASSERT_EQ(said(), 't');
  ASSERT_EQ(waitFollowed(2).followed, 2u);
  sim_.advance(1000);
  ASSERT_EQ(::write(go[1], "gg", 2), 2);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const pid_t reaped = std::exchange(pid, -1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  sim_.engine().threadExited(reaped);  // what the fs's thread watcher says
  StateInfo i = waitState([](const StateInfo& s) { return s.state == State::Unloaded; });
  EXPECT_EQ(i.merged, 2u);
  EXPECT_TRUE(i.exited);
  CountLine c = line(0, 0);
  EXPECT_EQ(c.value, 3100u);           // its own, from the written 100
  EXPECT_EQ(*c.children, 2u * 3000u);  // events, whatever they started at
  ::close(go[1]);
  ::close(rep[0]);
}

// Stop and start apply to every followed thread; set switches too, at the
// session's instants, with runs and durations counted once.
TEST_F(Inherit, StopAndSwitchesApplyToChildren) {
  ForkedChild target(oneChild);
  ASSERT_TRUE(target.ok());
  flagsInherit();
  ASSERT_TRUE(s_->createSet(1).ok());
  pmc(0, 0, kCycles);
  pmc(1, 0, kInstructions);
  ASSERT_TRUE(s_->setSwitch(0, SwitchSpec{true, 1000, false}).ok());
  ASSERT_TRUE(s_->setSwitch(1, SwitchSpec{true, 1000, false}).ok());
  load(target.pid());
  target.go();
  ASSERT_TRUE(target.report().has_value());
  ASSERT_EQ(waitFollowed(1).followed, 1u);  // followed while stopped
  sim_.advance(5000);                       // not counting: nothing counts
  start();
  sim_.advance(4000);  // set 0, 1, 0, 1: 2000 ns each
  ASSERT_TRUE(s_->stop().ok());
  sim_.advance(3000);  // stopped
  target.go();
  ASSERT_TRUE(target.report().has_value());
  ASSERT_EQ(waitState([](const StateInfo& s) { return s.merged == 1; }).merged, 1u);
  CountLine c0 = line(0, 0), c1 = line(1, 0);
  EXPECT_EQ(c0.value, 6000u);
  EXPECT_EQ(*c0.children, 6000u);
  EXPECT_EQ(c1.value, 4000u);
  EXPECT_EQ(*c1.children, 4000u);
  EXPECT_EQ(c0.running_ns, 2000u);
  EXPECT_EQ(c1.running_ns, 2000u);
  EXPECT_EQ(c0.enabled_ns, 4000u);
  EXPECT_EQ(*c0.total_scaled, 24000u);
  EXPECT_EQ(*c1.total_scaled, 16000u);
  auto info0 = s_->setInfo(0);
  ASSERT_TRUE(info0.ok());
  EXPECT_EQ(info0->runs, 3u);  // started, back at 7000, and again at 9000 (the end of the advance)
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// The target exits first: the session stays loaded while its child lives,
// then unloads with exited=1 and an end message.
TEST_F(Inherit, TheSessionOutlivesItsTargetUntilTheLastChild) {
  // The target exits when the test writes to `exit_when` (the go pipe is
  // its child's), after the first advance.
  int exit_when[2];
  ASSERT_EQ(::pipe2(exit_when, O_CLOEXEC), 0);
  ForkedChild target([&exit_when](const ChildIo& io) {
    if (!io.awaitGo()) return 1;
    pid_t c = forkWaiter(io);
    io.report(static_cast<u64>(c));
    char x;
    return ::read(exit_when[0], &x, 1) == 1 ? 0 : 1;  // the child lives on (reparented)
  });
  ::close(exit_when[0]);
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  target.go();
  auto child = target.report();
  ASSERT_TRUE(child.has_value());
  ASSERT_EQ(waitFollowed(1).followed, 1u);
  sim_.advance(1000);
  ASSERT_EQ(::write(exit_when[1], "x", 1), 1);
  ::close(exit_when[1]);
  EXPECT_EQ(target.wait(), 0);
  // The sim hears of the exit itself (its dummy event on the thread hangs
  // up); the fs's thread watcher says it too.
  waitState([](const StateInfo& s) { return s.target_exited; });
  sim_.engine().threadExited(target.pid());
  StateInfo i = s_->state();
  EXPECT_EQ(i.state, State::Active);
  EXPECT_EQ(i.followed, 1u);
  EXPECT_FALSE(i.exited);
  EXPECT_TRUE(i.target_exited);
  sim_.advance(1000);  // the child alone
  EXPECT_EQ(value(0, 0), 3000u);
  target.go();  // the child exits
  i = waitState([](const StateInfo& s) { return s.state == State::Unloaded; });
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_FALSE(i.target_exited) << "only while loaded";
  EXPECT_EQ(i.merged, 1u);
  CountLine c = line(0, 0);
  EXPECT_EQ(c.value, 3000u);
  EXPECT_EQ(*c.children, 6000u);
  auto msgs = s_->takeMessages(8);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(msgs[0].type, MessageType::End);
}

// A child's counter overflows like the target's: the message carries the
// child's pid and tid, the session masks, restart resets the child's PMD.
TEST_F(Inherit, AChildsOverflowNotifiesWithItsPidAndTid) {
  ForkedChild target(oneChild);
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  // 3000 cycles (1000 ns) to the overflow, from the written value: the
  // target gets there 500 ns before the child created 500 ns in.
  const u64 start_value = ~u64{0} - 2999;
  pmd(0, 0, start_value, true, start_value);
  load(target.pid());
  start();
  sim_.advance(500);
  target.go();
  auto child = target.report();
  ASSERT_TRUE(child.has_value());
  ASSERT_EQ(waitFollowed(1).followed, 1u);
  sim_.advance(500);  // the target's overflow
  EXPECT_EQ(s_->state().state, State::Masked);
  auto m1 = s_->takeMessages(8);
  ASSERT_EQ(m1.size(), 1u);
  EXPECT_EQ(m1[0].tid, target.pid());
  ASSERT_TRUE(s_->restart().ok());
  sim_.advance(500);  // the child's: 1000 ns after its creation
  EXPECT_EQ(s_->state().state, State::Masked);
  auto m2 = s_->takeMessages(8);
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(m2[0].type, MessageType::Overflow);
  EXPECT_EQ(m2[0].pid, static_cast<pid_t>(*child));
  EXPECT_EQ(m2[0].tid, static_cast<pid_t>(*child));
  EXPECT_EQ(m2[0].pmds, 1u);
  ASSERT_TRUE(s_->restart().ok());
  sim_.advance(200);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  ASSERT_EQ(waitState([](const StateInfo& s) { return s.merged == 1; }).merged, 1u);
  // The target: reset at 1000 ns, 700 ns since. The child: 3000 events to
  // its overflow, reset, 600 more.
  EXPECT_EQ(value(0, 0), start_value + 2100);
  EXPECT_EQ(*line(0, 0).children, 3000u + 600u);
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// Unload (and so rmdir) lets every child go: none stays followed, and their
// unfinished counts are dropped.
TEST_F(Inherit, UnloadLetsChildrenGo) {
  ForkedChild target(oneChild);
  ASSERT_TRUE(target.ok());
  flagsInherit();
  pmc(0, 0, kCycles);
  load(target.pid());
  start();
  target.go();
  ASSERT_TRUE(target.report().has_value());
  // At least the child; under TSan the target's runtime may have started a
  // thread of its own since the load, which is followed too.
  std::size_t followed = waitState([](const StateInfo& x) { return x.followed >= 1; }).followed;
  ASSERT_GE(followed, 1u);
  ASSERT_TRUE(s_->unload().ok());
  StateInfo i = s_->state();
  EXPECT_EQ(i.followed, 0u);
  EXPECT_GE(i.dropped, followed);
  target.go();
  ASSERT_TRUE(target.report().has_value());
  target.go();
  EXPECT_EQ(target.wait(), 0);
}

// inherit is a thread-mode flag.
TEST_F(Inherit, SystemModeRefusesInherit) {
  flagsInherit();
  Status st = s_->setMode(pfmfs::session::Mode::System);
  EXPECT_EQ(st.code(), -EINVAL);
  EXPECT_NE(s_->error().find("inherit"), std::string::npos);
  ASSERT_TRUE(s_->setFlags(Flags{}).ok());
  ASSERT_TRUE(s_->setMode(pfmfs::session::Mode::System).ok());
  Flags f;
  f.inherit = true;
  EXPECT_EQ(s_->setFlags(f).code(), -EINVAL);
  EXPECT_FALSE(s_->flags().inherit);
}

}  // namespace
