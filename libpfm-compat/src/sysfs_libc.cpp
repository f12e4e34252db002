// The real libc functions behind the interposers (sysfs_libc.h). The lookup
// runs once, at load time, from a constructor: after it a call is one atomic
// load and an indirect call, nothing that allocates or locks, so the calls
// stay async-signal-safe where libc's are.
#include "sysfs_libc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

// Weak: a fully static program that does not use dlsym itself does not get
// libc.a's dynamic-loading code for our sake, and sees dlsym == nullptr.
#pragma weak dlsym

namespace pfmcompat::sysfs::libc {
namespace {

enum Fn {
  kOpen,
  kOpen64,
  kOpenat,
  kOpenat64,
  kOpen2,
  kOpen64_2,
  kOpenat2,
  kOpenat64_2,
  kFopen,
  kFopen64,
  kAccess,
  kFaccessat,
  kEuidaccess,
  kEaccess,
  kStat,
  kStat64,
  kLstat,
  kLstat64,
  kFstatat,
  kFstatat64,
  kXstat,
  kXstat64,
  kLxstat,
  kLxstat64,
  kFxstatat,
  kFxstatat64,
  kStatx,
  kOpendir,
  kFdopendir,
  kReaddir64,
  kReaddir64R,
  kClosedir,
  kRewinddir,
  kDirfd,
  kTelldir,
  kSeekdir,
  kScandir64,
  kMmap,
  kMmap64,
  kCount
};

constexpr const char* kNames[kCount] = {
    "open",       "open64",       "openat",  "openat64",  "__open_2",   "__open64_2", "__openat_2",  "__openat64_2",
    "fopen",      "fopen64",      "access",  "faccessat", "euidaccess", "eaccess",    "stat",        "stat64",
    "lstat",      "lstat64",      "fstatat", "fstatat64", "__xstat",    "__xstat64",  "__lxstat",    "__lxstat64",
    "__fxstatat", "__fxstatat64", "statx",   "opendir",   "fdopendir",  "readdir64",  "readdir64_r", "closedir",
    "rewinddir",  "dirfd",        "telldir", "seekdir",   "scandir64",  "mmap",       "mmap64",
};

std::atomic<void*> g_fn[kCount];
// 0: not looked up; 1: a lookup is running; 2: done (g_fn final).
std::atomic<int> g_state{0};

void resolveAll() {
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  if (&dlsym != nullptr) {
    for (int i = 0; i < kCount; ++i) g_fn[i].store(dlsym(RTLD_NEXT, kNames[i]), std::memory_order_relaxed);
  }
  g_state.store(2, std::memory_order_release);
}

// mmap's functions for its interposer (mmapReady), published by the
// load-time lookup alone, and only read without the sanitizers'
// instrumentation: plain words and __atomic builtins.
void* g_mmap_fns[2];   // libc's mmap and mmap64, or nullptr (the system call)
int g_mmap_ready = 0;  // 1 once g_mmap_fns are final

// Before any code of the program runs; a library constructor that calls
// open() before this one gets the lookup (or the system call) lazily below.
__attribute__((constructor(101))) void resolveAtLoad() {
  resolveAll();
  // A lookup another thread started lazily (load time has one thread, but
  // a library's constructor may have made one) is about to end.
  while (g_state.load(std::memory_order_acquire) != 2) sched_yield();
  __atomic_store_n(&g_mmap_fns[0], g_fn[kMmap].load(std::memory_order_relaxed), __ATOMIC_RELAXED);
  __atomic_store_n(&g_mmap_fns[1], g_fn[kMmap64].load(std::memory_order_relaxed), __ATOMIC_RELAXED);
  __atomic_store_n(&g_mmap_ready, 1, __ATOMIC_RELEASE);
}

// libc's function i, or nullptr: then the caller makes the system call. A
// call made while the lookup runs (by another thread, or by this one from
// inside dlsym, e.g. a malloc that reads a file) never waits for it.
template <class F>
F real(Fn i) {
  int state = g_state.load(std::memory_order_acquire);
  if (state == 0) {
    resolveAll();
    state = g_state.load(std::memory_order_acquire);
  }
  if (state != 2) return nullptr;
  return reinterpret_cast<F>(g_fn[i].load(std::memory_order_relaxed));
}

using OpenFn = int (*)(const char*, int, ...);
using OpenatFn = int (*)(int, const char*, int, ...);
using Open2Fn = int (*)(const char*, int);
using Openat2Fn = int (*)(int, const char*, int);
using FopenFn = FILE* (*)(const char*, const char*);
using AccessFn = int (*)(const char*, int);
using FaccessatFn = int (*)(int, const char*, int, int);
using StatFn = int (*)(const char*, struct stat*);
using Stat64Fn = int (*)(const char*, struct stat64*);
using FstatatFn = int (*)(int, const char*, struct stat*, int);
using Fstatat64Fn = int (*)(int, const char*, struct stat64*, int);
using XstatFn = int (*)(int, const char*, struct stat*);
using Xstat64Fn = int (*)(int, const char*, struct stat64*);
using FxstatatFn = int (*)(int, int, const char*, struct stat*, int);
using Fxstatat64Fn = int (*)(int, int, const char*, struct stat64*, int);
using StatxFn = int (*)(int, const char*, int, unsigned int, struct statx*);
using OpendirFn = DIR* (*)(const char*);
using FdopendirFn = DIR* (*)(int);
using ReaddirFn = struct dirent64* (*)(DIR*);
using ReaddirRFn = int (*)(DIR*, struct dirent64*, struct dirent64**);
using DirIntFn = int (*)(DIR*);  // closedir, dirfd
using RewinddirFn = void (*)(DIR*);
using TelldirFn = long (*)(DIR*);
using SeekdirFn = void (*)(DIR*, long);
using ScandirFn = int (*)(const char*, struct dirent64***, ScanFilter, ScanCompare);

// The system calls libc makes for these on x86_64 (struct stat is the
// kernel's there, for newfstatat).
int sysOpenat(int dirfd, const char* path, int flags, mode_t mode) {
  return int(syscall(SYS_openat, dirfd, path, flags, mode));
}

int sysFaccessat(int dirfd, const char* path, int mode, int flags) {
  if (flags == 0) return int(syscall(SYS_faccessat, dirfd, path, mode));
  return int(syscall(SYS_faccessat2, dirfd, path, mode, flags));
}

int sysFstatat(int dirfd, const char* path, void* st, int flags) {
  return int(syscall(SYS_newfstatat, dirfd, path, st, flags));
}

FILE* sysFopen(const char* path, const char* mode) {
  int flags;
  if (!fopenFlags(mode, &flags)) {
    errno = EINVAL;
    return nullptr;
  }
  int fd = sysOpenat(AT_FDCWD, path, flags, 0666);
  if (fd < 0) return nullptr;
  FILE* f = fdopen(fd, mode);
  if (!f) {
    int err = errno;
    ::close(fd);
    errno = err;
  }
  return f;
}

}  // namespace

// fopen's mode as open(2) flags, as glibc reads it: r/w/a, then any of
// "+xe" (other letters ignored) up to a ','; EINVAL for any other start.
bool fopenFlags(const char* mode, int* flags) {
  int f;
  switch (mode[0]) {
    case 'r':
      f = O_RDONLY;
      break;
    case 'w':
      f = O_WRONLY | O_CREAT | O_TRUNC;
      break;
    case 'a':
      f = O_WRONLY | O_CREAT | O_APPEND;
      break;
    default:
      return false;
  }
  for (const char* m = mode + 1; *m && *m != ','; ++m) {
    if (*m == '+')
      f = (f & ~O_ACCMODE) | O_RDWR;
    else if (*m == 'x')
      f |= O_EXCL;
    else if (*m == 'e')
      f |= O_CLOEXEC;
  }
  *flags = f;
  return true;
}

int open(const char* path, int flags, mode_t mode) {
  if (auto f = real<OpenFn>(kOpen)) return f(path, flags, mode);
  return sysOpenat(AT_FDCWD, path, flags, mode);
}

int open64(const char* path, int flags, mode_t mode) {
  if (auto f = real<OpenFn>(kOpen64)) return f(path, flags, mode);
  return sysOpenat(AT_FDCWD, path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, mode_t mode) {
  if (auto f = real<OpenatFn>(kOpenat)) return f(dirfd, path, flags, mode);
  return sysOpenat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char* path, int flags, mode_t mode) {
  if (auto f = real<OpenatFn>(kOpenat64)) return f(dirfd, path, flags, mode);
  return sysOpenat(dirfd, path, flags, mode);
}

int open_2(const char* path, int flags) {
  if (auto f = real<Open2Fn>(kOpen2)) return f(path, flags);
  return sysOpenat(AT_FDCWD, path, flags, 0);
}

int open64_2(const char* path, int flags) {
  if (auto f = real<Open2Fn>(kOpen64_2)) return f(path, flags);
  return sysOpenat(AT_FDCWD, path, flags, 0);
}

int openat_2(int dirfd, const char* path, int flags) {
  if (auto f = real<Openat2Fn>(kOpenat2)) return f(dirfd, path, flags);
  return sysOpenat(dirfd, path, flags, 0);
}

int openat64_2(int dirfd, const char* path, int flags) {
  if (auto f = real<Openat2Fn>(kOpenat64_2)) return f(dirfd, path, flags);
  return sysOpenat(dirfd, path, flags, 0);
}

FILE* fopen(const char* path, const char* mode) {
  if (auto f = real<FopenFn>(kFopen)) return f(path, mode);
  return sysFopen(path, mode);
}

FILE* fopen64(const char* path, const char* mode) {
  if (auto f = real<FopenFn>(kFopen64)) return f(path, mode);
  return sysFopen(path, mode);
}

int access(const char* path, int mode) {
  if (auto f = real<AccessFn>(kAccess)) return f(path, mode);
  return sysFaccessat(AT_FDCWD, path, mode, 0);
}

int faccessat(int dirfd, const char* path, int mode, int flags) {
  if (auto f = real<FaccessatFn>(kFaccessat)) return f(dirfd, path, mode, flags);
  return sysFaccessat(dirfd, path, mode, flags);
}

int euidaccess(const char* path, int mode) {
  if (auto f = real<AccessFn>(kEuidaccess)) return f(path, mode);
  return sysFaccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

int eaccess(const char* path, int mode) {
  if (auto f = real<AccessFn>(kEaccess)) return f(path, mode);
  return sysFaccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

int stat(const char* path, struct stat* st) {
  if (auto f = real<StatFn>(kStat)) return f(path, st);
  return sysFstatat(AT_FDCWD, path, st, 0);
}

int stat64(const char* path, struct stat64* st) {
  if (auto f = real<Stat64Fn>(kStat64)) return f(path, st);
  return sysFstatat(AT_FDCWD, path, st, 0);
}

int lstat(const char* path, struct stat* st) {
  if (auto f = real<StatFn>(kLstat)) return f(path, st);
  return sysFstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int lstat64(const char* path, struct stat64* st) {
  if (auto f = real<Stat64Fn>(kLstat64)) return f(path, st);
  return sysFstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  if (auto f = real<FstatatFn>(kFstatat)) return f(dirfd, path, st, flags);
  return sysFstatat(dirfd, path, st, flags);
}

int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  if (auto f = real<Fstatat64Fn>(kFstatat64)) return f(dirfd, path, st, flags);
  return sysFstatat(dirfd, path, st, flags);
}

int xstat(int ver, const char* path, struct stat* st) {
  if (auto f = real<XstatFn>(kXstat)) return f(ver, path, st);
  return sysFstatat(AT_FDCWD, path, st, 0);
}

int xstat64(int ver, const char* path, struct stat64* st) {
  if (auto f = real<Xstat64Fn>(kXstat64)) return f(ver, path, st);
  return sysFstatat(AT_FDCWD, path, st, 0);
}

int lxstat(int ver, const char* path, struct stat* st) {
  if (auto f = real<XstatFn>(kLxstat)) return f(ver, path, st);
  return sysFstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int lxstat64(int ver, const char* path, struct stat64* st) {
  if (auto f = real<Xstat64Fn>(kLxstat64)) return f(ver, path, st);
  return sysFstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  if (auto f = real<FxstatatFn>(kFxstatat)) return f(ver, dirfd, path, st, flags);
  return sysFstatat(dirfd, path, st, flags);
}

int fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  if (auto f = real<Fxstatat64Fn>(kFxstatat64)) return f(ver, dirfd, path, st, flags);
  return sysFstatat(dirfd, path, st, flags);
}

int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* st) {
  if (auto f = real<StatxFn>(kStatx)) return f(dirfd, path, flags, mask, st);
  return int(syscall(SYS_statx, dirfd, path, flags, mask, st));
}

bool opendir(const char* path, DIR** out) {
  auto f = real<OpendirFn>(kOpendir);
  if (f) *out = f(path);
  return f != nullptr;
}

bool fdopendir(int fd, DIR** out) {
  auto f = real<FdopendirFn>(kFdopendir);
  if (f) *out = f(fd);
  return f != nullptr;
}

bool readdir64(DIR* d, struct dirent64** out) {
  auto f = real<ReaddirFn>(kReaddir64);
  if (f) *out = f(d);
  return f != nullptr;
}

bool readdir64_r(DIR* d, struct dirent64* entry, struct dirent64** result, int* out) {
  auto f = real<ReaddirRFn>(kReaddir64R);
  if (f) *out = f(d, entry, result);
  return f != nullptr;
}

bool closedir(DIR* d, int* out) {
  auto f = real<DirIntFn>(kClosedir);
  if (f) *out = f(d);
  return f != nullptr;
}

bool rewinddir(DIR* d) {
  auto f = real<RewinddirFn>(kRewinddir);
  if (f) f(d);
  return f != nullptr;
}

bool dirfd(DIR* d, int* out) {
  auto f = real<DirIntFn>(kDirfd);
  if (f) *out = f(d);
  return f != nullptr;
}

bool telldir(DIR* d, long* out) {
  auto f = real<TelldirFn>(kTelldir);
  if (f) *out = f(d);
  return f != nullptr;
}

bool seekdir(DIR* d, long pos) {
  auto f = real<SeekdirFn>(kSeekdir);
  if (f) f(d, pos);
  return f != nullptr;
}

bool scandir64(const char* path, struct dirent64*** list, ScanFilter filter, ScanCompare compare, int* out) {
  auto f = real<ScandirFn>(kScandir64);
  if (f) *out = f(path, list, filter, compare);
  return f != nullptr;
}

PFMFS_NOT_INSTRUMENTED bool mmapReady(bool is64, MmapFn* fn) {
  if (!__atomic_load_n(&g_mmap_ready, __ATOMIC_ACQUIRE)) return false;
  *fn = reinterpret_cast<MmapFn>(__atomic_load_n(&g_mmap_fns[is64 ? 1 : 0], __ATOMIC_RELAXED));
  return true;
}

// x86_64's mmap is the system call itself (no offset shift, as on 32-bit).
PFMFS_NOT_INSTRUMENTED void* sysMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (auto f = real<MmapFn>(kMmap)) return f(addr, len, prot, flags, fd, off);
  return sysMmap(addr, len, prot, flags, fd, off);
}

void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (auto f = real<MmapFn>(kMmap64)) return f(addr, len, prot, flags, fd, off);
  return sysMmap(addr, len, prot, flags, fd, off);
}

}  // namespace pfmcompat::sysfs::libc
