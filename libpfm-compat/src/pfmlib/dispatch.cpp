// pfm_dispatch_events(): the PMC values and counters for a list of events,
// from the mount's PMU model. The counters come out in event order (pfp_pmds[i]
// counts event i) because perfmon2 programs index their results so.
#include <string.h>

#include <string>
#include <vector>

#include "counter_assignment.h"
#include "library.h"
#include "model_params.h"

using namespace pfmcompat::pfmlib;

namespace {

// PERFEVTSEL bits the encoding sets (pfmfs(5), "The sim PMU"); the event code supplies the rest.
constexpr std::uint64_t kEvtselUsr = 1ull << 16;  // count at user level (PLM3)
constexpr std::uint64_t kEvtselOs = 1ull << 17;   // count at kernel level (PLM0)
constexpr std::uint64_t kEvtselInt = 1ull << 20;  // interrupt on overflow
constexpr std::uint64_t kEvtselAny = 1ull << 21;  // count the core's other hyperthreads too
constexpr std::uint64_t kEvtselEn = 1ull << 22;   // counter enabled
// FIXED_CTR_CTRL: one field per fixed counter, from the PMC's first counter up.
constexpr unsigned kFixedFieldBits = 4;
constexpr std::uint64_t kFixedOs = 0x1;   // count at kernel level
constexpr std::uint64_t kFixedUsr = 0x2;  // count at user level
constexpr std::uint64_t kFixedAny = 0x4;  // count the core's other hyperthreads too
constexpr std::uint64_t kFixedPmi = 0x8;  // interrupt on overflow

constexpr unsigned kPrivMask = PFM_PLM0 | PFM_PLM1 | PFM_PLM2 | PFM_PLM3;

// A fixed counter's field of its shared control PMC, at its place.
std::uint64_t fixedShifted(const PmcInfo& c, const PmdInfo& d, std::uint64_t field) {
  const unsigned first = static_cast<unsigned>(__builtin_ctzll(c.pmds));
  return field << (kFixedFieldBits * (d.index - first));
}

// Whether counter `d` (configured by `c`) can take the event's options: a
// fixed counter has no filters, and AnyThread only where its field has the
// bit; a general counter, what its PERFEVTSEL does not reserve.
bool takesOptions(const PmcInfo& c, const PmdInfo& d, bool fixed, const EventOptions& o) {
  if (fixed) return o.filters == 0 && !(o.any_thread && (c.rsvd_msk & fixedShifted(c, d, kFixedAny)));
  const std::uint64_t bits = o.filters | (o.any_thread ? kEvtselAny : 0);
  return (c.rsvd_msk & bits) == 0;
}

// The counters event `e` may use with options `o`, fixed counters first (they
// leave the general ones to events that need them), then general ones, lowest
// first. *options_refused: some counter could count the event but not with
// its options.
std::vector<unsigned> candidatesOf(const PmuModel& m, const EventInfo& e, const EventOptions& o,
                                   pfmlib_regmask_t* unavail_pmcs, bool* options_refused) {
  std::vector<unsigned> fixed, general;
  for (const PmdInfo& d : m.pmds) {
    if (!(e.pmds & (RegMask{1} << d.index)) || d.ctl_pmc < 0) continue;
    if (pfm_regmask_isset(unavail_pmcs, static_cast<unsigned>(d.ctl_pmc))) continue;
    const bool is_fixed = m.isFixed(d);
    if (!takesOptions(*m.pmc(static_cast<unsigned>(d.ctl_pmc)), d, is_fixed, o)) {
      *options_refused = true;
      continue;
    }
    (is_fixed ? fixed : general).push_back(d.index);
  }
  fixed.insert(fixed.end(), general.begin(), general.end());
  return fixed;
}

std::string listOf(const std::vector<unsigned>& pmds) {
  std::string s;
  for (unsigned p : pmds) s += (s.empty() ? "pmd" : ",pmd") + std::to_string(p);
  return s.empty() ? "none" : s;
}

// A general counter's PERFEVTSEL: the event code with the privilege levels
// and the event's options, plus enable and interrupt where the PMC has those
// bits.
std::uint64_t generalPmcValue(const PmcInfo& c, const EventInfo& e, unsigned plm, const EventOptions& o) {
  std::uint64_t v = e.code & ~(kEvtselUsr | kEvtselOs | kEvtselInt | kEvtselEn);
  if (plm & PFM_PLM3) v |= kEvtselUsr;
  if (plm & PFM_PLM0) v |= kEvtselOs;
  if (!(c.rsvd_msk & kEvtselEn)) v |= kEvtselEn;
  if (!(c.rsvd_msk & kEvtselInt)) v |= kEvtselInt;
  v |= o.filters;
  if (o.any_thread) v |= kEvtselAny;
  return v;
}

// A fixed counter's field of its shared control PMC, in place.
std::uint64_t fixedField(const PmcInfo& c, const PmdInfo& d, unsigned plm, const EventOptions& o) {
  std::uint64_t f = 0;
  if (plm & PFM_PLM0) f |= kFixedOs;
  if (plm & PFM_PLM3) f |= kFixedUsr;
  if (o.any_thread) f |= kFixedAny;
  if (!(c.rsvd_msk & fixedShifted(c, d, kFixedPmi))) f |= kFixedPmi;
  return fixedShifted(c, d, f);
}

}  // namespace

// Encodes inp's events for the mount's PMU. model_in, when not NULL, is the
// structure of the current PMU type (pfm_get_pmu_type): a
// pfmlib_gen_ia32_input_param_t, or a pfmlib_core_input_param_t once the
// program forced PFMLIB_CORE_PMU; entry i gives event i a counter mask,
// invert, edge and (gen_ia32) AnyThread (model_params.h). model_out is
// accepted and left alone: no type has output.
//
// Checks, in this order, each failure returning at once:
//   inp or outp NULL, more than PFMLIB_MAX_PMCS events: PFMLIB_ERR_INVAL;
//   model_in: a flag its type does not define, a counter mask above 255:
//   PFMLIB_ERR_INVAL; more events than a Core input has entries (5):
//   PFMLIB_ERR_TOOMANY;
//   for each event in order: an index past the table, a privilege mask
//   (plm, or pfp_dfl_plm when plm is 0) that is 0, has bits other than
//   PFM_PLM0-3, or has neither PFM_PLM0 nor PFM_PLM3 (PLM1/PLM2 do not exist
//   on these PMUs, so it would count nothing): PFMLIB_ERR_INVAL; unit masks
//   (num_masks > 0): PFMLIB_ERR_UMASK; options that no counter able to count
//   the event implements (the sim's PERFEVTSELs reserve edge, invert and the
//   counter mask: pmu/desc's rsvd_msk): PFMLIB_ERR_INVAL;
//   more events than counters: PFMLIB_ERR_TOOMANY;
//   Core's pebs_used: PFMLIB_ERR_NOASSIGN, as libpfm 3.10 answered when
//   PEBS_ENABLE (pmc17) was unavailable: pfmfs's PMUs have none
//   (pfm_core_is_pebs() is 0 for every event);
//   no assignment of distinct counters that can count them, skipping
//   counters whose PMC is in pfp_unavail_pmcs: PFMLIB_ERR_NOASSIGN.
// The same event may be given twice (it gets two counters).
//
// Output (cleared first): pfp_pmds[i] = event i's counter (reg_num its PMD
// index, reg_addr its address); pfp_pmcs in event order, a general counter's
// PMC with its PERFEVTSEL value (event code | USR for PLM3 | OS for PLM0 | EN
// | INT | the options), a shared fixed-counter PMC once, where its first
// event is, holding every fixed counter's field (OS bit 0, USR bit 1,
// AnyThread bit 2, PMI bit 3, at 4 bits per counter). A fixed counter is
// chosen when the event can use one and has no counter mask, invert or
// edge, else the lowest free general counter.
PFMLIB_EXPORT int pfm_dispatch_events(pfmlib_input_param_t* inp, void* model_in, pfmlib_output_param_t* outp,
                                      void* model_out) {
  (void)model_out;
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!inp || !outp) return PFMLIB_ERR_INVAL;
  const unsigned n = inp->pfp_event_count;
  if (n > PFMLIB_MAX_PMCS) return PFMLIB_ERR_INVAL;
  ModelParams params;
  if (int rc = readModelParams(currentPmuType(*m), model_in, n, params)) return rc;

  std::vector<unsigned> plms(n);
  std::vector<std::vector<unsigned>> candidates(n);
  for (unsigned i = 0; i < n; ++i) {
    const pfmlib_event_t& ev = inp->pfp_events[i];
    if (ev.event >= m->events.size()) {
      verbosef("pfm_dispatch_events: event %u: no event index %u", i, ev.event);
      return PFMLIB_ERR_INVAL;
    }
    const EventInfo& e = m->events[ev.event];
    unsigned plm = ev.plm ? ev.plm : inp->pfp_dfl_plm;
    if (plm == 0 || (plm & ~kPrivMask) || !(plm & (PFM_PLM0 | PFM_PLM3))) {
      verbosef(
          "pfm_dispatch_events: event %u (%s): privilege mask 0x%x counts at no level (use PFM_PLM3 "
          "and/or PFM_PLM0)",
          i, e.name.c_str(), plm);
      return PFMLIB_ERR_INVAL;
    }
    if (ev.num_masks != 0) {
      verbosef("pfm_dispatch_events: event %u (%s) has no unit masks", i, e.name.c_str());
      return PFMLIB_ERR_UMASK;
    }
    plms[i] = plm;
    bool refused = false;
    candidates[i] = candidatesOf(*m, e, params.events[i], &inp->pfp_unavail_pmcs, &refused);
    if (candidates[i].empty() && refused) {
      verbosef(
          "pfm_dispatch_events: event %u (%s): no counter of this PMU (%s) implements its options "
          "(PERFEVTSEL bits 0x%llx%s; pmu/desc's rsvd_msk)",
          i, e.name.c_str(), m->model.c_str(), static_cast<unsigned long long>(params.events[i].filters),
          params.events[i].any_thread ? " and AnyThread" : "");
      return PFMLIB_ERR_INVAL;
    }
  }
  const unsigned counters = static_cast<unsigned>(m->pmds.size());
  if (n > counters) {
    verbosef("pfm_dispatch_events: %u events for %u counters", n, counters);
    return PFMLIB_ERR_TOOMANY;
  }
  if (params.pebs) {
    verbosef("pfm_dispatch_events: pebs_used: this PMU (%s) has no PEBS and no PEBS_ENABLE (pmc17)", m->model.c_str());
    return PFMLIB_ERR_NOASSIGN;
  }

  auto chosen = assignCounters(candidates);
  if (!chosen) {
    if (verboseEnabled()) {
      verbosef("pfm_dispatch_events: the events cannot all get a counter of their own:");
      for (unsigned i = 0; i < n; ++i)
        verbosef("  event %u (%s) can use %s", i, m->events[inp->pfp_events[i].event].name.c_str(),
                 listOf(candidates[i]).c_str());
    }
    return PFMLIB_ERR_NOASSIGN;
  }

  memset(outp, 0, sizeof *outp);
  for (unsigned i = 0; i < n; ++i) {
    const EventInfo& e = m->events[inp->pfp_events[i].event];
    const PmdInfo& d = *m->pmd((*chosen)[i]);
    const PmcInfo& c = *m->pmc(static_cast<unsigned>(d.ctl_pmc));

    pfmlib_reg_t& pmd = outp->pfp_pmds[outp->pfp_pmd_count++];
    pmd.reg_num = d.index;
    pmd.reg_addr = d.addr;

    if (!c.shared) {
      pfmlib_reg_t& pmc = outp->pfp_pmcs[outp->pfp_pmc_count++];
      pmc.reg_num = c.index;
      pmc.reg_addr = c.addr;
      pmc.reg_value = generalPmcValue(c, e, plms[i], params.events[i]);
    } else {
      // One entry per shared PMC, where its first event is; later fixed
      // events add their field to it.
      pfmlib_reg_t* pmc = nullptr;
      for (unsigned k = 0; k < outp->pfp_pmc_count; ++k)
        if (outp->pfp_pmcs[k].reg_num == c.index) pmc = &outp->pfp_pmcs[k];
      if (!pmc) {
        pmc = &outp->pfp_pmcs[outp->pfp_pmc_count++];
        pmc->reg_num = c.index;
        pmc->reg_addr = c.addr;
      }
      pmc->reg_value |= fixedField(c, d, plms[i], params.events[i]);
    }
    debugf("pfm_dispatch_events: event %u (%s) on pmd%u (%s), pmc%u", i, e.name.c_str(), d.index, d.name.c_str(),
           c.index);
  }
  if (debugEnabled())
    for (unsigned k = 0; k < outp->pfp_pmc_count; ++k)
      debugf("pfm_dispatch_events: pmc%u = 0x%llx", outp->pfp_pmcs[k].reg_num, outp->pfp_pmcs[k].reg_value);
  return PFMLIB_SUCCESS;
}
