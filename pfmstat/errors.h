// pfmstat's two kinds of failure, by the exit status they end in: a request
// that cannot be done as asked (bad option, unknown event, a combination the
// PMU or the mount refuses: 2, before anything runs), and a failure while
// counting (the mount gone: 1).
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace pfmstat {

// A reason quotes what the user wrote: bytes that are not printable ASCII
// are shown as \xNN, so that a reason is always one printable line.
//
// Not pfmfs::printable (pmu/result.h), on purpose. That one escapes a
// fragment of user input quoted inside a daemon's reason; this one cleans a
// whole reason, and they differ where that matters:
//  - no cap at 64 bytes: a pfmstat reason is whole, and may rightly be long
//    (a refused group quotes its whole event list, tests/pfmstat Plan.Refused);
//  - a backslash stays as it is: a reason may quote the mount's `error` file,
//    which the daemon already made printable (a control byte there reads
//    \x1b), and escaping it again would show \x5cx1b.
// Nor may pfmstat include pmu/result.h: pfmstat links nothing of the daemon,
// and the layer graph (scripts/check_layers.py) lets it use base/ only.
inline std::string printableReason(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

struct UsageError : std::runtime_error {
  explicit UsageError(const std::string& what) : std::runtime_error(printableReason(what)) {}
};

struct RunError : std::runtime_error {
  explicit RunError(const std::string& what) : std::runtime_error(printableReason(what)) {}
};

inline constexpr int kExitUsage = 2;
inline constexpr int kExitRun = 1;

// A mode's body (stat, record, report), its failures turned into the one
// line on stderr and the exit status that every mode ends them with.
template <typename Body>
int exitStatusOf(Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "pfmstat: %s\n", e.what());
    return kExitUsage;
  } catch (const RunError& e) {
    std::fprintf(stderr, "pfmstat: %s\n", e.what());
    return kExitRun;
  }
}

}  // namespace pfmstat
