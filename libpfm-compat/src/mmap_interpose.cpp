// mmap(2) of a context's descriptor: perfmon2 programs map the sampling
// buffer so (docs/libpfm-compat.md, "Sampling"). libpfm.so.3 exports mmap
// and mmap64 (libpfm.map), so the dynamic linker binds a program's calls to
// them before libc's; in libpfm.a they are weak (make_static.sh).
//
// Every other mapping goes to libc's own function (sysfs_libc.h) with its
// arguments, result and errno untouched, and decides quickly: an anonymous
// mapping, or any mapping in a process that never made a context, costs one
// test; a file's mapping in a process that has contexts, the descriptor
// table's lookup (an atomic load and one fstat, no lock, no allocation), so
// the call stays as async-signal-safe as libc's, and never takes a lock an
// allocator calling mmap might hold.
//
// The entry is not instrumented by the sanitizers: their runtimes map
// memory (and files: their symbolizer) while they start, and in a program
// linked with libpfm.a that is this function. Until the library's
// load-time lookup has run, which is after they started, every call goes
// straight to the system call; no context can exist before it.
#include <errno.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "context_table.h"
#include "sampling.h"
#include "sysfs_libc.h"

namespace {

namespace libc = pfmcompat::sysfs::libc;

PFMFS_NOT_INSTRUMENTED void* pass(libc::MmapFn real, void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return real ? real(addr, len, prot, flags, fd, off) : libc::sysMmap(addr, len, prot, flags, fd, off);
}

// A file's mapping once the library is loaded: the buffer if fd is a
// context's, libc's mapping otherwise.
__attribute__((noinline)) void* mapFile(libc::MmapFn real, void* addr, size_t len, int prot, int flags, int fd,
                                        off_t off) {
  if (!pfmcompat::ContextTable::everUsed()) return pass(real, addr, len, prot, flags, fd, off);
  const int saved = errno;
  pfmcompat::ContextRef ref = pfmcompat::ContextTable::lookup(fd);
  if (!ref) {
    errno = saved;
    return pass(real, addr, len, prot, flags, fd, off);
  }
  void* m = MAP_FAILED;
  if (int r = pfmcompat::mapSampleBuffer(*ref, addr, len, prot, flags, off, &m); r < 0) {
    errno = -r;
    return MAP_FAILED;
  }
  errno = saved;
  return m;
}

PFMFS_NOT_INSTRUMENTED void* mapOrPass(bool is64, void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  libc::MmapFn real = nullptr;
  // The kernel ignores the descriptor of an anonymous mapping.
  if (!libc::mmapReady(is64, &real) || fd < 0 || (flags & MAP_ANONYMOUS))
    return pass(real, addr, len, prot, flags, fd, off);
  return mapFile(real, addr, len, prot, flags, fd, off);
}

}  // namespace

// Declared under the libc names through asm labels, as the sysfs
// interposers are (sysfs_interpose.cpp says why).
extern "C" __attribute__((visibility("default"))) void* pfmfs_mmap(void* addr, size_t len, int prot, int flags, int fd,
                                                                   off_t off) __asm__("mmap");
PFMFS_NOT_INSTRUMENTED void* pfmfs_mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mapOrPass(false, addr, len, prot, flags, fd, off);
}

extern "C" __attribute__((visibility("default"))) void* pfmfs_mmap64(void* addr, size_t len, int prot, int flags,
                                                                     int fd, off_t off) __asm__("mmap64");
PFMFS_NOT_INSTRUMENTED void* pfmfs_mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mapOrPass(true, addr, len, prot, flags, fd, off);
}
