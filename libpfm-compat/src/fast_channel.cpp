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

// pmu/info's answer, read once per process like the mount's path (mount.h):
// a program making contexts in a loop would otherwise pay three round trips
// for each. Written once, then only read: no torn copy.
enum : int { kUnknown, kWriting, kNamed, kNone };
std::atomic<int> g_state{kUnknown};
char g_name[112];

bool readSocketName(char* name, size_t cap);

}  // namespace

bool fastPathSocket(char* name, size_t cap, bool fresh) {
  if (fresh) return readSocketName(name, cap);
  const int st = g_state.load(std::memory_order_acquire);
  if (st == kNamed) {
    if (strlen(g_name) >= cap) return false;
    memcpy(name, g_name, strlen(g_name) + 1);
    return true;
  }
  if (st == kNone) return false;
  const bool ok = readSocketName(name, cap);
  int expected = kUnknown;
  if (ok && strlen(name) >= sizeof g_name) return ok;
  if (g_state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
    if (ok) memcpy(g_name, name, strlen(name) + 1);
    g_state.store(ok ? kNamed : kNone, std::memory_order_release);
  }
  return ok;
}

namespace {

bool readSocketName(char* name, size_t cap) {
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
  Line line, value;
  if (!cur.next(&line) || !findWord(line, "fastpath", &value)) return false;
  // An abstract name: '@' and at most sun_path's room less its leading NUL.
  if (value.size < 2 || value.begin[0] != '@' || value.size > sizeof(sockaddr_un{}.sun_path) || value.size >= cap)
    return false;
  memcpy(name, value.begin, value.size);
  name[value.size] = '\0';
  return true;
}

}  // namespace

int fastPathRequest(const char* name, const char* request, int* fds, int max_fds) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t name_len = strlen(name);
  if (name_len < 2 || name[0] != '@' || name_len > sizeof a.sun_path) return -EINVAL;
  memcpy(a.sun_path + 1, name + 1, name_len - 1);  // the '@' stands for the leading NUL
  const socklen_t addr_len = socklen_t(offsetof(sockaddr_un, sun_path) + name_len);

  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  // The daemon serves one connection at a time, each within a second.
  timeval limit{2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  int r = 0;
  if (connect(s, reinterpret_cast<sockaddr*>(&a), addr_len) != 0 ||
      send(s, request, strlen(request), MSG_NOSIGNAL) < 0) {
    r = -errno;
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
    for (int i = 0; i < k && got < kMaxChannelFds; ++i) memcpy(&received[got++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
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
