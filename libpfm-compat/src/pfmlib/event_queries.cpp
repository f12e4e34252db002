// The event table of pmu/events through libpfm's calls: lookup by name or
// code, names, codes, counters, descriptions, and the cycle and
// instruction events. An event's index is its line number in pmu/events,
// from 0. pfmfs events have no unit masks: every mask query says so.
#include <ctype.h>
#include <string.h>

#include <string_view>

#include "key_values.h"
#include "library.h"

using namespace pfmcompat::pfmlib;

namespace {

// libpfm's PFMLIB_CNT_FIRST: "whichever counter" in pfm_get_event_code_counter().
constexpr unsigned kAnyCounter = ~0u;

// Names compare case-insensitively with '-' and '_' alike, so that
// "unhalted-core-cycles" finds UNHALTED_CORE_CYCLES.
bool sameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = static_cast<char>(toupper(static_cast<unsigned char>(a[i])));
    char y = static_cast<char>(toupper(static_cast<unsigned char>(b[i])));
    if (x == '-') x = '_';
    if (y == '-') y = '_';
    if (x != y) return false;
  }
  return true;
}

// An event's own name first, then its aliases (libpfm 3.10's names of the
// architectural events, pmu/events aliases=), as the mount resolves them.
int findByName(const PmuModel& m, std::string_view name, unsigned* idx) {
  for (std::size_t i = 0; i < m.events.size(); ++i)
    if (sameName(m.events[i].name, name)) {
      *idx = static_cast<unsigned>(i);
      return PFMLIB_SUCCESS;
    }
  for (std::size_t i = 0; i < m.events.size(); ++i)
    for (const auto& a : m.events[i].aliases)
      if (sameName(a, name)) {
        *idx = static_cast<unsigned>(i);
        return PFMLIB_SUCCESS;
      }
  return PFMLIB_ERR_NOTFOUND;
}

// The first event at or after `from` whose code is `code`.
int findByCode(const PmuModel& m, std::uint64_t code, std::size_t from, unsigned* idx) {
  for (std::size_t i = from; i < m.events.size(); ++i)
    if (m.events[i].code == code) {
      *idx = static_cast<unsigned>(i);
      return PFMLIB_SUCCESS;
    }
  return PFMLIB_ERR_NOTFOUND;
}

// A name, or a number (decimal or 0x hex) taken as an event code, as libpfm
// told them apart: by the first character being a digit.
int findEvent(const PmuModel& m, std::string_view str, unsigned* idx) {
  if (!str.empty() && isdigit(static_cast<unsigned char>(str[0]))) {
    auto code = parseNumber(str);
    if (!code || trimRight(str).size() != str.size()) return PFMLIB_ERR_INVAL;  // no trailing blanks
    return findByCode(m, *code, 0, idx);
  }
  return findByName(m, str, idx);
}

// Fills `e` with event `idx` and nothing else, as libpfm did (it cleared the
// whole descriptor first).
void fillEvent(pfmlib_event_t* e, unsigned idx) {
  memset(e, 0, sizeof *e);
  e->event = idx;
  e->num_masks = 0;
}

// The first event of `names` the PMU has; PFMLIB_ERR_NOTSUPP when none.
int wellKnownEvent(pfmlib_event_t* e, std::initializer_list<const char*> names) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!e) return PFMLIB_ERR_INVAL;
  for (const char* n : names) {
    unsigned idx;
    if (findByName(*m, n, &idx) == PFMLIB_SUCCESS) {
      fillEvent(e, idx);
      return PFMLIB_SUCCESS;
    }
  }
  return PFMLIB_ERR_NOTSUPP;
}

}  // namespace

// `str`: an event name (any case, '-' for '_'), or an event code in decimal
// or 0x hex (a string that starts with a digit but is not a whole number is
// PFMLIB_ERR_INVAL). PFMLIB_ERR_NOTFOUND when no event matches.
PFMLIB_EXPORT int pfm_find_event(const char* str, unsigned int* idx) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!str || !idx) return PFMLIB_ERR_INVAL;
  return findEvent(*m, str, idx);
}

PFMLIB_EXPORT int pfm_find_event_byname(const char* name, unsigned int* idx) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!name || !idx) return PFMLIB_ERR_INVAL;
  return findByName(*m, name, idx);
}

// The first event whose code (pmu/events code=) is `code`.
PFMLIB_EXPORT int pfm_find_event_bycode(int code, unsigned int* idx) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!idx) return PFMLIB_ERR_INVAL;
  if (code < 0) return PFMLIB_ERR_NOTFOUND;
  return findByCode(*m, static_cast<std::uint64_t>(code), 0, idx);
}

// The next event after index `start` with the same code.
PFMLIB_EXPORT int pfm_find_event_bycode_next(int code, unsigned int start, unsigned int* next) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!next) return PFMLIB_ERR_INVAL;
  if (code < 0) return PFMLIB_ERR_NOTFOUND;
  return findByCode(*m, static_cast<std::uint64_t>(code), std::size_t{start} + 1, next);
}

// No event has unit masks: any name is PFMLIB_ERR_UMASK.
PFMLIB_EXPORT int pfm_find_event_mask(unsigned int event_idx, const char* str, unsigned int* mask_idx) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!str || !mask_idx || event_idx >= m->events.size()) return PFMLIB_ERR_INVAL;
  return PFMLIB_ERR_UMASK;
}

// "NAME" (or a code, as pfm_find_event takes it) fills `e`: event index, no
// masks, every other field 0. "NAME:MASK..." is PFMLIB_ERR_UMASK once NAME is
// found, since no event has unit masks; `e` is then left as it was.
PFMLIB_EXPORT int pfm_find_full_event(const char* str, pfmlib_event_t* e) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!str || !e) return PFMLIB_ERR_INVAL;
  std::string_view s(str);
  std::size_t colon = s.find(':');
  unsigned idx;
  int rc = findEvent(*m, s.substr(0, colon), &idx);
  if (rc != PFMLIB_SUCCESS) return rc;
  if (colon != std::string_view::npos) return PFMLIB_ERR_UMASK;
  fillEvent(e, idx);
  return PFMLIB_SUCCESS;
}

// The longest event name, without the NUL.
PFMLIB_EXPORT int pfm_get_max_event_name_len(size_t* len) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!len) return PFMLIB_ERR_INVAL;
  std::size_t longest = 0;
  for (const auto& e : m->events) longest = e.name.size() > longest ? e.name.size() : longest;
  *len = longest;
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_num_events(unsigned int* count) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!count) return PFMLIB_ERR_INVAL;
  *count = static_cast<unsigned>(m->events.size());
  return PFMLIB_SUCCESS;
}

PFMLIB_EXPORT int pfm_get_num_event_masks(unsigned int event_idx, unsigned int* count) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (event_idx >= m->events.size() || !count) return PFMLIB_ERR_INVAL;
  *count = 0;
  return PFMLIB_SUCCESS;
}

// `maxlen` counts the NUL. PFMLIB_ERR_FULL when the name does not fit (the
// buffer then holds the part that fits).
PFMLIB_EXPORT int pfm_get_event_name(unsigned int idx, char* name, size_t maxlen) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (idx >= m->events.size() || !name || maxlen < 1) return PFMLIB_ERR_INVAL;
  return copyName(m->events[idx].name, name, maxlen);
}

// The name of e->event; with no unit masks it is the event name itself. An
// `e` that names masks (num_masks > 0) is PFMLIB_ERR_INVAL.
PFMLIB_EXPORT int pfm_get_full_event_name(pfmlib_event_t* e, char* name, size_t maxlen) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (!e || !name || maxlen < 1 || e->event >= m->events.size() || e->num_masks != 0) return PFMLIB_ERR_INVAL;
  return copyName(m->events[e->event].name, name, maxlen);
}

// The code of pmu/events: event select | umask << 8.
PFMLIB_EXPORT int pfm_get_event_code(unsigned int idx, int* code) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (idx >= m->events.size() || !code) return PFMLIB_ERR_INVAL;
  *code = static_cast<int>(m->events[idx].code);
  return PFMLIB_SUCCESS;
}

// The code is the same on every counter; `cnt` must be a counter that can
// count the event, or ~0u for any.
PFMLIB_EXPORT int pfm_get_event_code_counter(unsigned int idx, unsigned int cnt, int* code) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (idx >= m->events.size() || !code) return PFMLIB_ERR_INVAL;
  if (cnt != kAnyCounter && (cnt >= kMaxReg || !(m->events[idx].pmds & (RegMask{1} << cnt)))) return PFMLIB_ERR_INVAL;
  *code = static_cast<int>(m->events[idx].code);
  return PFMLIB_SUCCESS;
}

// The PMDs that can count the event (pmds= of pmu/events).
PFMLIB_EXPORT int pfm_get_event_counters(unsigned int idx, pfmlib_regmask_t* counters) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (idx >= m->events.size() || !counters) return PFMLIB_ERR_INVAL;
  toRegmask(m->events[idx].pmds, counters);
  return PFMLIB_SUCCESS;
}

// *str: a malloc'd copy of the description; the caller frees it.
PFMLIB_EXPORT int pfm_get_event_description(unsigned int idx, char** str) {
  const PmuModel* m = currentModel();
  if (!m) return PFMLIB_ERR_NOINIT;
  if (idx >= m->events.size() || !str) return PFMLIB_ERR_INVAL;
  char* copy = strdup(m->events[idx].desc.c_str());
  if (!copy) return PFMLIB_ERR_NOMEM;
  *str = copy;
  return PFMLIB_SUCCESS;
}

// Unit-mask queries: no event has masks, so every mask index is invalid.
PFMLIB_EXPORT int pfm_get_event_mask_code(unsigned int, unsigned int, unsigned int*) {
  return currentModel() ? PFMLIB_ERR_INVAL : PFMLIB_ERR_NOINIT;
}

PFMLIB_EXPORT int pfm_get_event_mask_name(unsigned int, unsigned int, char*, size_t) {
  return currentModel() ? PFMLIB_ERR_INVAL : PFMLIB_ERR_NOINIT;
}

PFMLIB_EXPORT int pfm_get_event_mask_description(unsigned int, unsigned int, char**) {
  return currentModel() ? PFMLIB_ERR_INVAL : PFMLIB_ERR_NOINIT;
}

// Core cycles: UNHALTED_CORE_CYCLES, else CPU_CYCLES or CYCLES. perf-sw has
// none (its clocks count time, not cycles): PFMLIB_ERR_NOTSUPP.
PFMLIB_EXPORT int pfm_get_cycle_event(pfmlib_event_t* e) {
  return wellKnownEvent(e, {"UNHALTED_CORE_CYCLES", "CPU_CYCLES", "CYCLES"});
}

// Retired instructions: INSTRUCTION_RETIRED, else INSTRUCTIONS_RETIRED or
// INSTRUCTIONS; PFMLIB_ERR_NOTSUPP when the PMU has none.
PFMLIB_EXPORT int pfm_get_inst_retired_event(pfmlib_event_t* e) {
  return wellKnownEvent(e, {"INSTRUCTION_RETIRED", "INSTRUCTIONS_RETIRED", "INSTRUCTIONS"});
}
