// The mount's PMU as the event-encoding calls need it: pmu/info, the event
// table of pmu/events and the registers of pmu/desc, read once by
// pfm_initialize() and kept, immutable, for the life of the process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pfmcompat::pfmlib {

// Register numbers on pfmfs stay below 64, so a u64 holds any set of them.
using RegMask = std::uint64_t;
inline constexpr unsigned kMaxReg = 64;

struct EventInfo {
  std::string name;                  // as pmu/events prints it (upper case)
  std::uint64_t code = 0;            // event select | umask << 8, in PERFEVTSEL layout
  RegMask pmcs = 0;                  // PMCs that can select it
  RegMask pmds = 0;                  // counters (PMDs) that can count it
  std::string desc;                  // one line for people
  std::vector<std::string> aliases;  // other names it answers to (pmu/events aliases=)
};

struct PmcInfo {
  unsigned index = 0;          // pmcN
  std::string name;            // e.g. PERFEVTSEL0, FIXED_CTR_CTRL
  std::uint64_t addr = 0;      // hardware address (MSR on x86)
  std::uint64_t rsvd_msk = 0;  // bits that must stay 0
  RegMask pmds = 0;            // the counters this PMC configures
  // Several counters share this PMC, a 4-bit field each (x86 FIXED_CTR_CTRL):
  // the dispatch then encodes fields instead of a PERFEVTSEL.
  bool shared = false;
};

struct PmdInfo {
  unsigned index = 0;      // pmdN
  std::string name;        // e.g. PMC0, FIXED_CTR0
  std::uint64_t addr = 0;  // hardware address
  unsigned width = 0;      // implemented bits
  int ctl_pmc = -1;        // index of the PMC that configures it; -1 none found
};

struct PmuModel {
  std::string backend;            // sim | perf | x86
  std::string model;              // e.g. intel-arch-v2, perf-sw
  RegMask impl_pmcs = 0;          // pmcs= of pmu/info
  RegMask impl_pmds = 0;          // pmds= of pmu/info
  unsigned width = 0;             // width= of pmu/info
  std::vector<EventInfo> events;  // in pmu/events order: the event index
  std::vector<PmcInfo> pmcs;      // increasing index
  std::vector<PmdInfo> pmds;      // increasing index

  const PmcInfo* pmc(unsigned index) const;
  const PmdInfo* pmd(unsigned index) const;
  // A counter whose configuration is a field of a shared PMC (a fixed counter).
  bool isFixed(const PmdInfo& d) const;
};

// The parsers of pmu/info and pmu/events, apart from the reading so that the
// fuzzers (tests/fuzz/) reach them. parsePmuEvents appends to m.events and
// needs m's registers (for an older daemon's lines without pmds=); false, with
// the 1-based number of the line that does not parse in *bad_line.
bool parsePmuInfo(std::string_view text, PmuModel& m);
bool parsePmuEvents(std::string_view text, PmuModel& m, unsigned* bad_line);

// Reads the model under `mount`. Returns false, with the reason in `why`,
// when a file is missing or does not parse: the library then reports
// PFMLIB_ERR_NOTSUPP.
bool loadPmuModel(const char* mount, PmuModel& out, std::string& why);

}  // namespace pfmcompat::pfmlib
