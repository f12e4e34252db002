// The perfmon3-style calls of libpfm 3.10 (<perfmon/perfmon.h>): byte sizes
// instead of counts, a type argument for register vectors, and flags that
// must be 0. They share context_ops with the perfmon2 calls.
#include <perfmon/perfmon.h>
#include <stdarg.h>
#include <unistd.h>

#include "api_support.h"
#include "context_ops.h"
#include "sampling.h"

using namespace pfmcompat;

namespace {

constexpr uint32_t kCreateFlags = PFM_FL_NOTIFY_BLOCK | PFM_FL_SYSTEM_WIDE | PFM_FL_SMPL_FMT | PFM_FL_OVFL_NO_MSG;
constexpr uint32_t kPmcFlags = PFM_REGFL_NO_EMUL64;
constexpr uint32_t kPmdFlags = PFM_REGFL_OVFL_NOTIFY | PFM_REGFL_RANDOM;

bool highWordsClear(const uint64_t (&bv)[PFM_PMD_BV]) {
  for (size_t i = 1; i < PFM_PMD_BV; ++i)
    if (bv[i] != 0) return false;
  return true;
}

// The element count of a byte-sized vector, or -1 (EINVAL) when the size is
// not a whole number of elements or the array is missing.
long elements(const void* vec, size_t bytes, size_t element_size) {
  if (bytes % element_size != 0 || (bytes > 0 && !vec)) return -1;
  return long(bytes / element_size);
}

PmcItem pmrPmcAt(const void* vec, size_t i) {
  const pfarg_pmr_t& p = static_cast<const pfarg_pmr_t*>(vec)[i];
  return PmcItem{p.reg_num, p.reg_set, (p.reg_flags & PFM_REGFL_NO_EMUL64) != 0, p.reg_value};
}

PmdItem pmrPmdAt(const void* vec, size_t i) {
  const pfarg_pmr_t& p = static_cast<const pfarg_pmr_t*>(vec)[i];
  PmdItem it{};
  it.num = p.reg_num;
  it.set = p.reg_set;
  it.value_only = true;
  it.notify = (p.reg_flags & PFM_REGFL_OVFL_NOTIFY) != 0;
  it.random = (p.reg_flags & PFM_REGFL_RANDOM) != 0;
  it.value = p.reg_value;
  return it;
}

PmdItem attrPmdAt(const void* vec, size_t i) {
  const pfarg_pmd_attr_t& p = static_cast<const pfarg_pmd_attr_t*>(vec)[i];
  PmdItem it{};
  it.num = p.reg_num;
  it.set = p.reg_set;
  it.value_only = false;
  it.notify = (p.reg_flags & PFM_REGFL_OVFL_NOTIFY) != 0;
  it.random = (p.reg_flags & PFM_REGFL_RANDOM) != 0;
  it.value = p.reg_value;
  it.long_reset = p.reg_long_reset;
  it.short_reset = p.reg_short_reset;
  it.switch_cnt = p.reg_ovfl_swcnt;
  it.reset_pmds = p.reg_reset_pmds[0];
  it.smpl_pmds = p.reg_smpl_pmds[0];
  it.random_mask = p.reg_random_mask;
  it.eventid = p.reg_smpl_eventid;
  return it;
}

RegKey pmrKeyAt(const void* vec, size_t i) {
  const pfarg_pmr_t& p = static_cast<const pfarg_pmr_t*>(vec)[i];
  return RegKey{p.reg_num, p.reg_set};
}

RegKey attrKeyAt(const void* vec, size_t i) {
  const pfarg_pmd_attr_t& p = static_cast<const pfarg_pmd_attr_t*>(vec)[i];
  return RegKey{p.reg_num, p.reg_set};
}

void pmrPmdPut(void* vec, size_t i, const PmdValues& v) { static_cast<pfarg_pmr_t*>(vec)[i].reg_value = v.value; }

void pmrPmcPut(void* vec, size_t i, uint64_t value) { static_cast<pfarg_pmr_t*>(vec)[i].reg_value = value; }

void attrPmdPut(void* vec, size_t i, const PmdValues& v) {
  pfarg_pmd_attr_t& p = static_cast<pfarg_pmd_attr_t*>(vec)[i];
  p.reg_value = v.value;
  p.reg_last_value = v.last_reset;
  p.reg_ovfl_swcnt = v.switch_left;
}

}  // namespace

PFM_EXPORT os_err_t pfm_create(int flags, pfarg_sinfo_t* sif, ...) {
  if (uint32_t(flags) & ~kCreateFlags) return apiError(EINVAL);
  CreateOptions o;
  // With PFM_FL_SMPL_FMT the format's name, argument and size follow (a
  // name is then required: the flag says a format comes); without it they
  // are not there to read.
  if (flags & PFM_FL_SMPL_FMT) {
    va_list ap;
    va_start(ap, sif);
    const char* name = va_arg(ap, const char*);
    const void* arg = va_arg(ap, const void*);
    const size_t size = va_arg(ap, size_t);
    va_end(ap);
    if (!name) return apiError(EINVAL);
    if (int r = samplingOptions(name, arg, size, &o); r < 0) return apiResult(r);
  }
  o.system_wide = (flags & PFM_FL_SYSTEM_WIDE) != 0;
  o.notify_block = (flags & PFM_FL_NOTIFY_BLOCK) != 0;
  o.no_msg = (flags & PFM_FL_OVFL_NO_MSG) != 0;
  int fd = createContext(o);
  if (fd < 0 || !sif) return apiResult(fd);
  // The registers the session may use: those of set 0.
  int r = onContext(fd, "pfm_create", [&](Context& c) {
    SetStatus st;
    if (int e = setStatus(c, 0, &st, false); e < 0) return e;
    for (size_t w = 0; w < PFM_PMC_BV; ++w) sif->sif_avail_pmcs[w] = 0;
    for (size_t w = 0; w < PFM_PMD_BV; ++w) sif->sif_avail_pmds[w] = 0;
    sif->sif_avail_pmcs[0] = st.avail_pmcs;
    sif->sif_avail_pmds[0] = st.avail_pmds;
    return 0;
  });
  if (r < 0) {
    int e = errno;
    close(fd);  // destroys the session (autoclose)
    return apiError(e);
  }
  return fd;
}

PFM_EXPORT os_err_t pfm_write(int fd, int flags, int type, void* reg, size_t n) {
  return onContext(fd, "pfm_write", [&](Context& c) {
    if (flags != 0) return -EINVAL;
    switch (type) {
      case PFM_RW_PMC:
      case PFM_RW_PMD: {
        long count = elements(reg, n, sizeof(pfarg_pmr_t));
        if (count < 0) return -EINVAL;
        const auto* v = static_cast<const pfarg_pmr_t*>(reg);
        const uint32_t allowed = type == PFM_RW_PMC ? kPmcFlags : kPmdFlags;
        for (long i = 0; i < count; ++i)
          if (v[i].reg_flags & ~allowed) return -EINVAL;
        return type == PFM_RW_PMC ? writePmcs(c, reg, size_t(count), pmrPmcAt)
                                  : writePmds(c, reg, size_t(count), pmrPmdAt);
      }
      case PFM_RW_PMD_ATTR: {
        long count = elements(reg, n, sizeof(pfarg_pmd_attr_t));
        if (count < 0) return -EINVAL;
        const auto* v = static_cast<const pfarg_pmd_attr_t*>(reg);
        for (long i = 0; i < count; ++i)
          if ((v[i].reg_flags & ~kPmdFlags) || !highWordsClear(v[i].reg_reset_pmds) ||
              !highWordsClear(v[i].reg_smpl_pmds))
            return -EINVAL;
        return writePmds(c, reg, size_t(count), attrPmdAt);
      }
      default:
        return -EINVAL;
    }
  });
}

PFM_EXPORT os_err_t pfm_read(int fd, int flags, int type, void* reg, size_t n) {
  // PMD reads try the fast path first; anything it cannot answer, and every
  // error, is the mount's below.
  auto fast = [&](Context& c) {
    if (flags != 0 || (type != PFM_RW_PMD && type != PFM_RW_PMD_ATTR)) return false;
    const bool attr = type == PFM_RW_PMD_ATTR;
    long count = elements(reg, n, attr ? sizeof(pfarg_pmd_attr_t) : sizeof(pfarg_pmr_t));
    if (count <= 0) return false;
    return attr ? fastReadPmds(c, reg, size_t(count), attrKeyAt, attrPmdPut)
                : fastReadPmds(c, reg, size_t(count), pmrKeyAt, pmrPmdPut);
  };
  return onContextFast(fd, "pfm_read", fast, [&](Context& c) {
    if (flags != 0) return -EINVAL;
    switch (type) {
      case PFM_RW_PMC:
      case PFM_RW_PMD: {
        long count = elements(reg, n, sizeof(pfarg_pmr_t));
        if (count < 0) return -EINVAL;
        return type == PFM_RW_PMC ? readPmcs(c, reg, size_t(count), pmrKeyAt, pmrPmcPut)
                                  : readPmds(c, reg, size_t(count), pmrKeyAt, pmrPmdPut);
      }
      case PFM_RW_PMD_ATTR: {
        long count = elements(reg, n, sizeof(pfarg_pmd_attr_t));
        if (count < 0) return -EINVAL;
        return readPmds(c, reg, size_t(count), attrKeyAt, attrPmdPut);
      }
      default:
        return -EINVAL;
    }
  });
}

PFM_EXPORT os_err_t pfm_set_state(int fd, int flags, int state) {
  return onContext(fd, "pfm_set_state", [&](Context& c) {
    if (flags != 0) return -EINVAL;
    switch (state) {
      case PFM_ST_START:
        return startContext(c, nullptr);
      case PFM_ST_STOP:
        return stopContext(c);
      case PFM_ST_RESTART:
        return simpleCommand(c, "restart");
      default:
        return -EINVAL;
    }
  });
}

PFM_EXPORT os_err_t pfm_attach(int fd, int flags, int target) {
  return onContext(fd, "pfm_attach", [&](Context& c) {
    if (flags != 0) return -EINVAL;
    if (target == PFM_NO_TARGET) return unloadContext(c);
    if (target < 0) return -EINVAL;
    return loadContext(c, uint32_t(target), nullptr);
  });
}

PFM_EXPORT os_err_t pfm_create_sets(int fd, int flags, pfarg_set_desc_t* s, size_t sz) {
  return onContext(fd, "pfm_create_sets", [&](Context& c) {
    if (flags != 0) return -EINVAL;
    long count = elements(s, sz, sizeof(pfarg_set_desc_t));
    if (count < 0) return -EINVAL;
    for (long i = 0; i < count; ++i) {
      uint64_t effective = 0;
      if (int r = createSet(c, s[i].set_id, s[i].set_flags, s[i].set_timeout, &effective); r < 0) return r;
      s[i].set_timeout = effective;
    }
    return 0;
  });
}

PFM_EXPORT os_err_t pfm_getinfo_sets(int fd, int flags, pfarg_set_info_t* s, size_t sz) {
  return onContext(fd, "pfm_getinfo_sets", [&](Context& c) {
    if (flags != 0) return -EINVAL;
    long count = elements(s, sz, sizeof(pfarg_set_info_t));
    if (count < 0) return -EINVAL;
    for (long i = 0; i < count; ++i) {
      SetStatus st;
      if (int r = setStatus(c, s[i].set_id, &st, false); r < 0) return r;
      for (size_t w = 0; w < PFM_PMD_BV; ++w) s[i].set_ovfl_pmds[w] = 0;
      s[i].set_ovfl_pmds[0] = st.ovfl_pmds;
      s[i].set_runs = st.runs;
      s[i].set_timeout = st.timeout_ns;
      s[i].set_duration = st.duration_ns;
    }
    return 0;
  });
}
