// The libc calls perfmon2 programs reach /sys/kernel/perfmon with, answered
// from the mount (sysfs_files.h): open, open64, openat, openat64 and their
// _FORTIFY_SOURCE entries, fopen, fopen64, access, faccessat, euidaccess,
// eaccess, stat, lstat, fstatat (and their 64 and pre-2.33 __xstat names)
// and statx; sysfs_dir_interpose.cpp has opendir and the rest of the
// directory calls. libpfm.so.3 exports these names (libpfm.map), so the
// dynamic linker binds a program's calls to them before libc's; in libpfm.a
// they are weak (make_static.sh).
//
// Any other path costs one prefix compare and goes to libc's own function
// (sysfs_libc.h) with its arguments untouched, so its result and errno are
// libc's. The symbols are defined through asm labels: the C names would
// inherit the headers' declarations (nonnull, which lets the compiler drop
// our null checks, and _FILE_OFFSET_BITS redirections to the 64 names).
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sysfs_files.h"
#include "sysfs_libc.h"
#include "text_builder.h"

namespace pfmcompat::sysfs {
namespace {

static_assert(sizeof(struct stat) == sizeof(struct stat64), "x86_64: one layout for both");

// -errno into libc's convention; errno as found when it succeeds.
int finish(int r, int saved_errno) {
  if (r < 0) {
    errno = -r;
    return -1;
  }
  errno = saved_errno;
  return r;
}

// A read-only descriptor holding text, offset 0: a memfd, reopened through
// /proc with O_RDONLY so that a write fails with EBADF as on any read-only
// file. Without /proc, the memfd itself, sealed (a write is then EPERM).
int textDescriptor(const char* text, size_t len, int flags) {
  int mfd = memfd_create("pfmfs-sysfs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (mfd < 0) return -errno;
  for (size_t done = 0; done < len;) {
    ssize_t n = write(mfd, text + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(mfd);
      return -err;
    }
    done += size_t(n);
  }
  fchmod(mfd, 0444);  // what fstat says, as stat does
  char proc[48];
  TextBuilder p(proc, sizeof proc);
  p.add("/proc/self/fd/").dec(uint64_t(mfd));
  int keep = flags & (O_CLOEXEC | O_NONBLOCK);
  int fd = libc::open(proc, O_RDONLY | keep, 0);
  if (fd >= 0) {
    close(mfd);
    return fd;
  }
  fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  lseek(mfd, 0, SEEK_SET);
  if (!(flags & O_CLOEXEC)) fcntl(mfd, F_SETFD, 0);
  return mfd;
}

// open(2) of a path under the prefix: false when it is not ours to answer
// (the caller passes it on); else the descriptor or -errno in *result, with
// the kernel's order of checks: existence, O_CREAT|O_EXCL, the file type,
// then the access mode (read-only files and directories; any write access
// is EACCES, as on the mount's read-only files, even for root).
bool answerOpen(const char* path, int flags, int* result) {
  Resolved r = resolve(path);
  if (r.what == Resolved::kPassThrough) return false;
  bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
  if (r.what == Resolved::kError) {
    // A new name in one of our (read-only) directories cannot be created.
    *result = (r.error == ENOENT && r.createsIn && (flags & O_CREAT)) ? -EACCES : -r.error;
    return true;
  }
  if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
    *result = -EEXIST;
  } else if (r.node.isDir()) {
    // A directory descriptor cannot be made up (opendir lists the directory
    // without one: sysfs_dir_interpose.cpp). Writing one is EISDIR, as
    // anywhere.
    *result = (writes || (flags & O_CREAT)) ? -EISDIR : -EOPNOTSUPP;
  } else if (flags & O_DIRECTORY) {
    *result = -ENOTDIR;
  } else if (writes) {
    *result = -EACCES;
  } else {
    char text[kContentMax];
    long len = content(r.node, text, sizeof text);
    *result = len < 0 ? int(len) : textDescriptor(text, size_t(len), flags);
  }
  return true;
}

bool answerAccess(const char* path, int mode, int* result) {
  Resolved r = resolve(path);
  if (r.what == Resolved::kPassThrough) return false;
  if (mode & ~(R_OK | W_OK | X_OK))
    *result = -EINVAL;
  else if (r.what == Resolved::kError)
    *result = -r.error;
  else if ((mode & W_OK) || ((mode & X_OK) && !r.node.isDir()))
    *result = -EACCES;
  else
    *result = 0;
  return true;
}

// out: the caller's struct stat or struct stat64 (one layout on x86_64),
// filled only on success, as the kernel does.
bool answerStat(const char* path, void* out, int* result) {
  Resolved r = resolve(path);
  if (r.what == Resolved::kPassThrough) return false;
  struct stat st;
  *result = r.what == Resolved::kError ? -r.error : statNode(r.node, &st);
  if (*result == 0) memcpy(out, &st, sizeof st);
  return true;
}

// open's mode argument exists only when the flags create a file.
bool takesMode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

mode_t modeArg(int flags, va_list ap) { return takesMode(flags) ? mode_t(va_arg(ap, unsigned int)) : 0; }

FILE* openStream(const char* path, const char* mode, FILE* (*pass)(const char*, const char*)) {
  int saved = errno;
  int flags, r;
  if (!underPrefix(path)) return pass(path, mode);
  if (!libc::fopenFlags(mode, &flags)) {
    errno = EINVAL;
    return nullptr;
  }
  if (!answerOpen(path, flags, &r)) return pass(path, mode);
  if (r < 0) {
    errno = -r;
    return nullptr;
  }
  FILE* f = fdopen(r, mode);
  if (!f) {
    int err = errno;
    close(r);
    errno = err;
    return nullptr;
  }
  errno = saved;
  return f;
}

void statToStatx(const struct stat& st, struct statx* sx) {
  memset(sx, 0, sizeof *sx);
  sx->stx_mask = STATX_BASIC_STATS;
  sx->stx_blksize = uint32_t(st.st_blksize);
  sx->stx_nlink = uint32_t(st.st_nlink);
  sx->stx_uid = st.st_uid;
  sx->stx_gid = st.st_gid;
  sx->stx_mode = uint16_t(st.st_mode);
  sx->stx_ino = st.st_ino;
  sx->stx_size = uint64_t(st.st_size);
  sx->stx_blocks = uint64_t(st.st_blocks);
  sx->stx_atime = {st.st_atim.tv_sec, uint32_t(st.st_atim.tv_nsec), 0};
  sx->stx_mtime = {st.st_mtim.tv_sec, uint32_t(st.st_mtim.tv_nsec), 0};
  sx->stx_ctime = {st.st_ctim.tv_sec, uint32_t(st.st_ctim.tv_nsec), 0};
  sx->stx_dev_major = major(st.st_dev);
  sx->stx_dev_minor = minor(st.st_dev);
}

}  // namespace
}  // namespace pfmcompat::sysfs

namespace sysfs = pfmcompat::sysfs;
namespace libc = pfmcompat::sysfs::libc;

// Declares fn under the libc name sym, exported.
#define SYSFS_EXPORT extern "C" __attribute__((visibility("default")))

// Each one: the prefix test, libc's function for anything else; then our
// answer, or libc's when the files are not served (sysfs::resolve).
#define ANSWER(call, pass)            \
  do {                                \
    int saved_ = errno, r_;           \
    if (!(call)) return (pass);       \
    return sysfs::finish(r_, saved_); \
  } while (0)

// ---- open ------------------------------------------------------------------

#define OPEN_LIKE(fn, sym, real)                                          \
  SYSFS_EXPORT int fn(const char* path, int flags, ...) __asm__(sym);     \
  int fn(const char* path, int flags, ...) {                              \
    va_list ap;                                                           \
    va_start(ap, flags);                                                  \
    mode_t mode = sysfs::modeArg(flags, ap);                              \
    va_end(ap);                                                           \
    if (!sysfs::underPrefix(path)) return real(path, flags, mode);        \
    ANSWER(sysfs::answerOpen(path, flags, &r_), real(path, flags, mode)); \
  }
OPEN_LIKE(pfmfs_open, "open", libc::open)
OPEN_LIKE(pfmfs_open64, "open64", libc::open64)

#define OPENAT_LIKE(fn, sym, real)                                               \
  SYSFS_EXPORT int fn(int dirfd, const char* path, int flags, ...) __asm__(sym); \
  int fn(int dirfd, const char* path, int flags, ...) {                          \
    va_list ap;                                                                  \
    va_start(ap, flags);                                                         \
    mode_t mode = sysfs::modeArg(flags, ap);                                     \
    va_end(ap);                                                                  \
    if (!sysfs::underPrefix(path)) return real(dirfd, path, flags, mode);        \
    ANSWER(sysfs::answerOpen(path, flags, &r_), real(dirfd, path, flags, mode)); \
  }
OPENAT_LIKE(pfmfs_openat, "openat", libc::openat)
OPENAT_LIKE(pfmfs_openat64, "openat64", libc::openat64)

// _FORTIFY_SOURCE's checked entries (flags without O_CREAT).
#define OPEN2_LIKE(fn, sym, real)                                   \
  SYSFS_EXPORT int fn(const char* path, int flags) __asm__(sym);    \
  int fn(const char* path, int flags) {                             \
    if (!sysfs::underPrefix(path)) return real(path, flags);        \
    ANSWER(sysfs::answerOpen(path, flags, &r_), real(path, flags)); \
  }
OPEN2_LIKE(pfmfs_open_2, "__open_2", libc::open_2)
OPEN2_LIKE(pfmfs_open64_2, "__open64_2", libc::open64_2)

#define OPENAT2_LIKE(fn, sym, real)                                         \
  SYSFS_EXPORT int fn(int dirfd, const char* path, int flags) __asm__(sym); \
  int fn(int dirfd, const char* path, int flags) {                          \
    if (!sysfs::underPrefix(path)) return real(dirfd, path, flags);         \
    ANSWER(sysfs::answerOpen(path, flags, &r_), real(dirfd, path, flags));  \
  }
OPENAT2_LIKE(pfmfs_openat_2, "__openat_2", libc::openat_2)
OPENAT2_LIKE(pfmfs_openat64_2, "__openat64_2", libc::openat64_2)

SYSFS_EXPORT FILE* pfmfs_fopen(const char* path, const char* mode) __asm__("fopen");
FILE* pfmfs_fopen(const char* path, const char* mode) { return sysfs::openStream(path, mode, libc::fopen); }

SYSFS_EXPORT FILE* pfmfs_fopen64(const char* path, const char* mode) __asm__("fopen64");
FILE* pfmfs_fopen64(const char* path, const char* mode) { return sysfs::openStream(path, mode, libc::fopen64); }

// ---- access ----------------------------------------------------------------

#define ACCESS_LIKE(fn, sym, real)                                  \
  SYSFS_EXPORT int fn(const char* path, int mode) __asm__(sym);     \
  int fn(const char* path, int mode) {                              \
    if (!sysfs::underPrefix(path)) return real(path, mode);         \
    ANSWER(sysfs::answerAccess(path, mode, &r_), real(path, mode)); \
  }
ACCESS_LIKE(pfmfs_access, "access", libc::access)
ACCESS_LIKE(pfmfs_euidaccess, "euidaccess", libc::euidaccess)
ACCESS_LIKE(pfmfs_eaccess, "eaccess", libc::eaccess)

SYSFS_EXPORT int pfmfs_faccessat(int dirfd, const char* path, int mode, int flags) __asm__("faccessat");
int pfmfs_faccessat(int dirfd, const char* path, int mode, int flags) {
  if (!sysfs::underPrefix(path) || (flags & ~(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH)))
    return libc::faccessat(dirfd, path, mode, flags);
  ANSWER(sysfs::answerAccess(path, mode, &r_), libc::faccessat(dirfd, path, mode, flags));
}

// ---- stat ------------------------------------------------------------------

#define STAT_LIKE(fn, sym, type, real)                          \
  SYSFS_EXPORT int fn(const char* path, type* st) __asm__(sym); \
  int fn(const char* path, type* st) {                          \
    if (!sysfs::underPrefix(path)) return real(path, st);       \
    ANSWER(sysfs::answerStat(path, st, &r_), real(path, st));   \
  }
STAT_LIKE(pfmfs_stat, "stat", struct stat, libc::stat)
STAT_LIKE(pfmfs_stat64, "stat64", struct stat64, libc::stat64)
STAT_LIKE(pfmfs_lstat, "lstat", struct stat, libc::lstat)
STAT_LIKE(pfmfs_lstat64, "lstat64", struct stat64, libc::lstat64)

#define FSTATAT_LIKE(fn, sym, type, real)                                                                \
  SYSFS_EXPORT int fn(int dirfd, const char* path, type* st, int flags) __asm__(sym);                    \
  int fn(int dirfd, const char* path, type* st, int flags) {                                             \
    if (!sysfs::underPrefix(path) || (flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH))) \
      return real(dirfd, path, st, flags);                                                               \
    ANSWER(sysfs::answerStat(path, st, &r_), real(dirfd, path, st, flags));                              \
  }
FSTATAT_LIKE(pfmfs_fstatat, "fstatat", struct stat, libc::fstatat)
FSTATAT_LIKE(pfmfs_fstatat64, "fstatat64", struct stat64, libc::fstatat64)

// Before glibc 2.33 stat() was an inline call of __xstat(_STAT_VER, ...):
// binaries built then still call these. Versions 0 and 1 are x86_64's.
#define XSTAT_LIKE(fn, sym, type, real)                                              \
  SYSFS_EXPORT int fn(int ver, const char* path, type* st) __asm__(sym);             \
  int fn(int ver, const char* path, type* st) {                                      \
    if (!sysfs::underPrefix(path) || ver < 0 || ver > 1) return real(ver, path, st); \
    ANSWER(sysfs::answerStat(path, st, &r_), real(ver, path, st));                   \
  }
XSTAT_LIKE(pfmfs_xstat, "__xstat", struct stat, libc::xstat)
XSTAT_LIKE(pfmfs_xstat64, "__xstat64", struct stat64, libc::xstat64)
XSTAT_LIKE(pfmfs_lxstat, "__lxstat", struct stat, libc::lxstat)
XSTAT_LIKE(pfmfs_lxstat64, "__lxstat64", struct stat64, libc::lxstat64)

#define FXSTATAT_LIKE(fn, sym, type, real)                                                     \
  SYSFS_EXPORT int fn(int ver, int dirfd, const char* path, type* st, int flags) __asm__(sym); \
  int fn(int ver, int dirfd, const char* path, type* st, int flags) {                          \
    if (!sysfs::underPrefix(path) || ver < 0 || ver > 1 ||                                     \
        (flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH)))                    \
      return real(ver, dirfd, path, st, flags);                                                \
    ANSWER(sysfs::answerStat(path, st, &r_), real(ver, dirfd, path, st, flags));               \
  }
FXSTATAT_LIKE(pfmfs_fxstatat, "__fxstatat", struct stat, libc::fxstatat)
FXSTATAT_LIKE(pfmfs_fxstatat64, "__fxstatat64", struct stat64, libc::fxstatat64)

SYSFS_EXPORT int pfmfs_statx(int dirfd, const char* path, int flags, unsigned int mask,
                             struct statx* sx) __asm__("statx");
int pfmfs_statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* sx) {
  if (!sysfs::underPrefix(path) ||
      (flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH | AT_STATX_SYNC_TYPE)))
    return libc::statx(dirfd, path, flags, mask, sx);
  struct stat st;
  int saved = errno, r;
  if (!sysfs::answerStat(path, &st, &r)) return libc::statx(dirfd, path, flags, mask, sx);
  if (r == 0) sysfs::statToStatx(st, sx);
  return sysfs::finish(r, saved);
}
