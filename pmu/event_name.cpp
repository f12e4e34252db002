// Event name parsing and encoding into a PMC value.
#include "pmu/event_name.h"

#include <strings.h>

namespace pfmfs::pmu {

namespace {

bool equalsNoCase(std::string_view a, const char* b) {
  return a.size() == std::char_traits<char>::length(b) && strncasecmp(a.data(), b, a.size()) == 0;
}

}  // namespace

Result<EventSpec> parseEventName(const PmuDescription& desc, std::string_view text) {
  std::size_t colon = text.find(':');
  std::string_view name = text.substr(0, colon);
  if (name.empty()) return err(EINVAL, "empty event name in '{}'", printable(text));
  EventSpec spec;
  spec.event = desc.findEvent(name);
  if (!spec.event) return err(EINVAL, "unknown event '{}' (see pmu/events)", printable(name));
  if (colon == std::string_view::npos) return spec;

  bool seen_u = false, seen_k = false;
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    std::size_t next = rest.find(':');
    std::string_view mod = rest.substr(0, next);
    if (equalsNoCase(mod, "u")) {
      if (seen_u) return err(EINVAL, "modifier ':u' given twice");
      seen_u = true;
    } else if (equalsNoCase(mod, "k")) {
      if (seen_k) return err(EINVAL, "modifier ':k' given twice");
      seen_k = true;
    } else {
      return err(EINVAL, "unknown modifier ':{}' (use :u and/or :k)", printable(mod));
    }
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  spec.usr = seen_u;
  spec.os = seen_k;
  return spec;
}

Result<std::uint64_t> encodeEvent(const PmuDescription& desc, const EventSpec& spec, unsigned pmc_index) {
  const PmcDesc* pmc = desc.pmc(pmc_index);
  if (!pmc) return err(EINVAL, "no pmc{} on this PMU", pmc_index);
  RegMask counters = desc.pmdsOfPmc(pmc_index);
  const PmdDesc* pmd = nullptr;
  for (const auto& d : desc.pmds)
    if (regBit(d.index) & counters) pmd = &d;
  if (pmd == nullptr || (counters & (counters - 1)) != 0 || pmd->isFixed())
    return err(EINVAL, "pmc{} ({}) takes a number, not an event name", pmc_index, pmc->name);
  if (!(spec.event->counters & regBit(pmd->index)))
    return err(EINVAL, "event {} cannot be counted by pmd{}", spec.event->name, pmd->index);
  std::uint64_t v = spec.event->code;
  if (spec.usr) v |= pmd->usr_bits;
  if (spec.os) v |= pmd->os_bits;
  return v;
}

Result<std::uint64_t> encodeEventName(const PmuDescription& desc, std::string_view text, unsigned pmc_index) {
  auto spec = parseEventName(desc, text);
  if (!spec) return spec.error();
  return encodeEvent(desc, *spec, pmc_index);
}

}  // namespace pfmfs::pmu
