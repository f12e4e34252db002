// The library's lifecycle: pfm_initialize() loads the mount's PMU model once,
// pfm_set_options() and the LIBPFM_* environment variables turn on messages,
// pfm_force_pmu() states which PMU family a program insists on.
#include "library.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <climits>
#include <new>

#include "base/mutex.h"
#include "mount.h"

namespace pfmcompat::pfmlib {

namespace {

std::atomic<const PmuModel*> g_model{nullptr};
// Serialises loading; readers use g_model alone, so it guards no field.
// Before mount.cpp's lookup mutex (pfm_initialize finds the mount under it).
pfmfs::Mutex g_init_mutex;
std::atomic<bool> g_debug{false};
std::atomic<bool> g_verbose{false};
constexpr int kNotForced = INT_MIN;
std::atomic<int> g_forced_type{kNotForced};

void vprint(const char* fmt, va_list ap) {
  // One fprintf per line so that lines of several threads do not interleave.
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "libpfm: %s\n", line);
}

}  // namespace

const PmuModel* currentModel() { return g_model.load(std::memory_order_acquire); }

int pmuTypeOf(const std::string& model) {
  if (model.rfind("intel-arch", 0) == 0 || model == "perf-x86" || model.rfind("x86", 0) == 0)
    return PFMLIB_GEN_IA32_PMU;
  return PFMLIB_UNKNOWN_PMU;
}

// PFMFS_PMU_NAME overrides it: PAPI 7.0.0's perfmon2 component crashes when
// its preset table knows the PMU's name (docs/libpfm-compat.md, "PAPI").
std::string libpfmName(const PmuModel& m) {
  if (const char* name = secure_getenv("PFMFS_PMU_NAME"); name && *name) return name;
  return pmuTypeOf(m.model) == PFMLIB_GEN_IA32_PMU ? "Intel architectural PMU" : m.model;
}

int copyName(const std::string& s, char* buf, std::size_t maxlen) {
  if (s.size() < maxlen) {
    memcpy(buf, s.c_str(), s.size() + 1);
    return PFMLIB_SUCCESS;
  }
  memcpy(buf, s.data(), maxlen - 1);
  buf[maxlen - 1] = '\0';
  return PFMLIB_ERR_FULL;
}

void toRegmask(RegMask mask, pfmlib_regmask_t* out) {
  memset(out, 0, sizeof *out);
  for (unsigned i = 0; i < kMaxReg; ++i)
    if (mask & (RegMask{1} << i)) pfm_regmask_set(out, i);
}

bool debugEnabled() { return g_debug.load(std::memory_order_relaxed); }
bool verboseEnabled() { return g_verbose.load(std::memory_order_relaxed) || debugEnabled(); }

void debugf(const char* fmt, ...) {
  if (!debugEnabled()) return;
  va_list ap;
  va_start(ap, fmt);
  vprint(fmt, ap);
  va_end(ap);
}

void verbosef(const char* fmt, ...) {
  if (!verboseEnabled()) return;
  va_list ap;
  va_start(ap, fmt);
  vprint(fmt, ap);
  va_end(ap);
}

}  // namespace pfmcompat::pfmlib

using namespace pfmcompat::pfmlib;

// Options may be set before pfm_initialize(), as with libpfm.
PFMLIB_EXPORT int pfm_set_options(pfmlib_options_t* opt) {
  if (!opt) return PFMLIB_ERR_INVAL;
  g_debug.store(opt->pfm_debug != 0, std::memory_order_relaxed);
  g_verbose.store(opt->pfm_verbose != 0, std::memory_order_relaxed);
  return PFMLIB_SUCCESS;
}

// Loads the PMU model from the mount ($PFMFS_MOUNT, /run/pfmfs, or the first
// fuse.pfmfs mount). PFMLIB_ERR_NOTSUPP when no mount is found or its pmu/
// files cannot be read (with LIBPFM_VERBOSE or pfm_verbose the reason goes to
// stderr); the call may then be repeated once a daemon runs. After the first
// success every call returns PFMLIB_SUCCESS at once. Safe from several threads.
PFMLIB_EXPORT int pfm_initialize(void) {
  if (currentModel()) return PFMLIB_SUCCESS;
  pfmfs::MutexLock lock(g_init_mutex);
  if (currentModel()) return PFMLIB_SUCCESS;
  // libpfm read these at initialisation; pfm_set_options() can still clear
  // them. Not in a set-id program, whose output its caller may not see.
  if (secure_getenv("LIBPFM_VERBOSE")) g_verbose.store(true, std::memory_order_relaxed);
  if (secure_getenv("LIBPFM_DEBUG")) g_debug.store(true, std::memory_order_relaxed);

  const char* mount = pfmcompat::mountPath();
  if (!mount) {
    verbosef("pfm_initialize: no pfmfs mount (set PFMFS_MOUNT or start pfmfsd)");
    return PFMLIB_ERR_NOTSUPP;
  }
  auto* model = new (std::nothrow_t{}) PmuModel;  // no std::nothrow object: see cxx_runtime.cpp
  if (!model) return PFMLIB_ERR_NOMEM;
  std::string why;
  if (!loadPmuModel(mount, *model, why)) {
    verbosef("pfm_initialize: cannot read the PMU description of %s: %s", mount, why.c_str());
    delete model;
    return PFMLIB_ERR_NOTSUPP;
  }
  int forced = g_forced_type.load(std::memory_order_relaxed);
  if (forced != kNotForced && forced != pmuTypeOf(model->model)) {
    verbosef("pfm_initialize: the mount's PMU (%s) is not of the forced type %d", model->model.c_str(), forced);
    delete model;
    return PFMLIB_ERR_NOTSUPP;
  }
  debugf("pfm_initialize: %s: backend=%s model=%s pmcs=0x%llx pmds=0x%llx width=%u events=%zu", mount,
         model->backend.c_str(), model->model.c_str(), static_cast<unsigned long long>(model->impl_pmcs),
         static_cast<unsigned long long>(model->impl_pmds), model->width, model->events.size());
  g_model.store(model, std::memory_order_release);  // kept until the process ends
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_version(unsigned int* version) {
  if (!version) return PFMLIB_ERR_INVAL;
  *version = PFMLIB_VERSION;
  return PFMLIB_SUCCESS;
}

// The PMU is the mount's, so forcing can only agree with it. Before
// pfm_initialize() the type is remembered (PFMLIB_GEN_IA32_PMU and
// PFMLIB_UNKNOWN_PMU, the only types pfmfs reports, are accepted) and
// pfm_initialize() fails with PFMLIB_ERR_NOTSUPP if the mount's type differs;
// afterwards the type must be the current one.
PFMLIB_EXPORT int pfm_force_pmu(int type) {
  if (const PmuModel* m = currentModel()) return type == pmuTypeOf(m->model) ? PFMLIB_SUCCESS : PFMLIB_ERR_NOTSUPP;
  if (type != PFMLIB_GEN_IA32_PMU && type != PFMLIB_UNKNOWN_PMU) return PFMLIB_ERR_NOTSUPP;
  g_forced_type.store(type, std::memory_order_relaxed);
  return PFMLIB_SUCCESS;
}
