// The pfmfs tree (pfmfs(5), THE TREE) as data: one row per kind of file or
// directory, saying which directory it is in, its name, its mode, whose it
// is, when it exists and how it is read and written. lookup, readdir,
// getattr, open, read and write (filesystem_tree.cpp, filesystem_io.cpp) walk
// this table and nothing else, so adding a file is adding a row, with its
// render or write function in tree_files.cpp, and pfmfs(5) says what it
// shows. Only mkdir and rmdir are not rows: the tree changes in sessions/
// and sets/ alone (filesystem_tree.cpp).
//
// A node (inode_table.h) is a row plus what its name picked: a session, a
// set id, a register. The row is all that tells one file from another; a
// node's NodeKind only names the directory its children's rows say they
// are in.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "pmu/result.h"
#include "session/caller.h"

namespace pfmfs::fs {

struct Node;
class TreeContext;  // what the functions of a row see of the filesystem (tree_context.h)

// Every directory is a kind of its own, which its children's rows name as
// their parent; a file's kind groups the files of one directory (nothing
// dispatches on it: its row says everything).
enum class NodeKind : std::uint8_t {
  Root,
  Version,
  PmuDir,
  PmuInfo,
  PmuEvents,
  DescDir,
  DescModel,
  DescRegDir,  // pmu/desc/pmcN and pmdN (Node::pmd tells which, Node::reg the number)
  DescField,
  SimDir,
  SimAdvance,
  SessionsDir,
  SessionDir,  // Node::session
  SessionFile,
  SetsDir,
  SetDir,  // Node::set
  SetFile,
};

// Whose a node is (the owner getattr shows and the daemon checks).
enum class Owner : std::uint8_t {
  Root,  // the machine's: mode bits alone decide
  // The session's creator's. The daemon checks owner or root at every use
  // of it, since root passes the kernel's mode-bit checks (docs/design.md,
  // Permissions).
  Session,
};

// When a row's name exists in its directory.
enum class Shown : std::uint8_t {
  Always,
  ManualClock,  // only under --pmu=sim --sim-clock=manual: the clock a user moves
  UnderPmc,     // only in pmu/desc/pmcN
  UnderPmd,     // only in pmu/desc/pmdN
};

// What opening, reading or writing a file involves besides its mode.
enum Rule : std::uint8_t {
  kRootOnly = 1,  // only uid 0 opens it: pmu/sim/advance moves every session's clock
  // A write is judged by the rights of whoever opened the file, taken at open
  // (pfmfs(5), SECURITY, "Whose rights a write uses"): it can load a thread
  // or set the OS and AnyThread bits.
  kOpenerRights = 2,
  // A message file: read through the session's MessageWaiters (kept reads,
  // poll, nonseekable), and its handles keep an autoclose session alive.
  kMessageLines = 4,    // messages: text lines
  kMessageRecords = 8,  // msg: 64-byte pfarg_msg_t records
};

// A file's contents at a read at offset 0, and a write(2) applied whole.
using Render = Result<std::string>(const TreeContext& fs, const Node& n);
using Write = Status(const TreeContext& fs, const Node& n, const session::Caller& opener, std::string_view text);

// Names that are not fixed: `match` says whether `name` is one and fills in
// what it picks of `child`; `list` gives them, in listing order, as user
// `uid` may see them.
struct NamePattern {
  const char* shown;  // how pfmfs(5) writes them: pmcN, N, NAME
  bool (*match)(const TreeContext& fs, const Node& dir, std::string_view name, Node& child);
  void (*list)(const TreeContext& fs, const Node& dir, uid_t uid, std::vector<std::string>& out);
};

// A row's name: fixed ("version"), or a pattern.
struct TreeName {
  constexpr TreeName(const char* fixed) : literal(fixed) {}  // NOLINT: rows read as names
  constexpr TreeName(const NamePattern& p) : literal(nullptr), pattern(&p) {}
  const char* literal;
  const NamePattern* pattern = nullptr;
};

struct TreeEntry {
  NodeKind parent;  // the directory it is in
  TreeName name;
  NodeKind kind;
  mode_t mode;  // type and permissions, as getattr shows them
  Owner owner;
  Shown shown;
  std::uint8_t rules;  // Rule bits
  Render* render;      // nullptr: not readable (a message file reads its queue)
  Write* write;        // nullptr: read-only

  constexpr bool isDir() const { return S_ISDIR(mode); }
  constexpr bool readable() const { return (mode & 0444) != 0; }
  constexpr bool writable() const { return (mode & 0222) != 0; }
  constexpr bool messageFile() const { return (rules & (kMessageLines | kMessageRecords)) != 0; }
};

// ---- the functions the rows name (tree_files.cpp, tree_walk.cpp) -----------

Render renderVersion, renderPmuInfo, renderPmuEvents, renderDescModel;
Render renderPmcName, renderPmcAddr, renderPmcDflVal, renderPmcRsvdMsk, renderPmcPmds;
Render renderPmdName, renderPmdAddr, renderPmdWidth, renderPmdRsvdMsk;
Render renderMode, renderFlags, renderState, renderError, renderCounts;
Render renderSmplFmt, renderSmplBuf, renderSamples;
Render renderSetPmc, renderSetPmd, renderRegs, renderPmds, renderSwitch, renderSetInfo;

Write writeAdvance, writeMode, writeFlags, writeCtl, writeSmplFmt, writeSetPmc, writeSetPmd, writeRegs, writeSwitch;

bool matchPmc(const TreeContext&, const Node&, std::string_view, Node&);
bool matchPmd(const TreeContext&, const Node&, std::string_view, Node&);
bool matchSet(const TreeContext&, const Node&, std::string_view, Node&);
bool matchSession(const TreeContext&, const Node&, std::string_view, Node&);
void listPmcs(const TreeContext&, const Node&, uid_t, std::vector<std::string>&);
void listPmds(const TreeContext&, const Node&, uid_t, std::vector<std::string>&);
void listSets(const TreeContext&, const Node&, uid_t, std::vector<std::string>&);
void listSessions(const TreeContext&, const Node&, uid_t, std::vector<std::string>&);

inline constexpr NamePattern kPmcNames{"pmcN", matchPmc, listPmcs};  // one per PMC of the PMU
inline constexpr NamePattern kPmdNames{"pmdN", matchPmd, listPmds};  // one per PMD of the PMU
inline constexpr NamePattern kSetNames{"N", matchSet, listSets};     // the session's sets, plain decimal
// The sessions: a lookup finds any (a name that exists is no secret: mkdir
// says EEXIST), a listing shows a user their own and root every one, as
// perfmon2's contexts were invisible to other users (pfmfs(5), SECURITY).
inline constexpr NamePattern kSessionNames{"NAME", matchSession, listSessions};

// ---- the tree ------------------------------------------------------------------

inline constexpr mode_t kDir = S_IFDIR;
inline constexpr mode_t kFile = S_IFREG;

namespace tree_rows {
using enum NodeKind;
using O = Owner;
using S = Shown;

// clang-format off
// The root: no parent, no name; kTree is everything below it.
inline constexpr TreeEntry kRootEntry =
  {Root,        "",            Root,        kDir | 0555,  O::Root,    S::Always,      0,               nullptr,          nullptr};

// A directory lists its rows in this order (pmcN before pmdN before the
// rest, as `ls` has always shown them).
inline constexpr TreeEntry kTree[] = {
// parent       name           kind         mode          owner       shown           rules            render            write
  {Root,        "version",     Version,     kFile | 0444, O::Root,    S::Always,      0,               renderVersion,    nullptr},
  {Root,        "pmu",         PmuDir,      kDir | 0555,  O::Root,    S::Always,      0,               nullptr,          nullptr},
  // sessions/ is sticky: anyone creates, only the owner (or root) removes
  {Root,        "sessions",    SessionsDir, kDir | 01777, O::Root,    S::Always,      0,               nullptr,          nullptr},

  {PmuDir,      "info",        PmuInfo,     kFile | 0444, O::Root,    S::Always,      0,               renderPmuInfo,    nullptr},
  {PmuDir,      "events",      PmuEvents,   kFile | 0444, O::Root,    S::Always,      0,               renderPmuEvents,  nullptr},
  {PmuDir,      "desc",        DescDir,     kDir | 0555,  O::Root,    S::Always,      0,               nullptr,          nullptr},
  {PmuDir,      "sim",         SimDir,      kDir | 0555,  O::Root,    S::ManualClock, 0,               nullptr,          nullptr},
  {SimDir,      "advance",     SimAdvance,  kFile | 0200, O::Root,    S::Always,      kRootOnly,       nullptr,          writeAdvance},

  {DescDir,     "model",       DescModel,   kFile | 0444, O::Root,    S::Always,      0,               renderDescModel,  nullptr},
  {DescDir,     kPmcNames,     DescRegDir,  kDir | 0555,  O::Root,    S::Always,      0,               nullptr,          nullptr},
  {DescDir,     kPmdNames,     DescRegDir,  kDir | 0555,  O::Root,    S::Always,      0,               nullptr,          nullptr},
  {DescRegDir,  "name",        DescField,   kFile | 0444, O::Root,    S::UnderPmc,    0,               renderPmcName,    nullptr},
  {DescRegDir,  "addr",        DescField,   kFile | 0444, O::Root,    S::UnderPmc,    0,               renderPmcAddr,    nullptr},
  {DescRegDir,  "dfl_val",     DescField,   kFile | 0444, O::Root,    S::UnderPmc,    0,               renderPmcDflVal,  nullptr},
  {DescRegDir,  "rsvd_msk",    DescField,   kFile | 0444, O::Root,    S::UnderPmc,    0,               renderPmcRsvdMsk, nullptr},
  {DescRegDir,  "pmds",        DescField,   kFile | 0444, O::Root,    S::UnderPmc,    0,               renderPmcPmds,    nullptr},
  {DescRegDir,  "name",        DescField,   kFile | 0444, O::Root,    S::UnderPmd,    0,               renderPmdName,    nullptr},
  {DescRegDir,  "addr",        DescField,   kFile | 0444, O::Root,    S::UnderPmd,    0,               renderPmdAddr,    nullptr},
  {DescRegDir,  "width",       DescField,   kFile | 0444, O::Root,    S::UnderPmd,    0,               renderPmdWidth,   nullptr},
  {DescRegDir,  "rsvd_msk",    DescField,   kFile | 0444, O::Root,    S::UnderPmd,    0,               renderPmdRsvdMsk, nullptr},

  {SessionsDir, kSessionNames, SessionDir,  kDir | 0700,  O::Session, S::Always,      0,               nullptr,          nullptr},
  {SessionDir,  "mode",        SessionFile, kFile | 0600, O::Session, S::Always,      0,               renderMode,       writeMode},
  {SessionDir,  "flags",       SessionFile, kFile | 0600, O::Session, S::Always,      0,               renderFlags,      writeFlags},
  {SessionDir,  "ctl",         SessionFile, kFile | 0200, O::Session, S::Always,      kOpenerRights,   nullptr,          writeCtl},
  {SessionDir,  "state",       SessionFile, kFile | 0400, O::Session, S::Always,      0,               renderState,      nullptr},
  {SessionDir,  "error",       SessionFile, kFile | 0400, O::Session, S::Always,      0,               renderError,      nullptr},
  {SessionDir,  "counts",      SessionFile, kFile | 0400, O::Session, S::Always,      0,               renderCounts,     nullptr},
  {SessionDir,  "messages",    SessionFile, kFile | 0400, O::Session, S::Always,      kMessageLines,   nullptr,          nullptr},
  {SessionDir,  "msg",         SessionFile, kFile | 0400, O::Session, S::Always,      kMessageRecords, nullptr,          nullptr},
  {SessionDir,  "smpl_fmt",    SessionFile, kFile | 0600, O::Session, S::Always,      0,               renderSmplFmt,    writeSmplFmt},
  {SessionDir,  "smpl_buf",    SessionFile, kFile | 0400, O::Session, S::Always,      0,               renderSmplBuf,    nullptr},
  {SessionDir,  "samples",     SessionFile, kFile | 0400, O::Session, S::Always,      0,               renderSamples,    nullptr},
  {SessionDir,  "sets",        SetsDir,     kDir | 0700,  O::Session, S::Always,      0,               nullptr,          nullptr},
  {SetsDir,     kSetNames,     SetDir,      kDir | 0700,  O::Session, S::Always,      0,               nullptr,          nullptr},
  {SetDir,      kPmcNames,     SetFile,     kFile | 0600, O::Session, S::Always,      kOpenerRights,   renderSetPmc,     writeSetPmc},
  {SetDir,      kPmdNames,     SetFile,     kFile | 0600, O::Session, S::Always,      0,               renderSetPmd,     writeSetPmd},
  {SetDir,      "regs",        SetFile,     kFile | 0600, O::Session, S::Always,      kOpenerRights,   renderRegs,       writeRegs},
  {SetDir,      "pmds",        SetFile,     kFile | 0400, O::Session, S::Always,      0,               renderPmds,       nullptr},
  {SetDir,      "switch",      SetFile,     kFile | 0600, O::Session, S::Always,      0,               renderSwitch,     writeSwitch},
  {SetDir,      "info",        SetFile,     kFile | 0400, O::Session, S::Always,      0,               renderSetInfo,    nullptr},
};
// clang-format on

}  // namespace tree_rows
using tree_rows::kRootEntry;
using tree_rows::kTree;

// ---- what holds the table together, checked by the compiler ---------------------

constexpr bool isDirectory(NodeKind k) {
  if (k == kRootEntry.kind) return true;
  for (const TreeEntry& e : kTree)
    if (e.kind == k) return e.isDir();
  return false;
}

// The row of a directory kind (pmu/desc's register directories share one
// kind; the first is pmcN's).
constexpr const TreeEntry& rowOf(NodeKind dir) {
  for (const TreeEntry& e : kTree)
    if (e.kind == dir) return e;
  return kRootEntry;
}

namespace tree_checks {

constexpr bool sameName(const TreeEntry& a, const TreeEntry& b) {
  if (a.name.pattern || b.name.pattern) return a.name.pattern == b.name.pattern;
  return std::string_view(a.name.literal) == std::string_view(b.name.literal);
}
constexpr bool bothShown(Shown a, Shown b) {
  return !((a == Shown::UnderPmc && b == Shown::UnderPmd) || (a == Shown::UnderPmd && b == Shown::UnderPmc));
}

constexpr bool parentsAreDirectories() {
  for (const TreeEntry& e : kTree)
    if (!isDirectory(e.parent)) return false;
  return true;
}
constexpr bool kindsAgreeOnType() {
  for (const TreeEntry& a : kTree)
    for (const TreeEntry& b : kTree)
      if (a.kind == b.kind && a.isDir() != b.isDir()) return false;
  return true;
}
// A file renders exactly when its mode lets it be read (a message file reads
// its queue instead), takes writes exactly when its mode lets it be written;
// a directory does neither and has no rules.
constexpr bool accessMatchesMode() {
  for (const TreeEntry& e : kTree) {
    if (e.isDir()) {
      if (e.render || e.write || e.rules) return false;
      continue;
    }
    if (e.readable() != (e.render != nullptr || e.messageFile())) return false;
    if (e.messageFile() && e.render) return false;
    if (e.writable() != (e.write != nullptr)) return false;
    if ((e.rules & kOpenerRights) && !e.write) return false;
  }
  return true;
}
constexpr bool namesAreUnique() {
  for (std::size_t i = 0; i < std::size(kTree); ++i)
    for (std::size_t j = i + 1; j < std::size(kTree); ++j)
      if (kTree[i].parent == kTree[j].parent && sameName(kTree[i], kTree[j]) &&
          bothShown(kTree[i].shown, kTree[j].shown))
        return false;
  return true;
}
// What is below a session is its owner's, and needs the session (its
// message files read its queue), and nothing else is.
constexpr bool sessionsOwnTheirSubtree() {
  for (const TreeEntry& e : kTree) {
    bool below = e.parent == NodeKind::SessionsDir || rowOf(e.parent).owner == Owner::Session;
    if (below != (e.owner == Owner::Session)) return false;
    if (e.messageFile() && e.owner != Owner::Session) return false;
  }
  return true;
}

static_assert(parentsAreDirectories(), "a row's parent must be a directory kind");
static_assert(kindsAgreeOnType(), "rows of one kind are all directories or all files");
// These two compare functions' and patterns' addresses with null, which GCC
// cannot do at compile time under -fsanitize=undefined (meson.build); the
// unit test runs all five checks in every build.
#ifndef PFMFS_NO_CONSTEXPR_ADDRESSES
static_assert(accessMatchesMode(), "render and write must match the mode's r and w bits");
static_assert(namesAreUnique(), "two rows of one directory have the same name");
#endif
static_assert(sessionsOwnTheirSubtree(), "everything below sessions/NAME, and only that, is the session's");

}  // namespace tree_checks

}  // namespace pfmfs::fs
