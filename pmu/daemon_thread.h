// The threads pfmfs starts itself (a backend's poller or record reader, the
// engine's timer, the daemon's thread watcher and fast-path server): named,
// for `top -H` and ps, and deaf to the signals that end pfmfsd.
//
// libfuse ends its loop on SIGINT, SIGTERM and SIGHUP by a flag its handler
// sets; only the thread the signal interrupts then notices. The kernel may
// give a process's signal to any thread that does not block it, and one of
// ours would run the handler and go on polling, while the main thread slept
// on and libfuse's workers waited on /dev/fuse: pfmfsd then kept serving
// until some request came. Our threads block them, from their first
// instruction (the mask is inherited from the creator, which blocks them
// around the creation).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace pfmfs {

// `name`: at most 15 characters (the kernel's limit for a thread's comm).
template <class F>
std::thread startDaemonThread(const char* name, F&& body) {
  struct Blocked {  // the creator's own mask comes back, also if std::thread throws
    sigset_t old;
    Blocked() {
      sigset_t ending;
      sigemptyset(&ending);
      for (int sig : {SIGHUP, SIGINT, SIGTERM}) sigaddset(&ending, sig);
      pthread_sigmask(SIG_BLOCK, &ending, &old);
    }
    ~Blocked() { pthread_sigmask(SIG_SETMASK, &old, nullptr); }
  } blocked;
  return std::thread([name, body = std::forward<F>(body)]() mutable {
    pthread_setname_np(pthread_self(), name);
    body();
  });
}

}  // namespace pfmfs
