// The fast path's channel to pfmfsd (pfmfs(5), FAST PATH): the Unix socket
// that pmu/info names, over which the daemon hands a session's owner the
// session's page and its perf group's descriptors. Everything here is a
// plain system call (open, read, socket, sendmsg, recvmsg): usable from a
// signal handler, like every call of the library.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pfmcompat {

// The most descriptors one answer carries (the daemon's groups have at most
// 64 members); more are closed and the answer refused.
constexpr int kMaxChannelFds = 64;

// The socket's name, '@' included, from the mount's pmu/info: false when the
// daemon offers no fast path (no `fastpath` feature) or the file is unreadable.
// The first answer is kept for the life of the process, as the mount's path;
// fresh = true reads the file again (a new daemon on the mount has a new
// socket), without changing what is kept.
bool fastPathSocket(char* name, size_t cap, bool fresh = false);

// Sends `request` ("page SESSION", "group SESSION ID") to the socket `name`
// and receives the answer: the number of descriptors it carried (>= 1, in
// fds, close-on-exec) on "ok", or -errno (the daemon's "err ERRNO", or the
// socket's own failure). Gives up after about two seconds of silence.
int fastPathRequest(const char* name, const char* request, int* fds, int max_fds);

}  // namespace pfmcompat
