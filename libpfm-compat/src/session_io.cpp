// Single-round-trip reads and writes on session files, and the optional
// failure report (PFMFS_DEBUG=1), written with write(2) so that it stays
// usable from signal handlers.
#include "session_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "context_table.h"
#include "text_builder.h"

namespace pfmcompat {
namespace {

// Whether the last failure on this thread came from the mount (then the
// session's `error` file explains it) or from the library's own checks.
// initial-exec: no lazy allocation on first use, so usable in handlers.
__thread bool t_mount_failed __attribute__((tls_model("initial-exec"))) = false;

// Read once, before main() in the normal case; getenv is not signal-safe.
// secure_getenv: a set-id program does not take its caller's word on what
// to print (mount.h).
const bool g_debug = [] {
  const char* v = secure_getenv("PFMFS_DEBUG");
  return v && *v && strcmp(v, "0") != 0;
}();

}  // namespace

int writeWhole(int fd, const char* text, size_t size) {
  ssize_t n;
  do {
    n = write(fd, text, size);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    t_mount_failed = true;
    return -errno;
  }
  return size_t(n) == size ? 0 : -EIO;
}

ssize_t readSnapshot(int fd, char* buf, size_t cap) {
  // FUSE pins every page of a direct_io read buffer: ask for a few KiB
  // first (what a set's files hold), and for all of cap only when that
  // was not enough. Every pread at 0 is a fresh snapshot, so the second
  // read replaces the first.
  constexpr size_t kFirstTry = 4096;
  size_t want = cap - 1 > kFirstTry ? kFirstTry : cap - 1;
  for (;;) {
    ssize_t n;
    do {
      n = pread(fd, buf, want, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      t_mount_failed = true;
      return -errno;
    }
    if (size_t(n) < want) {
      buf[n] = '\0';
      return n;
    }
    if (want == cap - 1) return -EOVERFLOW;
    want = cap - 1;
  }
}

void clearMountFailure() { t_mount_failed = false; }
void noteMountFailure() { t_mount_failed = true; }

void debugFailure(const Context& c, int user_fd, const char* call, int err) {
  debugCreateFailure(c.dirFd(), user_fd, call, err);
}

void debugCreateFailure(int dir_fd, int user_fd, const char* call, int err) {
  if (!g_debug) return;
  int saved = errno;
  char line[512];
  TextBuilder t(line, sizeof line);
  t.add("libpfm(pfmfs): ")
      .add(call)
      .add(" on fd ")
      .dec(uint64_t(user_fd))
      .add(" failed: ")
      .add(strerrorname_np(err) ? strerrorname_np(err) : "?");
  char reason[384];
  int fd = t_mount_failed ? openat(dir_fd, "error", O_RDONLY | O_CLOEXEC) : -1;
  if (!t_mount_failed) t.add(" (refused by the library)");
  if (fd >= 0) {
    ContextTable::reclaim(fd);
    ssize_t n = pread(fd, reason, sizeof reason - 1, 0);
    close(fd);
    if (n > 0) {
      reason[n] = '\0';
      if (reason[n - 1] == '\n') reason[n - 1] = '\0';
      t.add(": ").add(reason);
    }
  }
  t.add('\n');
  if (t.overflowed()) line[sizeof line - 2] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, strlen(line));
  (void)ignored;
  errno = saved;
}

void waitSessionGone(int dir_fd, const char* name) {
  char path[80];
  TextBuilder p(path, sizeof path);
  p.add("../").add(name);
  if (p.overflowed()) return;
  for (int i = 0; i < 1000; ++i) {
    struct stat st;
    if (fstatat(dir_fd, path, &st, 0) != 0) return;  // ENOENT: gone
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

}  // namespace pfmcompat
