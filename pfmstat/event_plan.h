// From -e arguments to event sets: parsing the event lists, looking every
// name up in pmu/events, and placing the events on counters, one set per
// {group} and as few sets as fit the rest, as perf schedules its groups.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pfmstat/pmu_table.h"

namespace pfmstat {

struct EventSpec {
  std::string text;  // as written, modifiers included: what the report shows
  std::string name;  // without modifiers
  bool user = true;  // :u (the default when neither is given)
  bool kernel = false;
  bool raw = false;  // rHEX: an event code, placed on any general counter
  std::uint64_t code = 0;
};

struct GroupSpec {
  std::vector<EventSpec> events;
  bool grouped = false;  // {A,B}: must count together, in one set
  // -M: a metric's events, in one set when they fit so that its ratio is
  // exact; that set may be shared (a set already counting one of them
  // lends it, it is not counted twice); spread over sets when they fit in
  // none, and then the metric is an estimate.
  bool metric = false;
};

// Every -e argument, in order. Throws UsageError (unbalanced braces, an empty
// name, an unknown modifier).
std::vector<GroupSpec> parseEventArgs(const std::vector<std::string>& args);

// The events pfmstat counts without -e: those of perf stat's default that the
// PMU has and that mean something at user level, the mount's default
// (cycles, instructions, branches, branch misses; on perf-sw the CPU time
// and page faults: context switches and migrations happen in the kernel).
std::vector<GroupSpec> defaultEvents(const std::vector<EventInfo>& table);

struct Placed {
  std::string label;  // EventSpec::text
  std::string event;  // the pmu/events name it counts ("" for a raw event)
  std::string mods;   // ":u", ":k" or ":u:k": what a metric's inputs must share
  unsigned pmd = 0;
  bool fixed = false;       // a fixed counter: configured by its field of pmc16
  std::string pmc_value;    // for a general counter: what its pmcK gets
  std::uint64_t field = 0;  // for a fixed one: its privilege bits in pmc16, shifted
};

struct SetPlan {
  std::vector<Placed> counters;  // in the order the user named them
  std::string pmd_lines;         // more `pmdK ...` lines after the PMCs (record: the sampling period)

  // The set's registers as one `regs` write (pfmfs(5), sets/N/regs).
  std::string regs() const;
};

// Places every event; throws UsageError for an unknown name and for a group
// that does not fit one set.
std::vector<SetPlan> planSets(const std::vector<GroupSpec>& groups, const PmuInfo& info,
                              const std::vector<EventInfo>& table);

}  // namespace pfmstat
