// pfmfs-exporter's configuration: the file (pfmfs-exporter(8), CONFIGURATION)
// parsed into one struct, each key a row of a table in the .cpp, so that a
// new key is one row and its error messages come from that row.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace exporter {

// Where a value came from, "FILE:LINE" or "--option": what an error that is
// found later (an event the mount does not know) names.
struct Origin {
  std::string where;
};

struct ExporterConfig {
  std::string listen = "127.0.0.1:9464";  // ADDR:PORT, loopback unless the admin says otherwise
  std::string mount;                      // "": pfmstat's findMount rules
  std::string events;                     // pfmstat -e syntax; "": the PMU's default events
  Origin events_origin;
  std::vector<std::string> metrics;  // metric or group names (pfmstat -M)
  Origin metrics_origin;
  std::optional<std::vector<long>> cpus;  // none: every online cpu
  std::vector<std::string> cgroups;       // absolute cgroup v2 directories
  std::vector<Origin> cgroup_origins;
  std::optional<unsigned> switch_ms;  // none: the mount's tick
};

// The text of a configuration file; `file` names it in errors. Throws
// pfmstat::UsageError "FILE:LINE: reason" at the first bad line.
ExporterConfig parseConfig(const std::string& text, const std::string& file);

// The file at `path`; when it does not exist and `required` is false (the
// default path), the defaults. Throws UsageError.
ExporterConfig loadConfig(const std::string& path, bool required);

// ADDR:PORT with a numeric IPv4 address or a [bracketed] IPv6 one, the form
// civetweb's listening_ports takes. Returns the reason it is not, or "".
std::string checkListen(const std::string& text);

// "0-3,8,10-11" (sorted, no repeats). Returns nothing on a bad list.
std::optional<std::vector<long>> parseCpuList(const std::string& text);

}  // namespace exporter
