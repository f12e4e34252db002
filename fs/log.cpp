// Where pfmfsd's log lines go (see log.h).
#include "fs/log.h"

#include <syslog.h>

#include <time.h>

#include <atomic>
#include <cstdio>
#include <string>

#include "fs/log_limiter.h"

namespace pfmfs::fs {
namespace {

std::atomic<int> max_level{static_cast<int>(LogLevel::Info)};
std::atomic<bool> use_syslog{false};

const char* prefix(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return "error";
    case LogLevel::Warning:
      return "warning";
    case LogLevel::Info:
      return "info";
    case LogLevel::Debug:
      return "debug";
  }
  return "?";
}

int priority(LogLevel level) {
  switch (level) {
    case LogLevel::Error:
      return LOG_ERR;
    case LogLevel::Warning:
      return LOG_WARNING;
    case LogLevel::Info:
      return LOG_INFO;
    case LogLevel::Debug:
      return LOG_DEBUG;
  }
  return LOG_INFO;
}

}  // namespace

void setupLogging(LogLevel max, bool to_syslog) {
  max_level = static_cast<int>(max);
  if (to_syslog && !use_syslog) openlog("pfmfsd", LOG_PID, LOG_DAEMON);
  use_syslog = to_syslog;
}

bool logEnabled(LogLevel level) { return static_cast<int>(level) <= max_level.load(); }

bool logAdmit(std::string_view cause, std::uint64_t* held_back) {
  static LogLimiter limiter;
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const std::uint64_t now =
      static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
  return limiter.admit(cause, now, held_back);
}

void logLine(LogLevel level, std::string_view line) {
  if (use_syslog) {
    syslog(priority(level), "%.*s", static_cast<int>(line.size()), line.data());
    return;
  }
  // One fprintf per line so concurrent lines do not interleave.
  std::string text = fmt::format("pfmfsd: {}: {}\n", prefix(level), line);
  std::fputs(text.c_str(), stderr);
}

}  // namespace pfmfs::fs
