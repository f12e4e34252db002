// perfmon2's /sys/kernel/perfmon, answered from the pfmfs mount: which paths
// exist under the prefix, whether each is a file or a directory, what a file
// says and what a directory lists. sysfs_interpose.cpp puts this behind
// libc's open, fopen, access and stat, sysfs_dir_interpose.cpp behind
// opendir, readdir and the rest; docs/libpfm-compat.md lists the files and
// their sources.
//
//   version                 "2.82": PFM_VERSION of <perfmon/perfmon.h>
//   syscall                 "295": libpfm 3.10's x86_64 system call base for
//                           perfmon2 v2.82 (informational: ours are not
//                           system calls)
//   task_sessions_count     loaded per-thread sessions  } from the mount's
//   sys_sessions_count      loaded system-wide sessions } sessions/*/state
//   smpl_buffer_mem_cur     bytes of every session's sampling buffer, each
//                           in whole pages: from sessions/*/smpl_fmt
//   smpl_buffer_mem_max     18446744073709551615: perfmon2's "no machine-wide
//                           limit" (pfmfsd's limit is per user, not shown)
//   formats/default/version "1.0": the default sampling format, the one the
//                           mount has (pfmfs(5), SAMPLING)
//   pmu_desc/model          pmu/desc/model
//   pmu_desc/pmcN/, pmdN/   one per bit of pmu/info's pmcs= and pmds=, with
//                           name, dfl_val, rsvd_msk, width, addr from
//                           pmu/desc/<reg>/ in perfmon2's formats
//
// Everything here reads the mount with the real libc functions
// (sysfs_libc.h), allocates nothing and takes no lock once the mount has
// been found. sysfs_tree.cpp has the tree's shape, sysfs_files.cpp the
// files' text.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

namespace pfmcompat::sysfs {

constexpr char kPrefix[] = "/sys/kernel/perfmon";
constexpr size_t kPrefixLen = sizeof kPrefix - 1;

// The one test an interposed call makes on every path: the exact prefix,
// then '/' or the end. Nothing else is normalised (a relative path, or one
// through "..", "//" or a symbolic link to it, is not ours).
inline bool underPrefix(const char* path) {
  return path != nullptr && path[0] == '/' && strncmp(path, kPrefix, kPrefixLen) == 0 &&
         (path[kPrefixLen] == '\0' || path[kPrefixLen] == '/');
}

enum class Kind : uint8_t {
  kRoot,
  kVersion,
  kSyscall,
  kTaskSessions,
  kSysSessions,
  kSmplBufferMem,
  kSmplBufferMax,
  kFormats,
  kFormatDir,
  kFormatVersion,
  kPmuDesc,
  kModel,
  kRegDir,
  kRegAttr,
};
enum class Attr : uint8_t { kName, kDflVal, kRsvdMsk, kWidth, kAddr };

// One node of the tree.
struct Node {
  Kind kind = Kind::kRoot;
  bool pmd = false;  // kRegDir, kRegAttr: a PMD's directory (else a PMC's)
  uint8_t reg = 0;   // kRegDir, kRegAttr: the register's number
  Attr attr = Attr::kName;

  bool isDir() const {
    return kind == Kind::kRoot || kind == Kind::kFormats || kind == Kind::kFormatDir || kind == Kind::kPmuDesc ||
           kind == Kind::kRegDir;
  }
};

struct Resolved {
  enum What { kPassThrough, kFound, kError } what = kPassThrough;
  Node node;               // kFound
  int error = 0;           // kError: ENOENT or ENOTDIR
  bool createsIn = false;  // kError ENOENT: only the last name is missing, in one of our directories
};

// pmu/info's pmcs= and pmds= (sysfs_files.cpp): read once, then kept;
// false while they cannot be read.
bool pmuMasks(uint64_t* pmcs, uint64_t* pmds);

// What path (underPrefix) names. kPassThrough when the files are not served
// (PFMFS_SYSFS=0, no mount, a mount whose pmu/info cannot be read) or when
// ".." leaves the tree: the caller then asks libc as if we were not there.
Resolved resolve(const char* path);

// A file's text into buf: its length, or -errno (the mount's, e.g. EACCES
// for sessions of other users that a non-root reader cannot see into).
long content(const Node& node, char* buf, size_t cap);
constexpr size_t kContentMax = 256;  // every file is one short line

// stat(2) of a node: 0444 regular files, 0555 directories, owned by root,
// st_size the length of the content; st_dev and the times are the mount's.
int statNode(const Node& node, struct stat* st);

// A node's inode number (st_ino, and d_ino in a listing): stable, never 0.
uint64_t inodeOf(const Node& node);

// The directory a node is in (the root's is outside the tree: the root).
Node parentOf(const Node& node);

// The index-th entry (from 0, without "." and "..") a directory lists: its
// name into name (NUL-terminated) and its node; false past the last one.
// The order is fixed: the root's as in the table above, then pmu_desc's
// model, its PMCs and its PMDs by number, a register's attributes as
// perfmon2 created them (name, dfl_val, rsvd_msk, width, addr).
constexpr size_t kNameMax = 32;
bool childAt(const Node& dir, size_t index, Node* child, char (&name)[kNameMax]);

}  // namespace pfmcompat::sysfs
