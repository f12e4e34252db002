// pfmfsd's FUSE loop (see request_loop.h).
#include "fs/request_loop.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "pmu/daemon_thread.h"

namespace pfmfs::fs {
namespace {

// What drain() answers at most: a client that keeps sending cannot keep
// pfmfsd from ending.
constexpr unsigned kDrainLimit = 1000;

// How long run() waits for the workers to end before it signals those
// still there again (a signal that came just before a read began is lost).
constexpr auto kWakeAgain = std::chrono::milliseconds(10);

constexpr int kWakeSignal = SIGUSR1;

sigset_t wakeSet() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, kWakeSignal);
  return s;
}

void nothing(int) {}

}  // namespace

void RequestLoop::blockWakeSignal() {
  struct sigaction sa {};
  sa.sa_handler = nothing;  // no SA_RESTART: the read returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(kWakeSignal, &sa, nullptr);
  const sigset_t s = wakeSet();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

RequestLoop::RequestLoop(fuse_session* se, unsigned workers) : se_(se), workers_(workers == 0 ? 1 : workers) {}

Status RequestLoop::run() {
  threads_.reserve(workers_);
  for (unsigned i = 0; i < workers_; ++i) {
    {
      MutexLock l(mutex_);
      ++live_;
    }
    try {
      threads_.push_back(startDaemonThread("pfmfs-fuse", [this] { work(); }));
    } catch (const std::system_error& e) {  // no thread: the ones there end too
      {
        MutexLock l(mutex_);
        --live_;
      }
      end(-e.code().value());
      break;
    }
  }
  MutexLock l(mutex_);
  while (!stopping_.load()) l.wait(changed_);
  while (live_ > 0) {
    // An ended worker's thread is still joinable: signalling it is safe.
    for (auto& t : threads_) pthread_kill(t.native_handle(), kWakeSignal);
    const auto again = std::chrono::steady_clock::now() + kWakeAgain;
    while (live_ > 0 && l.waitUntil(changed_, again)) {
    }
  }
  const int error = error_;
  l.unlock();
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (error != 0) return err(-error, "FUSE loop: {}", std::strerror(-error));
  return {};
}

void RequestLoop::stop() {
  {
    MutexLock l(mutex_);
    stopping_.store(true);
  }
  changed_.notify_all();
}

void RequestLoop::end(int error) {
  {
    MutexLock l(mutex_);
    if (error < 0 && error_ == 0) error_ = error;
    stopping_.store(true);
  }
  changed_.notify_all();
}

void RequestLoop::work() {
  const sigset_t wake = wakeSet();
  fuse_buf buf{};
  while (!stopping_.load()) {
    pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
    int res = fuse_session_receive_buf(se_, &buf);
    pthread_sigmask(SIG_BLOCK, &wake, nullptr);
    if (res == -EINTR) continue;  // stop(), or a stray SIGUSR1
    if (res <= 0) {               // 0: the connection ended (libfuse saw ENODEV)
      end(res);
      break;
    }
    fuse_session_process_buf(se_, &buf);  // taken, so answered: never dropped
  }
  std::free(buf.mem);
  {
    MutexLock l(mutex_);
    --live_;
  }
  changed_.notify_all();
}

void RequestLoop::drain() {
  const int device = fuse_session_fd(se_);
  const int flags = ::fcntl(device, F_GETFL);
  if (flags < 0 || ::fcntl(device, F_SETFL, flags | O_NONBLOCK) < 0) return;  // it could block
  fuse_session_reset(se_);  // an exited session's receive returns nothing
  fuse_buf buf{};
  for (unsigned i = 0; i < kDrainLimit; ++i) {
    if (fuse_session_receive_buf(se_, &buf) <= 0) break;  // -EAGAIN: none left
    fuse_session_process_buf(se_, &buf);
  }
  std::free(buf.mem);
  fuse_session_exit(se_);
  ::fcntl(device, F_SETFL, flags);  // a later drain() sees what came since
}

}  // namespace pfmfs::fs
