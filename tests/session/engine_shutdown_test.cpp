// The end of an engine (Engine::shutdown, and so its destructor): every
// thread that calls into its sessions (the backend's) is joined before the
// engine goes, so that no call lands in a destroyed engine or observer; and
// nothing is loaded after it. On the sim under the manual clock, whose
// poller thread calls a session when a followed child exits (inherit).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "pmu/sim/sim_backend.h"
#include "session/engine.h"
#include "session/session.h"
#include "tests/support/forked_child.h"
#include "tests/support/sim_fixture.h"

namespace {

using namespace std::chrono_literals;
using pfmfs::Status;
using pfmfs::session::Caller;
using pfmfs::session::Engine;
using pfmfs::session::Flags;
using pfmfs::session::PmcWrite;
using pfmfs::session::Session;
using pfmfs::session::SessionObserver;
using pfmfs::session::State;
using pfmfs::testing::ChildIo;
using pfmfs::testing::ForkedChild;
using pfmfs::testing::kCycles;

extern "C" char** environ;

// An observer that holds the first call made from a thread other than the
// test's until release(): the backend's thread is then inside a call that
// began in a session and goes on through the engine.
class HoldingObserver final : public SessionObserver {
 public:
  explicit HoldingObserver(std::thread::id test) : test_(test) {}
  void messagesQueued(Session&) override {
    if (std::this_thread::get_id() == test_) return;
    std::unique_lock l(mu_);
    if (held_) return;
    held_ = true;
    cv_.notify_all();
    cv_.wait(l, [this] { return released_; });
    returned_ = true;
  }
  bool waitHeld(std::chrono::seconds limit) {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, limit, [this] { return held_; });
  }
  void release() {
    std::lock_guard l(mu_);
    released_ = true;
    cv_.notify_all();
  }
  bool returned() {
    std::lock_guard l(mu_);
    return returned_;
  }

 private:
  const std::thread::id test_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false, released_ = false, returned_ = false;
};

// The target: on go it starts a child (head -c 1, reading the go pipe, not
// instrumented), reports its pid and exits; the child ends at the next go.
int startChildAndExit(const ChildIo& io) {
  if (!io.awaitGo()) return 1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, io.go_fd, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const char* argv[] = {"/usr/bin/head", "-c", "1", nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, const_cast<char* const*>(argv), environ) != 0) return 1;
  posix_spawn_file_actions_destroy(&fa);
  io.report(static_cast<std::uint64_t>(pid));
  return 0;
}

TEST(EngineShutdown, WaitsForTheBackendsCallIntoASessionBeforeTheEngineGoes) {
  pfmfs::pmu::sim::SimOptions o;
  o.clock = pfmfs::pmu::ClockKind::Manual;
  auto backend = pfmfs::pmu::sim::SimBackend::create(o);
  ASSERT_TRUE(backend.ok()) << backend.error().reason;
  auto engine = std::make_unique<Engine>(**backend, pfmfs::session::EngineOptions{});
  HoldingObserver observer(std::this_thread::get_id());
  engine->setObserver(&observer);

  ForkedChild target(startChildAndExit);
  ASSERT_TRUE(target.ok());
  auto s = engine->createSession(Caller::root(), "s");
  ASSERT_TRUE(s.ok());
  Flags f;
  f.inherit = true;
  ASSERT_TRUE((*s)->setFlags(f).ok());
  ASSERT_TRUE((*s)->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok());
  Status st = (*s)->load(Caller::root(), target.pid());
  ASSERT_TRUE(st.ok()) << st.error().reason;
  ASSERT_TRUE((*s)->start().ok());
  target.go();
  ASSERT_TRUE(target.report().has_value());
  EXPECT_EQ(target.wait(), 0);
  engine->threadExited(target.pid());  // the session lives on with the child
  // The child's exit reaches the session on the poller's thread, which
  // unloads it with an end message and tells the observer: held there.
  target.go();
  ASSERT_TRUE(observer.waitHeld(60s)) << "the child's exit never reached the observer";

  std::mutex mu;
  std::condition_variable cv;
  bool destroyed = false;
  std::thread destroyer([&] {
    engine.reset();
    std::lock_guard l(mu);
    destroyed = true;
    cv.notify_all();
  });
  bool destroyed_while_held;
  {
    // The engine must not be gone while the call into it is under way: its
    // destruction waits for the release, however long that takes. Half a
    // second is how long this test gives a wrong engine to show itself.
    std::unique_lock l(mu);
    destroyed_while_held = cv.wait_for(l, 500ms, [&] { return destroyed; });
  }
  observer.release();
  destroyer.join();
  EXPECT_FALSE(destroyed_while_held) << "the engine was destroyed while the backend's thread was inside a call into it";
  EXPECT_TRUE(observer.returned());
  EXPECT_EQ((*s)->state().state, State::Unloaded);
  EXPECT_TRUE((*s)->state().exited);
}

TEST(EngineShutdown, UnloadsEverySessionKeepsThemAndRefusesLoadsAfter) {
  pfmfs::testing::SimConfig config;
  pfmfs::testing::SimEngine sim(config);
  auto s = sim.newSession("s");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false}).ok());
  ASSERT_TRUE(s->load(Caller::root(), ::getpid()).ok());
  ASSERT_TRUE(s->start().ok());
  sim.advance(1000);
  sim.engine().shutdown();
  EXPECT_EQ(s->state().state, State::Unloaded);
  EXPECT_EQ(sim.engine().find("s"), s) << "shutdown unloads sessions, it does not forget them";
  auto v = s->readPmd(0, 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, 3000u) << "the counts of the unloaded session stay";
  Status st = s->load(Caller::root(), ::getpid());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), -ESHUTDOWN) << st.error().reason;
  sim.engine().shutdown();  // idempotent
  EXPECT_TRUE(sim.engine().destroySession("s").ok());
}

}  // namespace
