// pfmstat: perf stat's habits over a pfmfs mount (pfmstat(1)).
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pfmstat/errors.h"
#include "pfmstat/options.h"
#include "pfmstat/run.h"

int main(int argc, char** argv) {
  using namespace pfmstat;
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
