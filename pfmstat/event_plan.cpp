#include "pfmstat/event_plan.h"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

#include "pfmstat/comma_list.h"
#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

constexpr unsigned kFirstFixed = 16;                          // perfmon2's numbering: pmd16.. are fixed counters
constexpr unsigned kFixedCtrl = 16;                           // pmc16: IA32_FIXED_CTR_CTRL
constexpr std::uint64_t kUsr = 1ull << 16, kOs = 1ull << 17;  // PERFEVTSEL's privilege bits

std::string trim(const std::string& s) {
  std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

EventSpec parseEvent(const std::string& item) {
  EventSpec e;
  e.text = trim(item);
  if (e.text.empty()) throw UsageError("an empty event name in -e");
  std::size_t colon = e.text.find(':');
  e.name = e.text.substr(0, colon);
  if (e.name.empty()) throw UsageError(fmt::format("'{}': no event name before ':'", e.text));
  if (colon != std::string::npos) {
    // perf's modifiers: u, k, in any order, one part or several (:u:k, :uk).
    e.user = e.kernel = false;
    for (char c : e.text.substr(colon + 1)) {
      if (c == 'u')
        e.user = true;
      else if (c == 'k')
        e.kernel = true;
      else if (c != ':')
        throw UsageError(fmt::format("'{}': unknown modifier '{}' (pfmstat knows :u and :k)", e.text, c));
    }
    if (!e.user && !e.kernel) throw UsageError(fmt::format("'{}': a modifier is :u or :k", e.text));
  }
  // rHEX, perf's raw event: PERFEVTSEL's low 32 bits (event select, unit
  // mask, edge, inv, cmask); the privilege bits come from the modifiers.
  if (e.name.size() > 1 && e.name[0] == 'r' &&
      e.name.find_first_not_of("0123456789abcdefABCDEF", 1) == std::string::npos) {
    errno = 0;
    unsigned long long v = std::strtoull(e.name.c_str() + 1, nullptr, 16);
    if (errno || e.name.size() > 9)
      throw UsageError(fmt::format("'{}': a raw event is r and at most 8 hex digits (PERFEVTSEL's bits 31:0)", e.text));
    e.raw = true;
    e.code = v;
  }
  return e;
}

std::vector<EventSpec> parseList(const std::string& list) {
  std::vector<EventSpec> out;
  for (const auto& item : splitCommas(list)) out.push_back(parseEvent(item));
  return out;
}

std::uint64_t generalMask(const PmuInfo& info) { return info.pmds & ((1ull << kFirstFixed) - 1); }

}  // namespace

std::vector<GroupSpec> parseEventArgs(const std::vector<std::string>& args) {
  std::vector<GroupSpec> groups;
  for (const auto& arg : args) {
    // A list of events and {groups}: "A,{B,C},D".
    std::size_t i = 0;
    while (i < arg.size()) {
      if (arg[i] == ',') {
        ++i;
        continue;
      }
      if (arg[i] == '{') {
        std::size_t close = arg.find('}', i);
        if (close == std::string::npos) throw UsageError(fmt::format("-e '{}': a '{{' without its '}}'", arg));
        std::string inner = arg.substr(i + 1, close - i - 1);
        if (inner.find('{') != std::string::npos) throw UsageError(fmt::format("-e '{}': groups do not nest", arg));
        groups.push_back(GroupSpec{parseList(inner), true});
        i = close + 1;
        // "{A,B}:u" would mean modifiers for the group: not supported, say so.
        if (i < arg.size() && arg[i] != ',')
          throw UsageError(fmt::format("-e '{}': a group ends with '}}' (modifiers go on each event)", arg));
        continue;
      }
      std::size_t next = arg.find_first_of("{}", i);
      if (next != std::string::npos && arg[next] == '}')
        throw UsageError(fmt::format("-e '{}': a '}}' without its '{{'", arg));
      std::string list = arg.substr(i, next == std::string::npos ? std::string::npos : next - i);
      while (!list.empty() && list.back() == ',') list.pop_back();
      if (list.empty()) throw UsageError(fmt::format("-e '{}': an empty event list", arg));
      // A loose list: each event on its own, packed into sets as they fit.
      for (auto& e : parseList(list)) groups.push_back(GroupSpec{{std::move(e)}, false});
      i = next == std::string::npos ? arg.size() : next;
    }
  }
  return groups;
}

std::vector<GroupSpec> defaultEvents(const std::vector<EventInfo>& table) {
  static const char* const kPreferred[] = {
      "UNHALTED_CORE_CYCLES",  "INSTRUCTION_RETIRED", "BRANCH_INSTRUCTIONS_RETIRED",
      "BRANCH_MISSES_RETIRED", "TASK_CLOCK",          "PAGE_FAULTS",
  };
  std::vector<GroupSpec> out;
  for (const char* name : kPreferred)
    if (findEvent(table, name)) out.push_back(GroupSpec{{parseEvent(name)}, false});
  for (std::size_t i = 0; out.empty() && i < table.size() && i < 4; ++i)
    out.push_back(GroupSpec{{parseEvent(table[i].name)}, false});
  return out;
}

std::string SetPlan::regs() const {
  std::string out;
  std::uint64_t fixed_ctrl = 0;
  for (const auto& c : counters) {
    if (c.fixed)
      fixed_ctrl |= c.field;
    else
      out += fmt::format("pmc{} {}\n", c.pmd, c.pmc_value);
  }
  if (fixed_ctrl) out += fmt::format("pmc{} {:#x}\n", kFixedCtrl, fixed_ctrl);
  return out + pmd_lines;
}

std::vector<SetPlan> planSets(const std::vector<GroupSpec>& groups, const PmuInfo& info,
                              const std::vector<EventInfo>& table) {
  // Every name first: an unknown one is reported before anything is placed.
  struct Want {
    const EventSpec* spec;
    std::uint64_t general;  // the general counters that can count it
    std::uint64_t fixed;    // the fixed ones
    std::string pmc_value;
    std::string event;  // pmu/events' name; "" for a raw event
    std::string mods;
  };
  std::vector<std::vector<Want>> wants;
  for (const auto& g : groups) {
    std::vector<Want> w;
    for (const auto& e : g.events) {
      std::string mods = std::string(e.user ? ":u" : "") + (e.kernel ? ":k" : "");
      if (e.raw) {
        w.push_back({&e, generalMask(info), 0,
                     fmt::format("{:#x}", e.code | (e.user ? kUsr : 0) | (e.kernel ? kOs : 0)), "", mods});
        continue;
      }
      const EventInfo* ev = findEvent(table, e.name);
      if (!ev) throw UsageError(fmt::format("unknown event '{}' (the mount's pmu/events lists them)", e.name));
      std::uint64_t mask = ev->pmds & info.pmds;
      w.push_back({&e, mask & generalMask(info), mask & ~((1ull << kFirstFixed) - 1), ev->name + mods, ev->name, mods});
    }
    wants.push_back(std::move(w));
  }

  // Tries to place a group in a set whose counters `used` are taken; a
  // fixed counter first where the event has one (it leaves the general ones
  // to events that need them, as perf does), else the lowest general one.
  auto place = [](const std::vector<Want>& group, std::uint64_t used, std::vector<Placed>& out) {
    std::vector<Placed> placed;
    for (const auto& w : group) {
      std::uint64_t fixed = w.fixed & ~used, general = w.general & ~used;
      Placed p;
      p.label = w.spec->text;
      p.event = w.event;
      p.mods = w.mods;
      if (fixed) {
        p.pmd = static_cast<unsigned>(std::countr_zero(fixed));
        p.fixed = true;
        // Per fixed counter a 4-bit field: OS bit 0, USR bit 1.
        p.field = static_cast<std::uint64_t>((w.spec->kernel ? 1 : 0) | (w.spec->user ? 2 : 0))
                  << (4 * (p.pmd - kFirstFixed));
      } else if (general) {
        p.pmd = static_cast<unsigned>(std::countr_zero(general));
        p.pmc_value = w.pmc_value;
      } else {
        return false;
      }
      used |= 1ull << p.pmd;
      placed.push_back(std::move(p));
    }
    out.insert(out.end(), placed.begin(), placed.end());
    return true;
  };
  auto usedOf = [](const SetPlan& s) {
    std::uint64_t used = 0;
    for (const auto& c : s.counters) used |= 1ull << c.pmd;
    return used;
  };

  // A metric's events that `set` does not count yet (each once).
  auto missing = [](const std::vector<Want>& group, const SetPlan& set) {
    std::vector<Want> out;
    auto counted = [](const std::string& event, const std::string& mods, const std::vector<Placed>& in) {
      for (const auto& c : in)
        if (c.event == event && c.mods == mods) return true;
      return false;
    };
    for (const auto& w : group) {
      bool seen = counted(w.event, w.mods, set.counters);
      for (const auto& o : out) seen |= o.event == w.event && o.mods == w.mods;
      if (!seen) out.push_back(w);
    }
    return out;
  };

  std::vector<SetPlan> sets;
  int loose = -1;  // the set that takes loose events now
  auto placeLoose = [&](const std::vector<Want>& want, const std::string& text) {
    if (loose >= 0 &&
        place(want, usedOf(sets[static_cast<std::size_t>(loose)]), sets[static_cast<std::size_t>(loose)].counters))
      return;
    SetPlan s;
    if (!place(want, 0, s.counters)) throw UsageError(fmt::format("event '{}' has no counter on this PMU", text));
    sets.push_back(std::move(s));
    loose = static_cast<int>(sets.size()) - 1;
  };
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].grouped) {
      SetPlan s;
      if (!place(wants[i], 0, s.counters)) {
        std::string names;
        for (const auto& e : groups[i].events) names += (names.empty() ? "" : ",") + e.text;
        throw UsageError(
            fmt::format("group {{{}}} does not fit in one event set: this PMU has {} general and {} fixed "
                        "counters (split the group)",
                        names, info.counters, info.fixed));
      }
      sets.push_back(std::move(s));
      continue;
    }
    if (groups[i].metric) {
      bool placed = false;
      for (auto& s : sets)
        if ((placed = place(missing(wants[i], s), usedOf(s), s.counters))) break;
      if (placed) continue;
      SetPlan s;
      if (place(missing(wants[i], s), 0, s.counters)) {
        sets.push_back(std::move(s));
        continue;
      }
      // More events than one set holds: each that no set counts yet goes
      // where loose events go, and the metric is an estimate.
      SetPlan all;
      for (const auto& set : sets) all.counters.insert(all.counters.end(), set.counters.begin(), set.counters.end());
      for (const auto& w : missing(wants[i], all)) placeLoose({w}, w.spec->text);
      continue;
    }
    placeLoose(wants[i], groups[i].events[0].text);
  }
  if (sets.empty()) throw UsageError("no events to count");
  return sets;
}

}  // namespace pfmstat
