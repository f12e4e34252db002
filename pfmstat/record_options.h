// The command lines of `pfmstat record` and `pfmstat report`: perf
// record's and perf report's options where perf has them (pfmstat(1)).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pfmstat {

struct RecordOptions {
  std::string event;                     // -e: one event; empty: the PMU's cycles (or task-clock)
  std::optional<std::uint64_t> period;   // -c: a sample every N events
  std::optional<std::uint64_t> freq;     // -F: N samples per second, where the event's rate is known
  std::string output = "pfmstat.data";   // -o
  bool inherit = true;                   // -i turns it off
  std::string mount;                     // --mount
  std::uint64_t buffer_bytes = 1 << 20;  // --buffer-bytes: each session's smpl_buf
  std::vector<pid_t> pids;               // -p
  bool system = false;                   // -a or -C
  std::vector<int> cpus;                 // -C; empty with -a: every online cpu
  std::vector<std::string> command;
  bool help = false;
};

struct ReportOptions {
  enum class Sort { Both, Symbol, Dso };
  std::string input = "pfmstat.data";  // -i
  Sort sort = Sort::Both;              // --sort sym|dso
  bool help = false;
};

// argv[0] is the subcommand's word ("record"). Throws UsageError.
RecordOptions parseRecordOptions(int argc, char** argv);
ReportOptions parseReportOptions(int argc, char** argv);

std::string recordUsage();
std::string reportUsage();

}  // namespace pfmstat
