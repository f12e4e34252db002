// perfmon2's /sys/kernel/perfmon, answered from the pfmfs mount: which paths
// exist under the prefix, whether each is a file or a directory, and what a
// file says. sysfs_interpose.cpp puts this behind libc's open, fopen, access,
// stat and opendir; docs/libpfm-compat.md lists the files and their sources.
//
//   version                 "2.82": PFM_VERSION of <perfmon/perfmon.h>
//   syscall                 "295": libpfm 3.10's x86_64 system call base for
//                           perfmon2 v2.82 (informational: ours are not
//                           system calls)
//   task_sessions_count     loaded per-thread sessions  } from the mount's
//   sys_sessions_count      loaded system-wide sessions } sessions/*/state
//   smpl_buffer_mem_cur     bytes of every session's sampling buffer, each
//                           in whole pages: from sessions/*/smpl_fmt
//   formats/default/version "1.0": the default sampling format, the one the
//                           mount has (pfmfs(5), SAMPLING)
//   pmu_desc/model          pmu/desc/model
//   pmu_desc/pmcN/, pmdN/   one per bit of pmu/info's pmcs= and pmds=, with
//                           name, dfl_val, rsvd_msk, width, addr from
//                           pmu/desc/<reg>/ in perfmon2's formats
//
// Everything here reads the mount with the real libc functions
// (sysfs_libc.h), allocates nothing and takes no lock once the mount has
// been found.
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

}  // namespace pfmcompat::sysfs
