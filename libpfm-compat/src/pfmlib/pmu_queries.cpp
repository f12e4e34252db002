// What pfmlib.h tells about the PMU itself: its name and family, which
// registers it implements, how wide its counters are. All of it comes from
// pmu/info and pmu/desc as pfm_initialize() read them.
#include "library.h"

using namespace pfmcompat::pfmlib;

// No table of PMUs is compiled in: the one PMU served is the mount's.
PFMLIB_EXPORT int pfm_list_supported_pmus(int (*pf)(const char* fmt, ...)) {
  if (!pf) return PFMLIB_ERR_INVAL;
  const PmuModel* m = currentModel();
  pf("PMU models: those of the pfmfs mount\n");
  if (m)
    pf("mount PMU: %s (model %s)\n", libpfmName(*m).c_str(), m->model.c_str());
  else
    pf("mount PMU: unknown until pfm_initialize()\n");
  return PFMLIB_SUCCESS;
}

// libpfm 3.10's name of the PMU where it had one (the Intel architectural
// models: "Intel architectural PMU", which PAPI's preset table looks up),
// else the model name of pmu/info ("perf-sw"); a name that does not fit is
// cut and PFMLIB_ERR_FULL returned.
PFMLIB_EXPORT int pfm_get_pmu_name(char* name, int maxlen) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!name || maxlen < 1) return PFMLIB_ERR_INVAL;
  return copyName(libpfmName(*m), name, static_cast<std::size_t>(maxlen));
}

// PFMLIB_GEN_IA32_PMU for x86 models (intel-arch-*, perf-x86), where the
// PERFEVTSEL encoding applies; PFMLIB_UNKNOWN_PMU for the others (perf-sw).
PFMLIB_EXPORT int pfm_get_pmu_type(int* type) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!type) return PFMLIB_ERR_INVAL;
  *type = pmuTypeOf(m->model);
  return PFMLIB_SUCCESS;
}

// The name of the current PMU when `type` is its type; PFMLIB_ERR_INVAL for
// any other type, as for a family the library does not know.
PFMLIB_EXPORT int pfm_get_pmu_name_bytype(int type, char* name, size_t maxlen) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!name || maxlen < 1 || type != pmuTypeOf(m->model)) return PFMLIB_ERR_INVAL;
  return copyName(libpfmName(*m), name, maxlen);
}

PFMLIB_EXPORT int pfm_is_pmu_supported(int type) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  return type == pmuTypeOf(m->model) ? PFMLIB_SUCCESS : PFMLIB_ERR_NOTSUPP;
}

PFMLIB_EXPORT int pfm_get_impl_pmcs(pfmlib_regmask_t* impl_pmcs) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!impl_pmcs) return PFMLIB_ERR_INVAL;
  toRegmask(m->impl_pmcs, impl_pmcs);
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_impl_pmds(pfmlib_regmask_t* impl_pmds) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!impl_pmds) return PFMLIB_ERR_INVAL;
  toRegmask(m->impl_pmds, impl_pmds);
  return PFMLIB_SUCCESS;
}

// Every PMD on pfmfs is a counter (general or fixed): the same mask as the PMDs.
PFMLIB_EXPORT int pfm_get_impl_counters(pfmlib_regmask_t* impl_counters) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!impl_counters) return PFMLIB_ERR_INVAL;
  toRegmask(m->impl_pmds, impl_counters);
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_num_pmcs(unsigned int* num) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!num) return PFMLIB_ERR_INVAL;
  *num = static_cast<unsigned>(__builtin_popcountll(m->impl_pmcs));
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_num_pmds(unsigned int* num) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!num) return PFMLIB_ERR_INVAL;
  *num = static_cast<unsigned>(__builtin_popcountll(m->impl_pmds));
  return PFMLIB_SUCCESS;
}

// General and fixed counters together (sim: 4 + 3 = 7).
PFMLIB_EXPORT int pfm_get_num_counters(unsigned int* num) { return pfm_get_num_pmds(num); }

// width= of pmu/info: the widest counter, in bits.
PFMLIB_EXPORT int pfm_get_hw_counter_width(unsigned int* width) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!width) return PFMLIB_ERR_INVAL;
  *width = m->width;
  return PFMLIB_SUCCESS;
}
