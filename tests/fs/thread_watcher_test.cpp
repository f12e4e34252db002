// fs/thread_watcher.h: every watched thread's exit is reported once, while
// its process lives on, also where the kernel has no thread pidfds (before
// Linux 6.9, Debian 12's 6.1: tested here by asking for the old way).
#include "fs/thread_watcher.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace pfmfs::fs {
namespace {

using namespace std::chrono_literals;

// What on_exit reported, from whichever thread reported it.
class Exits {
 public:
  ThreadWatcher::ExitFn fn() {
    return [this](pid_t tid) {
      std::lock_guard l(mu_);
      tids_.push_back(tid);
      cv_.notify_all();
    };
  }
  // The tids reported once `n` are, or after a minute.
  std::vector<pid_t> waitFor(std::size_t n) {
    std::unique_lock l(mu_);
    cv_.wait_for(l, 1min, [&] { return tids_.size() >= n; });
    return tids_;
  }
  std::vector<pid_t> now() {
    std::lock_guard l(mu_);
    return tids_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<pid_t> tids_;
};

// A thread of this process that lives until release(); tid() at once.
class Thread {
 public:
  Thread() : t_([this] { body(); }) {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return tid_ != 0; });
  }
  ~Thread() { release(); }
  pid_t tid() const { return tid_; }
  void release() {
    {
      std::lock_guard l(mu_);
      go_ = true;
    }
    cv_.notify_all();
    if (t_.joinable()) t_.join();  // gone from the kernel's view too
  }

 private:
  void body() {
    std::unique_lock l(mu_);
    tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
    cv_.notify_all();
    cv_.wait(l, [this] { return go_; });
  }
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  bool go_ = false;
  std::thread t_;
};

class ThreadWatcherTest : public ::testing::TestWithParam<bool> {};

TEST_P(ThreadWatcherTest, AThreadsExitIsReportedWhileItsProcessLives) {
  Exits exits;
  ThreadWatcher w(exits.fn(), GetParam());
  Thread a, b;
  w.watch(a.tid());
  w.watch(b.tid());
  EXPECT_EQ(w.watched(), 2u);
  std::this_thread::sleep_for(300ms);  // three looks of the old way: both still there
  EXPECT_TRUE(exits.now().empty());
  a.release();
  EXPECT_EQ(exits.waitFor(1), std::vector<pid_t>{a.tid()});
  b.release();
  EXPECT_EQ(exits.waitFor(2), (std::vector<pid_t>{a.tid(), b.tid()}));
  EXPECT_EQ(w.watched(), 0u);
}

TEST_P(ThreadWatcherTest, AThreadAlreadyGoneIsReportedByWatch) {
  Exits exits;
  ThreadWatcher w(exits.fn(), GetParam());
  pid_t tid = 0;
  {
    Thread t;
    tid = t.tid();
  }
  w.watch(tid);
  EXPECT_EQ(exits.now(), std::vector<pid_t>{tid});
  EXPECT_EQ(w.watched(), 0u);
}

TEST_P(ThreadWatcherTest, AnUnwatchedThreadIsNotReported) {
  Exits exits;
  ThreadWatcher w(exits.fn(), GetParam());
  Thread a, b;
  w.watch(a.tid());
  w.watch(b.tid());
  w.unwatch(a.tid());
  a.release();
  b.release();
  EXPECT_EQ(exits.waitFor(1), std::vector<pid_t>{b.tid()});
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(exits.now(), std::vector<pid_t>{b.tid()});
}

TEST_P(ThreadWatcherTest, AProcessesExitIsReported) {
  Exits exits;
  ThreadWatcher w(exits.fn(), GetParam());
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    ::_exit(::read(go[0], &c, 1) == 1 ? 0 : 1);
  }
  ::close(go[0]);
  w.watch(child);
  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  EXPECT_EQ(exits.waitFor(1), std::vector<pid_t>{child});
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
}

// true: thread pidfds where the kernel has them (Linux 6.9); false: as
// before 6.9, a process's pidfd and a look for the thread every 100 ms.
INSTANTIATE_TEST_SUITE_P(Pidfds, ThreadWatcherTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return std::string(p.param ? "ThreadPidfds" : "ProcessPidfdsAndLooks");
                         });

}  // namespace
}  // namespace pfmfs::fs
