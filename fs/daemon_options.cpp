// pfmfsd's command line: options to DaemonOptions, one EINVAL with a one-line
// reason for anything wrong, and the --help text. No I/O but the group lookup.
#include "fs/daemon_options.h"

#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fs/text_format.h"

namespace pfmfs::fs {

namespace {

enum class Opt {
  Pmu,
  PerfModel,
  SimClock,
  SimWidth,
  SimCounters,
  SimEvents,
  SimSkid,
  Tick,
  MaxSessions,
  MaxSets,
  MaxMessages,
  FastPathDeadline,
  AllowKernel,
  SystemGroup,
  Help,
  Version,
};

struct LongOption {
  const char* name;  // without the leading "--"
  Opt opt;
  bool takes_value;
  const char* value_name;  // for the help text
  const char* help;
};

constexpr LongOption kLongOptions[] = {
    {"pmu", Opt::Pmu, true, "auto|x86|perf|sim",
     "backend: x86 (helper module), else perf, else the simulator (auto); or one of them"},
    {"perf-model", Opt::PerfModel, true, "auto|sw|x86",
     "perf register model: x86 where the kernel exposes a hardware PMU, else sw (auto)"},
    {"sim-clock", Opt::SimClock, true, "real|manual",
     "sim time: real CPU/wall time, or moved only by writes to pmu/sim/advance"},
    {"sim-width", Opt::SimWidth, true, "W", "sim counter width in bits, 16..64 (default 48)"},
    {"sim-counters", Opt::SimCounters, true, "N", "sim general counters, 1..8 (default 4)"},
    {"sim-events", Opt::SimEvents, true, "FILE", "sim event table replacing the default one"},
    {"sim-skid", Opt::SimSkid, true, "N", "sim overflow interrupts N events after the wrap, 0..32767 (default 0)"},
    {"tick", Opt::Tick, true, "NS", "engine timer period in ns, >= 1000 (default 1000000)"},
    {"max-sessions-per-user", Opt::MaxSessions, true, "N", "sessions one uid may create (default 64)"},
    {"max-sets", Opt::MaxSets, true, "N", "event sets per session, 1..65536 (default 64)"},
    {"max-messages", Opt::MaxMessages, true, "N", "queued messages per session (default 64)"},
    {"fastpath-deadline", Opt::FastPathDeadline, true, "MS",
     "ms a fast-path connection has to send its request, 1..60000 (default 250)"},
    {"allow-kernel", Opt::AllowKernel, false, nullptr, "let non-root users count at kernel level (the OS bit)"},
    {"system-group", Opt::SystemGroup, true, "GROUP",
     "group (name or number) whose members may load system-wide sessions"},
    {"help", Opt::Help, false, nullptr, "print this help and exit"},
    {"version", Opt::Version, false, nullptr, "print the version and exit"},
};

// A count on the command line: decimal or 0x hexadecimal, no sign, no blanks,
// within [lo, hi].
Result<std::uint64_t> parseCount(std::string_view option, std::string_view value, std::uint64_t lo,
                                 std::uint64_t hi) {
  for (char c : value)
    if (c == ' ' || c == '\t' || c == '\n' || c == '-' || c == '+')
      return err(EINVAL, "--{}: '{}' is not a non-negative number", option, printable(value));
  auto n = parseNumber(value);
  if (!n) return err(EINVAL, "--{}: {}", option, n.error().reason);
  if (*n < lo || *n > hi) {
    if (hi == UINT64_MAX) return err(EINVAL, "--{}: {} is too small (at least {})", option, *n, lo);
    return err(EINVAL, "--{}: {} is out of range ({}..{})", option, *n, lo, hi);
  }
  return *n;
}

// A group by name, else by number.
Result<gid_t> lookupGroup(std::string_view value) {
  if (value.empty()) return err(EINVAL, "--system-group: a group name or number is missing");
  std::string name(value);
  long size_hint = sysconf(_SC_GETGR_R_SIZE_MAX);
  std::vector<char> buf(size_hint > 0 ? static_cast<std::size_t>(size_hint) : 1024);
  while (true) {
    group grp{};
    group* found = nullptr;
    int rc = getgrnam_r(name.c_str(), &grp, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 24)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc == 0 && found) return found->gr_gid;
    break;
  }
  bool digits = true;
  for (char c : value) digits = digits && c >= '0' && c <= '9';
  if (digits) {
    auto n = parseNumber(value);
    // (gid_t)-1 means "no group" to chown and friends: not a usable group.
    if (n && *n < static_cast<std::uint64_t>(static_cast<gid_t>(-1))) return static_cast<gid_t>(*n);
    return err(EINVAL, "--system-group: group number {} is out of range", printable(value));
  }
  return err(EINVAL, "--system-group: unknown group '{}'", printable(value));
}

// `path` (not empty) as an absolute path: relative ones under the current directory, with
// "." components and repeated or trailing slashes dropped.
Result<std::string> absolutePath(std::string_view path) {
  if (path.empty()) return err(EINVAL, "an empty path");
  std::string joined;
  if (path.front() != '/') {
    std::vector<char> cwd(PATH_MAX);
    if (!::getcwd(cwd.data(), cwd.size()))
      return err(EINVAL, "cannot make '{}' absolute: no current directory", printable(path));
    joined = cwd.data();
    joined += '/';
  }
  joined += path;
  std::string out;
  std::size_t i = 0;
  while (i < joined.size()) {
    while (i < joined.size() && joined[i] == '/') ++i;
    std::size_t start = i;
    while (i < joined.size() && joined[i] != '/') ++i;
    std::string_view part(joined.data() + start, i - start);
    if (part.empty() || part == ".") continue;
    out += '/';
    out += part;
  }
  return out.empty() ? std::string("/") : out;
}

Status applyLong(DaemonOptions& o, const LongOption& lo, std::string_view value) {
  switch (lo.opt) {
    case Opt::Pmu:
      if (value == "auto") o.pmu = PmuChoice::Auto;
      else if (value == "perf") o.pmu = PmuChoice::Perf;
      else if (value == "sim") o.pmu = PmuChoice::Sim;
      else if (value == "x86") o.pmu = PmuChoice::X86;
      else return err(EINVAL, "--pmu: '{}' is not auto, x86, perf or sim", printable(value));
      return {};
    case Opt::PerfModel:
      if (value == "auto") o.perf_model = PerfModelChoice::Auto;
      else if (value == "sw") o.perf_model = PerfModelChoice::Software;
      else if (value == "x86") o.perf_model = PerfModelChoice::X86;
      else return err(EINVAL, "--perf-model: '{}' is not auto, sw or x86", printable(value));
      return {};
    case Opt::SimClock:
      if (value == "real") o.sim.clock = pmu::ClockKind::Real;
      else if (value == "manual") o.sim.clock = pmu::ClockKind::Manual;
      else return err(EINVAL, "--sim-clock: '{}' is not real or manual", printable(value));
      return {};
    case Opt::SimWidth: {
      auto n = parseCount(lo.name, value, 16, 64);
      if (!n) return n.error();
      o.sim.shape.width = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::SimCounters: {
      auto n = parseCount(lo.name, value, 1, 8);
      if (!n) return n.error();
      o.sim.shape.general_counters = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::SimEvents: {
      // Absolute, so that it still names the file after fuse_daemonize's chdir("/").
      if (value.empty()) return err(EINVAL, "--sim-events: a file name is missing");
      auto path = absolutePath(value);
      if (!path) return path.error();
      o.sim_events_path = *path;
      return {};
    }
    case Opt::SimSkid: {
      auto n = parseCount(lo.name, value, 0, pmu::sim::kMaxSkid);
      if (!n) return n.error();
      o.sim.skid = *n;
      return {};
    }
    case Opt::Tick: {
      auto n = parseCount(lo.name, value, 1000, UINT64_MAX);
      if (!n) return n.error();
      o.engine.tick_ns = *n;
      return {};
    }
    case Opt::MaxSessions: {
      auto n = parseCount(lo.name, value, 1, UINT_MAX);
      if (!n) return n.error();
      o.engine.max_sessions_per_user = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::MaxSets: {
      auto n = parseCount(lo.name, value, 1, 65536);  // set ids are 0..65535
      if (!n) return n.error();
      o.engine.max_sets = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::MaxMessages: {
      auto n = parseCount(lo.name, value, 1, UINT_MAX);
      if (!n) return n.error();
      o.engine.max_messages = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::FastPathDeadline: {
      auto n = parseCount(lo.name, value, 1, 60000);
      if (!n) return n.error();
      o.fastpath_deadline_ms = static_cast<unsigned>(*n);
      return {};
    }
    case Opt::SystemGroup: {
      auto g = lookupGroup(value);
      if (!g) return g.error();
      o.system_group = *g;
      return {};
    }
    case Opt::AllowKernel: o.allow_kernel = true; return {};
    case Opt::Help: o.help = true; return {};
    case Opt::Version: o.version = true; return {};
  }
  return {};
}

const LongOption* findLongOption(std::string_view name) {
  for (const auto& l : kLongOptions)
    if (name == l.name) return &l;
  return nullptr;
}

bool shapesTheSim(Opt opt) {
  return opt == Opt::SimClock || opt == Opt::SimWidth || opt == Opt::SimCounters || opt == Opt::SimEvents ||
         opt == Opt::SimSkid;
}

// What mount(8) and mount.fuse3 may hand pfmfsd in -o that libfuse would
// refuse and that says nothing to a FUSE daemon: mount(8)'s own options
// (mount.fuse3 3.14 drops user, users, nouser, auto, noauto, _netdev and
// nofail itself, and libmount never passes x-*, X-* and comment= to a
// helper, but pfmfsd run by hand with an fstab line's options gets them
// all), and VFS flags libfuse cannot set (the atime variants, nosymfollow:
// pfmfs has no symlinks, silent, iversion, mand). The flags libfuse knows
// (rw, ro, dev, nodev, suid, nosuid, exec, noexec, sync, async, dirsync,
// atime, noatime) go on to it.
bool ignoredMountOption(std::string_view opt) {
  static constexpr std::string_view kExact[] = {
      "defaults", "auto",     "noauto",      "user",     "nouser",      "users",    "nousers",     "owner",
      "noowner",  "group",    "nogroup",     "_netdev",  "nofail",      "relatime", "norelatime",  "strictatime",
      "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime", "symfollow", "nosymfollow", "silent",
      "loud",     "iversion", "noiversion",  "mand",     "nomand",
  };
  static constexpr std::string_view kPrefixes[] = {"x-", "X-", "comment=", "helper=", "uhelper="};
  for (auto e : kExact)
    if (opt == e) return true;
  for (auto p : kPrefixes)
    if (opt.substr(0, p.size()) == p) return true;
  return false;
}

// libfuse's option lists: a comma separates, a backslash escapes the next
// character. Each option comes back as written (escapes kept, for libfuse).
std::vector<std::string_view> splitOptionList(std::string_view list) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '\\') {
      ++i;
    } else if (list[i] == ',') {
      out.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(list.substr(start));
  return out;
}

std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

// One -o argument: pfmfsd's own options are applied, mount(8)'s meaningless
// ones set aside, and what is left goes to libfuse as one comma list.
Status takeMountOptions(DaemonOptions& o, std::string_view list) {
  std::string for_fuse;
  for (std::string_view opt : splitOptionList(list)) {
    if (opt.empty()) continue;  // "a,,b", or a trailing comma: nothing
    std::size_t eq = opt.find('=');
    std::string name(opt.substr(0, eq));
    for (char& c : name)
      if (c == '_') c = '-';
    const LongOption* lo = findLongOption(name);
    if (lo && lo->opt != Opt::Help && lo->opt != Opt::Version) {
      if (lo->takes_value && eq == std::string_view::npos)
        return err(EINVAL, "-o {}: needs a value ({}={})", printable(opt), printable(opt), lo->value_name);
      if (!lo->takes_value && eq != std::string_view::npos)
        return err(EINVAL, "-o {}: {} takes no value", printable(opt), printable(opt.substr(0, eq)));
      if (shapesTheSim(lo->opt)) o.sim_options = true;
      std::string value = eq == std::string_view::npos ? std::string() : unescape(opt.substr(eq + 1));
      Status st = applyLong(o, *lo, value);
      if (!st) return st.error();
      continue;
    }
    if (ignoredMountOption(opt)) {
      o.ignored_mount_options.emplace_back(opt);
      continue;
    }
    if (!for_fuse.empty()) for_fuse += ',';
    for_fuse += opt;
  }
  if (!for_fuse.empty()) o.fuse_options.push_back(std::move(for_fuse));
  return {};
}

}  // namespace

Result<DaemonOptions> parseDaemonOptions(int argc, const char* const* argv) {
  DaemonOptions o;
  // [SOURCE] MOUNTPOINT: mount.fuse3 puts the fstab line's source first.
  std::vector<std::string> positionals;
  auto positional = [&](std::string_view arg) -> Status {
    if (positionals.size() == 2)
      return err(EINVAL, "too many arguments: '{}', '{}' and '{}' (at most a source and a mount point)",
                 printable(positionals[0]), printable(positionals[1]), printable(arg));
    positionals.emplace_back(arg);
    return {};
  };

  bool options_done = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i] ? argv[i] : "";
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      Status st = positional(arg);
      if (!st) return st.error();
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg.substr(0, 2) == "--") {
      std::string_view body = arg.substr(2);
      std::size_t eq = body.find('=');
      std::string_view name = body.substr(0, eq);
      const LongOption* lo = findLongOption(name);
      if (!lo) return err(EINVAL, "unknown option '--{}' (see --help)", printable(name));
      std::string_view value;
      if (!lo->takes_value) {
        if (eq != std::string_view::npos) return err(EINVAL, "--{} takes no value", lo->name);
      } else if (eq != std::string_view::npos) {
        value = body.substr(eq + 1);
      } else {
        if (i + 1 >= argc || !argv[i + 1]) return err(EINVAL, "--{} needs a value ({})", lo->name, lo->value_name);
        value = argv[++i];
      }
      if (shapesTheSim(lo->opt)) o.sim_options = true;
      Status st = applyLong(o, *lo, value);
      if (!st) return st.error();
      continue;
    }
    // Short options, possibly grouped ("-fd"); -o takes the rest of the word
    // or the next argument.
    for (std::size_t k = 1; k < arg.size(); ++k) {
      char c = arg[k];
      if (c == 'f') {
        o.foreground = true;
      } else if (c == 'd') {
        o.debug = true;
        o.foreground = true;
      } else if (c == 'h') {
        o.help = true;
      } else if (c == 'o') {
        std::string_view value;
        if (k + 1 < arg.size()) {
          value = arg.substr(k + 1);
        } else {
          if (i + 1 >= argc || !argv[i + 1]) return err(EINVAL, "-o needs mount options (-o OPT[,OPT...])");
          value = argv[++i];
        }
        if (value.empty()) return err(EINVAL, "-o needs mount options (-o OPT[,OPT...])");
        Status st = takeMountOptions(o, value);
        if (!st) return st.error();
        break;
      } else {
        return err(EINVAL, "unknown option '-{}' (see --help)", printable(std::string_view(&arg[k], 1)));
      }
    }
  }

  if (o.sim_options && (o.pmu == PmuChoice::Perf || o.pmu == PmuChoice::X86))
    return err(EINVAL, "--sim-clock, --sim-width, --sim-counters, --sim-events and --sim-skid shape the simulator: not with --pmu={}", o.pmu == PmuChoice::Perf ? "perf" : "x86");
  if (positionals.size() == 2) o.source = positionals[0];
  if (!positionals.empty()) {
    const std::string& mountpoint = positionals.back();
    if (mountpoint.empty()) return err(EINVAL, "the mount point is an empty string");
    // mount.fuse3's drop_privileges mounts by itself and passes the FUSE
    // descriptor as /dev/fd/N: with its own options, not pfmfsd's
    // default_permissions, on which every file's access check relies.
    if (mountpoint.rfind("/dev/fd/", 0) == 0)
      return err(EINVAL, "mount point {}: a FUSE descriptor mounted by someone else (mount.fuse3's drop_privileges) is not supported: pfmfsd mounts itself", printable(mountpoint));
    auto abs = absolutePath(mountpoint);
    if (!abs) return abs.error();
    o.mountpoint = *abs;
  }
  return o;
}

std::string usageText() {
  std::string out = "usage: pfmfsd [options] [[SOURCE] MOUNTPOINT]   (default mount point /run/pfmfs; SOURCE is ignored)\n";
  auto line = [&out](const std::string& left, const char* help) {
    out += fmt::format("  {:<32} {}\n", left, help);
  };
  line("-f", "stay in the foreground");
  line("-d", "print FUSE's debug output (implies -f)");
  line("-o OPT[,OPT...]", "mount options, e.g. allow_other; also the long options below: pmu=sim,allow_kernel");
  for (const auto& l : kLongOptions) {
    if (l.opt == Opt::Help) line("-h, --help", l.help);
    else if (l.takes_value) line(fmt::format("--{}={}", l.name, l.value_name), l.help);
    else line(fmt::format("--{}", l.name), l.help);
  }
  return out;
}

}  // namespace pfmfs::fs
