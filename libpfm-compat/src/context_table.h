// Descriptor -> Context, for every call: a fixed array of atomic pointers
// indexed by the descriptor number, so a lookup is a load, a reference count
// increment and an fstat (answered from the kernel's attribute cache: no
// round trip to the daemon), with no lock and no allocation — the calls made
// from SIGIO handlers (pfm_restart, pfm_read_pmds, ...) depend on it.
//
// The fstat check catches a descriptor the program closed and reused: the
// library cannot see close(), so a context whose descriptor no longer names
// its session's msg file is dropped at the next call on that number (its
// helper files closed) and the call fails with EBADF.
#pragma once

#include "context.h"

namespace pfmcompat {

class ContextRef;

class ContextTable {
 public:
  // Descriptors at or above this cannot carry a context (EMFILE at creation).
  static constexpr int kMaxFd = 65536;

  // A context object to init() and install(): recycled or new (creation
  // path only: may allocate, takes a mutex).
  static Context* allocate();
  // Publishes c (initialised, holding the table's reference) at its user
  // descriptor, dropping whatever stale context was there.
  static void install(Context* c);
  // The live context at fd, or an empty ref (EBADF) when there is none or
  // the descriptor no longer names its session. A descriptor that names a
  // context's msg file under another number (dup) is that context.
  static ContextRef lookup(int fd);
  // False while the process has never made a context: then no descriptor
  // can be one, and the mmap interposer passes every call on at once.
  static bool everUsed();
  // The context the table holds at fd, without asking the kernel whether fd
  // still names it: for the fast path alone (fast_path.h says why that is
  // safe enough), which falls back to lookup() whenever it cannot answer.
  static ContextRef peek(int fd);
  // Removes c from fd if it is still there (releasing the table's reference).
  static void drop(int fd, Context* c);
  // The library just got fd from open(): whatever context the table holds
  // there is stale (its descriptor was closed, since the number was free),
  // and is dropped, its helper files closed. Called after every open the
  // library makes, so that a program creating and closing contexts in a
  // loop does not pile up helper files; no fstat is needed, so it never
  // touches a descriptor another thread may be closing. A stale context that
  // was loaded is waited for as in sweep().
  static void reclaim(int fd);
  // Drops every context whose descriptor was closed or now names another
  // file. Run at each context creation, so that the helper files of closed
  // contexts do not outlive them for long (they keep the mount busy). A
  // dropped context that was loaded is waited for (up to a second) until
  // the daemon has destroyed its session, so that its target is free again,
  // as after a perfmon2 close. Returns how many were waited for.
  static int sweep();
  // Called by the last unref: back to the free list (lock-free push).
  static void recycle(Context* c);
};

// One reference to a context for the duration of a call.
class ContextRef {
 public:
  ContextRef() = default;
  explicit ContextRef(Context* c) : c_(c) {}
  ContextRef(ContextRef&& o) noexcept : c_(o.c_) { o.c_ = nullptr; }
  ContextRef& operator=(ContextRef&&) = delete;
  ContextRef(const ContextRef&) = delete;
  ~ContextRef() {
    if (c_) c_->unref();
  }
  explicit operator bool() const { return c_ != nullptr; }
  Context* operator->() const { return c_; }
  Context& operator*() const { return *c_; }
  Context* get() const { return c_; }

 private:
  Context* c_ = nullptr;
};

}  // namespace pfmcompat
