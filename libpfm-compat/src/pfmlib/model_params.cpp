// libpfm 3.10's model-specific dispatch input, read into PERFEVTSEL bits.
#include "model_params.h"

#include <perfmon/pfmlib_core.h>
#include <perfmon/pfmlib_gen_ia32.h>

#include "library.h"

namespace pfmcompat::pfmlib {

namespace {

// PERFEVTSEL fields the options set (pfmfs(5), the Intel register map).
constexpr std::uint64_t kEdge = 1ull << 18;
constexpr std::uint64_t kInv = 1ull << 23;
constexpr unsigned kCmaskShift = 24;
constexpr unsigned long kMaxCmask = 0xff;  // 8 bits: libpfm refused more

// Both types' counter entries have the same shape: a threshold and flags
// whose INV and EDGE bits are the same (1 and 2).
template <typename Counter>
int readCounter(const Counter& c, unsigned i, unsigned defined_flags, EventOptions& out) {
  if (c.flags & ~defined_flags) {
    verbosef("pfm_dispatch_events: event %u: flags 0x%x: this PMU type defines only 0x%x", i, c.flags, defined_flags);
    return PFMLIB_ERR_INVAL;
  }
  if (c.cnt_mask > kMaxCmask) {
    verbosef("pfm_dispatch_events: event %u: counter mask %lu does not fit its 8 bits", i, c.cnt_mask);
    return PFMLIB_ERR_INVAL;
  }
  out.filters = static_cast<std::uint64_t>(c.cnt_mask) << kCmaskShift;
  if (c.flags & PFM_GEN_IA32_SEL_INV) out.filters |= kInv;
  if (c.flags & PFM_GEN_IA32_SEL_EDGE) out.filters |= kEdge;
  return PFMLIB_SUCCESS;
}

static_assert(PFM_GEN_IA32_SEL_INV == PFM_CORE_SEL_INV && PFM_GEN_IA32_SEL_EDGE == PFM_CORE_SEL_EDGE);

}  // namespace

int readModelParams(int pmu_type, const void* model_in, unsigned n, ModelParams& out) {
  out.events.assign(n, EventOptions{});
  out.pebs = false;
  if (!model_in) return PFMLIB_SUCCESS;

  if (pmu_type == PFMLIB_CORE_PMU) {
    const auto* p = static_cast<const pfmlib_core_input_param_t*>(model_in);
    if (n > PMU_CORE_NUM_COUNTERS) {
      verbosef("pfm_dispatch_events: %u events: the Core input has options for %u", n, PMU_CORE_NUM_COUNTERS);
      return PFMLIB_ERR_TOOMANY;
    }
    for (unsigned i = 0; i < n; ++i)
      if (int rc = readCounter(p->pfp_core_counters[i], i, PFM_CORE_SEL_INV | PFM_CORE_SEL_EDGE, out.events[i]))
        return rc;
    out.pebs = p->pfp_core_pebs.pebs_used != 0;
    return PFMLIB_SUCCESS;
  }

  // PFMLIB_GEN_IA32_PMU, the type every other pfmfs model has.
  const auto* p = static_cast<const pfmlib_gen_ia32_input_param_t*>(model_in);
  constexpr unsigned kFlags = PFM_GEN_IA32_SEL_INV | PFM_GEN_IA32_SEL_EDGE | PFM_GEN_IA32_SEL_ANYTHR;
  for (unsigned i = 0; i < n; ++i) {
    const pfmlib_gen_ia32_counter_t& c = p->pfp_gen_ia32_counters[i];
    if (int rc = readCounter(c, i, kFlags, out.events[i])) return rc;
    out.events[i].any_thread = (c.flags & PFM_GEN_IA32_SEL_ANYTHR) != 0;
  }
  return PFMLIB_SUCCESS;
}

}  // namespace pfmcompat::pfmlib
