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

int forcedType() { return g_forced_type.load(std::memory_order_relaxed); }

void vprint(const char* fmt, va_list ap) {
  // One fprintf per line so that lines of several threads do not interleave.
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "libpfm: %s\n", line);
}

}  // namespace

const PmuModel* currentModel() { return g_model.load(std::memory_order_acquire); }

bool modelCanBe(const PmuModel& m, int type) {
  if (type == PFMLIB_GEN_IA32_PMU) return true;
  // Intel Core (Core 2) is an architectural perfmon v2 PMU with fixed
  // counters: what the sim, x86 and perf-x86 describe. perf-sw is not.
  if (type == PFMLIB_CORE_PMU) return m.model.rfind("intel-arch", 0) == 0 || m.model == "perf-x86";
  return false;
}

int currentPmuType(const PmuModel& m) {
  int forced = forcedType();
  return forced != kNotForced && modelCanBe(m, forced) ? forced : PFMLIB_GEN_IA32_PMU;
}

const char* libpfmTypeName(int type) {
  switch (type) {
    case PFMLIB_GEN_IA32_PMU:
      return "Intel architectural PMU";
    case PFMLIB_CORE_PMU:
      return "Intel Core";
    default:
      return nullptr;
  }
}

std::string libpfmName(const PmuModel& m) {
  if (const char* name = secure_getenv("PFMFS_PMU_NAME"); name && *name) return name;
  return m.model;
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
  // LIBPFM_FORCE_PMU=TYPE, as libpfm 3.10 read it; a type forced by a call
  // before this one wins.
  if (const char* env = secure_getenv("LIBPFM_FORCE_PMU"); env && *env && forcedType() == kNotForced) {
    char* end = nullptr;
    long type = strtol(env, &end, 0);
    if (*end || type < 0 || type > INT_MAX) {
      verbosef("pfm_initialize: LIBPFM_FORCE_PMU=%s is not a PMU type number", env);
      delete model;
      return PFMLIB_ERR_NOTSUPP;
    }
    g_forced_type.store(static_cast<int>(type), std::memory_order_relaxed);
  }
  if (int forced = forcedType(); forced != kNotForced && !modelCanBe(*model, forced)) {
    verbosef("pfm_initialize: the mount's PMU (%s) cannot be of the forced type %d", model->model.c_str(), forced);
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

// The PMU is the mount's: forcing chooses how the library presents it, among
// the types its model can be (modelCanBe: PFMLIB_GEN_IA32_PMU, and
// PFMLIB_CORE_PMU on the Intel architectural models), at any time as with
// libpfm 3.10. Before pfm_initialize() either of those two is remembered and
// pfm_initialize() fails with PFMLIB_ERR_NOTSUPP if the mount's model cannot
// be it. Any other type: PFMLIB_ERR_NOTSUPP, nothing changed.
PFMLIB_EXPORT int pfm_force_pmu(int type) {
  if (!libpfmTypeName(type)) return PFMLIB_ERR_NOTSUPP;
  if (const PmuModel* m = currentModel(); m && !modelCanBe(*m, type)) return PFMLIB_ERR_NOTSUPP;
  g_forced_type.store(type, std::memory_order_relaxed);
  return PFMLIB_SUCCESS;
}
