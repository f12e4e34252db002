#include "fs/log_limiter.h"

namespace pfmfs::fs {

bool LogLimiter::admit(std::string_view cause, std::uint64_t now_ns, std::uint64_t* held_back) {
  MutexLock lock(mutex_);
  auto [it, fresh] = causes_.try_emplace(std::string(cause));
  Cause& c = it->second;
  if (fresh || now_ns - c.window_start >= window_ns_) {
    c.window_start = now_ns;
    c.used = 0;
  }
  if (c.used >= per_window_) {
    ++c.held_back;
    return false;
  }
  ++c.used;
  *held_back = c.held_back;
  c.held_back = 0;
  return true;
}

}  // namespace pfmfs::fs
