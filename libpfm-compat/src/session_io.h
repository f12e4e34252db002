// The two ways the library talks to a session file: one write() holding a
// whole command or block of register lines, and one pread() at offset 0
// taking a fresh snapshot of a file. Each is exactly one FUSE round trip.
// Results are 0 / a byte count, or -errno; nothing here allocates.
#pragma once

#include <stddef.h>
#include <sys/types.h>

namespace pfmcompat {

class Context;

// Writes all of text in one write(); a short write is -EIO (the mount takes
// a write whole or not at all).
int writeWhole(int fd, const char* text, size_t size);

// Reads the file from offset 0 into buf (cap bytes, NUL-terminated, so at
// most cap - 1 bytes of text); -EOVERFLOW when it did not fit.
ssize_t readSnapshot(int fd, char* buf, size_t cap);

// Waits (up to a second) until the session NAME, whose directory dir_fd is,
// has left the mount: the daemon destroys a session when the release of its
// last msg handle reaches it, which FUSE sends after close() has returned.
// The name leaves sessions/ only once the session is destroyed and its
// target free. Bounded because a copy of the descriptor elsewhere (fork)
// keeps the session alive for good.
void waitSessionGone(int dir_fd, const char* name);

// With PFMFS_DEBUG=1 in the environment: prints what failed and, when the
// mount refused it, the session's `error` file, to stderr. Cheap no-op
// otherwise. clearMountFailure() starts a call.
void clearMountFailure();
void noteMountFailure();  // for failures outside writeWhole/readSnapshot
void debugFailure(const Context& c, int fd, const char* call, int err);
// The same for a session not yet a context (its directory dir_fd): a
// creation step the mount refused.
void debugCreateFailure(int dir_fd, int fd, const char* call, int err);

}  // namespace pfmcompat
