// ContextTable: the fd-indexed array and the recycling stack. Pushes are
// lock-free (they happen wherever a last reference goes, signal handlers
// included); pops take a mutex (context creation only), which rules out the
// ABA problem of a lock-free stack: only a pop can take a node off it.
#include "context_table.h"

#include "session_io.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "base/mutex.h"

namespace pfmcompat {
namespace {

std::atomic<Context*> g_slots[ContextTable::kMaxFd];
std::atomic<Context*> g_free{nullptr};
// One pop from g_free at a time (a push needs none), so that no pop sees a
// head another popped and pushed back meanwhile (ABA). Guards no field of
// its own: the list is atomics. A leaf.
pfmfs::Mutex g_pop_mutex;
std::atomic<int> g_highest{-1};  // no slot above it was ever filled

Context* acquireAt(int fd) {
  if (fd < 0 || fd >= ContextTable::kMaxFd) return nullptr;
  for (;;) {
    Context* c = g_slots[fd].load(std::memory_order_acquire);
    if (!c) return nullptr;
    if (!c->tryRef()) {
      // Its last reference went: the slot no longer holds it, look again.
      if (g_slots[fd].load(std::memory_order_acquire) == c) return nullptr;
      continue;
    }
    // A recycled object may have been picked up meanwhile: keep it only if
    // it is still the one at fd.
    if (g_slots[fd].load(std::memory_order_acquire) == c) return c;
    c->unref();
  }
}

void noteSlot(int fd) {
  int highest = g_highest.load(std::memory_order_relaxed);
  while (fd > highest && !g_highest.compare_exchange_weak(highest, fd, std::memory_order_relaxed)) {
  }
}

// The context of the session whose msg file is (dev, ino), with a
// reference, found under another descriptor number.
Context* findByFile(dev_t dev, ino_t ino) {
  const int highest = g_highest.load(std::memory_order_relaxed);
  for (int i = 0; i <= highest; ++i) {
    if (!g_slots[i].load(std::memory_order_relaxed)) continue;
    Context* c = acquireAt(i);
    if (!c) continue;
    if (c->sameFile(dev, ino)) return c;
    c->unref();
  }
  return nullptr;
}

// A raw fstat of a descriptor of the program's, which another thread may be
// closing right now (the notifier's watcher looks up contexts while the
// program runs): either answer is fine, since a context whose file is gone
// or replaced is dropped now or at the next look, and thread sanitizers,
// which model a descriptor as memory that close() writes, need not hear of
// a race the check exists to settle.
bool statProgramFd(int fd, struct stat* st) { return syscall(SYS_fstat, fd, st) == 0; }

}  // namespace

Context* ContextTable::allocate() {
  {
    pfmfs::MutexLock lock(g_pop_mutex);
    Context* head = g_free.load(std::memory_order_acquire);
    while (head &&
           !g_free.compare_exchange_weak(head, head->next_free, std::memory_order_acq_rel, std::memory_order_acquire)) {
    }
    if (head) return head;
  }
  return new (std::nothrow_t{}) Context;  // no std::nothrow object: see cxx_runtime.cpp
}

void ContextTable::recycle(Context* c) {
  Context* head = g_free.load(std::memory_order_relaxed);
  do {
    c->next_free = head;
  } while (!g_free.compare_exchange_weak(head, c, std::memory_order_release, std::memory_order_relaxed));
}

void ContextTable::install(Context* c) {
  const int fd = c->userFd();
  noteSlot(fd);
  Context* old = g_slots[fd].exchange(c, std::memory_order_acq_rel);
  if (old) old->unref();
}

void ContextTable::reclaim(int fd) {
  if (fd < 0 || fd >= kMaxFd) return;
  Context* stale = g_slots[fd].exchange(nullptr, std::memory_order_acq_rel);
  if (!stale) return;
  // The usual way a closed context is found: the next create reuses its
  // number. Its session may still hold its target (see sweep).
  if (stale->wasLoaded()) waitSessionGone(stale->dirFd(), stale->name());
  stale->unref();
}

int ContextTable::sweep() {
  int waited = 0;
  const int highest = g_highest.load(std::memory_order_relaxed);
  for (int fd = 0; fd <= highest; ++fd) {
    if (!g_slots[fd].load(std::memory_order_relaxed)) continue;
    Context* c = acquireAt(fd);
    if (!c) continue;
    struct stat st;
    if (!statProgramFd(fd, &st) || !c->sameFile(st.st_dev, st.st_ino)) {
      if (c->wasLoaded()) {
        waitSessionGone(c->dirFd(), c->name());
        ++waited;
      }
      drop(fd, c);
    }
    c->unref();
  }
  return waited;
}

ContextRef ContextTable::lookup(int fd) {
  if (fd < 0 || fd >= kMaxFd) return ContextRef();
  ContextRef ref(acquireAt(fd));
  struct stat st;
  const bool is_open = statProgramFd(fd, &st);
  if (ref) {
    if (is_open && ref->sameFile(st.st_dev, st.st_ino)) return ref;
    drop(fd, ref.get());
  }
  if (!is_open) return ContextRef();
  // A copy of a context's descriptor (dup, dup2, F_DUPFD) names the same
  // context, as it did with perfmon2: the slot learns it, with its own reference.
  Context* c = findByFile(st.st_dev, st.st_ino);
  if (!c) return ContextRef();
  if (c->tryRef()) {
    Context* expected = nullptr;
    noteSlot(fd);
    if (!g_slots[fd].compare_exchange_strong(expected, c, std::memory_order_acq_rel)) c->unref();
  }
  return ContextRef(c);
}

bool ContextTable::everUsed() { return g_highest.load(std::memory_order_relaxed) >= 0; }

ContextRef ContextTable::peek(int fd) {
  if (fd < 0 || fd >= kMaxFd) return ContextRef();
  return ContextRef(acquireAt(fd));
}

void ContextTable::drop(int fd, Context* c) {
  Context* expected = c;
  if (g_slots[fd].compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) c->unref();
}

}  // namespace pfmcompat
