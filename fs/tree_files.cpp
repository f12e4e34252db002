// What a read of each file of the tree shows and what a write to it does:
// the functions tree_schema.h's rows name. The text itself is text_format.h's;
// here each file is mapped onto the engine call it reads or makes.
#include <fmt/format.h>

#include "fs/filesystem_internal.h"
#include "fs/text_format.h"
#include "fs/tree_context.h"

namespace pfmfs::fs {

using session::Session;

namespace {

Session& sessionOf(const Node& n) { return *n.session->session; }

std::string hex(std::uint64_t v) { return fmt::format("0x{:x}\n", v); }

// An engine read's result as text, or its error.
template <typename T, typename Format>
Result<std::string> shown(Result<T> v, Format format) {
  if (!v) return v.error();
  return format(*v);
}

// A write's parsed value applied, or the parse's reason recorded for `error`
// (Session::refuse), as the engine's own refusals are.
template <typename T, typename Apply>
Status applied(Session& s, Result<T> parsed, Apply apply) {
  return parsed ? apply(*parsed) : s.refuse(parsed.error());
}

}  // namespace

// ---- the machine's files ------------------------------------------------------------

Result<std::string> renderVersion(const TreeContext&, const Node&) { return formatVersion(); }
Result<std::string> renderPmuInfo(const TreeContext& fs, const Node&) {
  return formatPmuInfo(fs.engine().backend(), fs.engine().options().tick_ns, fs.fastpath());
}
Result<std::string> renderPmuEvents(const TreeContext& fs, const Node&) { return formatEvents(fs.desc()); }
Result<std::string> renderDescModel(const TreeContext& fs, const Node&) { return fs.desc().model + "\n"; }

Result<std::string> renderPmcName(const TreeContext& fs, const Node& n) { return fs.desc().pmc(n.reg)->name + "\n"; }
Result<std::string> renderPmcAddr(const TreeContext& fs, const Node& n) { return hex(fs.desc().pmc(n.reg)->addr); }
Result<std::string> renderPmcDflVal(const TreeContext& fs, const Node& n) { return hex(fs.desc().pmc(n.reg)->dfl_val); }
Result<std::string> renderPmcRsvdMsk(const TreeContext& fs, const Node& n) {
  return hex(fs.desc().pmc(n.reg)->rsvd_mask);
}
// The counters this PMC configures (libpfm-compat's dispatch needs it).
Result<std::string> renderPmcPmds(const TreeContext& fs, const Node& n) {
  pmu::RegMask m = 0;
  for (const auto& pmd : fs.desc().pmds)
    if (pmd.ctl_pmc == n.reg) m |= pmu::RegMask{1} << pmd.index;
  return hex(m);
}

Result<std::string> renderPmdName(const TreeContext& fs, const Node& n) { return fs.desc().pmd(n.reg)->name + "\n"; }
Result<std::string> renderPmdAddr(const TreeContext& fs, const Node& n) { return hex(fs.desc().pmd(n.reg)->addr); }
Result<std::string> renderPmdWidth(const TreeContext& fs, const Node& n) {
  return fmt::format("{}\n", fs.desc().pmd(n.reg)->width);
}
Result<std::string> renderPmdRsvdMsk(const TreeContext&, const Node&) {
  return hex(0);  // every bit of a counter is writable
}

Status writeAdvance(const TreeContext& fs, const Node&, const session::Caller&, std::string_view text) {
  auto ns = parseAdvance(text);
  if (!ns) return ns.error();
  return fs.engine().advanceManualClock(*ns);
}

// ---- a session's files -------------------------------------------------------------------

Result<std::string> renderMode(const TreeContext&, const Node& n) { return formatMode(sessionOf(n).mode()); }
Result<std::string> renderFlags(const TreeContext&, const Node& n) { return formatFlags(sessionOf(n).flags()); }
Result<std::string> renderState(const TreeContext&, const Node& n) { return formatState(sessionOf(n).state()); }
Result<std::string> renderError(const TreeContext&, const Node& n) {
  std::string e = sessionOf(n).error();
  return e.empty() ? e : e + "\n";
}
Result<std::string> renderCounts(const TreeContext&, const Node& n) { return formatCounts(sessionOf(n).counts()); }

Status writeMode(const TreeContext&, const Node& n, const session::Caller&, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parseMode(text), [&](session::Mode m) { return s.setMode(m); });
}
Status writeFlags(const TreeContext&, const Node& n, const session::Caller&, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parseFlags(text), [&](const session::Flags& f) { return s.setFlags(f); });
}

// Sampling (pfmfs(5), SAMPLING): the format, the buffer's bytes as they are
// (a binary file: any byte, NULs too, goes through the snapshot string),
// and its entries as text.
Result<std::string> renderSmplFmt(const TreeContext&, const Node& n) { return formatSmplFmt(sessionOf(n).sampling()); }
Result<std::string> renderSmplBuf(const TreeContext&, const Node& n) {
  std::vector<std::uint8_t> bytes = sessionOf(n).sampleBytes();
  return std::string(bytes.begin(), bytes.end());
}
Result<std::string> renderSamples(const TreeContext&, const Node& n) { return formatSamples(sessionOf(n).samples()); }

Status writeSmplFmt(const TreeContext&, const Node& n, const session::Caller&, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parseSmplFmt(text), [&](const session::SamplingSpec& spec) { return s.setSampling(spec); });
}

// A loaded thread is watched for its exit (ThreadWatcher), from the load
// until the unload.
Status writeCtl(const TreeContext& fs, const Node& n, const session::Caller& opener, std::string_view text) {
  Session& s = sessionOf(n);
  auto cmd = parseCtl(text);
  if (!cmd) return s.refuse(cmd.error());
  using Kind = CtlCommand::Kind;
  switch (cmd->kind) {
    case Kind::Load: {
      // A cgroup session takes the word as a path, a number included (a
      // group may be named 1234); the others need a number.
      if (s.mode() == session::Mode::Cgroup || cmd->target < 0) return s.loadCgroup(opener, cmd->path, cmd->set);
      Status st = s.load(opener, cmd->target, cmd->set);
      if (st && s.mode() == session::Mode::Thread && fs.watcher()) fs.watcher()->watch(cmd->target);
      return st;
    }
    case Kind::Start:
      return s.start(cmd->set);
    case Kind::Stop:
      return s.stop();
    case Kind::Restart:
      return s.restart();
    case Kind::Unload: {
      auto target = s.loadedTarget();
      Status st = s.unload();
      if (st && target && target->kind == pmu::TargetKind::Thread && fs.watcher()) fs.watcher()->unwatch(target->id);
      return st;
    }
  }
  return s.refuse(err(EINVAL, "unknown command"));
}

// ---- a set's files -------------------------------------------------------------------------

Result<std::string> renderSetPmc(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).readPmc(n.set, n.reg), [](const auto& v) { return formatPmc(v); });
}
Result<std::string> renderSetPmd(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).readPmd(n.set, n.reg), [](const auto& v) { return formatPmd(v.value); });
}
Result<std::string> renderRegs(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).regs(n.set), [](const auto& v) { return formatRegs(v); });
}
Result<std::string> renderPmds(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).pmdStates(n.set), [](const auto& v) { return formatPmdStates(v); });
}
Result<std::string> renderSwitch(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).setInfo(n.set), [](const auto& v) { return formatSwitch(v.switch_spec); });
}
Result<std::string> renderSetInfo(const TreeContext&, const Node& n) {
  return shown(sessionOf(n).setInfo(n.set), [](const auto& v) { return formatSetInfo(v); });
}

Status writeSetPmc(const TreeContext& fs, const Node& n, const session::Caller& opener, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parsePmcWrite(fs.desc(), n.reg, text),
                 [&](const session::PmcWrite& w) { return s.writePmc(opener, n.set, w); });
}
Status writeSetPmd(const TreeContext&, const Node& n, const session::Caller&, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parsePmdWrite(n.reg, text), [&](const session::PmdWrite& w) { return s.writePmd(n.set, w); });
}
Status writeRegs(const TreeContext& fs, const Node& n, const session::Caller& opener, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parseRegs(fs.desc(), text),
                 [&](const std::vector<session::RegWrite>& w) { return s.writeRegs(opener, n.set, w); });
}
Status writeSwitch(const TreeContext&, const Node& n, const session::Caller&, std::string_view text) {
  Session& s = sessionOf(n);
  return applied(s, parseSwitch(text), [&](const session::SwitchSpec& w) { return s.setSwitch(n.set, w); });
}

}  // namespace pfmfs::fs
