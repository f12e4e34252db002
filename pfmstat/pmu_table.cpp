#include "pfmstat/pmu_table.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "pfmstat/comma_list.h"
#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

std::uint64_t number(const std::string& text, std::string_view what) {
  if (text.empty()) throw RunError(fmt::format("the mount's {} is empty", what));
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 0);
  if (errno || *end) throw RunError(fmt::format("the mount's {} '{}' is not a number", what, text));
  return v;
}

// A list the mount prints: nothing at all when the value is empty.
std::vector<std::string> listOf(const std::string& text) {
  return text.empty() ? std::vector<std::string>{} : splitCommas(text);
}

// perf's generic hardware event names, for the architectural events that
// mean the same thing: what a perf user types first.
struct Generic {
  const char* perf;
  const char* arch;
};
constexpr Generic kGeneric[] = {
    {"CYCLES", "UNHALTED_CORE_CYCLES"},          {"CPU_CYCLES", "UNHALTED_CORE_CYCLES"},
    {"INSTRUCTIONS", "INSTRUCTION_RETIRED"},     {"REF_CYCLES", "UNHALTED_REFERENCE_CYCLES"},
    {"CACHE_REFERENCES", "LLC_REFERENCES"},      {"CACHE_MISSES", "LLC_MISSES"},
    {"BRANCHES", "BRANCH_INSTRUCTIONS_RETIRED"}, {"BRANCH_INSTRUCTIONS", "BRANCH_INSTRUCTIONS_RETIRED"},
    {"BRANCH_MISSES", "BRANCH_MISSES_RETIRED"},
};

}  // namespace

std::map<std::string, std::string> parseRecord(std::string_view line) {
  std::map<std::string, std::string> kv;
  std::size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t eq = line.find('=', i);
    if (eq == std::string_view::npos) throw RunError(fmt::format("the mount's record '{}' does not parse", line));
    std::string key(line.substr(i, eq - i));
    std::string value;
    i = eq + 1;
    if (i < line.size() && line[i] == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size()) ++i;
        value += line[i];
      }
      if (i >= line.size()) throw RunError(fmt::format("the mount's record '{}' has an open quote", line));
      ++i;
    } else {
      std::size_t end = line.find(' ', i);
      if (end == std::string_view::npos) end = line.size();
      value = std::string(line.substr(i, end - i));
      i = end;
    }
    kv[key] = value;
  }
  return kv;
}

std::vector<std::string_view> recordLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    if (nl > start) lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

bool PmuInfo::has(std::string_view feature) const {
  for (const auto& f : features)
    if (f == feature) return true;
  return false;
}

PmuInfo parsePmuInfo(std::string_view text) {
  while (!text.empty() && (text.back() == '\n')) text.remove_suffix(1);
  auto kv = parseRecord(text);
  auto need = [&](const char* key) -> const std::string& {
    auto it = kv.find(key);
    if (it == kv.end()) throw RunError(fmt::format("the mount's pmu/info has no {}=", key));
    return it->second;
  };
  PmuInfo info;
  info.backend = need("backend");
  info.model = need("model");
  info.pmds = number(need("pmds"), "pmu/info pmds");
  info.counters = static_cast<unsigned>(number(need("counters"), "pmu/info counters"));
  info.fixed = static_cast<unsigned>(number(need("fixed"), "pmu/info fixed"));
  info.width = static_cast<unsigned>(number(need("width"), "pmu/info width"));
  info.features = listOf(need("features"));
  if (auto it = kv.find("tick_ns"); it != kv.end()) info.tick_ns = number(it->second, "pmu/info tick_ns");
  return info;
}

std::vector<EventInfo> parseEvents(std::string_view text) {
  std::vector<EventInfo> events;
  for (std::string_view line : recordLines(text)) {
    auto kv = parseRecord(line);
    EventInfo e;
    e.name = kv["name"];
    if (e.name.empty()) throw RunError(fmt::format("the mount's pmu/events line '{}' has no name", line));
    e.code = number(kv["code"], "pmu/events code");
    e.pmds = number(kv["pmds"], "pmu/events pmds");
    if (auto it = kv.find("aliases"); it != kv.end()) e.aliases = listOf(it->second);
    events.push_back(std::move(e));
  }
  return events;
}

std::string normalName(std::string_view name) {
  std::string out;
  for (char c : name) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const EventInfo* findEvent(const std::vector<EventInfo>& table, std::string_view name) {
  std::string want = normalName(name);
  for (const auto& e : table) {
    if (normalName(e.name) == want) return &e;
    for (const auto& a : e.aliases)
      if (normalName(a) == want) return &e;
  }
  for (const auto& g : kGeneric)
    if (want == g.perf) return findEvent(table, g.arch);
  return nullptr;
}

}  // namespace pfmstat
