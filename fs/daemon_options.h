// pfmfsd's command line (docs/pfmfsd.8.md): what to mount where, which
// backend, and the engine's limits. Parsing is a pure function so every bad
// option has a unit test; pfmfsd prints the reason on one line and exits 2.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "pmu/result.h"
#include "pmu/sim/sim_backend.h"
#include "session/engine_options.h"

namespace pfmfs::fs {

enum class PmuChoice { Auto, Sim, Perf, X86 };
enum class PerfModelChoice { Auto, Software, X86 };

struct DaemonOptions {
  std::string mountpoint = "/run/pfmfs";  // the one positional argument
  bool foreground = false;                // -f
  bool debug = false;                     // -d: FUSE's debug output, implies -f
  std::vector<std::string> fuse_options;  // each -o argument (comma lists kept whole)
  PmuChoice pmu = PmuChoice::Auto;        // --pmu=auto|x86|perf|sim
  PerfModelChoice perf_model = PerfModelChoice::Auto;  // --perf-model=auto|sw|x86
  pmu::sim::SimOptions sim;               // --sim-clock, --sim-width, --sim-counters, --sim-skid
  std::string sim_events_path;            // --sim-events=FILE (read by the daemon, not here)
  bool sim_options = false;               // a --sim-* option was given: --pmu=auto means the sim
  session::EngineOptions engine;          // --tick, --max-sessions-per-user, --max-sets, --max-messages
  bool allow_kernel = false;              // --allow-kernel
  std::optional<gid_t> system_group;      // --system-group=GROUP (name or number)
  bool help = false;                      // --help: print usageText() and exit 0
  bool version = false;                   // --version: print "pfmfsd VERSION" and exit 0
};

// argv[0] is skipped. Both "--opt=value" and "--opt value" are accepted for
// long options with a value; -o takes "-o opts" and "-oopts". EINVAL with a
// one-line reason (naming the option) for an unknown option, a missing or
// malformed value, a value out of range (--sim-width 16..64, --sim-counters
// 1..8, --sim-skid 0..32767, --tick >= 1000 ns, the limits >= 1), an unknown group, or more than
// one mount point. Relative mount points are made absolute here.
Result<DaemonOptions> parseDaemonOptions(int argc, const char* const* argv);

// The --help text: one line per option.
std::string usageText();

}  // namespace pfmfs::fs
