// `pfmstat record` and `pfmstat report` as whole runs: what main() calls
// after the subcommand's word (pfmstat(1), RECORD and REPORT).
#pragma once

#include <cstdio>

#include "pfmstat/record_options.h"

namespace pfmstat {

// Returns the exit status: the command's, or kExitUsage / kExitRun with a
// line on stderr. The summary goes to stderr, as perf record's.
int record(const RecordOptions& options);

// Prints the profile on `out`; kExitUsage for a file that cannot be read
// or is not pfmstat data.
int report(const ReportOptions& options, std::FILE* out);

}  // namespace pfmstat
