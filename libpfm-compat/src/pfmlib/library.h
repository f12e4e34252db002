// State shared by the event-encoding calls: the PMU model that
// pfm_initialize() loaded, the options of pfm_set_options(), and the
// messages they allow. Every pfm_* call of pfmlib.h starts from here.
#pragma once

#include <perfmon/pfmlib.h>

#include <cstddef>
#include <string>

#include "pmu_model.h"

// The API's definitions: C linkage, visible although the library hides
// everything else (gnu_symbol_visibility 'hidden').
#define PFMLIB_EXPORT extern "C" __attribute__((visibility("default")))

namespace pfmcompat::pfmlib {

// The model, or nullptr until pfm_initialize() has succeeded. Once set it
// never changes, so callers may keep the reference without a lock.
const PmuModel* currentModel();

// libpfm 3.10's PMU type of the mount's model: PFMLIB_GEN_IA32_PMU for every
// pfmfs model (their PMCs are PERFEVTSELs: the architectural ones of the sim,
// x86 and perf-x86, and perf-sw's software selectors of the same layout),
// or PFMLIB_CORE_PMU once pfm_force_pmu() or LIBPFM_FORCE_PMU asked for it on
// a model that is an Intel architectural PMU (docs/libpfm-compat.md, "PMU
// types").
int currentPmuType(const PmuModel& m);

// Whether `type` is one the model can answer.
bool modelCanBe(const PmuModel& m, int type);

// libpfm 3.10's name of a PMU type pfmfs can be ("Intel architectural PMU",
// "Intel Core"), or nullptr.
const char* libpfmTypeName(int type);

// The PMU's name (pfm_get_pmu_name): the mount's model name ("intel-arch-v2",
// "perf-sw"), or $PFMFS_PMU_NAME when set and not empty (for a PAPI patched
// to take libpfm 3.10's "Intel architectural PMU": docs/libpfm-compat.md).
std::string libpfmName(const PmuModel& m);

// Copies `s` into the caller's buffer of `maxlen` bytes (NUL included).
// PFMLIB_ERR_FULL when it does not fit: the buffer then holds as much as fits,
// terminated, for programs that ignore the code.
int copyName(const std::string& s, char* buf, std::size_t maxlen);

// Clears `out`, then sets the registers of `mask`.
void toRegmask(RegMask mask, pfmlib_regmask_t* out);

// Lines on stderr, prefixed "libpfm: ", when pfm_set_options() (or the
// LIBPFM_DEBUG / LIBPFM_VERBOSE environment variables) asked for them.
bool debugEnabled();
bool verboseEnabled();
void debugf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void verbosef(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace pfmcompat::pfmlib
