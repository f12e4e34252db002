// The format argument, and the buffer's mapping: the daemon hands the
// session's owner the buffer's memfd over the fast path's socket (`smpl
// SESSION`, pfmfs(5) FAST PATH), sealed so that it can only be mapped
// read-only and never shrinks; the library maps it shared, so that the
// program sees every entry as the daemon writes it, as perfmon2's mapping
// of the kernel's buffer did. Plain system calls: usable from a signal
// handler, like every call of the library.
#include "sampling.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <perfmon/perfmon_dfl_smpl.h>

#include "context.h"
#include "fast_channel.h"
#include "fastpath/sample_layout.h"
#include "sysfs_libc.h"
#include "text_builder.h"

namespace pfmcompat {
namespace {

namespace fp = pfmfs::fastpath;

constexpr size_t kMaxFormatName = 64;

// A name the mount's `smpl_fmt` line can carry as one word.
bool plainName(const char* name) {
  size_t n = 0;
  for (; name[n]; ++n) {
    const char ch = name[n];
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == ':' || ch == '-';
    if (!ok || n >= kMaxFormatName) return false;
  }
  return n > 0;
}

// The buffer's memfd from the daemon, or -errno as mapSampleBuffer says.
int askForBuffer(const Context& c, int* fd) {
  Endpoint ep;
  if (!fastPathEndpoint(&ep)) return -ENODEV;
  char request[80];
  TextBuilder t(request, sizeof request);
  t.add("smpl ").add(c.name());
  if (t.overflowed()) return -EINVAL;
  int got = fastPathRequest(ep, request, fd, 1);
  // An endpoint kept from an earlier daemon on this mount: ask pmu/info
  // again (fast_path.cpp does the same for the page).
  if ((got == -ECONNREFUSED || got == kNotTheDaemon) && fastPathEndpoint(&ep, true))
    got = fastPathRequest(ep, request, fd, 1);
  if (got == 1) return 0;
  if (got == -EACCES) return -EACCES;  // not the caller's session
  if (got == -ENOENT) return -EINVAL;  // no format (any more): no buffer to map
  return -ENODEV;
}

}  // namespace

int samplingOptions(const char* name, const void* arg, size_t size, CreateOptions* o) {
  if (!name) return (arg || size) ? -EINVAL : 0;
  if (!arg || size != sizeof(pfm_dfl_smpl_arg_t) || !plainName(name)) return -EINVAL;
  pfm_dfl_smpl_arg_t a;
  memcpy(&a, arg, sizeof a);
  if (a.res1 != 0) return -EINVAL;
  for (uint64_t r : a.reserved)
    if (r != 0) return -EINVAL;
  o->smpl_name = name;
  o->smpl_buf_size = a.buf_size;
  o->smpl_buf_flags = a.buf_flags;
  return 0;
}

int mapSampleBuffer(const Context& c, void* addr, size_t len, int prot, int flags, off_t off, void** out) {
  // perfmon2's order: no writable (nor executable) mapping, then the
  // mapping's shape, then whether there is a buffer at all.
  if (prot & (PROT_WRITE | PROT_EXEC)) return -EACCES;
  const int type = flags & MAP_TYPE;
  if (type != MAP_SHARED && type != MAP_PRIVATE && type != MAP_SHARED_VALIDATE) return -EINVAL;
  if (off != 0) return -EINVAL;
  const uint64_t buf_size = c.smplBufSize();
  if (buf_size == 0) return -EINVAL;
  if (len == 0 || len > fp::sampleBufferFileBytes(buf_size)) return -EINVAL;
  int fd;
  if (int r = askForBuffer(c, &fd); r < 0) return r;
  // Only the buffer the daemon made: another file could shrink under the
  // mapping (SIGBUS) or be rewritten by whoever holds it.
  if (!fp::isSampleBufferFd(fd, buf_size)) {
    close(fd);
    return -ENODEV;
  }
  // Shared whatever the program asked: a private mapping would stop seeing
  // the daemon's writes on any page the program made its own. The seals
  // keep it read-only for good (no mprotect to PROT_WRITE).
  const int map_flags = (flags & ~MAP_TYPE) | (type == MAP_SHARED_VALIDATE ? MAP_SHARED_VALIDATE : MAP_SHARED);
  void* m = sysfs::libc::mmap(addr, len, prot, map_flags, fd, 0);
  const int map_errno = errno;
  close(fd);  // the mapping keeps the buffer
  if (m == MAP_FAILED) return -map_errno;
  *out = m;
  return 0;
}

}  // namespace pfmcompat
