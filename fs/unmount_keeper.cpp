// The auto_unmount socket's keeper (see unmount_keeper.h).
#include "fs/unmount_keeper.h"

#include <dirent.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace pfmfs::fs {

std::set<int> openDescriptors() {
  std::set<int> fds;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return fds;
  const int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long fd = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && fd != own) fds.insert(static_cast<int>(fd));
  }
  ::closedir(d);
  return fds;
}

namespace {

// The child's whole life, after fork in a process with threads: system
// calls only. It drops every capability, keeps `sock` and the pidfd, and
// waits for pfmfsd's end; its exit closes the socket.
[[noreturn]] void keeper(int sock, int pidfd) {
  ::prctl(PR_SET_NAME, "pfmfsd-unmount");
  // A terminal's ^C or a service's SIGTERM is for pfmfsd, which unmounts
  // itself; this process ends when pfmfsd has.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2] = {};
  ::syscall(SYS_capset, &hdr, none);
  for (int fd = 0; fd < 3; ++fd)
    if (fd != sock && fd != pidfd) ::close(fd);
  const int low = sock < pidfd ? sock : pidfd, high = sock < pidfd ? pidfd : sock;
  ::syscall(SYS_close_range, 3u, static_cast<unsigned>(low - 1), 0u);
  ::syscall(SYS_close_range, static_cast<unsigned>(low + 1), static_cast<unsigned>(high - 1), 0u);
  ::syscall(SYS_close_range, static_cast<unsigned>(high + 1), ~0u, 0u);
  // The pidfd is readable once every thread of pfmfsd has exited, each
  // after releasing what it held.
  pollfd p{pidfd, POLLIN, 0};
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}

}  // namespace

Status keepUnmountSocket(const std::set<int>& before, int fuse_fd) {
  int sock = -1;
  for (int fd : openDescriptors()) {
    struct stat st {};
    if (before.count(fd) || fd == fuse_fd || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (sock >= 0) return err(EPROTO, "the mount left two new sockets ({} and {}): which is fusermount3's?", sock, fd);
    sock = fd;
  }
  if (sock < 0) return {};
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
  if (pidfd < 0) return err(errno, "pidfd_open of pfmfsd: {}", std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) {
    int e = errno;
    ::close(pidfd);
    return err(e, "fork of the auto_unmount keeper: {}", std::strerror(e));
  }
  if (child == 0) keeper(sock, pidfd);
  ::close(pidfd);
  ::close(sock);
  return {};
}

}  // namespace pfmfs::fs
