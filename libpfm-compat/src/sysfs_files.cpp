// What perfmon2's /sys/kernel/perfmon files say, from the mount
// (sysfs_files.h; the tree's shape is sysfs_tree.cpp's). Formats are
// perfmon2's own (perfmon_sysfs.c of the v2.8x kernels): one value and a
// newline per file, "0x%llx" for addresses, default values and reserved
// masks, decimal for widths and counts, "MAJ.MIN" for a sampling format's
// version (which perfmon2 printed without the newline).
#include "sysfs_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include <perfmon/perfmon.h>
#include <perfmon/perfmon_dfl_smpl.h>

#include "fastpath/sample_layout.h"
#include "key_value.h"
#include "mount.h"
#include "session_io.h"
#include "sysfs_libc.h"
#include "text_builder.h"

namespace pfmcompat::sysfs {
namespace {

namespace fp = pfmfs::fastpath;

// libpfm 3.10 (pfmlib_os_linux.c) reads this file for the number of
// pfm_create_context; on x86_64 it expects 295 from perfmon2 v2.82's kernels
// (2.6.27 to 2.6.29), the interface PFM_VERSION names.
constexpr uint64_t kSyscallBase = 295;
// perfmon2 showed 64 as the width of any register that is not a counter.
constexpr uint64_t kPmcWidth = 64;
constexpr size_t kPathMax = 4096;

// MOUNT/rel (NUL-terminated) into buf: its length, or -errno.
long readMount(const char* rel, char* buf, size_t cap) {
  const char* mount = mountPath();
  if (!mount) return -ENODEV;
  char path[kPathMax];
  TextBuilder p(path, sizeof path);
  p.add(mount).add('/').add(rel);
  if (p.overflowed()) return -ENAMETOOLONG;
  int fd = libc::open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -errno;
  ssize_t len = readSnapshot(fd, buf, cap);
  close(fd);
  return long(len);
}

// The first line of a file's text (no newline): its length.
size_t firstLine(const char* text, size_t len) {
  const char* nl = static_cast<const char*>(memchr(text, '\n', len));
  return nl ? size_t(nl - text) : len;
}

// The register masks of pmu/info, read once: they are fixed for the life of
// the mount, and showreginfo asks for 640 register names. A failure is not
// kept, so a daemon started later is found.
std::atomic<bool> g_pmu_known{false};
std::atomic<uint64_t> g_pmcs{0}, g_pmds{0};

}  // namespace

bool pmuMasks(uint64_t* pmcs, uint64_t* pmds) {
  if (!g_pmu_known.load(std::memory_order_acquire)) {
    char info[1024];
    long n = readMount("pmu/info", info, sizeof info);
    if (n < 0) return false;
    Line line{info, firstLine(info, size_t(n))};
    uint64_t c, d;
    if (!findNumber(line, "pmcs", &c) || !findNumber(line, "pmds", &d)) return false;
    g_pmcs.store(c, std::memory_order_relaxed);
    g_pmds.store(d, std::memory_order_relaxed);
    g_pmu_known.store(true, std::memory_order_release);
  }
  *pmcs = g_pmcs.load(std::memory_order_relaxed);
  *pmds = g_pmds.load(std::memory_order_relaxed);
  return true;
}

namespace {

// "pmu/desc/pmc3/" and the like into b.
void registerDir(const Node& node, TextBuilder& b) {
  b.add("pmu/desc/").add(node.pmd ? "pmd" : "pmc").dec(node.reg).add('/');
}

// A number of one of the mount's register files, in perfmon2's format.
long registerNumber(const Node& node, const char* file, bool hex, TextBuilder& out) {
  char rel[64], text[64];
  TextBuilder r(rel, sizeof rel);
  registerDir(node, r);
  r.add(file);
  long n = readMount(rel, text, sizeof text);
  if (n < 0) return n;
  uint64_t v;
  if (!parseU64(text, firstLine(text, size_t(n)), &v)) return -EIO;
  if (hex)
    out.hex(v);
  else
    out.dec(v);
  return 0;
}

// A text file of the mount, its first line and a newline.
long mountLine(const char* rel, TextBuilder& out) {
  char text[kContentMax];
  long n = readMount(rel, text, sizeof text);
  if (n < 0) return n;
  size_t len = firstLine(text, size_t(n));
  text[len] = '\0';
  out.add(text);
  return 0;
}

long registerAttr(const Node& node, TextBuilder& out) {
  switch (node.attr) {
    case Attr::kName: {
      char rel[64];
      TextBuilder r(rel, sizeof rel);
      registerDir(node, r);
      r.add("name");
      return mountLine(rel, out);
    }
    case Attr::kDflVal:
      if (node.pmd) {  // pfmfs(5): a new session's PMDs start at 0
        out.hex(0);
        return 0;
      }
      return registerNumber(node, "dfl_val", true, out);
    case Attr::kRsvdMsk:
      return registerNumber(node, "rsvd_msk", true, out);
    case Attr::kWidth:
      if (!node.pmd) {
        out.dec(kPmcWidth);
        return 0;
      }
      return registerNumber(node, "width", false, out);
    case Attr::kAddr:
      return registerNumber(node, "addr", true, out);
  }
  return -EIO;
}

// Calls take(text of sessions/NAME/file, its length) for every session.
// Every user's sessions are listed in sessions/, but only root sees inside
// another user's: EACCES then, never a total of some of them. A session
// that goes away meanwhile is not counted.
template <class Take>
long eachSession(const char* file, Take take) {
  const char* mount = mountPath();
  if (!mount) return -ENODEV;
  char path[kPathMax];
  TextBuilder p(path, sizeof path);
  p.add(mount).add("/sessions");
  if (p.overflowed()) return -ENAMETOOLONG;
  int dir = libc::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  if (dir < 0) return -errno;
  long result = 0;
  alignas(8) char entries[2048];  // getdents64: no allocation, unlike readdir
  for (;;) {
    long n = syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n <= 0) {
      if (n < 0) result = -errno;
      break;
    }
    for (long off = 0; off < n && result == 0;) {
      auto* d = reinterpret_cast<struct dirent64*>(entries + off);
      off += d->d_reclen;
      if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
      char rel[128], text[512];
      TextBuilder r(rel, sizeof rel);
      r.add("sessions/").add(d->d_name).add('/').add(file);
      long len = r.overflowed() ? -ENOENT : readMount(rel, text, sizeof text);
      if (len == -ENOENT) continue;
      if (len < 0) {
        result = len;
        break;
      }
      take(text, firstLine(text, size_t(len)));
    }
    if (result != 0) break;
  }
  close(dir);
  return result;
}

// perfmon2 counted sessions while loaded: per-thread ones, and the CPUs
// that have a system-wide one (one per CPU, on pfmfs as on perfmon2: the
// number of loaded system-wide sessions).
long countSessions(bool system, TextBuilder& out) {
  uint64_t count = 0;
  long r = eachSession("state", [&](const char* text, size_t len) {
    Line line{text, len}, s, m;
    if (!findWord(line, "state", &s) || !findWord(line, "mode", &m)) return;
    bool loaded = !(s.size == 8 && memcmp(s.begin, "unloaded", 8) == 0);
    bool is_system = m.size == 6 && memcmp(m.begin, "system", 6) == 0;
    if (loaded && is_system == system) ++count;
  });
  if (r == 0) out.dec(count);
  return r;
}

// perfmon2's sampling buffers' memory: each session's buf_size in whole
// pages, what the buffer's memfd holds and the owner's limit counts
// (pfmfs(5), smpl_fmt). `none` counts nothing.
long sampleBufferBytes(TextBuilder& out) {
  uint64_t bytes = 0;
  long r = eachSession("smpl_fmt", [&](const char* text, size_t len) {
    Line line{text, len};
    uint64_t size;
    if (findNumber(line, "buf_size", &size)) bytes += fp::sampleBufferFileBytes(size);
  });
  if (r == 0) out.dec(bytes);
  return r;
}

}  // namespace

long content(const Node& node, char* buf, size_t cap) {
  TextBuilder out(buf, cap);
  long r = 0;
  switch (node.kind) {
    case Kind::kVersion:
      out.dec(PFM_VERSION_MAJOR(PFM_VERSION)).add('.').dec(PFM_VERSION_MINOR(PFM_VERSION));
      break;
    case Kind::kSyscall:
      out.dec(kSyscallBase);
      break;
    case Kind::kTaskSessions:
      r = countSessions(false, out);
      break;
    case Kind::kSysSessions:
      r = countSessions(true, out);
      break;
    case Kind::kSmplBufferMem:
      r = sampleBufferBytes(out);
      break;
    case Kind::kSmplBufferMax:  // perfmon2's default, ~0: no machine-wide limit
      out.dec(~uint64_t(0));
      break;
    case Kind::kFormatVersion:
      out.dec(PFM_DFL_SMPL_VERSION_MAJ).add('.').dec(PFM_DFL_SMPL_VERSION_MIN);
      break;
    case Kind::kModel:
      r = mountLine("pmu/desc/model", out);
      break;
    case Kind::kRegAttr:
      r = registerAttr(node, out);
      break;
    default:
      return -EISDIR;
  }
  if (r < 0) return r;
  out.add('\n');
  if (out.overflowed()) return -EIO;
  return long(out.size());
}

int statNode(const Node& node, struct stat* st) {
  struct stat root;
  const char* mount = mountPath();
  if (!mount || libc::stat(mount, &root) != 0) return mount ? -errno : -ENODEV;
  memset(st, 0, sizeof *st);
  st->st_dev = root.st_dev;
  st->st_uid = 0;
  st->st_gid = 0;
  st->st_blksize = 4096;
  st->st_atim = root.st_atim;
  st->st_mtim = root.st_mtim;
  st->st_ctim = root.st_ctim;
  st->st_ino = inodeOf(node);
  if (node.isDir()) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;  // "." and the entry in its parent; sysfs adds its subdirectories
    if (node.kind == Kind::kRoot) {
      st->st_nlink += 2;  // formats, pmu_desc
    } else if (node.kind == Kind::kFormats) {
      st->st_nlink += 1;  // default
    } else if (node.kind == Kind::kPmuDesc) {
      uint64_t pmcs, pmds;
      if (pmuMasks(&pmcs, &pmds)) st->st_nlink += nlink_t(__builtin_popcountll(pmcs) + __builtin_popcountll(pmds));
    }
    return 0;
  }
  st->st_mode = S_IFREG | 0444;
  st->st_nlink = 1;
  // What a read returns; a file that cannot be read now (EACCES) is there all
  // the same, with size 0: open says why.
  char text[kContentMax];
  long len = content(node, text, sizeof text);
  st->st_size = len > 0 ? len : 0;
  return 0;
}

}  // namespace pfmcompat::sysfs
