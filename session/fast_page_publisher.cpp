// FastPagePublisher: the page's last content, and a write only when it changes.
#include "session/fast_page_publisher.h"

#include <cstddef>
#include <cstring>
#include <limits>

namespace pfmfs::session {

namespace {

// Whether two pages say the same: the header after seq, and the entries in use.
bool sameContent(const fastpath::Page& a, const fastpath::Page& b) {
  constexpr std::size_t from = offsetof(fastpath::Page, usable);
  constexpr std::size_t head = offsetof(fastpath::Page, pmds) - from;
  const auto* pa = reinterpret_cast<const unsigned char*>(&a);
  const auto* pb = reinterpret_cast<const unsigned char*>(&b);
  if (std::memcmp(pa + from, pb + from, head) != 0) return false;
  return std::memcmp(a.pmds, b.pmds, a.pmd_count * sizeof(fastpath::PmdEntry)) == 0;
}

}  // namespace

void FastPagePublisher::setPage(fastpath::Page* page) {
  if (page_ && page_ != page) {
    fastpath::Page off{};
    fastpath::publish(*page_, off);
  }
  page_ = page;
  shown_valid_ = false;
  if (page && !next_) {
    next_ = std::make_unique<fastpath::Page>();
    shown_ = std::make_unique<fastpath::Page>();
  } else if (!page) {
    next_.reset();
    shown_.reset();
  }
}

fastpath::Page& FastPagePublisher::next() {
  fastpath::Page& p = *next_;
  p.usable = 0;
  p.target_tid = 0;
  p.read_format = 0;
  p.set = 0;
  p.group = 0;
  p.group_size = 0;
  p.switch_running_ns = std::numeric_limits<std::uint64_t>::max();
  p.pmd_count = 0;
  return p;
}

bool FastPagePublisher::publish() {
  if (!page_) return false;
  if (shown_valid_ && sameContent(*next_, *shown_)) return false;
  fastpath::publish(*page_, *next_);
  std::memcpy(shown_.get(), next_.get(), sizeof(fastpath::Page));
  shown_valid_ = true;
  return true;
}

}  // namespace pfmfs::session
