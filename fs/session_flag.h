// The words of a session's `flags` file (pfmfs(5), sessions/NAME/flags), in
// the order a read prints them. parseFlags, formatFlags and the error that
// lists the words all read this one table: a new flag is a new row (and a
// field of session::Flags).
#pragma once

#include <string_view>

#include "session/session.h"

namespace pfmfs::fs {

struct SessionFlag {
  std::string_view name;
  bool session::Flags::*field;
};

inline constexpr SessionFlag kSessionFlags[] = {
    {"notify_block", &session::Flags::notify_block},
    {"no_msg", &session::Flags::no_msg},
    {"autoclose", &session::Flags::autoclose},
    {"inherit", &session::Flags::inherit},
};

}  // namespace pfmfs::fs
