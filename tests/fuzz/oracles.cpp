// The oracles of oracles.h: the daemon's parsers of file writes
// (fs/text_format), of event names and of the sim's --sim-events tables, and
// libpfm-compat's parsers of the mount's files.
#include "oracles.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <variant>

#include "fast_page_oracle.h"
#include "fs/text_format.h"
#include "key_value.h"
#include "oracle_check.h"
#include "pfmlib/key_values.h"
#include "pfmlib/pmu_model.h"
#include "pfmstat_oracles.h"
#include "pmu/event_name.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::fuzz {
namespace {

using session::PmcWrite;
using session::PmdWrite;
using session::RegWrite;

// The sim's PMU as pfmfsd describes it by default: what writes are parsed
// against.
const pmu::PmuDescription& desc() {
  static const pmu::PmuDescription d = [] {
    std::vector<pmu::EventDesc> table;
    for (const auto& e : pmu::sim::defaultEvents(4)) table.push_back(e.desc);
    return pmu::intel::makeDescription(pmu::intel::Shape{4, 48}, std::move(table));
  }();
  return d;
}

// A refusal is -EINVAL with a one-line printable reason.
template <typename T>
bool accepted(const Result<T>& r, const Check& check) {
  if (r.ok()) return true;
  check(r.code() == -EINVAL, "refused with an errno other than EINVAL: " + std::to_string(r.code()));
  check(oneLinePrintable(r.error().reason),
        "refused without a one-line printable reason: '" + printable(r.error().reason) + "'");
  return false;
}

// Attributes left empty are as good as 0 on a fresh register: what a round
// trip through formatRegs must keep.
struct NormalPmd {
  unsigned index;
  std::uint64_t value, long_reset, short_reset, switch_cnt, reset_pmds, smpl_pmds, random_mask, eventid;
  bool notify, random;
  bool operator==(const NormalPmd&) const = default;
};

NormalPmd normal(const PmdWrite& w) {
  return NormalPmd{w.index,
                   w.value,
                   w.long_reset.value_or(0),
                   w.short_reset.value_or(0),
                   w.switch_cnt.value_or(0),
                   w.reset_pmds.value_or(0),
                   w.smpl_pmds.value_or(0),
                   w.random_mask.value_or(0),
                   w.eventid.value_or(0),
                   w.notify.value_or(false),
                   w.random.value_or(false)};
}

bool sameRegs(const std::vector<RegWrite>& a, const std::vector<RegWrite>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].index() != b[i].index()) return false;
    if (const auto* c = std::get_if<PmcWrite>(&a[i])) {
      const auto& d = std::get<PmcWrite>(b[i]);
      if (c->index != d.index || c->value != d.value || c->no_emul64 != d.no_emul64) return false;
    } else if (!(normal(std::get<PmdWrite>(a[i])) == normal(std::get<PmdWrite>(b[i])))) {
      return false;
    }
  }
  return true;
}

// ---- references: the number rules written a second way (std::from_chars) ------

std::optional<std::uint64_t> whole(std::string_view s, int base) {
  if (s.empty() || s.front() == '-' || s.front() == '+') return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// A file write's number: blanks around it, decimal, 0x hex or -decimal.
std::optional<std::uint64_t> referenceNumber(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\n')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\n')) t.remove_suffix(1);
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return whole(t.substr(2), 16);
  if (!t.empty() && t[0] == '-') {
    auto v = whole(t.substr(1), 10);
    if (!v) return std::nullopt;
    return ~*v + 1;
  }
  return whole(t, 10);
}

// A number the mount prints, as libpfm-compat reads it: decimal, or 0x and
// at most 16 hex digits (the mount prints no leading zeros); nothing else.
std::optional<std::uint64_t> referenceMountNumber(std::string_view t) {
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    if (t.size() - 2 > 16) return std::nullopt;
    return whole(t.substr(2), 16);
  }
  return whole(t, 10);
}

// ---- the daemon's parsers of file writes (fs/text_format.h) -----------------------

bool number(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseNumber(in);
  auto ref = referenceNumber(in);
  check(r.ok() == ref.has_value(), "parseNumber and the reference disagree on accepting");
  if (!accepted(r, check)) return false;
  if (ref) check(*r == *ref, "parseNumber and the reference disagree on the value");
  auto back = fs::parseNumber(fs::formatPmd(*r));
  check(back.ok() && *back == *r, "formatPmd does not read back");
  return true;
}

bool regList(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseRegList(in);
  if (!accepted(r, check)) return false;
  PmdWrite w;
  w.reset_pmds = *r;
  auto back = fs::parseRegs(desc(), fs::formatRegs({w}));
  check(back.ok() && normal(std::get<PmdWrite>(back->at(0))).reset_pmds == *r, "a register list does not read back");
  return true;
}

bool pmcWrite(std::string_view in, Fail fail) {
  Check check{fail, in};
  bool any = false;
  for (unsigned index : {0u, 3u, 16u, 7u}) {
    auto r = fs::parsePmcWrite(desc(), index, in);
    if (!accepted(r, check)) continue;
    any = true;
    check(r->index == index, "parsePmcWrite changed the register");
    std::string text = fs::formatPmc(session::PmcState{r->value, r->no_emul64});
    auto back = fs::parsePmcWrite(desc(), index, text);
    check(back.ok() && back->value == r->value && back->no_emul64 == r->no_emul64,
          "formatPmc does not read back: '" + printable(text) + "'");
  }
  return any;
}

bool pmdWrite(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parsePmdWrite(2, in);
  if (!accepted(r, check)) return false;
  check(r->index == 2, "parsePmdWrite changed the register");
  std::string text = fs::formatRegs({*r});
  auto back = fs::parseRegs(desc(), text);
  check(back.ok() && sameRegs({*r}, *back), "a PMD write does not read back: '" + printable(text) + "'");
  return true;
}

bool regs(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseRegs(desc(), in);
  if (!accepted(r, check)) return false;
  check(!r->empty(), "parseRegs accepted no register");
  std::string text = fs::formatRegs(*r);
  auto back = fs::parseRegs(desc(), text);
  check(back.ok() && sameRegs(*r, *back), "formatRegs does not read back: '" + printable(text) + "'");
  return true;
}

bool switchSpec(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseSwitch(in);
  if (!accepted(r, check)) return false;
  check(!(r->on_time && r->timeout_ns == 0), "a time switch of 0 ns accepted");
  auto back = fs::parseSwitch(fs::formatSwitch(*r));
  check(back.ok() && *back == *r, "formatSwitch does not read back");
  return true;
}

bool mode(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseMode(in);
  if (!accepted(r, check)) return false;
  auto back = fs::parseMode(fs::formatMode(*r));
  check(back.ok() && *back == *r, "formatMode does not read back");
  return true;
}

bool flags(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseFlags(in);
  if (!accepted(r, check)) return false;
  auto back = fs::parseFlags(fs::formatFlags(*r));
  check(back.ok() && *back == *r, "formatFlags does not read back");
  return true;
}

bool ctl(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseCtl(in);
  if (!accepted(r, check)) return false;
  using Kind = fs::CtlCommand::Kind;
  // A word that is no thread id or cpu number (0..INT_MAX) is a path.
  check(r->target >= 0 || (r->kind == Kind::Load && !r->path.empty()), "a negative target that is not a path");
  check(r->path.find_first_of(" \t\n") == std::string::npos, "a path with a blank");
  check(r->set.value_or(0) <= 65535u, "a set past 65535");
  bool load = r->kind == Kind::Load;
  check(load || (r->target == 0 && r->path.empty()), "a target on a command other than load");
  check(load || r->kind == Kind::Start || !r->set.has_value(), "a set on stop, restart or unload");
  return true;
}

bool advance(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseAdvance(in);
  if (!accepted(r, check)) return false;
  auto back = fs::parseAdvance(fs::formatPmd(*r));
  check(back.ok() && *back == *r, "an advance does not read back");
  return true;
}

bool smplFmt(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = fs::parseSmplFmt(in);
  if (!accepted(r, check)) return false;
  check(r->format != "none", "a format named none accepted");
  check(r->format.empty() || oneLinePrintable(r->format), "a format name that is not printable");
  check(r->format.find_first_of(" \t=") == std::string::npos, "a format name with a blank or '='");
  check(!r->format.empty() || (r->buf_size == 0 && r->buf_flags == 0), "none with a buffer");
  auto back = fs::parseSmplFmt(fs::formatSmplFmt(*r));
  check(back.ok() && *back == *r, "formatSmplFmt does not read back");
  return true;
}

// ---- event names and the sim's event tables ----------------------------------------

bool eventName(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = pmu::parseEventName(desc(), in);
  if (!accepted(r, check)) return false;
  check(r->event != nullptr, "an event name resolved to no event");
  check(r->usr || r->os, "an event name that counts at no level");
  // Its encoding on every PMC agrees with encodeEventName, and carries the
  // event's code and the privilege bits asked for.
  for (unsigned pmc = 0; pmc < 4; ++pmc) {
    auto a = pmu::encodeEvent(desc(), *r, pmc);
    auto b = pmu::encodeEventName(desc(), in, pmc);
    check(a.ok() == b.ok(), "encodeEvent and encodeEventName disagree");
    if (!a.ok() || !b.ok()) continue;
    check(*a == *b, "encodeEvent and encodeEventName give different values");
    check((*a & 0xffff) == (r->event->code & 0xffff), "the encoding lost the event code");
    check(static_cast<bool>((*a >> 16) & 1) == r->usr && static_cast<bool>((*a >> 17) & 1) == r->os,
          "the encoding lost the privilege levels");
  }
  return true;
}

bool simRate(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = pmu::sim::EventRate::parse(in);
  if (!accepted(r, check)) return false;
  auto back = pmu::sim::EventRate::parse(r->toString());
  check(back.ok() && *back == *r, "EventRate::toString does not read back: '" + printable(r->toString()) + "'");
  // Counts never go backwards, and timeOfCount inverts count.
  std::uint64_t prev = 0;
  for (std::uint64_t t : {0ull, 1ull, 7ull, 1000ull, 1000000ull, 123456789ull}) {
    std::uint64_t n = r->count(t);
    check(n >= prev, "count went backwards");
    prev = n;
    if (n > 0 && n < UINT64_MAX) check(r->timeOfCount(n) <= t, "timeOfCount past the time that counts it");
  }
  return true;
}

bool simEvents(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto r = pmu::sim::parseEvents(in, 4);
  if (!accepted(r, check)) return false;
  for (const auto& e : *r) {
    check(!e.desc.name.empty(), "an event without a name");
    check(pmu::sim::findByCode(*r, e.desc.code) != nullptr, "findByCode misses a listed code");
  }
  return true;
}

// ---- libpfm-compat's parsers of the mount's files ------------------------------------

bool mountNumber(std::string_view in, Fail fail) {
  Check check{fail, in};
  std::uint64_t v = 0;
  bool ok = pfmcompat::parseU64(in.data(), in.size(), &v);
  auto ref = referenceMountNumber(in);
  check(ok == ref.has_value(), "parseU64 and the reference disagree on accepting");
  if (ok && ref) check(v == *ref, "parseU64 and the reference disagree on the value");
  // A pmu/desc file (addr, rsvd_msk, width, pmds) is one number and its
  // newline, read by pfmlib's parseNumber: the same number.
  auto file = pfmcompat::pfmlib::parseNumber(std::string(in) + "\n");
  if (ok) check(file && *file == v, "a number read from a pmu/desc file differs from the number");
  return ok;
}

// pmds, info, state: lines of key=value words, read in place.
bool mountLines(std::string_view in, Fail fail) {
  Check check{fail, in};
  pfmcompat::LineCursor cur(in.data(), in.size());
  pfmcompat::Line line;
  bool any = false;
  std::size_t lines = 0;
  while (cur.next(&line)) {
    check(++lines <= in.size(), "more lines than bytes");
    check(line.size > 0 && line.begin >= in.data() && line.begin + line.size <= in.data() + in.size(),
          "a line outside the text");
    check(std::string_view(line.begin, line.size).find('\n') == std::string_view::npos, "a line with a newline");
    for (const char* key : {"pmd", "value", "last_reset", "state", "runs", "x"}) {
      pfmcompat::Line value;
      if (!pfmcompat::findWord(line, key, &value)) continue;
      check(value.begin > line.begin && value.begin + value.size <= line.begin + line.size, "a value outside its line");
      std::uint64_t n = 0;
      bool is_number = pfmcompat::findNumber(line, key, &n);
      auto ref = referenceMountNumber(std::string_view(value.begin, value.size));
      check(is_number == ref.has_value() && (!ref || n == *ref), "findNumber and the reference disagree");
      any = true;
    }
  }
  return any;
}

// The registers of the sim's model, as libpfm-compat reads them from pmu/desc.
const pfmcompat::pfmlib::PmuModel& simModel() {
  static const pfmcompat::pfmlib::PmuModel m = [] {
    pfmcompat::pfmlib::PmuModel x;
    x.model = "intel-arch-v2";
    x.impl_pmcs = 0x1000f;
    x.impl_pmds = 0x7000f;
    x.width = 48;
    for (unsigned i = 0; i < 4; ++i)
      x.pmcs.push_back({i, "PERFEVTSEL" + std::to_string(i), 0x186 + i, 0, 1ull << i, false});
    x.pmcs.push_back({16, "FIXED_CTR_CTRL", 0x38d, 0, 0x70000, true});
    return x;
  }();
  return m;
}

bool pmuEvents(std::string_view in, Fail fail) {
  Check check{fail, in};
  pfmcompat::pfmlib::PmuModel m = simModel();
  unsigned bad = 0;
  bool ok = pfmcompat::pfmlib::parsePmuEvents(in, m, &bad);
  std::size_t lines = 1 + static_cast<std::size_t>(std::count(in.begin(), in.end(), '\n'));
  if (!ok) {
    check(bad >= 1 && bad <= lines, "a bad line number outside the text");
    return false;
  }
  check(m.events.size() <= lines, "more events than lines");
  for (const auto& e : m.events) check((e.pmds & ~m.impl_pmds) == 0, "an event on a counter that does not exist");
  return true;
}

bool pmuInfo(std::string_view in, Fail fail) {
  Check check{fail, in};
  pfmcompat::pfmlib::PmuModel m;
  bool ok = pfmcompat::pfmlib::parsePmuInfo(in, m);
  auto kv = pfmcompat::pfmlib::KeyValues::parse(pfmcompat::pfmlib::trimRight(in));
  check(!ok || kv.has_value(), "pmu/info accepted as a whole, refused as a record");
  if (ok) check(m.width == static_cast<unsigned>(*pfmcompat::pfmlib::parseNumber(*kv->find("width"))), "width= lost");
  return ok;
}

// pmu/events' records: quoted values with escapes. What parse gives, written
// back with every value quoted, parses to the same pairs.
bool mountRecord(std::string_view in, Fail fail) {
  Check check{fail, in};
  auto kv = pfmcompat::pfmlib::KeyValues::parse(in);
  if (!kv) return false;
  std::string again;
  for (const char* key : {"name", "code", "pmcs", "desc", "aliases", "pmds"}) {
    const std::string* v = kv->find(key);
    if (!v) continue;
    again += std::string(key) + "=\"";
    for (char c : *v) {
      if (c == '"' || c == '\\') again += '\\';
      again += c;
    }
    again += "\" ";
  }
  auto back = pfmcompat::pfmlib::KeyValues::parse(again);
  check(back.has_value(), "a record written back does not parse: '" + printable(again) + "'");
  if (back)
    for (const char* key : {"name", "code", "pmcs", "desc", "aliases", "pmds"}) {
      const std::string* a = kv->find(key);
      const std::string* b = back->find(key);
      check((a == nullptr) == (b == nullptr) && (!a || *a == *b),
            std::string("key ") + key + " changed on the way back");
    }
  return true;
}

}  // namespace

const std::vector<Oracle>& oracles() {
  static const std::vector<Oracle> all = {
      {"parseNumber",
       {"0", "42", "0x1f", "-1000", "18446744073709551615", "0xffffffffffffffff", "-9223372036854775808", " 7\n"},
       number},
      {"parseRegList", {"1,2", "0x6", "16,17,18", "0", "63", "0x0"}, regList},
      {"parsePmcWrite",
       {"0x1003c", "0x13003c no_emul64", "UNHALTED_CORE_CYCLES:u", "instruction_retired:u:k no_emul64", "LLC_MISSES:k",
        "0x222", "-1", "SIM_PHASE_B"},
       pmcWrite},
      {"parsePmdWrite",
       {"-1000 long_reset=-1000 short_reset=-500 switch_cnt=2 reset_pmds=1,16 notify",
        "12345 smpl_pmds=0x3 random_mask=0xf0 random eventid=9", "5 notify=0 random=1", "0"},
       pmdWrite},
      {"parseRegs",
       {"pmc0 0x1003c\npmd0 -10 notify\n", "pmc1 INSTRUCTION_RETIRED no_emul64\npmd16 5 long_reset=3\npmc16 0x222\n",
        "\npmd3 1 reset_pmds=0,1 smpl_pmds=2 eventid=0x10 random_mask=3 random\n\npmc3 LLC_MISSES:u:k\n"},
       regs},
      {"parseSwitch", {"none", "ovfl\n", "time 1000000\n", "time 0x10"}, switchSpec},
      {"parseMode", {"thread\n", "system", "cgroup\n"}, mode},
      {"parseFlags", {"notify_block no_msg", "autoclose,inherit\n", "none", "no_msg , autoclose inherit"}, flags},
      {"parseCtl",
       {"load 1234 set=3\n", "load 7", "load /sys/fs/cgroup/a set=1", "load system.slice", "start", "start 2\n", "stop",
        "restart", "unload"},
       ctl},
      {"parseAdvance", {"1000\n", "0", "0x10", "18446744073709551615"}, advance},
      {"parseSmplFmt",
       {"none\n", "default buf_size=65536\n", "default buf_size=0x10000 buf_flags=0",
        "default buf_flags=0 buf_size=4096", "other buf_size=1"},
       smplFmt},
      {"parseEventName",
       {"UNHALTED_CORE_CYCLES", "instruction_retired:u", "LLC_MISSES:u:k", "BRANCH_MISSES_RETIRED:k",
        "INSTRUCTIONS_RETIRED", "sim_phase_a:K:U"},
       eventName},
      {"simRate", {"3", "2.5", "0.004", "1/3", "1000000:4,1000000:0", "5:1/7,3:2.25"}, simRate},
      {"simEvents",
       {"name=CYC code=0x3c rate=3\n",
        "# a table\nname=A code=0x1f0 rate=1000:4,1000:0 ring=kernel counters=0x3\n\n"
        "name=B code=0x2f0 rate=1/3 desc=\"phase \\\"b\\\"\"\n"},
       simEvents},
      {"mountNumber", {"0", "42", "0x1f", "0xffffffffffffffff", "18446744073709551615"}, mountNumber},
      {"mountLines",
       {"pmd=0 value=12 last_reset=0 switch_left=0\npmd=1 value=0x10 last_reset=3 switch_left=1\n",
        "state=active mode=thread target=12 set=0 queued=0 lost=0\n", "runs=3 duration_ns=1000 x=0x1\n"},
       mountLines},
      {"pmuEvents",
       {"name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc=\"Core cycles\" pmds=0x1000f aliases=CPU_CLK\n",
        "name=A code=0x1 pmcs=0xf desc=\"a \\\"quoted\\\" word\"\n\nname=B code=2 pmcs=0x3 pmds=0x3\n"},
       pmuEvents},
      {"pmuInfo",
       {"backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 features=inherit\n",
        "model=perf-sw pmcs=0xff pmds=0xff width=64"},
       pmuInfo},
      {"mountRecord", {"name=A code=0x1 desc=\"x y\"", "name=\"\\\\\" pmcs=3", "a=b  c=\"\""}, mountRecord},
      {"pfmstatEvents",
       {"cycles,instructions", "{cycles,instructions}\n{LLC_MISSES,SIM_PHASE_A}", "r1003c:uk,LLC_MISSES:k",
        "cycles,{LLC_MISSES,SIM_PHASE_A},instructions"},
       pfmstatEvents},
      {"pfmstatCpuList", {"0", "0-3,5", "7,1-2,2", "65535"}, pfmstatCpuList},
      {"pfmstatCounts",
       {"set=0 pmd=0 value=1500000 enabled_ns=1000000 running_ns=500000 scaled=3000000\n",
        "set=1 pmd=17 value=7 enabled_ns=10 running_ns=0 scaled=- children=3 total_scaled=-\n"},
       pfmstatCounts},
      {"pfmstatMetrics",
       {"metric=ipc expr=\"instructions / cycles\" unit=\"insn per cycle\" groups=default,pipeline desc=\"x\"\n",
        "# t\n\nmetric=a expr=\"-(b + 2) * c / time_ns - 1e9\" desc=\"a \\\"q\\\" \\\\ b\"\nmetric=b expr=x\n"},
       pfmstatMetrics},
      {"fastPage", fastPageSeeds(), fastPage},
  };
  return all;
}

const Oracle* findOracle(std::string_view name) {
  for (const auto& o : oracles())
    if (name == o.name) return &o;
  return nullptr;
}

const std::vector<std::string>& dictionary() {
  static const std::vector<std::string> d = {"0",
                                             "1",
                                             "-1",
                                             "0x",
                                             "0x0",
                                             "0xffffffffffffffff",
                                             "18446744073709551616",
                                             "-",
                                             "--",
                                             "+",
                                             "=",
                                             ",",
                                             ":",
                                             "\n",
                                             " ",
                                             "\t",
                                             "pmc0",
                                             "pmc16",
                                             "pmd0",
                                             "pmd63",
                                             "pmc64",
                                             "no_emul64",
                                             "notify",
                                             "random",
                                             "notify=0",
                                             "random=2",
                                             "long_reset=",
                                             "short_reset=-5",
                                             "switch_cnt=3",
                                             "reset_pmds=1,2",
                                             "smpl_pmds=0x3",
                                             "random_mask=0xff",
                                             "eventid=",
                                             "UNHALTED_CORE_CYCLES",
                                             ":u",
                                             ":k",
                                             "LLC_MISSES:u:k",
                                             "load",
                                             "start",
                                             "stop",
                                             "restart",
                                             "unload",
                                             "set=",
                                             "set=70000",
                                             "time",
                                             "none",
                                             "ovfl",
                                             "thread",
                                             "system",
                                             "cgroup",
                                             "/sys/fs/cgroup/",
                                             "..",
                                             "./",
                                             "notify_block",
                                             "no_msg",
                                             "autoclose",
                                             "inherit",
                                             "default",
                                             "buf_size=",
                                             "buf_flags=0",
                                             "65535",
                                             "2147483648",
                                             "name=",
                                             "code=",
                                             "pmcs=",
                                             "pmds=",
                                             "desc=\"",
                                             "\\\"",
                                             "aliases=",
                                             "rate=",
                                             "ring=kernel",
                                             "counters=",
                                             "/",
                                             ".",
                                             "model=",
                                             "width=",
                                             "pmd=",
                                             "value=",
                                             "\xff",
                                             std::string(1, '\0')};
  return d;
}

}  // namespace pfmfs::fuzz
