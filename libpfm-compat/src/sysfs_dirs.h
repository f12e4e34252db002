// Directory streams the library makes itself, behind opendir, readdir and
// the rest (sysfs_dir_interpose.cpp): the listing of a directory of
// /sys/kernel/perfmon (sysfs_files.h), and, where libc's directory functions
// cannot be found (a fully static program: sysfs_libc.h), any other
// directory, read with getdents64 as libc would.
//
// A DIR is libc's own structure, which a library cannot make up: a stream
// of ours is handed out as a DIR* that points to a Stream, and every
// interposer asks find() first. find() knows ours from a registry of the
// open ones, so that libc's DIR is never looked into: while none of ours is
// open it costs one atomic load, then a scan of the open ones. Each stream
// has a lock: threads may share one, as libc's streams allow.
#pragma once

#include <dirent.h>

#include "sysfs_files.h"
#include "sysfs_libc.h"

namespace pfmcompat::sysfs::dirs {

struct Stream;

// A stream over a directory of the tree (nullptr and errno ENOMEM).
Stream* openNode(const Node& dir);

// A stream over fd, which it then owns, with fdopendir's checks: EBADF for
// a descriptor that is not open or is O_PATH, EINVAL for one open
// write-only, ENOTDIR for a file (nullptr, errno set, fd left open).
Stream* openFd(int fd);

// The stream d is, or nullptr for any other pointer (libc's streams).
Stream* find(DIR* d);
inline DIR* asDir(Stream* s) { return reinterpret_cast<DIR*>(s); }

// readdir: the next entry, in the stream (valid until its next call), or
// nullptr at the end (errno untouched) or on an error (errno set). "." and
// "..", then the directory's entries (childAt), each with its inode number
// (as stat says), d_type and d_off (the position telldir then gives).
struct dirent64* next(Stream* s);

// readdir_r: the next entry copied into *entry (*result = entry), or
// *result = nullptr at the end; 0, or an errno value.
int nextInto(Stream* s, struct dirent64* entry, struct dirent64** result);

void rewind(Stream* s);
long tell(Stream* s);
void seek(Stream* s, long pos);

// dirfd: a tree's listing has no descriptor (-1, ENOTSUP, as POSIX lets
// dirfd say); a getdents64 stream's is its own.
int fd(Stream* s);

// closedir: 0, or -1 and errno (close(2) of the descriptor). s is freed.
int close(Stream* s);

// scandir over s, from where it is: the entries filter keeps, each in its
// own malloc'd copy, sorted with compare (if any), in a malloc'd array;
// their number, or -1 and errno (ENOMEM, or the stream's). s stays open.
int scan(Stream* s, struct dirent64*** list, libc::ScanFilter filter, libc::ScanCompare compare);

}  // namespace pfmcompat::sysfs::dirs
