// pfmfsd's stopping signals (see stop_signals.h).
#include "fs/stop_signals.h"

#include <signal.h>

#include <cerrno>

#include "pmu/daemon_thread.h"

namespace pfmfs::fs {
namespace {

sigset_t stopping() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, sig);
  return s;
}

void nothing(int) {}

}  // namespace

void StopSignals::blockInThisThread() {
  sigset_t s = stopping();
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
}

StopSignals::StopSignals(std::function<void(int)> on_stop)
    : on_stop_(std::move(on_stop)), thread_(startDaemonThread("pfmfs-signals", [this] { run(); })) {}

StopSignals::~StopSignals() {
  quitting_.store(true);
  pthread_kill(thread_.native_handle(), SIGHUP);  // blocked there: sigwaitinfo takes it
  thread_.join();
}

void StopSignals::run() {
  const sigset_t s = stopping();
  for (;;) {
    siginfo_t info;
    int sig = sigwaitinfo(&s, &info);
    if (sig < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (quitting_.load()) return;
    on_stop_(sig);
    return;  // once: the daemon is on its way out; more signals change nothing
  }
}

void LoopWaker::prepareThisThread() {
  struct sigaction sa {};
  sa.sa_handler = nothing;  // no SA_RESTART: the semaphore's wait returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

void LoopWaker::wake(pthread_t loop_thread) { pthread_kill(loop_thread, SIGUSR1); }

}  // namespace pfmfs::fs
