// What pfmstat needs of the mount's PMU: pmu/info (backend, counters,
// features, tick) and pmu/events (names, codes, the counters that can count
// each), parsed from their text (pfmfs(5)).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pfmstat {

// One line of `key=value` pairs; a value may be "quoted" with \" and \\.
// Throws RunError on a line that does not parse.
std::map<std::string, std::string> parseRecord(std::string_view line);

// The non-empty lines of a file of records (views into `text`).
std::vector<std::string_view> recordLines(std::string_view text);

struct PmuInfo {
  std::string backend, model;
  std::uint64_t pmds = 0;  // mask of the PMDs that exist
  unsigned counters = 0, fixed = 0, width = 0;
  std::vector<std::string> features;
  std::uint64_t tick_ns = 1'000'000;  // mounts before tick_ns= had the default

  bool has(std::string_view feature) const;
};

struct EventInfo {
  std::string name;
  std::uint64_t code = 0;
  std::uint64_t pmds = 0;  // counters that can count it, fixed ones included
  std::vector<std::string> aliases;
};

PmuInfo parsePmuInfo(std::string_view text);
std::vector<EventInfo> parseEvents(std::string_view text);

// A name as a user writes it, as the mount compares it: upper case, '-' as '_'.
std::string normalName(std::string_view name);

// The event a user's name means: its name or an alias in the table, or one
// of perf's generic names (cycles, instructions, ...) where the table has the
// event it stands for. Nothing when unknown.
const EventInfo* findEvent(const std::vector<EventInfo>& table, std::string_view name);

}  // namespace pfmstat
