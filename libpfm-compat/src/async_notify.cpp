// The notifier (see async_notify.h): the watcher thread in the process's
// descriptor table, the signaller thread in a private one.
#include "async_notify.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "base/mutex.h"
#include "context_table.h"

namespace pfmcompat {
namespace {

using pfmfs::Mutex;
using pfmfs::MutexLock;

Mutex g_mutex;                               // creation, fork and the abandoned fences only; a leaf
bool g_started GUARDED_BY(g_mutex) = false;  // the threads run in this process
int g_epoll GUARDED_BY(g_mutex) = -1;
int g_request_read GUARDED_BY(g_mutex) = -1;
// Written under g_mutex before the watcher starts (or in a fork child, alone)
// and read by the watcher without it: thread creation orders the two.
int g_request_write = -1;

// A caller of drainNotifications waiting for the signaller to reach it.
// Freed by the caller once done; left to the threads (leaked) if it gave up.
// POSIX's mutex and condition, not the standard library's, which would
// need libstdc++ (cxx_runtime.cpp).
struct Fence {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv;
  bool done = false;
  Fence* next_abandoned = nullptr;
  // Stored (release) once the rest is made, loaded (acquire) by the
  // signaller before it touches the rest: the pointer reaches it through
  // the kernel (epoll, then a pipe it reads with raw system calls), which
  // orders nothing for a thread sanitizer.
  std::atomic<bool> made{false};
};
// The fences given up on: kept reachable, so that a leak checker does not
// count them (the threads may still reach one).
Fence* g_abandoned GUARDED_BY(g_mutex) = nullptr;

// What the watcher asks the signaller to send, whole in one pipe write; or,
// with `fence`, that it say when it got there.
struct SignalRequest {
  int32_t fd;          // the program's descriptor number: the signal's si_fd
  int32_t owner_type;  // F_OWNER_TID, F_OWNER_PID or F_OWNER_PGRP
  int32_t owner;       // its id
  int32_t signal;      // F_GETSIG: 0 means plain SIGIO
  Fence* fence;        // not null: a fence, nothing to send
};

// An epoll key with this bit is a fence's eventfd, the rest its Fence (user
// space addresses have the top bit clear); other keys are packKey's.
constexpr uint64_t kFenceKey = uint64_t{1} << 63;

void queueRequest(const SignalRequest& req) {
  ssize_t n;
  do {
    n = write(g_request_write, &req, sizeof req);
  } while (n < 0 && errno == EINTR);
  (void)n;
}

uint64_t packKey(int fd, uint32_t generation) { return uint64_t(uint32_t(fd)) | uint64_t(generation) << 32; }

// Per descriptor a context was created on: the thread F_SETOWN (or
// F_SETOWN_EX F_OWNER_PID) named there, which F_GETOWN_EX does not report
// (noteOwner), as packKey(tid, generation); 0 for every other owner, which
// F_GETOWN_EX reports as the kernel holds it. Written by the program's
// threads (fcntl), read by the watcher and by drainNotifications.
std::atomic<uint64_t> g_thread_owner[ContextTable::kMaxFd];

// tid is a thread of this process now (tgkill's check: signal 0 is sent
// to nobody). A thread that has exited, or an id that another process
// took since, is not: the kernel sends nothing to an owner that is gone.
bool liveThreadOfOurs(pid_t tid) {
  const int saved = errno;
  const bool live = tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) == 0;
  errno = saved;
  return live;
}

// The owner to signal for a notification on fd: the kernel's (F_GETOWN_EX)
// when it reports one, else the thread noteOwner kept, as F_OWNER_PID (the
// kernel's own type for F_SETOWN of a thread id: the signal aimed at the
// process, with that thread preferred). generation: the context's, or
// nullptr (any). False: no owner, no signal.
bool currentOwner(int fd, const uint32_t* generation, struct f_owner_ex* owner) {
  if (fcntl(fd, F_GETOWN_EX, owner) != 0) return false;
  if (owner->pid > 0) return true;
  if (owner->type != F_OWNER_PID || fd < 0 || fd >= ContextTable::kMaxFd) return false;
  const uint64_t kept = g_thread_owner[fd].load(std::memory_order_acquire);
  const pid_t tid = pid_t(uint32_t(kept));
  if (kept == 0 || (generation && uint32_t(kept >> 32) != *generation) || !liveThreadOfOurs(tid)) return false;
  owner->pid = tid;
  return true;
}

void handleEvent(uint64_t key, uint32_t events) {
  if (key & kFenceKey) {  // the events before it are handled: on to the signaller
    queueRequest(SignalRequest{-1, 0, 0, 0, reinterpret_cast<Fence*>(key & ~kFenceKey)});
    return;
  }
  if (!(events & (EPOLLIN | EPOLLPRI)) || (events & EPOLLHUP)) return;  // HUP: the session is gone
  const int fd = int(uint32_t(key));
  const uint32_t generation = uint32_t(key >> 32);
  ContextRef ref = ContextTable::lookup(fd);  // also checks fd still names that session
  if (!ref || ref->generation() != generation) return;
  // O_ASYNC itself cannot be seen: the kernel keeps FASYNC only on files
  // whose driver has a fasync operation, and FUSE has none, so F_SETFL drops
  // it silently. An owner (F_SETOWN, F_SETOWN_EX) is what a program sets
  // together with O_ASYNC, and is kept: it is the switch.
  struct f_owner_ex owner;
  if (!currentOwner(fd, &generation, &owner)) return;  // no owner: no signal, as for any file
  int sig = fcntl(fd, F_GETSIG);
  if (sig < 0) return;
  queueRequest(SignalRequest{fd, owner.type, owner.pid, sig, nullptr});
}

// How long the watcher sleeps in the kernel at most. While epoll polls a
// context's msg file it holds a reference to it (a recent kernel: 6.18); if the
// program closes the descriptor then, that reference is the last, and the
// kernel runs the file's release, which is what ends the session
// (autoclose), only once this thread returns to user space. A wake-up that
// reports nothing (the file no longer ready) does not return: without a
// bound, the session lived on until the next message of another context
// (seen: ptrace_child's closed session still there after 20 s).
constexpr int kWatchTimeoutMs = 100;

void* watcherMain(void* arg) {
  const int epfd = int(reinterpret_cast<intptr_t>(arg));
  struct epoll_event events[32];
  for (;;) {
    int n = epoll_wait(epfd, events, 32, kWatchTimeoutMs);
    if (n < 0) {
      if (errno == EINTR) continue;
      return nullptr;
    }
    for (int i = 0; i < n; ++i) handleEvent(events[i].data.u64, events[i].events);
  }
}

// The signaller works in its own descriptor table, where a number means
// something else than the same number in the rest of the process. It makes
// its calls as raw system calls: thread sanitizers model descriptors per
// process and would see races between unrelated files.
long sys(long nr, long a = 0, long b = 0, long c = 0) { return syscall(nr, a, b, c); }

// Moves fd out of the way of want (used before placing the pipe at want).
int moveAway(int fd, int want) {
  if (fd != want) return fd;
  int moved = int(sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0));  // the lowest free number: never want, which fd holds
  sys(SYS_close, fd);
  return moved;
}

void sendLikeTheKernel(int& request_fd, const SignalRequest& req) {
  request_fd = moveAway(request_fd, req.fd);
  int p[2];
  if (sys(SYS_pipe2, long(p), O_CLOEXEC | O_NONBLOCK) != 0) return;
  int rd = p[0];
  int wr = moveAway(p[1], req.fd);
  if (rd != req.fd) {
    if (sys(SYS_dup3, rd, req.fd, O_CLOEXEC) < 0) {
      sys(SYS_close, rd);
      sys(SYS_close, wr);
      return;
    }
    sys(SYS_close, rd);
    rd = req.fd;
  }
  struct f_owner_ex owner;
  owner.type = static_cast<decltype(owner.type)>(req.owner_type);
  owner.pid = req.owner;
  if (sys(SYS_fcntl, rd, F_SETOWN_EX, long(&owner)) == 0 &&
      (req.signal == 0 || sys(SYS_fcntl, rd, F_SETSIG, req.signal) == 0) &&
      sys(SYS_fcntl, rd, F_SETFL, O_ASYNC | O_NONBLOCK) == 0) {
    static const char kByte = 0;
    sys(SYS_write, wr, long(&kByte), 1);  // the kernel signals the pipe's owner here
  }
  // The reader first: its async registration goes with it, so closing the
  // writer (which signals readers too) sends nothing more.
  sys(SYS_close, rd);
  sys(SYS_close, wr);
}

// Closes every descriptor of the (private) table but keep.
void closeAllBut(int keep) {
  bool ok = true;
  if (keep > 0) ok = sys(SYS_close_range, 0, keep - 1, 0) == 0;
  ok = ok && sys(SYS_close_range, keep + 1, long(~0u), 0) == 0;
  if (ok) return;
  // Kernels before 5.9: one by one, up to the descriptor limit.
  struct rlimit lim;
  long top = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? long(lim.rlim_cur) : 1 << 20;
  for (long fd = 0; fd < top; ++fd)
    if (fd != keep) sys(SYS_close, fd);
}

void* signallerMain(void* arg) {
  int request_fd = int(reinterpret_cast<intptr_t>(arg));
  if (sys(SYS_unshare, CLONE_FILES) != 0) return nullptr;  // no signals; the watcher's writes then fail (non-blocking)
  // The private table starts as a copy of the process's: drop every copy
  // at once, or the program's close() would no longer end its sessions.
  closeAllBut(request_fd);
  for (;;) {
    SignalRequest req;
    long n = sys(SYS_read, request_fd, long(&req), sizeof req);
    if (n == -1 && errno == EINTR) continue;
    if (n != long(sizeof req)) return nullptr;  // the process is going (or forked away)
    if (req.fence) {                            // every request before it is sent
      while (!req.fence->made.load(std::memory_order_acquire)) {
      }
      pthread_mutex_lock(&req.fence->mu);
      req.fence->done = true;
      pthread_cond_broadcast(&req.fence->cv);  // under the lock: the caller frees it once it sees done
      pthread_mutex_unlock(&req.fence->mu);
      continue;
    }
    sendLikeTheKernel(request_fd, req);
  }
}

bool startThread(void* (*main)(void*), intptr_t arg) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t t;
  bool ok = pthread_create(&t, &attr, main, reinterpret_cast<void*>(arg)) == 0;
  pthread_attr_destroy(&attr);
  return ok;
}

// In a fork child the threads are gone; the inherited epoll set and pipe
// belong to the parent's threads and are let go of here.
void atforkPrepare() ACQUIRE(g_mutex) { g_mutex.lock(); }
void atforkParent() RELEASE(g_mutex) { g_mutex.unlock(); }
void atforkChild() RELEASE(g_mutex) {
  // The forking thread took the mutex in atforkPrepare and is the one left.
  if (g_started) {
    close(g_epoll);
    close(g_request_read);
    close(g_request_write);
  }
  g_started = false;
  g_epoll = g_request_read = g_request_write = -1;
  g_mutex.unlock();
}

bool ensureStarted() REQUIRES(g_mutex) {
  static bool atfork_registered = false;
  if (!atfork_registered) {
    pthread_atfork(atforkPrepare, atforkParent, atforkChild);
    atfork_registered = true;
  }
  if (g_started) return true;
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return false;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    close(epfd);
    return false;
  }
  // The watcher never waits on the signaller: a request that finds the
  // pipe full (or the signaller gone) is dropped.
  fcntl(p[1], F_SETFL, O_NONBLOCK);
  for (int fd : {epfd, p[0], p[1]}) ContextTable::reclaim(fd);
  g_epoll = epfd;
  g_request_read = p[0];
  g_request_write = p[1];  // set before the watcher exists: it only reads it
  // The threads take every signal blocked: a program's handlers run on its own threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool ok = startThread(signallerMain, p[0]) && startThread(watcherMain, epfd);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (!ok) {
    // A signaller without a watcher just waits for a request that never comes.
    close(epfd);
    close(p[0]);
    close(p[1]);
    g_epoll = g_request_read = g_request_write = -1;
    return false;
  }
  g_started = true;
  return true;
}

}  // namespace

void drainNotifications(int fd) {
  int epfd;
  {
    MutexLock lock(g_mutex);
    if (!g_started) return;
    epfd = g_epoll;
  }
  struct f_owner_ex owner;
  if (!currentOwner(fd, nullptr, &owner)) return;    // no owner: no signals to wait for
  int efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);  // readable at once
  if (efd < 0) return;
  auto* fence = new Fence;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&fence->cv, &attr);
  pthread_condattr_destroy(&attr);
  fence->made.store(true, std::memory_order_release);
  struct epoll_event ev;
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = kFenceKey | reinterpret_cast<uintptr_t>(fence);
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) != 0) {
    close(efd);
    pthread_cond_destroy(&fence->cv);
    delete fence;
    return;
  }
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += 1;
  pthread_mutex_lock(&fence->mu);
  while (!fence->done && pthread_cond_timedwait(&fence->cv, &fence->mu, &until) != ETIMEDOUT) {
  }
  const bool done = fence->done;
  pthread_mutex_unlock(&fence->mu);
  close(efd);  // also takes it out of the epoll set
  if (done) {
    pthread_cond_destroy(&fence->cv);
    delete fence;
    return;
  }
  MutexLock lock(g_mutex);  // the threads may still reach it: kept, a few bytes, rarely
  fence->next_abandoned = g_abandoned;
  g_abandoned = fence;
}

void noteOwner(int fd, uint32_t generation, int type, int id) {
  if (fd < 0 || fd >= ContextTable::kMaxFd) return;
  // Only what F_GETOWN_EX cannot say back: a thread of this process, not
  // its first one, as the process. Another process's thread is not kept
  // (its process is not known here); an owner the kernel reports replaces
  // a kept thread.
  const bool keep = type == F_OWNER_PID && id > 0 && id != getpid() && liveThreadOfOurs(id);
  g_thread_owner[fd].store(keep ? packKey(id, generation) : 0, std::memory_order_release);
}

void watchContext(int fd, uint32_t generation) {
  MutexLock lock(g_mutex);
  if (!ensureStarted()) return;  // no threads: contexts still work, without signals
  struct epoll_event ev;
  ev.events = EPOLLIN | EPOLLPRI | EPOLLET;
  ev.data.u64 = packKey(fd, generation);
  epoll_ctl(g_epoll, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace pfmcompat
