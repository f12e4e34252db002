// The parsers of what users write to pfmfs's files (pfmfs(5)): pure
// functions into engine types, fuzzed (tests/fuzz). The FUSE code calls these
// and never splits a string itself; text_format.cpp holds the formatters.
#include "fs/text_format.h"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <set>

#include <fmt/format.h>

#include "fs/name_table.h"
#include "fs/pmd_attributes.h"
#include "fs/session_flag.h"
#include "pmu/event_name.h"
#include "pmu/number_text.h"

namespace pfmfs::fs {

namespace {

using pmu::regBit;
using pmu::RegMask;

// Blanks separate words inside one line; newlines end lines.
bool isBlank(char c) { return c == ' ' || c == '\t'; }

// The write without the blanks and newlines around it (`echo` adds one).
std::string_view trim(std::string_view text) { return pmu::trimSpace(text); }

// The words of one line, split on runs of blanks.
std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isBlank(line[i])) ++i;
    std::size_t start = i;
    while (i < line.size() && !isBlank(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

// A file that takes one line: the trimmed text, or EINVAL if a newline is left
// inside it (two values in one write).
Result<std::string_view> oneLine(std::string_view text, const char* what) {
  std::string_view t = trim(text);
  if (t.find('\n') != std::string_view::npos) return err(EINVAL, "{}: one line only, got '{}'", what, printable(t));
  return t;
}

using pmu::decimalDigits;
using pmu::isDigit;

// A number that must not be negative: parseNumber without the '-' form.
Result<std::uint64_t> parseUnsigned(std::string_view text, const char* what) {
  std::string_view t = trim(text);
  if (!t.empty() && t.front() == '-') return err(EINVAL, "{}: '{}' must not be negative", what, printable(t));
  auto n = parseNumber(t);
  if (!n) return err(EINVAL, "{}: {}", what, n.error().reason);
  return n;
}

// "pmcK" / "pmdK" at the start of a regs line: K canonical decimal < 64.
std::optional<unsigned> registerIndex(std::string_view word, std::string_view prefix) {
  if (word.size() <= prefix.size() || word.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view digits = word.substr(prefix.size());
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  auto n = decimalDigits(digits);
  if (!n || *n >= pmu::kMaxRegIndex) return std::nullopt;
  return static_cast<unsigned>(*n);
}

// One attribute of a PMD write into its field of `out`: `val` is what follows
// its '=' (nullopt: no '=').
Status parsePmdAttribute(unsigned index, const PmdAttribute& a, std::optional<std::string_view> val,
                         session::PmdWrite& out) {
  using Kind = PmdAttribute::Kind;
  const std::string_view key = a.name;
  switch (a.kind) {
    case Kind::Decimal:
    case Kind::Mask: {
      if (!val || val->empty()) return err(EINVAL, "pmd{}: {} needs a value ({}=N)", index, key, key);
      auto n = parseNumber(*val);
      if (!n) return err(EINVAL, "pmd{}: {}: {}", index, key, n.error().reason);
      out.*a.number = *n;
      return {};
    }
    case Kind::RegList: {
      if (!val || val->empty())
        return err(EINVAL, "pmd{}: {} needs a register list ({}=1,2 or {}=0x6)", index, key, key, key);
      auto m = parseRegList(*val);
      if (!m) return err(EINVAL, "pmd{}: {}: {}", index, key, m.error().reason);
      out.*a.number = *m;
      return {};
    }
    case Kind::Flag:
      if (!val || *val == "1") {
        out.*a.flag = true;
      } else if (*val == "0") {
        out.*a.flag = false;
      } else {
        return err(EINVAL, "pmd{}: {} takes no value, or =0 or =1, not '{}'", index, key, printable(*val));
      }
      return {};
  }
  return {};
}

}  // namespace

// ---- parsers ---------------------------------------------------------------

Result<pmu::RegMask> parseRegList(std::string_view text) {
  std::string_view t = trim(text);
  if (t.empty()) return err(EINVAL, "an empty register list (use 0x0 for none)");
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    auto m = parseNumber(t);
    if (!m) return err(EINVAL, "register mask: {}", m.error().reason);
    return *m;
  }
  RegMask m = 0;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = t.find(',', start);
    std::string_view item = t.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto n = decimalDigits(item);
    if (!n) return err(EINVAL, "register list '{}': '{}' is not a register number", printable(t), printable(item));
    if (*n >= pmu::kMaxRegIndex)
      return err(EINVAL, "register list '{}': register {} is out of range (0..{})", printable(t), *n,
                 pmu::kMaxRegIndex - 1);
    m |= regBit(static_cast<unsigned>(*n));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return m;
}

Result<session::PmcWrite> parsePmcWrite(const pmu::PmuDescription& desc, unsigned index, std::string_view text) {
  auto line = oneLine(text, "pmc write");
  if (!line) return line.error();
  std::vector<std::string_view> w = words(*line);
  if (w.empty()) return err(EINVAL, "pmc{}: a value or an event name is missing", index);
  session::PmcWrite out;
  out.index = index;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (w[i] != "no_emul64")
      return err(EINVAL, "pmc{}: unknown word '{}' (only no_emul64 may follow the value)", index, printable(w[i]));
    if (out.no_emul64) return err(EINVAL, "pmc{}: no_emul64 given twice", index);
    out.no_emul64 = true;
  }
  // A number wins; then an event name; the error speaks of what the word
  // looks like.
  std::string_view v = w[0];
  if (auto n = parseNumber(v)) {
    out.value = *n;
    return out;
  } else if (isDigit(v.front()) || v.front() == '-' || v.front() == '+') {
    if (!desc.findEvent(v.substr(0, v.find(':')))) return err(EINVAL, "pmc{}: {}", index, n.error().reason);
  }
  auto e = pmu::encodeEventName(desc, v, index);
  if (!e) return e.error();
  out.value = *e;
  return out;
}

Result<session::PmdWrite> parsePmdWrite(unsigned index, std::string_view text) {
  auto line = oneLine(text, "pmd write");
  if (!line) return line.error();
  std::vector<std::string_view> w = words(*line);
  if (w.empty()) return err(EINVAL, "pmd{}: a value is missing", index);
  session::PmdWrite out;
  out.index = index;
  auto value = parseNumber(w[0]);
  if (!value) {
    const PmdAttribute* a = findByName(kPmdAttributes, w[0].substr(0, w[0].find('=')));
    if (w[0].find('=') != std::string_view::npos || (a && a->kind == PmdAttribute::Kind::Flag))
      return err(EINVAL, "pmd{}: the value must come first, before '{}'", index, printable(w[0]));
    return err(EINVAL, "pmd{}: {}", index, value.error().reason);
  }
  out.value = *value;

  std::set<std::string_view> seen;
  for (std::size_t i = 1; i < w.size(); ++i) {
    std::string_view word = w[i];
    std::size_t eq = word.find('=');
    std::string_view key = word.substr(0, eq);
    const PmdAttribute* a = findByName(kPmdAttributes, key);
    if (!a) return err(EINVAL, "pmd{}: unknown attribute '{}' ({})", index, printable(word), namesOf(kPmdAttributes));
    auto st = parsePmdAttribute(index, *a,
                                eq == std::string_view::npos ? std::nullopt : std::optional(word.substr(eq + 1)), out);
    if (!st) return st.error();
    if (!seen.insert(key).second) return err(EINVAL, "pmd{}: {} given twice", index, key);
  }
  return out;
}

Result<std::vector<session::RegWrite>> parseRegs(const pmu::PmuDescription& desc, std::string_view text) {
  std::vector<session::RegWrite> out;
  std::set<std::pair<bool, unsigned>> seen;  // (is pmd, index)
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    start = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    std::vector<std::string_view> w = words(line);
    if (w.empty()) continue;
    std::string_view rest = line.substr(static_cast<std::size_t>(w[0].data() + w[0].size() - line.data()));
    if (auto k = registerIndex(w[0], "pmc")) {
      if (!seen.insert({false, *k}).second) return err(EINVAL, "regs line {}: pmc{} named twice", line_no, *k);
      auto pmc = parsePmcWrite(desc, *k, rest);
      if (!pmc) return err(EINVAL, "regs line {}: {}", line_no, pmc.error().reason);
      out.push_back(*pmc);
    } else if (auto d = registerIndex(w[0], "pmd")) {
      if (!seen.insert({true, *d}).second) return err(EINVAL, "regs line {}: pmd{} named twice", line_no, *d);
      auto pmd = parsePmdWrite(*d, rest);
      if (!pmd) return err(EINVAL, "regs line {}: {}", line_no, pmd.error().reason);
      out.push_back(*pmd);
    } else {
      return err(EINVAL, "regs line {}: '{}' is not pmcK or pmdK (K < {})", line_no, printable(w[0]),
                 pmu::kMaxRegIndex);
    }
  }
  if (out.empty()) return err(EINVAL, "regs: no register given (one 'pmcK VALUE' or 'pmdK VALUE' per line)");
  return out;
}

Result<session::SwitchSpec> parseSwitch(std::string_view text) {
  auto line = oneLine(text, "switch");
  if (!line) return line.error();
  std::vector<std::string_view> w = words(*line);
  session::SwitchSpec s;
  if (w.size() == 1 && w[0] == "none") return s;
  if (w.size() == 1 && w[0] == "ovfl") {
    s.on_ovfl = true;
    return s;
  }
  if (!w.empty() && w[0] == "time") {
    // perfmon2 lets a set switch on both (PFM_SETFL_TIME_SWITCH | PFM_SETFL_OVFL_SWITCH): "time NS ovfl".
    bool both = w.size() == 3 && w[2] == "ovfl";
    if (w.size() != 2 && !both)
      return err(EINVAL, "switch: 'time NS' takes exactly one number of nanoseconds (and optionally 'ovfl')");
    auto ns = parseUnsigned(w[1], "switch time");
    if (!ns) return ns.error();
    if (*ns == 0) return err(EINVAL, "switch time 0: the timeout must be at least 1 ns");
    s.on_time = true;
    s.timeout_ns = *ns;
    s.on_ovfl = both;
    return s;
  }
  return err(EINVAL, "switch: '{}' is not none, time NS, ovfl or time NS ovfl", printable(*line));
}

Result<session::Mode> parseMode(std::string_view text) {
  auto line = oneLine(text, "mode");
  if (!line) return line.error();
  if (*line == "thread") return session::Mode::Thread;
  if (*line == "system") return session::Mode::System;
  if (*line == "cgroup") return session::Mode::Cgroup;
  return err(EINVAL, "mode: '{}' is not thread, system or cgroup", printable(*line));
}

Result<session::Flags> parseFlags(std::string_view text) {
  auto line = oneLine(text, "flags");
  if (!line) return line.error();
  session::Flags f;
  if (line->empty() || *line == "none") return f;
  std::set<std::string_view> seen;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line->find(',', start);
    std::string_view piece =
        line->substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::vector<std::string_view> w = words(piece);
    if (w.empty()) return err(EINVAL, "flags: an empty word between commas in '{}'", printable(*line));
    for (std::string_view word : w) {
      if (word == "none") return err(EINVAL, "flags: 'none' must stand alone");
      const SessionFlag* flag = findByName(kSessionFlags, word);
      if (!flag) return err(EINVAL, "flags: unknown flag '{}' ({}, or none)", printable(word), namesOf(kSessionFlags));
      f.*flag->field = true;
      if (!seen.insert(word).second) return err(EINVAL, "flags: {} given twice", word);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return f;
}

Result<CtlCommand> parseCtl(std::string_view text) {
  std::string_view t = trim(text);
  if (t.find('\n') != std::string_view::npos) return err(EINVAL, "ctl: one command per write, got '{}'", printable(t));
  std::vector<std::string_view> w = words(t);
  if (w.empty()) return err(EINVAL, "ctl: no command (load TID [set=N], start [N], stop, restart, unload)");

  // A set number: 0..65535, not negative.
  auto setNumber = [](std::string_view s, const char* what) -> Result<unsigned> {
    auto n = parseUnsigned(s, what);
    if (!n) return n.error();
    if (*n > 65535) return err(EINVAL, "{}: set {} is out of range (0..65535)", what, *n);
    return static_cast<unsigned>(*n);
  };

  CtlCommand c;
  std::string_view cmd = w[0];
  if (cmd == "load") {
    c.kind = CtlCommand::Kind::Load;
    if (w.size() < 2)
      return err(EINVAL, "ctl: load needs a thread id, a cpu number or a control group (load TID|PATH [set=N])");
    if (w.size() > 3) return err(EINVAL, "ctl: too many words after load (load TID|PATH [set=N])");
    // A word that is not a thread id or cpu number (0..INT_MAX) is a
    // control group's path (mode cgroup; in that mode every word is one):
    // the session checks it, since only it knows its mode, and refuses it
    // in the others. A path is one word: blanks would end it.
    c.path = std::string(w[1]);
    c.target = -1;
    if (w[1].front() != '-' && w[1].front() != '+') {
      auto target = parseUnsigned(w[1], "load");
      if (target && *target <= static_cast<std::uint64_t>(INT_MAX)) c.target = static_cast<int>(*target);
    }
    if (w.size() == 3) {
      if (w[2].substr(0, 4) != "set=") return err(EINVAL, "ctl: '{}' after load TID is not set=N", printable(w[2]));
      if (w[2].size() == 4) return err(EINVAL, "ctl: set= needs a set number");
      auto set = setNumber(w[2].substr(4), "load set=");
      if (!set) return set.error();
      c.set = *set;
    }
    return c;
  }
  if (cmd == "start") {
    c.kind = CtlCommand::Kind::Start;
    if (w.size() > 2) return err(EINVAL, "ctl: start takes at most one set number (start [N])");
    if (w.size() == 2) {
      auto set = setNumber(w[1], "start");
      if (!set) return set.error();
      c.set = *set;
    }
    return c;
  }
  struct Bare {
    const char* name;
    CtlCommand::Kind kind;
  };
  constexpr Bare kBare[] = {
      {"stop", CtlCommand::Kind::Stop},
      {"restart", CtlCommand::Kind::Restart},
      {"unload", CtlCommand::Kind::Unload},
  };
  for (const auto& b : kBare) {
    if (cmd != b.name) continue;
    if (w.size() > 1) return err(EINVAL, "ctl: {} takes no argument, got '{}'", b.name, printable(w[1]));
    c.kind = b.kind;
    return c;
  }
  return err(EINVAL, "ctl: unknown command '{}' (load TID [set=N], start [N], stop, restart, unload)", printable(cmd));
}

Result<std::uint64_t> parseAdvance(std::string_view text) {
  auto line = oneLine(text, "advance");
  if (!line) return line.error();
  return parseUnsigned(*line, "advance");
}

Result<session::SamplingSpec> parseSmplFmt(std::string_view text) {
  auto line = oneLine(text, "smpl_fmt");
  if (!line) return line.error();
  std::vector<std::string_view> w = words(*line);
  session::SamplingSpec spec;
  if (w.empty()) return err(EINVAL, "smpl_fmt: no format (none, or FORMAT buf_size=N [buf_flags=F])");
  if (w[0] == "none") {
    if (w.size() > 1) return err(EINVAL, "smpl_fmt: none takes no argument, got '{}'", printable(w[1]));
    return spec;
  }
  if (w[0].find('=') != std::string_view::npos)
    return err(EINVAL, "smpl_fmt: the format must come first, before '{}' (FORMAT buf_size=N [buf_flags=F])",
               printable(w[0]));
  for (char c : w[0])
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      return err(EINVAL, "smpl_fmt: '{}' is not a format name", printable(w[0]));
  spec.format = std::string(w[0]);
  bool have_size = false, have_flags = false;
  for (std::size_t i = 1; i < w.size(); ++i) {
    std::size_t eq = w[i].find('=');
    std::string_view key = w[i].substr(0, eq);
    bool* seen = key == "buf_size" ? &have_size : key == "buf_flags" ? &have_flags : nullptr;
    if (!seen) return err(EINVAL, "smpl_fmt: unknown argument '{}' (buf_size=N, buf_flags=F)", printable(w[i]));
    if (*seen) return err(EINVAL, "smpl_fmt: {} given twice", key);
    *seen = true;
    if (eq == std::string_view::npos || eq + 1 == w[i].size())
      return err(EINVAL, "smpl_fmt: {} needs a value ({}=N)", key, key);
    const std::string what = fmt::format("smpl_fmt {}", key);
    auto n = parseUnsigned(w[i].substr(eq + 1), what.c_str());
    if (!n) return n.error();
    if (seen == &have_size) {
      spec.buf_size = *n;
    } else {
      if (*n > UINT32_MAX) return err(EINVAL, "smpl_fmt: buf_flags={:#x} is over 32 bits", *n);
      spec.buf_flags = static_cast<std::uint32_t>(*n);
    }
  }
  if (!have_size) return err(EINVAL, "smpl_fmt: {} needs buf_size=N (bytes of the buffer)", printable(w[0]));
  return spec;
}

}  // namespace pfmfs::fs
