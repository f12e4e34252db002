// Inode numbers and lookup counts (see inode_table.h).
#include "fs/inode_table.h"

#include <cstdio>
#include <cstdlib>

namespace pfmfs::fs {

InodeTable::InodeTable() {
  auto root = std::make_shared<Node>();
  root->ino = FUSE_ROOT_ID;
  root->parent = FUSE_ROOT_ID;
  root->kind = NodeKind::Root;
  root->entry = &kRootEntry;
  // The root is never forgotten: one lookup the kernel never gives back.
  nodes_[FUSE_ROOT_ID] = Slot{root, 1, true};
}

NodePtr InodeTable::get(fuse_ino_t ino) const {
  MutexLock lock(mutex_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.node;
}

NodePtr InodeTable::lookup(fuse_ino_t parent, std::string_view name, const std::function<std::optional<Node>()>& make) {
  MutexLock lock(mutex_);
  auto key = std::make_pair(parent, std::string(name));
  if (auto it = names_.find(key); it != names_.end()) {
    Slot& slot = nodes_.at(it->second);
    ++slot.nlookup;
    return slot.node;
  }
  std::optional<Node> made = make();
  if (!made) return nullptr;
  auto node = std::make_shared<Node>(std::move(*made));
  node->ino = next_ino_++;
  node->parent = parent;
  node->name = std::string(name);
  nodes_[node->ino] = Slot{node, 1, true};
  names_.emplace(std::move(key), node->ino);
  return node;
}

void InodeTable::forget(fuse_ino_t ino, std::uint64_t n) {
  MutexLock lock(mutex_);
  auto it = nodes_.find(ino);
  // The root is never forgotten; nor is an inode we no longer know asked twice.
  if (it == nodes_.end() || ino == FUSE_ROOT_ID) return;
  Slot& slot = it->second;
  if (n > slot.nlookup) {
    std::fprintf(stderr, "pfmfsd: bug: forget %llu on inode %llu with %llu lookups\n",
                 static_cast<unsigned long long>(n), static_cast<unsigned long long>(ino),
                 static_cast<unsigned long long>(slot.nlookup));
    std::abort();
  }
  slot.nlookup -= n;
  if (slot.nlookup > 0) return;
  if (slot.linked) names_.erase(std::make_pair(slot.node->parent, slot.node->name));
  nodes_.erase(it);
}

void InodeTable::unlink(fuse_ino_t parent, std::string_view name) {
  MutexLock lock(mutex_);
  auto it = names_.find(std::make_pair(parent, std::string(name)));
  if (it == names_.end()) return;
  nodes_.at(it->second).linked = false;
  names_.erase(it);
}

bool InodeTable::hasChildren(fuse_ino_t parent) const {
  MutexLock lock(mutex_);
  auto it = names_.lower_bound(std::make_pair(parent, std::string()));
  return it != names_.end() && it->first.first == parent;
}

std::size_t InodeTable::size() const {
  MutexLock lock(mutex_);
  return nodes_.size();
}

std::uint64_t InodeTable::lookupCount(fuse_ino_t ino) const {
  MutexLock lock(mutex_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? 0 : it->second.nlookup;
}

}  // namespace pfmfs::fs
