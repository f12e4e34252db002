// One session's fast-path page (fastpath/fast_page.h) as the daemon holds
// it: a sealed memfd of one page (session/sealed_region.h), mapped writable here once. The session
// publishes into page(); libpfm-compat gets a descriptor of the memfd over
// the fast-path socket (fastpath_server.h) and can only map it read-only:
// the seals refuse it any writable mapping, write(2) and a change of size.
#pragma once

#include "fastpath/fast_page.h"
#include "pmu/result.h"
#include "session/sealed_region.h"

namespace pfmfs::fs {

class FastPageMap {
 public:
  // `name` is the memfd's (/proc/PID/fd shows it), e.g. the session's.
  static Result<FastPageMap> create(const char* name);

  fastpath::Page* page() const { return page_; }
  int fd() const { return region_.fd(); }

 private:
  FastPageMap(session::SealedRegion region, fastpath::Page* page) : region_(std::move(region)), page_(page) {}
  session::SealedRegion region_;
  fastpath::Page* page_ = nullptr;
};

}  // namespace pfmfs::fs
