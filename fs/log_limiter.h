// A limit on how often pfmfsd logs one kind of line. Any user of a shared
// mount can make some lines happen at will (a session autoclosed while the
// kernel still holds its directory, a fast-path connection refused); without
// a limit one user could fill the log, and the disk under it, for everyone.
//
// A cause is a code site, named by its format string: the causes are as
// many as the lines in the source, whatever users do, so the table stays
// small. Per cause, at most `per_window` lines are let through in each
// window; the first line let through after some were held back says how
// many (pfmfsd(8), LOGGING).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/mutex.h"

namespace pfmfs::fs {

class LogLimiter {
 public:
  explicit LogLimiter(unsigned per_window = 10, std::uint64_t window_ns = 60'000'000'000ULL)
      : per_window_(per_window), window_ns_(window_ns) {}

  // Whether a line of `cause` may go out at `now_ns` (a monotonic clock);
  // if so, *held_back is how many of its lines were held back since the
  // last one went out.
  bool admit(std::string_view cause, std::uint64_t now_ns, std::uint64_t* held_back) EXCLUDES(mutex_);

 private:
  struct Cause {
    std::uint64_t window_start = 0;
    unsigned used = 0;
    std::uint64_t held_back = 0;
  };
  const unsigned per_window_;
  const std::uint64_t window_ns_;
  Mutex mutex_;  // a leaf
  std::unordered_map<std::string, Cause> causes_ GUARDED_BY(mutex_);
};

}  // namespace pfmfs::fs
