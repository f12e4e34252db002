// pfmstat: perf stat's habits over a pfmfs mount (pfmstat(1)).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pfmstat/errors.h"
#include "pfmstat/options.h"
#include "pfmstat/record.h"
#include "pfmstat/record_options.h"
#include "pfmstat/run.h"

namespace {

// `pfmstat record ...` and `pfmstat report ...`: the first word selects the
// mode (a program named record runs with `pfmstat -- record`).
int subcommand(int argc, char** argv) {
  using namespace pfmstat;
  bool is_record = std::strcmp(argv[1], "record") == 0;
  try {
    if (is_record) {
      RecordOptions o = parseRecordOptions(argc - 1, argv + 1);
      if (o.help) return std::fputs(recordUsage().c_str(), stdout) < 0 ? kExitRun : 0;
      return record(o);
    }
    ReportOptions o = parseReportOptions(argc - 1, argv + 1);
    if (o.help) return std::fputs(reportUsage().c_str(), stdout) < 0 ? kExitRun : 0;
    int status = report(o, stdout);
    if (std::fflush(stdout) != 0 && status == 0) status = kExitRun;
    return status;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "pfmstat %s: %s\n", is_record ? "record" : "report", e.what());
    return kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pfmstat;
  if (argc > 1 && (std::strcmp(argv[1], "record") == 0 || std::strcmp(argv[1], "report") == 0))
    return subcommand(argc, argv);
  Options options;
  try {
    options = parseOptions(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "pfmstat: %s\n", e.what());
    return kExitUsage;
  }
  if (options.help) {
    std::fputs(usageText().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::printf("pfmstat %s\n", PFMFS_VERSION);
    return 0;
  }
  if (options.list_metrics) {
    int status = listMetrics(options, stdout);
    return std::fflush(stdout) != 0 && status == 0 ? kExitRun : status;
  }
  std::FILE* out = stderr;
  if (!options.output.empty()) {
    out = std::fopen(options.output.c_str(), "we");
    if (!out) {
      std::fprintf(stderr, "pfmstat: cannot write %s: %s\n", options.output.c_str(), std::strerror(errno));
      return kExitUsage;
    }
  }
  int status = run(options, out);
  if (out != stderr && std::fclose(out) != 0) {
    std::fprintf(stderr, "pfmstat: cannot write %s: %s\n", options.output.c_str(), std::strerror(errno));
    if (status == 0) status = kExitRun;
  }
  return status;
}
