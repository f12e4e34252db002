// The model-specific input of pfm_dispatch_events(): libpfm 3.10 let a
// program pass, beside pfmlib_input_param_t, a structure of the current PMU
// type (pfmlib_gen_ia32_input_param_t, pfmlib_core_input_param_t) that asks
// more of each event. This reads it into what a PERFEVTSEL can carry, so that
// the dispatch itself knows no model's structure.
#pragma once

#include <cstdint>
#include <vector>

namespace pfmcompat::pfmlib {

// What one event asks beyond its code and privilege levels.
struct EventOptions {
  // Edge, invert and counter-mask bits, in PERFEVTSEL layout: they refine
  // what a general counter counts, which a fixed counter cannot do.
  std::uint64_t filters = 0;
  bool any_thread = false;  // count the core's other hyperthreads too (AnyThread)

  bool empty() const { return filters == 0 && !any_thread; }
};

struct ModelParams {
  std::vector<EventOptions> events;  // one per event; all empty without model_in
  bool pebs = false;                 // pfmlib_core_input_param_t's pebs_used
};

// Reads `model_in` (nullptr: no options) for `n` events as the structure of
// libpfm `pmu_type`. Returns PFMLIB_SUCCESS, or, with the reason given to
// verbosef(): PFMLIB_ERR_INVAL for a flag the type does not define or a
// counter mask above 255, PFMLIB_ERR_TOOMANY when the type's structure has
// fewer entries than `n` (Core: 5), as libpfm 3.10 did.
int readModelParams(int pmu_type, const void* model_in, unsigned n, ModelParams& out);

}  // namespace pfmcompat::pfmlib
