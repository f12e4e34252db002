// pfmstat's two kinds of failure, by the exit status they end in: a request
// that cannot be done as asked (bad option, unknown event, a combination the
// PMU or the mount refuses: 2, before anything runs), and a failure while
// counting (the mount gone: 1).
#pragma once

#include <stdexcept>
#include <string>

namespace pfmstat {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitUsage = 2;
inline constexpr int kExitRun = 1;

}  // namespace pfmstat
