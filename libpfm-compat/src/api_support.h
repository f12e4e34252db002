// What every exported call does around its work: the export attribute (the
// library hides everything else), the descriptor lookup, and the perfmon2
// return convention (-1 with errno).
#pragma once

#include <errno.h>

#include "context_table.h"
#include "session_io.h"

#define PFM_EXPORT extern "C" __attribute__((visibility("default")))

namespace pfmcompat {

// r: a result >= 0, or -errno.
inline int apiResult(int r) {
  if (r >= 0) return r;
  errno = -r;
  return -1;
}

inline int apiError(int err) {
  errno = err;
  return -1;
}

// Runs op on the live context at fd: EBADF when there is none.
template <class Op>
int onContext(int fd, const char* call, Op op) {
  ContextRef ref = ContextTable::lookup(fd);
  if (!ref) return apiError(EBADF);
  clearMountFailure();
  int r = op(*ref);
  if (r < 0) debugFailure(*ref, fd, call, -r);
  return apiResult(r);
}

// As onContext, but first the fast path's `fast` (true: it answered) on the
// context the table holds at fd, which skips lookup's fstat: that system
// call alone costs half of what a perf group read does (fast_path.h).
template <class Fast, class Op>
int onContextFast(int fd, const char* call, Fast fast, Op op) {
  {
    ContextRef ref = ContextTable::peek(fd);
    if (ref && fast(*ref)) return 0;
  }
  return onContext(fd, call, op);
}

}  // namespace pfmcompat
