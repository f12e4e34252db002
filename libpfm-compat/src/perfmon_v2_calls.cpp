// The perfmon2 calls of <perfmon/perfmon_v2.h>: each converts its
// structures and hands the work to context_ops.
#include <perfmon/perfmon.h>

#include "api_support.h"
#include "context_ops.h"
#include "sampling.h"

using namespace pfmcompat;

namespace {

constexpr uint32_t kContextFlags = PFM_FL_NOTIFY_BLOCK | PFM_FL_SYSTEM_WIDE | PFM_FL_OVFL_NO_MSG;
constexpr uint32_t kPmcFlags = PFM_REGFL_NO_EMUL64;
constexpr uint32_t kPmdFlags = PFM_REGFL_OVFL_NOTIFY | PFM_REGFL_RANDOM;

// Only word 0 of a register bitvector can name a register of the mount.
bool highWordsClear(const uint64_t (&bv)[PFM_PMD_BV]) {
  for (size_t i = 1; i < PFM_PMD_BV; ++i)
    if (bv[i] != 0) return false;
  return true;
}

// A vector argument: count < 0, or no array for a positive count, is EINVAL.
bool badVector(const void* vec, int count) { return count < 0 || (count > 0 && !vec); }

PmcItem pmcAt(const void* vec, size_t i) {
  const pfarg_pmc_t& p = static_cast<const pfarg_pmc_t*>(vec)[i];
  return PmcItem{p.reg_num, p.reg_set, (p.reg_flags & PFM_REGFL_NO_EMUL64) != 0, p.reg_value};
}

PmdItem pmdAt(const void* vec, size_t i) {
  const pfarg_pmd_t& p = static_cast<const pfarg_pmd_t*>(vec)[i];
  PmdItem it{};
  it.num = p.reg_num;
  it.set = p.reg_set;
  it.value_only = false;
  it.notify = (p.reg_flags & PFM_REGFL_OVFL_NOTIFY) != 0;
  it.random = (p.reg_flags & PFM_REGFL_RANDOM) != 0;
  it.value = p.reg_value;
  it.long_reset = p.reg_long_reset;
  it.short_reset = p.reg_short_reset;
  it.switch_cnt = p.reg_ovfl_switch_cnt;
  it.reset_pmds = p.reg_reset_pmds[0];
  it.smpl_pmds = p.reg_smpl_pmds[0];
  it.random_mask = p.reg_random_mask;
  it.eventid = p.reg_smpl_eventid;
  return it;
}

RegKey pmdKeyAt(const void* vec, size_t i) {
  const pfarg_pmd_t& p = static_cast<const pfarg_pmd_t*>(vec)[i];
  return RegKey{p.reg_num, p.reg_set};
}

void pmdPut(void* vec, size_t i, const PmdValues& v) {
  pfarg_pmd_t& p = static_cast<pfarg_pmd_t*>(vec)[i];
  p.reg_value = v.value;
  p.reg_last_reset_val = v.last_reset;
  p.reg_ovfl_switch_cnt = v.switch_left;
}

}  // namespace

PFM_EXPORT os_err_t pfm_create_context(pfarg_ctx_t* ctx, char* smpl_name, void* smpl_arg, size_t smpl_size) {
  if (!ctx) return apiError(EFAULT);
  if (ctx->ctx_flags & ~kContextFlags) return apiError(EINVAL);
  CreateOptions o;
  // A sampling format (sampling.h): no name, no argument.
  if (int r = samplingOptions(smpl_name, smpl_arg, smpl_size, &o); r < 0) return apiResult(r);
  o.system_wide = (ctx->ctx_flags & PFM_FL_SYSTEM_WIDE) != 0;
  o.notify_block = (ctx->ctx_flags & PFM_FL_NOTIFY_BLOCK) != 0;
  o.no_msg = (ctx->ctx_flags & PFM_FL_OVFL_NO_MSG) != 0;
  return apiResult(createContext(o));
}

PFM_EXPORT os_err_t pfm_write_pmcs(int fd, pfarg_pmc_t* pmcs, int count) {
  return onContext(fd, "pfm_write_pmcs", [&](Context& c) {
    if (badVector(pmcs, count)) return -EINVAL;
    for (int i = 0; i < count; ++i)
      if (pmcs[i].reg_flags & ~kPmcFlags) return -EINVAL;
    return writePmcs(c, pmcs, size_t(count), pmcAt);
  });
}

PFM_EXPORT os_err_t pfm_write_pmds(int fd, pfarg_pmd_t* pmds, int count) {
  return onContext(fd, "pfm_write_pmds", [&](Context& c) {
    if (badVector(pmds, count)) return -EINVAL;
    for (int i = 0; i < count; ++i)
      if ((pmds[i].reg_flags & ~kPmdFlags) || !highWordsClear(pmds[i].reg_reset_pmds) ||
          !highWordsClear(pmds[i].reg_smpl_pmds))
        return -EINVAL;
    return writePmds(c, pmds, size_t(count), pmdAt);
  });
}

PFM_EXPORT os_err_t pfm_read_pmds(int fd, pfarg_pmd_t* pmds, int count) {
  if (badVector(pmds, count)) return onContext(fd, "pfm_read_pmds", [](Context&) { return -EINVAL; });
  return onContextFast(
      fd, "pfm_read_pmds", [&](Context& c) { return fastReadPmds(c, pmds, size_t(count), pmdKeyAt, pmdPut); },
      [&](Context& c) { return readPmds(c, pmds, size_t(count), pmdKeyAt, pmdPut); });
}

PFM_EXPORT os_err_t pfm_load_context(int fd, pfarg_load_t* load) {
  return onContext(fd, "pfm_load_context", [&](Context& c) {
    if (!load) return -EFAULT;
    return loadContext(c, load->load_pid, &load->load_set);
  });
}

PFM_EXPORT os_err_t pfm_start(int fd, pfarg_start_t* start) {
  return onContext(fd, "pfm_start", [&](Context& c) { return startContext(c, start ? &start->start_set : nullptr); });
}

PFM_EXPORT os_err_t pfm_stop(int fd) {
  return onContext(fd, "pfm_stop", [](Context& c) { return stopContext(c); });
}

PFM_EXPORT os_err_t pfm_restart(int fd) {
  return onContext(fd, "pfm_restart", [](Context& c) { return simpleCommand(c, "restart"); });
}

PFM_EXPORT os_err_t pfm_unload_context(int fd) {
  return onContext(fd, "pfm_unload_context", [](Context& c) { return unloadContext(c); });
}

PFM_EXPORT os_err_t pfm_create_evtsets(int fd, pfarg_setdesc_t* setd, int count) {
  return onContext(fd, "pfm_create_evtsets", [&](Context& c) {
    if (badVector(setd, count)) return -EINVAL;
    for (int i = 0; i < count; ++i) {
      uint64_t effective = 0;
      if (int r = createSet(c, setd[i].set_id, setd[i].set_flags, setd[i].set_timeout, &effective); r < 0) return r;
      setd[i].set_timeout = effective;
    }
    return 0;
  });
}

PFM_EXPORT os_err_t pfm_delete_evtsets(int fd, pfarg_setdesc_t* setd, int count) {
  return onContext(fd, "pfm_delete_evtsets", [&](Context& c) {
    if (badVector(setd, count)) return -EINVAL;
    for (int i = 0; i < count; ++i)
      if (int r = deleteSet(c, setd[i].set_id); r < 0) return r;
    return 0;
  });
}

PFM_EXPORT os_err_t pfm_getinfo_evtsets(int fd, pfarg_setinfo_t* info, int count) {
  return onContext(fd, "pfm_getinfo_evtsets", [&](Context& c) {
    if (badVector(info, count)) return -EINVAL;
    for (int i = 0; i < count; ++i) {
      SetStatus st;
      if (int r = setStatus(c, info[i].set_id, &st, true); r < 0) return r;
      pfarg_setinfo_t& out = info[i];
      out.set_flags = st.flags;
      for (size_t w = 0; w < PFM_PMD_BV; ++w) out.set_ovfl_pmds[w] = out.set_avail_pmds[w] = 0;
      for (size_t w = 0; w < PFM_PMC_BV; ++w) out.set_avail_pmcs[w] = 0;
      out.set_ovfl_pmds[0] = st.ovfl_pmds;
      out.set_avail_pmcs[0] = st.avail_pmcs;
      out.set_avail_pmds[0] = st.avail_pmds;
      out.set_runs = st.runs;
      out.set_timeout = st.timeout_ns;
      out.set_act_duration = st.duration_ns;
    }
    return 0;
  });
}
