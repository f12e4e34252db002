// What the parts of Filesystem share (filesystem.cpp, filesystem_nodes.cpp,
// filesystem_tree.cpp, filesystem_io.cpp, the tree's tree_walk.cpp), and
// nothing outside them includes: the open-file handles, the limits of the
// kernel's caching and of writes. The names and modes of the tree are
// tree_schema.h's rows.
#pragma once

#include <sys/stat.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fs/filesystem.h"

namespace pfmfs::fs {

// One open regular file. Text files keep the snapshot taken by the read at
// offset 0, so a read in several pieces is consistent and every pread at 0
// is fresh.
struct Filesystem::OpenFile {
  NodePtr node;
  Mutex mutex;
  std::string text GUARDED_BY(mutex);
  // Who opened it, with the rights that a write to ctl, pmcK or regs is
  // judged by (load, the OS bit, AnyThread): the opener's, taken at open, as
  // the kernel judges a descriptor by its opener. Whoever the descriptor
  // goes to (a set-uid program's stdout) gets no more than that.
  session::Caller opener;
};

struct Filesystem::OpenDir {
  std::vector<std::pair<std::string, mode_t>> entries;  // taken at opendir
};

namespace detail {

inline Filesystem& fsOf(fuse_req_t req) { return *static_cast<Filesystem*>(fuse_req_userdata(req)); }

// How long the kernel may cache names and attributes. Nothing changes behind
// its back: entries go away by rmdir, which it sees, or by autoclose, which
// we tell it about (fuse_lowlevel_notify_delete).
inline constexpr double kCacheTimeout = 3600.0;

// The longest write taken (pfmfs(5) LIMITS): far above the longest `regs`
// of any PMU, below the smallest piece the kernel splits a write into (31
// pages of an unaligned buffer where it passes 32 pages at a time).
inline constexpr std::size_t kMaxWrite = 65536;

// "pmc12" -> 12; nullopt unless PREFIX followed by a canonical decimal.
inline std::optional<unsigned> indexAfter(std::string_view name, std::string_view prefix, unsigned max) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || p != digits.data() + digits.size() || v > max) return std::nullopt;
  return v;
}

}  // namespace detail
}  // namespace pfmfs::fs
