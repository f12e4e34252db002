// The libc calls that list directories, so that /sys/kernel/perfmon's can
// be listed (sysfs_files.h): opendir, fdopendir, readdir, readdir64,
// readdir_r, readdir64_r, closedir, rewinddir, dirfd, telldir, seekdir,
// scandir and scandir64. Exported and weak in libpfm.a as the others are
// (sysfs_interpose.cpp, libpfm.map).
//
// opendir of a directory of the tree returns a stream of the library's own
// (sysfs_dirs.h), which every other call recognises; anything else goes to
// libc's function, untouched, with its result and errno. Where libc's
// functions cannot be found (a fully static program, whose link keeps these
// weak definitions, the first it sees, and has no dlsym to reach libc's
// readdir) every directory stream is the library's own, read with
// getdents64; that is what fdopendir is interposed for.
//
// What does not see the tree: scandirat, glob, ftw, nftw and fts, which use
// libc's inner functions, and whatever needs a descriptor of one of its
// directories (open stays EOPNOTSUPP there: none can stand for one).
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "sysfs_dirs.h"
#include "sysfs_files.h"
#include "sysfs_libc.h"

namespace sysfs = pfmcompat::sysfs;
namespace libc = pfmcompat::sysfs::libc;
namespace dirs = pfmcompat::sysfs::dirs;

namespace {

// A directory that is not the tree's: libc's stream, or, without libc's
// functions, one of ours over the system call's descriptor.
DIR* passOpendir(const char* path) {
  DIR* d;
  if (libc::opendir(path, &d)) return d;
  int fd = libc::open(path, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  dirs::Stream* s = dirs::openFd(fd);
  if (!s) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return dirs::asDir(s);
}

// The tree's directory at path, as opendir opens it: nullptr with the
// kernel's errno (ENOENT, ENOTDIR), and *ours false when path is not the
// tree's to answer (sysfs::resolve's kPassThrough).
dirs::Stream* openTree(const char* path, bool* ours) {
  *ours = false;
  if (!sysfs::underPrefix(path)) return nullptr;
  sysfs::Resolved r = sysfs::resolve(path);
  if (r.what == sysfs::Resolved::kPassThrough) return nullptr;
  *ours = true;
  if (r.what == sysfs::Resolved::kError) {
    errno = r.error;
    return nullptr;
  }
  if (!r.node.isDir()) {
    errno = ENOTDIR;
    return nullptr;
  }
  return dirs::openNode(r.node);
}

// A stream that is neither ours nor reachable through libc (no libc
// functions, so every stream would be ours): not a stream.
template <class T>
T notAStream(T failure) {
  errno = EBADF;
  return failure;
}

}  // namespace

#define SYSFS_EXPORT extern "C" __attribute__((visibility("default")))

SYSFS_EXPORT DIR* pfmfs_opendir(const char* path) __asm__("opendir");
DIR* pfmfs_opendir(const char* path) {
  int saved = errno;
  bool ours;
  dirs::Stream* s = openTree(path, &ours);
  if (!ours) return passOpendir(path);
  if (s) errno = saved;
  return dirs::asDir(s);
}

SYSFS_EXPORT DIR* pfmfs_fdopendir(int fd) __asm__("fdopendir");
DIR* pfmfs_fdopendir(int fd) {
  DIR* d;
  if (libc::fdopendir(fd, &d)) return d;
  return dirs::asDir(dirs::openFd(fd));
}

SYSFS_EXPORT struct dirent64* pfmfs_readdir64(DIR* d) __asm__("readdir64");
struct dirent64* pfmfs_readdir64(DIR* d) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::next(s);
  struct dirent64* e;
  if (libc::readdir64(d, &e)) return e;
  return notAStream<struct dirent64*>(nullptr);
}

SYSFS_EXPORT struct dirent* pfmfs_readdir(DIR* d) __asm__("readdir");
struct dirent* pfmfs_readdir(DIR* d) {
  return reinterpret_cast<struct dirent*>(pfmfs_readdir64(d));
}

SYSFS_EXPORT int pfmfs_readdir64_r(DIR* d, struct dirent64* entry, struct dirent64** result) __asm__("readdir64_r");
int pfmfs_readdir64_r(DIR* d, struct dirent64* entry, struct dirent64** result) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::nextInto(s, entry, result);
  int r;
  if (libc::readdir64_r(d, entry, result, &r)) return r;
  return EBADF;
}

SYSFS_EXPORT int pfmfs_readdir_r(DIR* d, struct dirent* entry, struct dirent** result) __asm__("readdir_r");
int pfmfs_readdir_r(DIR* d, struct dirent* entry, struct dirent** result) {
  return pfmfs_readdir64_r(d, reinterpret_cast<struct dirent64*>(entry), reinterpret_cast<struct dirent64**>(result));
}

SYSFS_EXPORT int pfmfs_closedir(DIR* d) __asm__("closedir");
int pfmfs_closedir(DIR* d) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::close(s);
  int r;
  if (libc::closedir(d, &r)) return r;
  return notAStream(-1);
}

SYSFS_EXPORT void pfmfs_rewinddir(DIR* d) __asm__("rewinddir");
void pfmfs_rewinddir(DIR* d) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::rewind(s);
  libc::rewinddir(d);
}

SYSFS_EXPORT int pfmfs_dirfd(DIR* d) __asm__("dirfd");
int pfmfs_dirfd(DIR* d) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::fd(s);
  int r;
  if (libc::dirfd(d, &r)) return r;
  return notAStream(-1);
}

SYSFS_EXPORT long pfmfs_telldir(DIR* d) __asm__("telldir");
long pfmfs_telldir(DIR* d) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::tell(s);
  long r;
  if (libc::telldir(d, &r)) return r;
  return notAStream(-1L);
}

SYSFS_EXPORT void pfmfs_seekdir(DIR* d, long pos) __asm__("seekdir");
void pfmfs_seekdir(DIR* d, long pos) {
  if (dirs::Stream* s = dirs::find(d)) return dirs::seek(s, pos);
  libc::seekdir(d, pos);
}

// scandir opens its directory with libc's inner opendir: the tree's are
// listed here, and so is every directory where libc's scandir is missing.
SYSFS_EXPORT int pfmfs_scandir64(const char* path, struct dirent64*** list, libc::ScanFilter filter,
                                 libc::ScanCompare compare) __asm__("scandir64");
int pfmfs_scandir64(const char* path, struct dirent64*** list, libc::ScanFilter filter, libc::ScanCompare compare) {
  bool ours;
  int n;
  dirs::Stream* s = openTree(path, &ours);
  if (!ours) {
    if (libc::scandir64(path, list, filter, compare, &n)) return n;
    DIR* d = passOpendir(path);  // without libc's scandir, ours
    if (!d) return -1;
    s = dirs::find(d);
    if (!s) {  // not reached: libc's functions are all found, or none
      pfmfs_closedir(d);
      errno = ENOSYS;
      return -1;
    }
  }
  if (!s) return -1;
  n = dirs::scan(s, list, filter, compare);
  int err = errno;
  dirs::close(s);
  errno = err;
  return n;
}

SYSFS_EXPORT int pfmfs_scandir(const char* path, struct dirent*** list, int (*filter)(const struct dirent*),
                               int (*compare)(const struct dirent**, const struct dirent**)) __asm__("scandir");
int pfmfs_scandir(const char* path, struct dirent*** list, int (*filter)(const struct dirent*),
                  int (*compare)(const struct dirent**, const struct dirent**)) {
  return pfmfs_scandir64(path, reinterpret_cast<struct dirent64***>(list), reinterpret_cast<libc::ScanFilter>(filter),
                         reinterpret_cast<libc::ScanCompare>(compare));
}
