// perfmon2's /sys/kernel/perfmon as a tree (sysfs_files.h): which names
// each directory has, in what order it lists them, what a path names, and
// every node's inode number. What the files say is sysfs_files.cpp's.
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include <perfmon/perfmon_dfl_smpl.h>

#include "mount.h"
#include "sysfs_files.h"
#include "text_builder.h"

namespace pfmcompat::sysfs {
namespace {

// PFMFS_SYSFS=0 turns the files off; read once. -1: not read yet.
std::atomic<int> g_enabled{-1};

bool enabled() {
  int e = g_enabled.load(std::memory_order_relaxed);
  if (e < 0) {
    const char* v = getenv("PFMFS_SYSFS");
    e = (v && strcmp(v, "0") == 0) ? 0 : 1;
    g_enabled.store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

bool nameIs(const char* name, size_t n, const char* want) { return strlen(want) == n && memcmp(name, want, n) == 0; }

struct Entry {
  const char* name;
  Kind kind;
};
constexpr Entry kRootEntries[] = {
    {"version", Kind::kVersion},
    {"syscall", Kind::kSyscall},
    {"task_sessions_count", Kind::kTaskSessions},
    {"sys_sessions_count", Kind::kSysSessions},
    {"smpl_buffer_mem_cur", Kind::kSmplBufferMem},
    {"smpl_buffer_mem_max", Kind::kSmplBufferMax},
    {"formats", Kind::kFormats},
    {"pmu_desc", Kind::kPmuDesc},
};
// perfmon2 gave each format a directory of its name holding `version`; the
// mount has one format (pfmfs(5), SAMPLING).
constexpr char kDefaultFormat[] = PFM_DFL_SMPL_NAME;
constexpr const char* kAttrNames[] = {"name", "dfl_val", "rsvd_msk", "width", "addr"};

// "pmcN"/"pmdN" with N as perfmon2 printed it (decimal, no leading zero),
// for a register the PMU has.
bool lookupRegister(const char* name, size_t n, uint64_t pmcs, uint64_t pmds, Node* out) {
  if (n < 4 || n > 5 || name[0] != 'p' || name[1] != 'm' || (name[2] != 'c' && name[2] != 'd')) return false;
  if (name[3] == '0' && n > 4) return false;
  unsigned reg = 0;
  for (size_t i = 3; i < n; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    reg = reg * 10 + unsigned(name[i] - '0');
  }
  bool pmd = name[2] == 'd';
  if (reg >= 64 || !(((pmd ? pmds : pmcs) >> reg) & 1)) return false;
  out->kind = Kind::kRegDir;
  out->pmd = pmd;
  out->reg = uint8_t(reg);
  return true;
}

bool lookupChild(const Node& dir, const char* name, size_t n, uint64_t pmcs, uint64_t pmds, Node* out) {
  *out = dir;
  switch (dir.kind) {
    case Kind::kRoot:
      for (const Entry& e : kRootEntries) {
        if (nameIs(name, n, e.name)) {
          out->kind = e.kind;
          return true;
        }
      }
      return false;
    case Kind::kFormats:
      if (!nameIs(name, n, kDefaultFormat)) return false;
      out->kind = Kind::kFormatDir;
      return true;
    case Kind::kFormatDir:
      if (!nameIs(name, n, "version")) return false;
      out->kind = Kind::kFormatVersion;
      return true;
    case Kind::kPmuDesc:
      if (nameIs(name, n, "model")) {
        out->kind = Kind::kModel;
        return true;
      }
      return lookupRegister(name, n, pmcs, pmds, out);
    case Kind::kRegDir:
      for (size_t i = 0; i < sizeof kAttrNames / sizeof kAttrNames[0]; ++i) {
        if (nameIs(name, n, kAttrNames[i])) {
          out->kind = Kind::kRegAttr;
          out->attr = Attr(i);
          return true;
        }
      }
      return false;
    default:
      return false;
  }
}

}  // namespace

Resolved resolve(const char* path) {
  Resolved r;
  uint64_t pmcs, pmds;
  if (!enabled() || !mountPath() || !pmuMasks(&pmcs, &pmds)) return r;  // kPassThrough

  Node stack[4];  // root, pmu_desc, pmcN, attr: the deepest path
  int depth = 0;
  const char* p = path + kPrefixLen;
  for (;;) {
    while (*p == '/') ++p;
    if (*p == '\0') break;
    const char* name = p;
    while (*p && *p != '/') ++p;
    size_t n = size_t(p - name);
    if (!stack[depth].isDir()) {
      r.what = Resolved::kError;
      r.error = ENOTDIR;
      return r;
    }
    if (n == 1 && name[0] == '.') continue;
    if (n == 2 && name[0] == '.' && name[1] == '.') {
      if (depth == 0) return r;  // out of the tree: /sys/kernel's business
      --depth;
      continue;
    }
    Node child;
    if (!lookupChild(stack[depth], name, n, pmcs, pmds, &child)) {
      r.what = Resolved::kError;
      r.error = ENOENT;
      r.createsIn = *p == '\0';
      return r;
    }
    stack[++depth] = child;
  }
  // "version/" names a directory that is not one.
  if (p[-1] == '/' && !stack[depth].isDir()) {
    r.what = Resolved::kError;
    r.error = ENOTDIR;
    return r;
  }
  r.what = Resolved::kFound;
  r.node = stack[depth];
  return r;
}

uint64_t inodeOf(const Node& node) {
  return 1 + ((uint64_t(node.kind) << 16) | (uint64_t(node.pmd) << 15) | (uint64_t(node.reg) << 4) |
              (node.kind == Kind::kRegAttr ? uint64_t(node.attr) + 1 : 0));
}

// Nodes as resolve() makes them (lookupChild: a child starts as a copy of
// its directory), so that their inode numbers agree.
Node parentOf(const Node& node) {
  Node parent;  // the root
  switch (node.kind) {
    case Kind::kFormatDir:
      parent.kind = Kind::kFormats;
      break;
    case Kind::kFormatVersion:
      parent.kind = Kind::kFormatDir;
      break;
    case Kind::kModel:
    case Kind::kRegDir:
      parent.kind = Kind::kPmuDesc;
      break;
    case Kind::kRegAttr:
      parent = node;
      parent.kind = Kind::kRegDir;
      parent.attr = Attr::kName;
      break;
    default:  // the root and its entries
      break;
  }
  return parent;
}

bool childAt(const Node& dir, size_t index, Node* child, char (&name)[kNameMax]) {
  TextBuilder out(name, sizeof name);
  *child = dir;
  switch (dir.kind) {
    case Kind::kRoot:
      if (index >= sizeof kRootEntries / sizeof kRootEntries[0]) return false;
      child->kind = kRootEntries[index].kind;
      out.add(kRootEntries[index].name);
      return true;
    case Kind::kFormats:
    case Kind::kFormatDir:
      if (index > 0) return false;
      child->kind = dir.kind == Kind::kFormats ? Kind::kFormatDir : Kind::kFormatVersion;
      out.add(dir.kind == Kind::kFormats ? kDefaultFormat : "version");
      return true;
    case Kind::kPmuDesc: {  // model, then every PMC, then every PMD, by number
      uint64_t masks[2];
      if (index == 0) {
        child->kind = Kind::kModel;
        out.add("model");
        return true;
      }
      if (!pmuMasks(&masks[0], &masks[1])) return false;
      --index;
      for (int pmd = 0; pmd < 2; ++pmd) {
        size_t count = size_t(__builtin_popcountll(masks[pmd]));
        if (index >= count) {
          index -= count;
          continue;
        }
        uint64_t bits = masks[pmd];
        for (; index > 0; --index) bits &= bits - 1;  // drop the lower ones
        child->kind = Kind::kRegDir;
        child->pmd = pmd == 1;
        child->reg = uint8_t(__builtin_ctzll(bits));
        out.add(pmd ? "pmd" : "pmc").dec(child->reg);
        return true;
      }
      return false;
    }
    case Kind::kRegDir:
      if (index >= sizeof kAttrNames / sizeof kAttrNames[0]) return false;
      child->kind = Kind::kRegAttr;
      child->attr = Attr(index);
      out.add(kAttrNames[index]);
      return true;
    default:
      return false;
  }
}

}  // namespace pfmcompat::sysfs
