#include "fast_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>

#include "key_value.h"
#include "mount.h"
#include "text_builder.h"

namespace pfmcompat {
namespace {

// Parses "err ERRNO reason" (or anything else the daemon should not say) into -errno.
int answerError(const char* text, size_t n) {
  if (n > 4 && memcmp(text, "err ", 4) == 0) {
    size_t end = 4;
    while (end < n && text[end] != ' ') ++end;
    uint64_t e;
    if (parseU64(text + 4, end - 4, &e) && e > 0 && e < 4096) return -int(e);
  }
  return -EPROTO;
}

void closeAll(const int* fds, int n) {
  for (int i = 0; i < n; ++i) close(fds[i]);
}

// pmu/info's endpoint, read once per process like the mount's path
// (mount.h): a program making contexts in a loop would otherwise pay three
// round trips for each. A daemon that restarts has a new endpoint: it goes
// into a fresh slot, written before it is published and never again, so
// that a reader (a signal handler among them) never sees a torn copy. A
// process that sees more daemons than slots reads pmu/info each time.
constexpr int kSlots = 8;
Endpoint g_slots[kSlots];
std::atomic<int> g_used{0};       // slots taken (written or being written)
std::atomic<int> g_current{-1};   // the published slot; -1: none yet
std::atomic<bool> g_none{false};  // pmu/info said: no fast path

bool readEndpoint(Endpoint* ep);

bool sameEndpoint(const Endpoint& a, const Endpoint& b) {
  return a.pid == b.pid && a.uid == b.uid && a.mapped_reads == b.mapped_reads && strcmp(a.name, b.name) == 0;
}

void keep(const Endpoint& ep) {
  const int cur = g_current.load(std::memory_order_acquire);
  if (cur >= 0 && sameEndpoint(g_slots[cur], ep)) return;
  const int slot = g_used.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kSlots) return;
  g_slots[slot] = ep;
  g_current.store(slot, std::memory_order_release);
}

}  // namespace

bool fastPathEndpoint(Endpoint* out, bool fresh) {
  if (!fresh) {
    const int cur = g_current.load(std::memory_order_acquire);
    if (cur >= 0) {
      *out = g_slots[cur];
      return true;
    }
    if (g_none.load(std::memory_order_acquire)) return false;
  }
  if (!readEndpoint(out)) {
    // Only the first answer is kept: a daemon restarting without the fast
    // path leaves the old endpoint, which no longer answers as the daemon.
    if (g_current.load(std::memory_order_acquire) < 0) g_none.store(true, std::memory_order_release);
    return false;
  }
  keep(*out);
  return true;
}

namespace {

// Whether pmu/info's features= list names `feature`.
bool hasFeature(const Line& line, const char* feature) {
  Line list;
  if (!findWord(line, "features", &list)) return false;
  const size_t n = strlen(feature);
  const char* p = list.begin;
  const char* end = list.begin + list.size;
  while (p < end) {
    const char* comma = static_cast<const char*>(memchr(p, ',', size_t(end - p)));
    const char* stop = comma ? comma : end;
    if (size_t(stop - p) == n && memcmp(p, feature, n) == 0) return true;
    p = stop + 1;
  }
  return false;
}

bool readEndpoint(Endpoint* ep) {
  const char* mount = mountPath();
  if (!mount) return false;
  char path[4096 + 32];
  TextBuilder p(path, sizeof path);
  p.add(mount).add("/pmu/info");
  if (p.overflowed()) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  ssize_t n = pread(fd, text, sizeof text, 0);
  close(fd);
  if (n <= 0) return false;
  LineCursor cur(text, size_t(n));
  Line line, name, pid, uid;
  if (!cur.next(&line) || !findWord(line, "fastpath", &name) || !findWord(line, "fastpath_pid", &pid) ||
      !findWord(line, "fastpath_uid", &uid))
    return false;
  // An abstract name: '@' and at most sun_path's room less its leading NUL.
  if (name.size < 2 || name.begin[0] != '@' || name.size > sizeof(sockaddr_un{}.sun_path) ||
      name.size >= sizeof ep->name)
    return false;
  uint64_t p_, u_;
  if (!parseU64(pid.begin, pid.size, &p_) || p_ == 0 || p_ > INT32_MAX || !parseU64(uid.begin, uid.size, &u_) ||
      u_ > UINT32_MAX)
    return false;
  memcpy(ep->name, name.begin, name.size);
  ep->name[name.size] = '\0';
  ep->pid = int32_t(p_);
  ep->uid = uint32_t(u_);
  ep->mapped_reads = hasFeature(line, "fastpath");
  return true;
}

}  // namespace

int fastPathRequest(const Endpoint& ep, const char* request, int* fds, int max_fds) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t name_len = strnlen(ep.name, sizeof ep.name);
  if (name_len < 2 || name_len >= sizeof ep.name || ep.name[0] != '@' || name_len > sizeof a.sun_path) return -EINVAL;
  memcpy(a.sun_path + 1, ep.name + 1, name_len - 1);  // the '@' stands for the leading NUL
  const socklen_t addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + name_len);

  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  // The daemon answers within its deadline (pfmfsd(8), --fastpath-deadline);
  // a busy daemon may take longer: the mount is the fallback after that.
  timeval limit{2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), addr_len) != 0) {
    const int r = -errno;
    close(s);
    return r;
  }
  // The listener's credentials, as the kernel took them at its listen():
  // a stranger who bound a name the daemon let go is told nothing.
  ucred peer{};
  socklen_t peer_len = sizeof peer;
  if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 || peer_len != sizeof peer || peer.pid != ep.pid ||
      peer.uid != ep.uid) {
    close(s);
    return kNotTheDaemon;
  }
  if (send(s, request, strlen(request), MSG_NOSIGNAL) < 0) {
    const int r = -errno;
    close(s);
    return r;
  }
  char text[256];
  iovec iov{text, sizeof text - 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxChannelFds)];
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
  const int recv_errno = errno;
  close(s);
  if (n < 0) return -recv_errno;

  int got = 0;
  int received[kMaxChannelFds];
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int k = int((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < k; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (got < kMaxChannelFds)
        received[got++] = fd;
      else
        close(fd);
    }
  }
  const bool ok = n == 2 && memcmp(text, "ok", 2) == 0;
  if (!ok || got == 0 || got > max_fds || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
    closeAll(received, got);
    return ok ? -EPROTO : answerError(text, size_t(n));
  }
  memcpy(fds, received, sizeof(int) * size_t(got));
  return got;
}

}  // namespace pfmcompat
