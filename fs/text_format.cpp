// The formatters of what users read from pfmfs's files (pfmfs(5)): pure
// functions over engine types. text_parse.cpp holds the parsers.
#include "fs/text_format.h"

#include <cstddef>
#include <variant>

#include <fmt/format.h>

#include "fs/pmd_attributes.h"
#include "fs/session_flag.h"

#ifndef PFMFS_VERSION
#define PFMFS_VERSION "0.0.0"
#endif

namespace pfmfs::fs {

namespace {

using pmu::regBit;
using pmu::RegMask;

std::string hex(std::uint64_t v) { return fmt::format("0x{:x}", v); }

// The PMCs that configure the PMDs of `pmds`.
RegMask pmcsOf(const pmu::PmuDescription& desc, RegMask pmds) {
  RegMask m = 0;
  for (const auto& d : desc.pmds)
    if (d.index < pmu::kMaxRegIndex && (pmds & regBit(d.index)) && d.ctl_pmc < pmu::kMaxRegIndex)
      m |= regBit(d.ctl_pmc);
  return m;
}

// A desc="..." value: quotes and backslashes escaped as a --sim-events file
// writes them, control bytes as blanks so that the record stays one line.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

// ---- formatters --------------------------------------------------------------

std::string formatVersion() { return fmt::format("pfmfs {}\nabi 1\n", PFMFS_VERSION); }

std::string formatPmuInfo(const pmu::Backend& backend, std::uint64_t tick_ns, const FastPathEndpoint& fastpath) {
  const pmu::PmuDescription& d = backend.description();
  unsigned general = 0, fixed = 0;
  for (const auto& p : d.pmds) (p.isFixed() ? fixed : general)++;
  std::string features;
  for (const auto& f : d.features) {
    if (!features.empty()) features += ',';
    features += f;
  }
  // The socket answers on every backend (sampling buffers); the feature
  // says that it maps counts too.
  const bool fast_path = !fastpath.name.empty();
  if (fast_path && backend.mappedReads()) features += features.empty() ? "fastpath" : ",fastpath";
  std::string fast =
      fast_path ? fmt::format(" fastpath={} fastpath_pid={} fastpath_uid={}", fastpath.name, fastpath.pid, fastpath.uid)
                : std::string();
  // tick_ns came after features (keys are added at the end); the fast
  // path's keys stay last, as they are only there when the socket is.
  return fmt::format("backend={} model={} pmcs={} pmds={} counters={} fixed={} width={} features={} tick_ns={}{}\n",
                     backend.name(), d.model, hex(d.pmcMask()), hex(d.pmdMask()), general, fixed, d.width(), features,
                     tick_ns, fast);
}

std::string formatEvents(const pmu::PmuDescription& desc) {
  std::string out;
  for (const auto& e : desc.events) {
    out += fmt::format("name={} code={} pmcs={} desc={} pmds={}", e.name, hex(e.code), hex(pmcsOf(desc, e.counters)),
                       quoted(e.desc), hex(e.counters));
    // Only where there are some: a key added at the end of the line (pfmfs(5), NUMBERS AND TEXT).
    for (std::size_t i = 0; i < e.aliases.size(); ++i) out += fmt::format("{}{}", i ? "," : " aliases=", e.aliases[i]);
    out += '\n';
  }
  return out;
}

std::string formatMode(session::Mode m) { return fmt::format("{}\n", session::toString(m)); }

std::string formatFlags(const session::Flags& f) {
  std::string out;
  for (const auto& flag : kSessionFlags) {
    if (!(f.*flag.field)) continue;
    if (!out.empty()) out += ' ';
    out += flag.name;
  }
  return out + "\n";
}

std::string formatState(const session::StateInfo& s) {
  // Optional keys come last and only when they say something.
  std::string extra;
  if (s.exited) extra += " exited=1";
  if (s.unscheduled_ns) extra += fmt::format(" unscheduled_ns={}", s.unscheduled_ns);
  // inherit: whether the target is gone while children run on, the children
  // followed now, and the exited ones whose counts were added (merged) or
  // not (dropped: the session was reprogrammed since).
  if (s.target_exited) extra += " target_exited=1";
  if (s.inherit) extra += fmt::format(" followed={} merged={} dropped={}", s.followed, s.merged, s.dropped);
  // A sampling format: the buffer's entries and fills (after every other key: added last).
  if (s.sampling) extra += fmt::format(" smpl_count={} smpl_overflows={}", s.smpl_count, s.smpl_overflows);
  if (s.sampling && s.smpl_dropped) extra += fmt::format(" smpl_dropped={}", s.smpl_dropped);
  if (s.throttled) extra += fmt::format(" throttled={}", s.throttled);
  // A control group's path is one word: a load refuses blanks in it.
  std::string target = !s.target_path.empty() ? s.target_path
                       : s.target             ? fmt::format("{}", *s.target)
                                              : std::string("-");
  return fmt::format("state={} mode={} target={} set={} queued={} lost={}{}\n", session::toString(s.state),
                     session::toString(s.mode), target, s.set, s.queued, s.lost, extra);
}

std::string formatCounts(const std::vector<session::CountLine>& lines) {
  std::string out;
  auto number = [](const std::optional<std::uint64_t>& v) { return v ? fmt::format("{}", *v) : std::string("-"); };
  for (const auto& c : lines) {
    out += fmt::format("set={} pmd={} value={} enabled_ns={} running_ns={} scaled={}", c.set, c.pmd, c.value,
                       c.enabled_ns, c.running_ns, number(c.scaled));
    // inherit: what exited children counted, and the estimate of the whole tree.
    if (c.children) out += fmt::format(" children={} total_scaled={}", *c.children, number(c.total_scaled));
    out += '\n';
  }
  return out;
}

std::string formatSwitch(const session::SwitchSpec& s) {
  if (s.on_time) return fmt::format("time {}{}\n", s.timeout_ns, s.on_ovfl ? " ovfl" : "");
  if (s.on_ovfl) return "ovfl\n";
  return "none\n";
}

std::string formatPmdStates(const std::vector<session::PmdLine>& pmds) {
  std::string out;
  for (const auto& p : pmds)
    out += fmt::format("pmd={} value={} long_reset={} short_reset={} last_reset={} switch_cnt={} switch_left={}\n",
                       p.index, p.value, p.state.long_reset, p.state.short_reset, p.state.last_reset,
                       p.state.switch_cnt, p.state.switch_left);
  return out;
}

std::string formatSetInfo(const session::SetInfo& i) {
  return fmt::format("runs={} duration_ns={} timeout_ns={} ovfl_pmds={} avail_pmcs={} avail_pmds={}\n", i.runs,
                     i.duration_ns, i.timeout_ns, hex(i.ovfl_pmds), hex(i.avail_pmcs), hex(i.avail_pmds));
}

std::string formatPmc(const session::PmcState& p) {
  return fmt::format("{}{}\n", hex(p.value), p.no_emul64 ? " no_emul64" : "");
}

std::string formatPmd(std::uint64_t value) { return fmt::format("{}\n", value); }

std::string formatSmplFmt(const session::SamplingSpec& spec) {
  if (spec.format.empty()) return "none\n";
  return fmt::format("{} buf_size={} buf_flags={}\n", spec.format, spec.buf_size, spec.buf_flags);
}

std::string formatSamples(const std::vector<session::SampleRecord>& records) {
  std::string out;
  for (std::size_t k = 0; k < records.size(); ++k) {
    const session::SampleRecord& r = records[k];
    out += fmt::format("sample={} set={} pmd={} tid={} pid={} cpu={} ip={} tstamp={} last_reset={} eventid={}", k,
                       r.set, r.pmd, r.tid, r.pid, r.cpu, hex(r.ip), r.tstamp, r.last_reset, r.eventid);
    // The recorded PMDs in increasing number, as their values are kept.
    std::size_t next = 0;
    for (unsigned i = 0; i < pmu::kMaxRegIndex && next < r.values.size(); ++i)
      if (r.smpl_pmds & regBit(i)) out += fmt::format(" pmd{}={}", i, r.values[next++]);
    out += '\n';
  }
  return out;
}

std::string formatRegs(const std::vector<session::RegWrite>& regs) {
  std::string out;
  for (const auto& r : regs) {
    if (const auto* c = std::get_if<session::PmcWrite>(&r)) {
      out += fmt::format("pmc{} {}{}\n", c->index, hex(c->value), c->no_emul64 ? " no_emul64" : "");
      continue;
    }
    const auto& d = std::get<session::PmdWrite>(r);
    out += fmt::format("pmd{} {}", d.index, d.value);
    // Only what differs from a fresh register: a fresh set given these lines
    // ends up with exactly these registers.
    for (const auto& a : kPmdAttributes) {
      if (a.kind == PmdAttribute::Kind::Flag) {
        if ((d.*a.flag).value_or(false)) out += fmt::format(" {}", a.name);
        continue;
      }
      const std::optional<std::uint64_t>& v = d.*a.number;
      if (!v || *v == 0) continue;
      if (a.kind == PmdAttribute::Kind::Decimal)
        out += fmt::format(" {}={}", a.name, *v);
      else
        out += fmt::format(" {}={}", a.name, hex(*v));
    }
    out += '\n';
  }
  return out;
}

}  // namespace pfmfs::fs
