// What the parts of Filesystem share (filesystem.cpp, filesystem_nodes.cpp,
// filesystem_tree.cpp, filesystem_io.cpp), and nothing outside them
// includes: the open-file handles, the file names and modes of the tree, and
// the limits of the kernel's caching and of writes.
#pragma once

#include <sys/stat.h>

#include <charconv>
#include <cstdint>
#include <mutex>
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
  std::mutex mutex;  // guards text
  std::string text;
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

struct NameMode {
  const char* name;
  SessionFile file;
  mode_t mode;
};
inline constexpr NameMode kSessionFiles[] = {
    {"mode", SessionFile::Mode, 0600},         {"flags", SessionFile::Flags, 0600},
    {"ctl", SessionFile::Ctl, 0200},           {"state", SessionFile::State, 0400},
    {"error", SessionFile::Error, 0400},       {"counts", SessionFile::Counts, 0400},
    {"messages", SessionFile::Messages, 0400}, {"msg", SessionFile::Msg, 0400},
};

struct SetNameMode {
  const char* name;
  SetFile file;
  mode_t mode;
};
inline constexpr SetNameMode kSetFiles[] = {
    {"regs", SetFile::Regs, 0600},
    {"pmds", SetFile::Pmds, 0400},
    {"switch", SetFile::Switch, 0600},
    {"info", SetFile::Info, 0400},
};

struct DescNameMode {
  const char* name;
  DescField field;
};
inline constexpr DescNameMode kPmcFields[] = {{"name", DescField::Name},
                                              {"addr", DescField::Addr},
                                              {"dfl_val", DescField::DflVal},
                                              {"rsvd_msk", DescField::RsvdMsk},
                                              {"pmds", DescField::Pmds}};
inline constexpr DescNameMode kPmdFields[] = {{"name", DescField::Name},
                                              {"addr", DescField::Addr},
                                              {"width", DescField::Width},
                                              {"rsvd_msk", DescField::RsvdMsk}};

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

inline mode_t fileMode(const Node& n) {
  switch (n.kind) {
    case NodeKind::Root:
    case NodeKind::PmuDir:
    case NodeKind::DescDir:
    case NodeKind::DescRegDir:
    case NodeKind::SimDir:
      return S_IFDIR | 0555;
    case NodeKind::SessionsDir:
      return S_IFDIR | 01777;  // anyone creates, only the owner removes
    case NodeKind::SessionDir:
    case NodeKind::SetsDir:
    case NodeKind::SetDir:
      return S_IFDIR | 0700;
    case NodeKind::SimAdvance:
      return S_IFREG | 0200;
    case NodeKind::SessionFile:
      for (const auto& f : kSessionFiles)
        if (f.file == n.sessionFile()) return S_IFREG | f.mode;
      return S_IFREG | 0400;
    case NodeKind::SetFile:
      if (n.setFile() == SetFile::Pmc || n.setFile() == SetFile::Pmd) return S_IFREG | 0600;
      for (const auto& f : kSetFiles)
        if (f.file == n.setFile()) return S_IFREG | f.mode;
      return S_IFREG | 0400;
    default:
      return S_IFREG | 0444;
  }
}

inline bool readable(const Node& n) { return (fileMode(n) & 0444) != 0; }
inline bool writable(const Node& n) { return (fileMode(n) & 0222) != 0; }
// The files whose writes use the writer's rights (OpenFile::opener).
inline bool judgedByOpener(const Node& n) {
  return (n.kind == NodeKind::SessionFile && n.sessionFile() == SessionFile::Ctl) ||
         (n.kind == NodeKind::SetFile && (n.setFile() == SetFile::Pmc || n.setFile() == SetFile::Regs));
}
inline bool isMessageFile(const Node& n) {
  return n.kind == NodeKind::SessionFile &&
         (n.sessionFile() == SessionFile::Messages || n.sessionFile() == SessionFile::Msg);
}

inline Node makeNode(NodeKind kind, std::shared_ptr<SessionEntry> session = nullptr) {
  Node n;
  n.kind = kind;
  n.session = std::move(session);
  return n;
}

inline std::string hex(std::uint64_t v) { return fmt::format("0x{:x}\n", v); }

}  // namespace detail
}  // namespace pfmfs::fs
