// The text of pfmfs's files (pfmfs(5)): parsers for everything a user writes
// and formatters for everything a user reads. Pure functions over engine
// types, so the fs layer's FUSE code never touches a string format and the
// fuzz tests can drive every parser without a mount.
//
// Every parser takes the bytes of one write(2) as they came (a trailing
// newline, surrounding blanks allowed) and answers -EINVAL with a reason that
// quotes the offending text through printable() when it does not parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pmu/backend.h"
#include "pmu/number_text.h"
#include "pmu/pmu_description.h"
#include "pmu/result.h"
#include "session/engine.h"
#include "session/register_rules.h"
#include "session/session.h"

namespace pfmfs::fs {

// ---- parsers ---------------------------------------------------------------

// A number: decimal, 0x hexadecimal or -decimal (pmu/number_text.h).
using pmu::parseNumber;

// A register LIST: comma-separated indices (each < 64, duplicates allowed) or
// a 0x mask. An empty list is EINVAL; "0x0" is the empty mask.
Result<pmu::RegMask> parseRegList(std::string_view text);

// PMC K write: "VALUE [no_emul64]" or "EVENT[:u][:k] [no_emul64]" with an
// event of desc's table (encoded with pmu::encodeEventName). Only syntax is
// checked here; reserved bits and privileges are the engine's rules.
Result<session::PmcWrite> parsePmcWrite(const pmu::PmuDescription& desc, unsigned index, std::string_view text);

// PMD K write: "VALUE [long_reset=V] [short_reset=V] [switch_cnt=N]
// [reset_pmds=LIST] [smpl_pmds=LIST] [random_mask=M] [eventid=E] [notify]
// [random]". `notify=0|1` and `random=0|1` are accepted too (0 clears); an
// attribute given twice, an unknown word or a missing VALUE is EINVAL.
Result<session::PmdWrite> parsePmdWrite(unsigned index, std::string_view text);

// `regs` write: one register per line, "pmcK ..." or "pmdK ..." in the
// syntaxes above; blank lines are skipped; at least one register. A register
// named twice is EINVAL. The reason names the line number.
Result<std::vector<session::RegWrite>> parseRegs(const pmu::PmuDescription& desc, std::string_view text);

// `switch`: "none" | "time NS" (NS > 0) | "ovfl".
Result<session::SwitchSpec> parseSwitch(std::string_view text);

// `mode`: "thread" | "system" | "cgroup".
Result<session::Mode> parseMode(std::string_view text);

// `flags`: words among notify_block no_msg autoclose inherit, separated by
// blanks or commas; "" or "none" clears every flag. The write replaces them all.
Result<session::Flags> parseFlags(std::string_view text);

// One `ctl` command (pfmfs(5), sessions/NAME/ctl).
struct CtlCommand {
  enum class Kind { Load, Start, Stop, Restart, Unload };
  Kind kind = Kind::Stop;
  int target = 0;               // load: TID or CPU (>= 0, fits an int); -1 for a word not a number
  std::optional<unsigned> set;  // load ... set=N, start N (N <= 65535)
  std::string path{};           // load: the word as written, a control group's path in mode cgroup
  bool operator==(const CtlCommand&) const = default;
};
// Exactly one command; a second line is EINVAL.
Result<CtlCommand> parseCtl(std::string_view text);

// `pmu/sim/advance`: a number of nanoseconds (parseNumber, no '-').
Result<std::uint64_t> parseAdvance(std::string_view text);

// `smpl_fmt` (pfmfs(5), SAMPLING): "none" (format "") or "FORMAT
// buf_size=N [buf_flags=F]", numbers as parseNumber without '-'. Any
// printable word is taken as FORMAT: whether it exists is the engine's to
// say (Session::setSampling). An unknown or repeated key, no buf_size, or
// buf_flags above 32 bits is EINVAL.
Result<session::SamplingSpec> parseSmplFmt(std::string_view text);

// ---- formatters: every result ends with one newline -------------------------

std::string formatVersion();  // "pfmfs VERSION\nabi 1\n"
// The fast path's socket as pmu/info names it (fastpath_server.h): its
// abstract name ('@' first; empty: no fast path) and the pid and uid the
// kernel reports for its listener (SO_PEERCRED), which libpfm-compat checks.
struct FastPathEndpoint {
  std::string name;
  std::int64_t pid = 0;
  std::uint32_t uid = 0;
};
// backend= model= pmcs= pmds= counters= fixed= width= features= tick_ns=,
// and with a fast-path socket the feature `fastpath` and fastpath=NAME
// fastpath_pid=PID fastpath_uid=UID.
std::string formatPmuInfo(const pmu::Backend& backend, std::uint64_t tick_ns, const FastPathEndpoint& fastpath = {});
std::string formatEvents(const pmu::PmuDescription& desc);  // name= code=0x.. pmcs=0x.. desc="..."
std::string formatMode(session::Mode m);                    // "thread\n"
std::string formatFlags(const session::Flags& f);           // "notify_block no_msg\n", "\n" when none
// state= mode= target= set= queued= lost=, then the optional keys: [exited=1] ... [smpl_count= smpl_overflows=
// [smpl_dropped=]]
std::string formatState(const session::StateInfo& s);
std::string formatCounts(
    const std::vector<session::CountLine>& lines);       // set= pmd= value= enabled_ns= running_ns= scaled=
std::string formatSwitch(const session::SwitchSpec& s);  // "none\n" | "time NS\n" | "ovfl\n" | "time NS ovfl\n"
// `pmds`: pmd= value= long_reset= short_reset= last_reset= switch_cnt= switch_left=, one line per PMD.
std::string formatPmdStates(const std::vector<session::PmdLine>& pmds);
std::string formatSetInfo(
    const session::SetInfo& i);  // runs= duration_ns= timeout_ns= ovfl_pmds=0x.. avail_pmcs=0x.. avail_pmds=0x..
std::string formatPmc(const session::PmcState& p);  // "0x13003c\n" or "0x13003c no_emul64\n"
std::string formatPmd(std::uint64_t value);         // decimal
// `smpl_fmt`: "none\n" or "FORMAT buf_size=N buf_flags=F\n" (decimal).
std::string formatSmplFmt(const session::SamplingSpec& spec);
// `samples`: one line per entry, `sample=K set= pmd= tid= pid= cpu= ip=0x..
// tstamp= last_reset= eventid=` and ` pmdK=VALUE` per bit of smpl_pmds.
std::string formatSamples(const std::vector<session::SampleRecord>& records);
// One register per line in the syntax of a write, so that a `regs` read
// written back to another set copies it.
std::string formatRegs(const std::vector<session::RegWrite>& regs);

}  // namespace pfmfs::fs
