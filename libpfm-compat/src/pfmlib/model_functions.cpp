// The model-specific calls libpfm 3.10 exported beside pfmlib.h's (declared
// in pfmlib_core.h, pfmlib_intel_atom.h and pfmlib_intel_nhm.h). They ask
// about features pfmfs's PMUs do not have, PEBS and the Nehalem uncore, so
// they answer "no" for every event, with libpfm 3.10's codes for a bad
// argument: pfmon's Core module and libpfm's own examples call them before
// they use a feature, and stop cleanly at the "no".
#include <perfmon/pfmlib_core.h>
#include <perfmon/pfmlib_intel_atom.h>
#include <perfmon/pfmlib_intel_nhm.h>
#include <stdlib.h>
#include <string.h>

#include "library.h"

using namespace pfmcompat::pfmlib;

namespace {

// Whether `e` names an event of the mount's table; false before
// pfm_initialize().
bool knownEvent(const pfmlib_event_t* e) {
  const PmuModel* m = currentModel();
  return m && e && e->event < m->events.size();
}

}  // namespace

// 1 if the event can be measured with PEBS: never on pfmfs. libpfm 3.10
// answered 0 for a bad argument too (without pfm_initialize(), from Core's
// own table).
PFMLIB_EXPORT int pfm_core_is_pebs(pfmlib_event_t* e) {
  (void)e;
  return 0;
}

PFMLIB_EXPORT int pfm_intel_atom_has_pebs(pfmlib_event_t* e) {
  (void)e;
  return 0;
}

// 0 for an event of the table (no PEBS on pfmfs); PFMLIB_ERR_INVAL for NULL,
// an index past the table or any call before pfm_initialize(), as libpfm
// 3.10 answered when its Nehalem table was not the current one.
PFMLIB_EXPORT int pfm_nhm_is_pebs(pfmlib_event_t* e) { return knownEvent(e) ? 0 : PFMLIB_ERR_INVAL; }

// 0 before pfm_initialize() and for an event of the table (no uncore on
// pfmfs); PFMLIB_ERR_INVAL for NULL or an index past the table.
PFMLIB_EXPORT int pfm_nhm_is_uncore(pfmlib_event_t* e) {
  if (!currentModel()) return 0;
  return knownEvent(e) ? 0 : PFMLIB_ERR_INVAL;
}

namespace {

// The data-source field (bits 3:0) of a Nehalem PEBS load-latency record:
// where the load found its data (Intel SDM vol. 3B, "Load Latency
// Performance Monitoring Facility"). Hardware facts, not pfmfs's: a program
// that decodes a record from real hardware may still ask.
const char* const kDataSources[16] = {
    "unknown L3 miss",
    "L1 data cache hit",
    "hit on a line already being fetched by an earlier miss (fill buffer)",
    "L2 hit",
    "L3 hit, no snoop needed",
    "L3 hit, another core snooped, no modified copy (clean)",
    "L3 hit, another core snooped, modified copy found (HITM)",
    "reserved",
    "L3 miss, local home, data forwarded by a remote cache's clean copy",
    "reserved",
    "L3 miss, local home, local DRAM (line left shared)",
    "L3 miss, remote home, remote DRAM (line left shared)",
    "L3 miss, local home, local DRAM (line left exclusive)",
    "L3 miss, remote home, remote DRAM (line left exclusive)",
    "reserved",
    "uncacheable memory",
};

}  // namespace

// *desc = a copy (free() it) of the description of data source `val` (0-15);
// PFMLIB_ERR_INVAL for a larger value or a NULL desc, PFMLIB_ERR_NOMEM.
PFMLIB_EXPORT int pfm_nhm_data_src_desc(unsigned int val, char** desc) {
  if (val >= sizeof kDataSources / sizeof kDataSources[0] || !desc) return PFMLIB_ERR_INVAL;
  *desc = strdup(kDataSources[val]);
  return *desc ? PFMLIB_SUCCESS : PFMLIB_ERR_NOMEM;
}
