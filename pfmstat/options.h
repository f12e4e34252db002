// pfmstat's command line: perf stat's options where perf has them, parsed
// into one Options value that the rest of pfmstat reads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pfmstat {

struct Options {
  std::vector<std::string> events;         // each -e as written: "A,B", "{A,B}"
  std::optional<std::uint64_t> switch_ms;  // --switch-ms; default: pmu/info's tick_ns
  std::vector<pid_t> pids;                 // -p: every thread of each process
  std::vector<pid_t> tids;                 // -t: these threads
  bool system = false;                     // -a or -C: count CPUs in system mode
  std::vector<int> cpus;                   // -C; empty with -a: every online cpu
  std::string cgroup;                      // -G: count this control group (cgroup mode)
  std::uint64_t interval_ms = 0;           // -I: print every N ms (0: at the end only)
  std::optional<std::string> separator;    // -x: CSV with this separator
  bool json = false;                       // --json: one JSON object per line
  unsigned repeat = 1;                     // -r
  bool inherit = true;                     // --no-inherit / -i turns it off
  std::string mount;                       // --mount; else $PFMFS_MOUNT, /run/pfmfs, mountinfo
  std::string output;                      // -o FILE; else stderr, as perf stat
  std::vector<std::string> metrics;        // -M: metric or group names, as written
  std::vector<std::string> metric_tables;  // --metric-table FILE, after the installed and user tables
  bool no_metrics = false;                 // --no-metrics: none but -M's
  bool list_metrics = false;               // --list-metrics
  std::vector<std::string> command;        // what to run and count
  bool help = false;
  bool version = false;
};

// Throws UsageError with one line that says what is wrong.
Options parseOptions(int argc, char** argv);

// "0-3,5" -> {0,1,2,3,5}; throws UsageError naming `what`.
std::vector<int> parseCpuList(const std::string& text, const char* what);

std::string usageText();

}  // namespace pfmstat
