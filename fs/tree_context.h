// What the functions of the tree's rows (tree_schema.h) see of the
// filesystem, and the walks over the rows that lookup and readdir are made
// of. The parts of Filesystem alone include it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fs/inode_table.h"
#include "fs/text_format.h"
#include "fs/thread_watcher.h"
#include "fs/tree_schema.h"
#include "session/engine.h"

namespace pfmfs::fs {

class Filesystem;

// A narrow view of one Filesystem: the engine and its PMU, the daemon's
// settings, and the registry of sessions, under the registry's own lock.
class TreeContext {
 public:
  explicit TreeContext(Filesystem& fs) : fs_(fs) {}

  session::Engine& engine() const;
  const pmu::PmuDescription& desc() const;
  const FastPathEndpoint& fastpath() const;
  ThreadWatcher* watcher() const;  // nullptr: no exits watched (unit tests)
  bool manualClock() const;
  std::shared_ptr<SessionEntry> findSession(std::string_view name) const;
  // The names of the sessions user `uid` may see listed (root: every one).
  std::vector<std::string> sessionNames(uid_t uid) const;

 private:
  Filesystem& fs_;
};

// A node of `row` with nothing picked yet but its session.
inline Node makeNode(const TreeEntry& row, std::shared_ptr<SessionEntry> session = nullptr) {
  Node n;
  n.kind = row.kind;
  n.entry = &row;
  n.session = std::move(session);
  return n;
}

// The node `name` names in directory `dir` (inheriting what `dir` picked:
// its session, set and register), or nullopt.
std::optional<Node> childOf(const TreeContext& fs, const Node& dir, std::string_view name);

// A listing of `dir` as user `uid` sees it: names and file types (S_IFDIR,
// S_IFREG), in the order of the rows.
std::vector<std::pair<std::string, mode_t>> childrenOf(const TreeContext& fs, const Node& dir, uid_t uid);

}  // namespace pfmfs::fs
