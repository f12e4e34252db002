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

}  // namespace pfmfs::fs
