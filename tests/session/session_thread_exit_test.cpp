// What a session does when its monitored thread exits, and when the session
// itself is destroyed while loaded or loading.
#include "tests/session/session_rules_fixture.h"

namespace {

using namespace pfmfs::testing::rules;

// ---- the monitored thread exits ----------------------------------------------------------------------------------

TEST_F(SessionRules, ThreadExitUnloadsKeepsCountsAndQueuesEnd) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);
  sim().engine().threadExited(gettidNow());

  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_FALSE(i.target.has_value());
  EXPECT_EQ(i.queued, 1u);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
  sim().advance(100);  // nothing counts any more
  EXPECT_EQ(countOf(s(), 0, 0), 300u);
  EXPECT_EQ(s().counts()[0].enabled_ns, 100u);

  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::End);
  EXPECT_EQ(ms[0].seq, 1u);
  EXPECT_EQ(toText(ms[0]), "type=end seq=1\n");
  EXPECT_EQ(s().queuedMessages(), 0u);

  // Commands see an unloaded session.
  EXPECT_EQ(s().start().code(), -EINVAL);
  EXPECT_EQ(s().stop().code(), -EINVAL);
  ASSERT_TRUE(s().unload().ok());
}

TEST_F(SessionRules, ThreadExitReleasesTheThread) {
  auto other = sim().newSession("other");
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  sim().engine().threadExited(gettidNow());
  ASSERT_TRUE(other->load(kRoot, gettidNow()).ok());
  EXPECT_EQ(other->state().state, State::Loaded);
}

TEST_F(SessionRules, LoadAgainAfterExitClearsExited) {
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  sim().engine().threadExited(gettidNow());
  ASSERT_TRUE(s().state().exited);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Loaded);
  EXPECT_FALSE(i.exited);
  ASSERT_TRUE(s().start().ok());
  sim().advance(10);
  EXPECT_EQ(pmdValue(s(), 0, 0), 60u);
}

TEST_F(SessionRules, ThreadExitOfAnotherThreadChangesNothing) {
  makeRichActive();
  std::string before = snap();
  sim().engine().threadExited(0x3fffffff);
  sim().engine().threadExited(gettidNow() + 1);
  sim().engine().threadExited(0);
  EXPECT_EQ(snap(), before);
}

TEST_F(SessionRules, ThreadExitAfterUnloadChangesNothing) {
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  ASSERT_TRUE(s().unload().ok());
  std::string before = snap();
  sim().engine().threadExited(gettidNow());
  EXPECT_EQ(snap(), before);
  EXPECT_FALSE(s().state().exited);
  EXPECT_EQ(s().queuedMessages(), 0u);
}

TEST_F(SessionRules, ThreadExitWhileMaskedQueuesEndAfterTheOverflow) {
  makeMasked();
  sim().engine().threadExited(gettidNow());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[0].type, MessageType::Overflow);
  EXPECT_EQ(ms[0].seq, 1u);
  EXPECT_EQ(ms[0].pmds, 0x1u);
  EXPECT_EQ(ms[0].tid, gettidNow());
  EXPECT_EQ(ms[0].pid, ::getpid());
  EXPECT_EQ(ms[1].type, MessageType::End);
  EXPECT_EQ(ms[1].seq, 2u);
  EXPECT_TRUE(s().restart().ok());  // the overflow's late acknowledgement, once
  EXPECT_EQ(s().restart().code(), -EBUSY);
}

TEST_F(SessionRules, EndMessageThatDoesNotFitIsCountedLost) {
  SimConfig c;
  c.engine.max_messages = 1;
  make(c);
  makeMasked();
  ASSERT_EQ(s().state().queued, 1u);
  sim().engine().threadExited(gettidNow());
  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_EQ(i.queued, 1u);
  EXPECT_EQ(i.lost, 1u);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::Overflow);
  EXPECT_EQ(ms[0].seq, 1u);
}

TEST_F(SessionRules, RealThreadThatExits) {
  std::promise<pid_t> started;
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::thread t([&started, go] {
    started.set_value(gettidNow());
    go.wait();
  });
  pid_t tid = started.get_future().get();
  ASSERT_NE(tid, gettidNow());

  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(0, kCycles)).ok());
  ASSERT_TRUE(s().writePmc(kRoot, 0, pmc(16, 0x2)).ok());
  ASSERT_TRUE(s().load(kRoot, tid).ok());
  EXPECT_EQ(*s().state().target, tid);
  ASSERT_TRUE(s().start().ok());
  sim().advance(100);

  release.set_value();
  t.join();
  ASSERT_TRUE(waitThreadGone(tid));
  sim().engine().threadExited(tid);

  StateInfo i = s().state();
  EXPECT_EQ(i.state, State::Unloaded);
  EXPECT_TRUE(i.exited);
  EXPECT_FALSE(i.target.has_value());
  EXPECT_EQ(countOf(s(), 0, 0), 300u);
  EXPECT_EQ(countOf(s(), 0, 16), 200u);
  auto ms = s().takeMessages(10);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].type, MessageType::End);
  EXPECT_EQ(ms[0].seq, 1u);

  // The thread is gone: it cannot be loaded again; another one can.
  EXPECT_FAILS_CLEANLY(s().load(kRoot, tid), ESRCH);
  EXPECT_TRUE(s().state().exited);
  ASSERT_TRUE(s().load(kRoot, gettidNow()).ok());
  EXPECT_FALSE(s().state().exited);
  EXPECT_EQ(pmdValue(s(), 0, 0), 300u);
}

TEST_F(SessionRules, DestroySessionWhateverItsState) {
  makeMasked();
  ASSERT_TRUE(sim().engine().destroySession("s").ok());
  EXPECT_EQ(s().state().state, State::Unloaded);
  EXPECT_EQ(sim().engine().find("s"), nullptr);
  auto again = sim().engine().createSession(kRoot, "s");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->load(kRoot, gettidNow()).ok());
}

}  // namespace

namespace pfmfs::testing {

// A load that loses the race with the session's destruction must not claim
// the thread for a session nobody can reach any more.
TEST(SessionDestroy, ADestroyedSessionRefusesToLoadAndLeavesTheThreadFree) {
  SimEngine e;
  auto s = e.newSession("gone");
  ASSERT_TRUE(e.engine().destroySession("gone").ok());
  Status st = s->load(session::Caller::root(), gettidNow());
  EXPECT_EQ(st.code(), -ENOENT);
  EXPECT_EQ(s->error(), "session gone was destroyed");
  EXPECT_EQ(s->state().state, session::State::Unloaded);
  auto other = e.newSession("other");
  EXPECT_TRUE(other->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(other->unload().ok());
}

TEST(SessionDestroy, DestroyingALoadedSessionUnloadsItAndFreesTheThread) {
  SimEngine e;
  auto s = e.newSession("a");
  ASSERT_TRUE(s->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(e.engine().destroySession("a").ok());
  EXPECT_EQ(s->state().state, session::State::Unloaded);
  auto b = e.newSession("b");
  EXPECT_TRUE(b->load(session::Caller::root(), gettidNow()).ok());
  ASSERT_TRUE(b->unload().ok());
}

}  // namespace pfmfs::testing
