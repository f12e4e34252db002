// pfmfsd's logging: fmt-formatted lines with a level, to stderr in the
// foreground and to syslog once daemonized. One global sink, set up by main.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace pfmfs::fs {

enum class LogLevel { Error = 0, Warning = 1, Info = 2, Debug = 3 };

// Lines above `max` are dropped; `to_syslog` sends them to syslog(3) instead
// of stderr.
void setupLogging(LogLevel max, bool to_syslog);
bool logEnabled(LogLevel level);
void logLine(LogLevel level, std::string_view line);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (logEnabled(level)) logLine(level, fmt::format(format, std::forward<Args>(args)...));
}

// Whether a line of this cause (its format string) may go out now, by the
// daemon's LogLimiter (log_limiter.h: 10 a minute per cause); *held_back
// says how many were held back since the last that went out.
bool logAdmit(std::string_view cause, std::uint64_t* held_back);

// log() for a line an unprivileged user can cause as often as they like:
// limited per cause, with a count of what was held back.
template <typename... Args>
void logLimited(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  std::uint64_t held_back = 0;
  const fmt::string_view cause = format;
  if (!logEnabled(level) || !logAdmit(std::string_view(cause.data(), cause.size()), &held_back)) return;
  std::string line = fmt::format(format, std::forward<Args>(args)...);
  if (held_back > 0) line += fmt::format(" ({} more like this held back)", held_back);
  logLine(level, line);
}

}  // namespace pfmfs::fs
