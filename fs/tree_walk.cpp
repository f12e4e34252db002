// The walks over the tree's rows (tree_context.h): which row a name in a
// directory is, what a directory lists, and the patterns that name
// registers, sets and sessions.
#include <fmt/format.h>

#include <algorithm>

#include "fs/filesystem.h"
#include "fs/filesystem_internal.h"
#include "fs/tree_context.h"

namespace pfmfs::fs {

using namespace detail;

// ---- what the rows see of the filesystem ----------------------------------------

session::Engine& TreeContext::engine() const { return fs_.engine_; }
const pmu::PmuDescription& TreeContext::desc() const { return fs_.desc_; }
const FastPathEndpoint& TreeContext::fastpath() const { return fs_.fastpath_; }
ThreadWatcher* TreeContext::watcher() const { return fs_.watcher_; }
bool TreeContext::manualClock() const { return fs_.manual_clock_; }

std::shared_ptr<SessionEntry> TreeContext::findSession(std::string_view name) const { return fs_.findEntry(name); }

std::vector<std::string> TreeContext::sessionNames(uid_t uid) const {
  std::vector<std::string> out;
  MutexLock lock(fs_.registry_mutex_);
  for (const auto& [name, e] : fs_.registry_)
    if (uid == 0 || e->session->uid() == uid) out.push_back(name);
  return out;
}

// ---- the patterns -------------------------------------------------------------------

namespace {

// "pmc12" -> 12 for a register the PMU has.
std::optional<unsigned> registerNamed(const pmu::PmuDescription& desc, std::string_view name, bool pmd) {
  auto idx = indexAfter(name, pmd ? "pmd" : "pmc", 63);
  if (!idx || (pmd ? desc.pmd(*idx) == nullptr : desc.pmc(*idx) == nullptr)) return std::nullopt;
  return idx;
}

bool matchRegister(const TreeContext& fs, std::string_view name, Node& child, bool pmd) {
  auto idx = registerNamed(fs.desc(), name, pmd);
  if (!idx) return false;
  child.pmd = pmd;
  child.reg = static_cast<std::uint16_t>(*idx);
  return true;
}

}  // namespace

bool matchPmc(const TreeContext& fs, const Node&, std::string_view name, Node& child) {
  return matchRegister(fs, name, child, false);
}
bool matchPmd(const TreeContext& fs, const Node&, std::string_view name, Node& child) {
  return matchRegister(fs, name, child, true);
}
void listPmcs(const TreeContext& fs, const Node&, uid_t, std::vector<std::string>& out) {
  for (const auto& pmc : fs.desc().pmcs) out.push_back(fmt::format("pmc{}", pmc.index));
}
void listPmds(const TreeContext& fs, const Node&, uid_t, std::vector<std::string>& out) {
  for (const auto& pmd : fs.desc().pmds) out.push_back(fmt::format("pmd{}", pmd.index));
}

bool matchSet(const TreeContext&, const Node& dir, std::string_view name, Node& child) {
  auto id = indexAfter(name, "", 0xffff);
  if (!id) return false;
  auto ids = dir.session->session->setIds();
  if (std::find(ids.begin(), ids.end(), *id) == ids.end()) return false;
  child.set = static_cast<std::uint16_t>(*id);
  return true;
}
void listSets(const TreeContext&, const Node& dir, uid_t, std::vector<std::string>& out) {
  for (auto id : dir.session->session->setIds()) out.push_back(std::to_string(id));
}

bool matchSession(const TreeContext& fs, const Node&, std::string_view name, Node& child) {
  auto e = fs.findSession(name);
  if (!e) return false;
  child.session = std::move(e);
  return true;
}
void listSessions(const TreeContext& fs, const Node&, uid_t uid, std::vector<std::string>& out) {
  out = fs.sessionNames(uid);
}

// ---- lookup and listing ----------------------------------------------------------------

namespace {

// Whether `row` has a name in `dir` at all.
bool shownIn(const TreeContext& fs, const TreeEntry& row, const Node& dir) {
  if (row.parent != dir.kind) return false;
  switch (row.shown) {
    case Shown::Always:
      return true;
    case Shown::ManualClock:
      return fs.manualClock();
    case Shown::UnderPmc:
      return !dir.pmd;
    case Shown::UnderPmd:
      return dir.pmd;
  }
  return false;
}

}  // namespace

std::optional<Node> childOf(const TreeContext& fs, const Node& dir, std::string_view name) {
  // A destroyed session's directories name nothing any more.
  if (dir.session && !dir.session->alive) return std::nullopt;
  for (const TreeEntry& row : kTree) {
    if (!shownIn(fs, row, dir)) continue;
    Node child = makeNode(row, dir.session);
    child.pmd = dir.pmd;
    child.set = dir.set;
    child.reg = dir.reg;
    if (row.name.pattern ? row.name.pattern->match(fs, dir, name, child) : name == row.name.literal) return child;
  }
  return std::nullopt;
}

std::vector<std::pair<std::string, mode_t>> childrenOf(const TreeContext& fs, const Node& dir, uid_t uid) {
  std::vector<std::pair<std::string, mode_t>> out;
  for (const TreeEntry& row : kTree) {
    if (!shownIn(fs, row, dir)) continue;
    const mode_t type = row.mode & S_IFMT;
    if (!row.name.pattern) {
      out.emplace_back(row.name.literal, type);
      continue;
    }
    std::vector<std::string> names;
    row.name.pattern->list(fs, dir, uid, names);
    for (auto& name : names) out.emplace_back(std::move(name), type);
  }
  return out;
}

}  // namespace pfmfs::fs
