// Where a session's fast-path page goes (fastpath/fast_page.h), and what it
// showed last: the session fills the next content (session_fast_page.cpp),
// this publishes it, unless it says what the page says already, so that the
// real clock's tick does not make readers retry every millisecond. Owned by
// the Session, used under its lock.
#pragma once

#include <memory>

#include "fastpath/fast_page.h"

namespace pfmfs::session {

class FastPagePublisher {
 public:
  FastPagePublisher() = default;
  FastPagePublisher(const FastPagePublisher&) = delete;
  FastPagePublisher& operator=(const FastPagePublisher&) = delete;

  // The page to publish to from now on, owned by the caller until it sets
  // another or null. The page it replaces is published unusable first (the
  // last word its readers see: ask the mount). The next publish() writes the
  // new page whatever it holds.
  void setPage(fastpath::Page* page);
  bool hasPage() const { return page_ != nullptr; }

  // The content to fill, cleared to "unusable, no PMDs" (magic, version and
  // seq are publish()'s). Only while hasPage().
  fastpath::Page& next();
  // Publishes next() unless the page shows that already. Returns whether it
  // wrote.
  bool publish();

 private:
  fastpath::Page* page_ = nullptr;
  // 7 KB a session that has a page; none for one that has not.
  std::unique_ptr<fastpath::Page> next_;
  std::unique_ptr<fastpath::Page> shown_;  // what page_ holds
  bool shown_valid_ = false;
};

}  // namespace pfmfs::session
