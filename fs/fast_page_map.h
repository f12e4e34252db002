// One session's fast-path page (fastpath/fast_page.h) as the daemon holds
// it: a sealed memfd of one page, mapped writable here once. The session
// publishes into page(); libpfm-compat gets a descriptor of the memfd over
// the fast-path socket (fastpath_server.h) and can only map it read-only:
// the seals refuse it any writable mapping, write(2) and a change of size.
#pragma once

#include "fastpath/fast_page.h"
#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::fs {

class FastPageMap {
 public:
  // `name` is the memfd's (/proc/PID/fd shows it), e.g. the session's.
  static Result<FastPageMap> create(const char* name);
  ~FastPageMap();
  FastPageMap(FastPageMap&& o) noexcept;
  FastPageMap& operator=(FastPageMap&&) = delete;
  FastPageMap(const FastPageMap&) = delete;
  FastPageMap& operator=(const FastPageMap&) = delete;

  fastpath::Page* page() const { return page_; }
  int fd() const { return fd_.get(); }

 private:
  FastPageMap(pmu::Fd fd, fastpath::Page* page) : fd_(std::move(fd)), page_(page) {}
  pmu::Fd fd_;
  fastpath::Page* page_ = nullptr;
};

}  // namespace pfmfs::fs
