// The operations behind both API generations: perfmon2's calls
// (perfmon_v2_calls.cpp) and the perfmon3-style calls of libpfm 3.10
// (perfmon_v3_calls.cpp) convert their structures to the plain items below
// and share everything else. Every function returns 0 (or a descriptor) on
// success, -errno on failure, allocates nothing (except context creation),
// takes no lock, and so may run in a signal handler.
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

namespace pfmcompat {

class Context;

// Context flags (perfmon2's PFM_FL_*), as the mount understands them, and
// the sampling format (sampling.h checks the caller's argument).
struct CreateOptions {
  bool system_wide = false;
  bool notify_block = false;
  bool no_msg = false;
  const char* smpl_name = nullptr;  // a format: written to smpl_fmt with the two below
  uint64_t smpl_buf_size = 0;
  uint32_t smpl_buf_flags = 0;
};
// mkdir's the session, opens its msg file (the returned descriptor) and
// sets mode, flags and the sampling format; a refusal of any of them
// destroys the session and is the call's errno. No mount: -ENODEV
// (docs/libpfm-compat.md).
int createContext(const CreateOptions& options);

// One PMC write (pfarg_pmc_t, pfarg_pmr_t).
struct PmcItem {
  uint16_t num;
  uint16_t set;
  bool no_emul64;
  uint64_t value;
};
// One PMD write. value_only: only the value changes (perfmon3 PFM_RW_PMD);
// otherwise every attribute is set, as perfmon2 did.
struct PmdItem {
  uint16_t num;
  uint16_t set;
  bool value_only;
  bool notify;
  bool random;
  uint64_t value;
  uint64_t long_reset;
  uint64_t short_reset;
  uint64_t switch_cnt;
  uint64_t reset_pmds;  // word 0 of the bitvector (the mount has 64 registers)
  uint64_t smpl_pmds;
  uint64_t random_mask;
  uint64_t eventid;
};
// What a PMD read returns.
struct PmdValues {
  uint64_t value;
  uint64_t last_reset;
  uint64_t switch_left;
};
struct RegKey {
  uint16_t num;
  uint16_t set;
};

// Vectors are read through these so that each generation keeps its own
// structure; `vec` is the caller's array.
using PmcGetter = PmcItem (*)(const void* vec, size_t i);
using PmdGetter = PmdItem (*)(const void* vec, size_t i);
using KeyGetter = RegKey (*)(const void* vec, size_t i);
using PmdSetter = void (*)(void* vec, size_t i, const PmdValues& v);
using PmcSetter = void (*)(void* vec, size_t i, uint64_t value);

// One `regs` write per set (more when a register repeats in a set: each
// repeat starts a new write, in vector order). Registers >= 64: -EINVAL.
int writePmcs(Context& c, const void* vec, size_t n, PmcGetter get);
int writePmds(Context& c, const void* vec, size_t n, PmdGetter get);
// One `pmds` read per set; every element is checked before any is filled:
// a PMD never written (absent from `pmds`) or an unknown set is -EINVAL.
int readPmds(Context& c, void* vec, size_t n, KeyGetter key, PmdSetter put);
// The same without a round trip, where the fast path can answer
// (fast_path.h): true when it did. The calls try it first.
bool fastReadPmds(Context& c, void* vec, size_t n, KeyGetter key, PmdSetter put);
// PMC values (perfmon3 pfm_read PFM_RW_PMC): from `regs`, or the pmcK file
// for a PMC still at its default value.
int readPmcs(Context& c, void* vec, size_t n, KeyGetter key, PmcSetter put);

// ctl commands.
int unloadContext(Context& c);
// `stop`; then, as unloadContext, the signals of notifications made before
// it are sent before it returns (drainNotifications), as on perfmon2.
int stopContext(Context& c);
int loadContext(Context& c, uint32_t target, const uint16_t* set);  // set == nullptr: no set=
int startContext(Context& c, const uint16_t* set);                  // nullptr: plain `start`
int simpleCommand(Context& c, const char* command);                 // stop, restart, unload

// A mount error of a path under sets/: a missing sets/N means an unknown
// set, which perfmon2 called EINVAL.
inline int setError(int err) { return err == ENOENT ? -EINVAL : -err; }

// Event sets (PFM_SETFL_* flags), in set_ops.cpp. createSet returns the
// effective timeout.
int createSet(Context& c, uint16_t id, uint32_t flags, uint64_t timeout_ns, uint64_t* effective_ns);
int deleteSet(Context& c, uint16_t id);
struct SetStatus {
  uint32_t flags;  // PFM_SETFL_* from `switch`
  uint64_t runs;
  uint64_t duration_ns;
  uint64_t timeout_ns;
  uint64_t ovfl_pmds;
  uint64_t avail_pmcs;
  uint64_t avail_pmds;
};
int setStatus(Context& c, uint16_t id, SetStatus* out, bool want_flags);

}  // namespace pfmcompat
