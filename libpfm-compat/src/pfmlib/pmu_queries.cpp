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

// The mount's model name ("intel-arch-v2", "perf-sw"), or $PFMFS_PMU_NAME
// (libpfmName); a name that does not fit is cut and PFMLIB_ERR_FULL returned.
PFMLIB_EXPORT int pfm_get_pmu_name(char* name, int maxlen) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!name || maxlen < 1) return PFMLIB_ERR_INVAL;
  return copyName(libpfmName(*m), name, static_cast<std::size_t>(maxlen));
}

// currentPmuType(): PFMLIB_GEN_IA32_PMU, or PFMLIB_CORE_PMU when forced.
PFMLIB_EXPORT int pfm_get_pmu_type(int* type) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!type) return PFMLIB_ERR_INVAL;
  *type = currentPmuType(*m);
  return PFMLIB_SUCCESS;
}

// libpfm 3.10's name of a PMU type the library can present, before
// pfm_initialize() too, as libpfm 3.10 answered from its compiled-in table;
// PFMLIB_ERR_INVAL for any other type.
PFMLIB_EXPORT int pfm_get_pmu_name_bytype(int type, char* name, size_t maxlen) {
  const char* known = libpfmTypeName(type);
  if (!known || !name || maxlen < 1) return PFMLIB_ERR_INVAL;
  return copyName(known, name, maxlen);
}

// PFMLIB_SUCCESS for a type the mount's model can be (pfm_force_pmu() would
// take it), PFMLIB_ERR_NOTSUPP for any other.
PFMLIB_EXPORT int pfm_is_pmu_supported(int type) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  return modelCanBe(*m, type) ? PFMLIB_SUCCESS : PFMLIB_ERR_NOTSUPP;
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
