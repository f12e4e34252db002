// pfmfsd's command line (docs/pfmfsd.8.md): what to mount where, which
// backend, and the engine's limits. Parsing is a pure function so every bad
// option has a unit test; pfmfsd prints the reason on one line and exits 2.
//
// mount(8) runs pfmfsd through mount.fuse3 as `pfmfsd SOURCE MOUNTPOINT -o
// OPTS`, where OPTS mixes what the fstab line says with what mount(8) adds:
// so a source may come before the mount point (and is ignored), pfmfsd's own
// long options may be given inside -o (`pmu=sim`, `allow_kernel`), and the
// options of mount(8) that mean nothing to a FUSE daemon are dropped.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "pmu/option_spec.h"
#include "pmu/result.h"
#include "session/engine_options.h"

namespace pfmfs::fs {

struct DaemonOptions {
  std::string mountpoint = "/run/pfmfs";  // the last positional argument
  std::string source;                     // the first of two: mount.fuse3's SOURCE, ignored ("pfmfs")
  bool foreground = false;                // -f
  bool debug = false;                     // -d: FUSE's debug output, implies -f
  std::vector<std::string> fuse_options;  // for libfuse: each -o argument's options pfmfsd did not take, comma-joined
  std::vector<std::string> ignored_mount_options;  // mount(8)'s options that say nothing to pfmfsd (-o nofail)
  std::string pmu = "auto";                        // --pmu=auto or a backend's name (pmu/backend_registry.h)
  pmu::OptionValues backend_options;               // the backends' own options given (--sim-width, --perf-model)
  session::EngineOptions engine;                   // --tick and the --max-* limits
  unsigned fastpath_deadline_ms = 250;             // --fastpath-deadline=MS (FastPathServer::Limits)
  bool allow_kernel = false;                       // --allow-kernel
  std::optional<gid_t> system_group;               // --system-group=GROUP (name or number)
  bool help = false;                               // --help: print usageText() and exit 0
  bool version = false;                            // --version: print "pfmfsd VERSION" and exit 0
};

// argv[0] is skipped. Both "--opt=value" and "--opt value" are accepted for
// long options with a value; -o takes "-o opts" and "-oopts", and inside it
// every long option but --help and --version as "opt=value" or "flag", with
// '_' or '-' between words. EINVAL with a one-line reason (naming the
// option) for an unknown option, a missing or malformed value, a value out of
// its row's range (--tick >= 1000 ns, the limits >= 1, --fastpath-deadline
// 1..60000, and each backend's own), an unknown group, a backend's option
// with --pmu naming another backend, more than two positional arguments, or
// a mount point that is a descriptor (/dev/fd/N: mount.fuse3's
// drop_privileges). Options libfuse may not know are left for it to judge.
// Relative mount points are made absolute here.
Result<DaemonOptions> parseDaemonOptions(int argc, const char* const* argv);

// The --help text: one line per option.
std::string usageText();

}  // namespace pfmfs::fs
