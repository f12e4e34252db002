// The fast path's channel to pfmfsd (pfmfs(5), FAST PATH): the Unix socket
// that pmu/info names, over which the daemon hands a session's owner the
// session's page and its perf group's descriptors, and its sampling buffer
// (sampling.h). Everything here is a plain system call (open, read, socket,
// sendmsg, recvmsg): usable from a signal handler, like every call of the
// library.
//
// Trust (docs/libpfm-compat.md, "Whom the fast path trusts"): the socket's
// name is in the abstract namespace, where any user may bind a name the
// daemon has let go (a restart). So the library sends nothing, not even a
// session name, until the kernel has said (SO_PEERCRED) that the listener
// is the process pmu/info names, with the uid pmu/info names.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pfmcompat {

// The most descriptors one answer carries (the daemon's groups have at most
// 64 members); more are closed and the answer refused.
constexpr int kMaxChannelFds = 64;

// fastPathRequest's answer when the listener is not the daemon the endpoint
// names: no errno (nothing was sent; the caller reads pmu/info again).
constexpr int kNotTheDaemon = -4096;

// Where the daemon listens, and who it is: pmu/info's fastpath=,
// fastpath_pid= and fastpath_uid=.
struct Endpoint {
  char name[112];  // '@' and the abstract name
  int32_t pid;
  uint32_t uid;
  bool mapped_reads;  // the `fastpath` feature: it hands out the counts' page (not on x86)
};

// The daemon's endpoint, from the mount's pmu/info: false when the daemon
// runs no socket (no fastpath= key), names no pid and uid, or the file is
// unreadable. The answer is kept for the process, as the mount's
// path is; fresh = true reads the file again (a new daemon on the mount has
// a new socket) and keeps what it read in place of the old, if it differs.
bool fastPathEndpoint(Endpoint* out, bool fresh = false);

// Sends `request` ("page SESSION", "smpl SESSION", "group SESSION ID") to the
// endpoint's socket, once its listener is known to be the endpoint's
// process, and receives the answer: the number of descriptors it carried
// (>= 1, in fds, close-on-exec) on "ok"; kNotTheDaemon; or -errno (the
// daemon's "err ERRNO", or the socket's own failure). Gives up after about
// two seconds.
int fastPathRequest(const Endpoint& ep, const char* request, int* fds, int max_fds);

}  // namespace pfmcompat
