#include "session/inheritance.h"

#include <utility>

namespace pfmfs::session {

std::optional<bool> Inheritance::aggregateExited(pid_t tid) {
  auto it = aggregate_.find(tid);
  if (it == aggregate_.end()) return std::nullopt;
  const bool same_control = it->second == generation_;
  aggregate_.erase(it);
  return same_control;
}

const ChildImage* Inheritance::tellIfChanged() {
  if (image_told_ == draft_) return nullptr;
  // Swapped, not copied: the old told image's vectors become the next
  // draft's, so both keep their capacity.
  if (image_told_)
    std::swap(*image_told_, draft_);
  else
    image_told_ = draft_;
  return &*image_told_;
}

void Inheritance::release() {
  aggregate_.clear();
  image_told_.reset();
  draft_ = ChildImage{};
}

}  // namespace pfmfs::session
