// The sim backend's events: the default table (pfmfs(5), "The sim PMU") and
// the --sim-events file format. The rates themselves are event_stream.cpp's.
#include <cassert>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "pmu/backend.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/number_text.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu::sim {

namespace {

constexpr std::uint64_t kMaxCode = 0xffff;  // event select | umask

RegMask generalMask(unsigned general_counters) {
  return general_counters >= 64 ? ~RegMask{0} : (RegMask{1} << general_counters) - 1;
}

// A code or a counter mask: 0x hexadecimal or decimal, as every number of
// pfmfs is read (pmu/number_text.h), but never negative.
std::optional<std::uint64_t> parseInteger(std::string_view s) {
  if (s.empty() || s[0] == '-') return std::nullopt;
  auto v = parseNumber(s);
  if (!v) return std::nullopt;
  return *v;
}

}  // namespace

std::vector<SimEvent> defaultEvents(unsigned general_counters) {
  struct Rate {
    std::uint64_t code;
    std::uint64_t num;  // events per ns, times den
    std::uint64_t den;
  };
  // pfmfs(5), "The sim PMU"; the names, codes and counters come from the architectural table.
  constexpr Rate kRates[] = {
      {intel::event::kUnhaltedCoreCycles, 3, 1},
      {intel::event::kInstructionRetired, 2, 1},
      {intel::event::kUnhaltedReferenceCycles, 5, 2},
      {intel::event::kLlcReferences, 1, 20},
      {intel::event::kLlcMisses, 1, 100},
      {intel::event::kBranchInstructionsRetired, 2, 5},
      {intel::event::kBranchMissesRetired, 1, 250},
  };
  std::vector<SimEvent> out;
  for (auto& desc : intel::architecturalEvents(general_counters)) {
    EventRate rate;
    for (const auto& r : kRates)
      if (r.code == desc.code) rate = EventRate::constant(r.num, r.den);
    assert(!rate.isZero() && "every architectural event has a documented rate");
    out.push_back(SimEvent{std::move(desc), rate, Ring::User});
  }

  constexpr std::uint64_t kHalfPeriodNs = 1'000'000;  // 1 ms on, 1 ms off
  RegMask general = generalMask(general_counters);
  out.push_back(
      SimEvent{EventDesc{"SIM_PHASE_A", 0x01f0, general, "Simulated event at 4/ns in the first half of every 2 ms"},
               EventRate::phased({{kHalfPeriodNs, 4}, {kHalfPeriodNs, 0}}, 1), Ring::User});
  out.push_back(
      SimEvent{EventDesc{"SIM_PHASE_B", 0x02f0, general, "Simulated event at 4/ns in the second half of every 2 ms"},
               EventRate::phased({{kHalfPeriodNs, 0}, {kHalfPeriodNs, 4}}, 1), Ring::User});
  return out;
}

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

bool isEventName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

struct Field {
  std::string key;
  std::string value;
};

// Splits one line into key=value fields; a value may be "quoted" (with \" and
// \\ inside) so that desc can hold spaces. '#' where a field would start
// comments out the rest of the line.
Result<std::vector<Field>> splitFields(std::string_view line) {
  std::vector<Field> fields;
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && isBlank(line[i])) ++i;
    if (i == line.size() || line[i] == '#') break;
    std::size_t key_start = i;
    while (i < line.size() && line[i] != '=' && !isBlank(line[i])) ++i;
    std::string_view key = line.substr(key_start, i - key_start);
    if (i == line.size() || line[i] != '=') return err(EINVAL, "'{}' is not key=value", printable(key));
    if (key.empty()) return err(EINVAL, "'=' with no key before it");
    ++i;
    Field f{std::string(key), {}};
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size() && (line[i] == '"' || line[i] == '\\')) c = line[i++];
        f.value += c;
      }
      if (!closed) return err(EINVAL, "{}: unterminated quoted value", printable(key));
      if (i < line.size() && !isBlank(line[i]))
        return err(EINVAL, "{}: text right after the closing quote", printable(key));
    } else {
      std::size_t value_start = i;
      while (i < line.size() && !isBlank(line[i])) ++i;
      f.value = std::string(line.substr(value_start, i - value_start));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

// One event line, checked on its own; uniqueness is the caller's business.
Result<SimEvent> parseEventLine(const std::vector<Field>& fields, unsigned general_counters) {
  const Field* name = nullptr;
  const Field* code = nullptr;
  const Field* rate = nullptr;
  const Field* ring = nullptr;
  const Field* counters = nullptr;
  const Field* desc = nullptr;
  for (const auto& f : fields) {
    const Field** slot = f.key == "name"       ? &name
                         : f.key == "code"     ? &code
                         : f.key == "rate"     ? &rate
                         : f.key == "ring"     ? &ring
                         : f.key == "counters" ? &counters
                         : f.key == "desc"     ? &desc
                                               : nullptr;
    if (!slot) return err(EINVAL, "unknown key '{}'", printable(f.key));
    if (*slot) return err(EINVAL, "key '{}' given twice", printable(f.key));
    *slot = &f;
  }
  if (!name) return err(EINVAL, "missing name=");
  if (!code) return err(EINVAL, "missing code=");
  if (!rate) return err(EINVAL, "missing rate=");

  SimEvent ev;
  if (!isEventName(name->value))
    return err(EINVAL, "name '{}': only A-Z, 0-9 and _ are allowed", printable(name->value));
  ev.desc.name = name->value;

  auto c = parseInteger(code->value);
  if (!c) return err(EINVAL, "code '{}' is not a number", printable(code->value));
  // Code 0 would read as "no event" wherever a fixed counter's code is kept.
  if (*c == 0 || *c > kMaxCode) return err(EINVAL, "code '{}': must be 1..0x{:x}", printable(code->value), kMaxCode);
  ev.desc.code = *c;

  auto r = EventRate::parse(rate->value);
  if (!r) return r.error();
  ev.rate = *r;

  if (ring) {
    if (ring->value == "user")
      ev.ring = Ring::User;
    else if (ring->value == "kernel")
      ev.ring = Ring::Kernel;
    else
      return err(EINVAL, "ring '{}': must be user or kernel", printable(ring->value));
  }

  const RegMask general = generalMask(general_counters);
  RegMask fixed_all = 0;
  RegMask fixed_matching = 0;
  for (unsigned n = 0; n < intel::kFixedCounters; ++n) {
    fixed_all |= regBit(intel::kFixedPmd0 + n);
    if (intel::fixedCounterCode(n) == ev.desc.code) fixed_matching |= regBit(intel::kFixedPmd0 + n);
  }
  if (counters) {
    auto m = parseInteger(counters->value);
    if (!m) return err(EINVAL, "counters '{}' is not a number", printable(counters->value));
    if (*m == 0) return err(EINVAL, "counters '{}' names no counter", printable(counters->value));
    if (*m & ~(general | fixed_all))
      return err(EINVAL, "counters '{}': 0x{:x} are not counters (general 0x{:x}, fixed 0x{:x})",
                 printable(counters->value), *m & ~(general | fixed_all), general, fixed_all);
    if (*m & fixed_all & ~fixed_matching)
      return err(EINVAL, "counters '{}': fixed counters 0x{:x} count another event than code 0x{:x}",
                 printable(counters->value), *m & fixed_all & ~fixed_matching, ev.desc.code);
    ev.desc.counters = *m;
  } else {
    ev.desc.counters = general | fixed_matching;
  }
  if (desc) ev.desc.desc = desc->value;
  return ev;
}

}  // namespace

Result<std::vector<SimEvent>> parseEvents(std::string_view text, unsigned general_counters) {
  std::vector<SimEvent> events;
  std::vector<unsigned> line_of;  // where each event was defined, for duplicates
  unsigned line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    ++line_no;

    auto fields = splitFields(line);
    if (!fields) return err(EINVAL, "line {}: {}", line_no, fields.error().reason);
    if (fields->empty()) continue;
    auto ev = parseEventLine(*fields, general_counters);
    if (!ev) return err(EINVAL, "line {}: {}", line_no, ev.error().reason);
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].desc.name == ev->desc.name)
        return err(EINVAL, "line {}: name {} already defined on line {}", line_no, ev->desc.name, line_of[i]);
      if (events[i].desc.code == ev->desc.code)
        return err(EINVAL, "line {}: code 0x{:x} already defined on line {}", line_no, ev->desc.code, line_of[i]);
    }
    events.push_back(std::move(*ev));
    line_of.push_back(line_no);
  }
  if (events.empty()) return err(EINVAL, "no events defined (every line is blank or a comment)");
  return events;
}

const SimEvent* findByCode(const std::vector<SimEvent>& events, std::uint64_t code) {
  for (const auto& e : events)
    if (e.desc.code == code) return &e;
  return nullptr;
}

}  // namespace pfmfs::pmu::sim
