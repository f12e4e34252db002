// pfmstat's runs: the command started loaded (counted from its first
// instruction), threads attached, or cpus counted, until the command ends,
// the threads exit or a signal says stop; then the report.
#pragma once

#include <cstdio>

#include "pfmstat/options.h"

namespace pfmstat {

// Everything after the options: returns the exit status (the command's,
// or kExitUsage / kExitRun with a line on stderr).
int run(const Options& options, std::FILE* out);

// --list-metrics: the metrics the mount's PMU can compute, on `out`.
int listMetrics(const Options& options, std::FILE* out);

}  // namespace pfmstat
