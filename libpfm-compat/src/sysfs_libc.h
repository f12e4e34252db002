// The real libc functions behind the /sys/kernel/perfmon interposers
// (sysfs_interpose.cpp) and mmap's (mmap_interpose.cpp): what a call on any
// other path or descriptor goes to, and what the library itself uses to read
// the mount while it answers a sysfs path or maps a sampling buffer (never
// the interposed names, so an answer can never loop into itself).
//
// Each is libc's own function, found once with dlsym(RTLD_NEXT) (at load
// time, by a constructor). Where there is none (a fully static program: no
// dlsym; or a call that arrives while the lookup runs, from inside dlsym
// itself) the same operation is made with the system call, so errno and the
// result are what the kernel says; fopen then goes through fdopen over the
// system call's descriptor. The directory-stream functions have no system
// call to fall back on: each returns false without doing anything, and the
// caller makes the stream itself (sysfs_dirs.h).
#pragma once

#include <dirent.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

namespace pfmcompat::sysfs::libc {

int open(const char* path, int flags, mode_t mode);
int open64(const char* path, int flags, mode_t mode);
int openat(int dirfd, const char* path, int flags, mode_t mode);
int openat64(int dirfd, const char* path, int flags, mode_t mode);
int open_2(const char* path, int flags);  // glibc's _FORTIFY_SOURCE entries
int open64_2(const char* path, int flags);
int openat_2(int dirfd, const char* path, int flags);
int openat64_2(int dirfd, const char* path, int flags);
FILE* fopen(const char* path, const char* mode);
FILE* fopen64(const char* path, const char* mode);
int access(const char* path, int mode);
int faccessat(int dirfd, const char* path, int mode, int flags);
int euidaccess(const char* path, int mode);
int eaccess(const char* path, int mode);
int stat(const char* path, struct stat* st);
int stat64(const char* path, struct stat64* st);
int lstat(const char* path, struct stat* st);
int lstat64(const char* path, struct stat64* st);
int fstatat(int dirfd, const char* path, struct stat* st, int flags);
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags);
int xstat(int ver, const char* path, struct stat* st);  // __xstat: binaries built before glibc 2.33
int xstat64(int ver, const char* path, struct stat64* st);
int lxstat(int ver, const char* path, struct stat* st);
int lxstat64(int ver, const char* path, struct stat64* st);
int fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags);
int fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags);
int statx(int dirfd, const char* path, int flags, unsigned int mask, struct statx* st);

// Directory streams: true and libc's result in *out, or false (no libc).
// scandir and scandir64 are one function on x86_64, as are readdir and
// readdir64 (struct dirent is struct dirent64 there): the 64 names only.
using ScanFilter = int (*)(const struct dirent64*);
using ScanCompare = int (*)(const struct dirent64**, const struct dirent64**);
bool opendir(const char* path, DIR** out);
bool fdopendir(int fd, DIR** out);
bool readdir64(DIR* d, struct dirent64** out);
bool readdir64_r(DIR* d, struct dirent64* entry, struct dirent64** result, int* out);
bool closedir(DIR* d, int* out);
bool rewinddir(DIR* d);
bool dirfd(DIR* d, int* out);
bool telldir(DIR* d, long* out);
bool seekdir(DIR* d, long pos);
bool scandir64(const char* path, struct dirent64*** list, ScanFilter filter, ScanCompare compare, int* out);
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off);

// For mmap's interposer, which the sanitizers' runtimes call while they
// start, before instrumented code may run (a program linked with libpfm.a
// defines mmap for them too): not instrumented, and no lookup of their own.
// mmapReady is false until the load-time lookup (a constructor, after the
// sanitizers have started) is done; then *fn is libc's mmap (is64: mmap64),
// or nullptr where there is none (sysMmap: the system call).
#define PFMFS_NOT_INSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))
using MmapFn = void* (*)(void* addr, size_t len, int prot, int flags, int fd, off_t off);
PFMFS_NOT_INSTRUMENTED bool mmapReady(bool is64, MmapFn* fn);
PFMFS_NOT_INSTRUMENTED void* sysMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off);

// fopen's mode as open(2) flags, as glibc reads it; false (EINVAL) for a
// mode that is not one.
bool fopenFlags(const char* mode, int* flags);

}  // namespace pfmcompat::sysfs::libc
