// pfmfsd's logging: fmt-formatted lines with a level, to stderr in the
// foreground and to syslog once daemonized. One global sink, set up by main.
#pragma once

#include <fmt/format.h>

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

}  // namespace pfmfs::fs
