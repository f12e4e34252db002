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
#include "pmu/backend_registry.h"

namespace pfmfs::fs {

namespace {

using pmu::OptionSpec;
using pmu::OptionValue;
using Kind = OptionSpec::Kind;

// A row of pfmfsd's command line: the option, and where its value goes.
struct Row {
  OptionSpec spec;
  Status (*apply)(DaemonOptions& o, const OptionValue& v);
};

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

// --pmu's words: auto, then the backends in auto's order.
std::span<const std::string_view> pmuWords() {
  static const std::vector<std::string_view> words = [] {
    std::vector<std::string_view> w = {"auto"};
    for (const pmu::BackendEntry* e : pmu::backendEntries()) w.push_back(e->name);
    return w;
  }();
  return words;
}

// The apply of a backend's option: applyLong keeps its value by name, for
// that backend's create().
Status keepForBackend(DaemonOptions&, const OptionValue&) { return {}; }

// Every long option, in --help's order: --pmu, the backends' own, then the
// engine's and the daemon's.
const std::vector<Row>& rows() {
  static const std::vector<Row> table = [] {
    std::vector<Row> t;
    t.push_back({{.name = "pmu",
                  .kind = Kind::Word,
                  .value_name = "",
                  .help = "backend: x86 (helper module), else perf, else the simulator (auto); or one of them",
                  .words = pmuWords()},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.pmu = v.text;
                   return {};
                 }});
    for (const pmu::BackendEntry* e : pmu::backendEntries())
      for (const OptionSpec& spec : e->options) t.push_back({spec, keepForBackend});
    t.push_back({{.name = "tick",
                  .kind = Kind::Count,
                  .value_name = "NS",
                  .help = "engine timer period in ns, >= 1000 (default 1000000)",
                  .lo = 1000},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.tick_ns = v.number;
                   return {};
                 }});
    t.push_back({{.name = "max-sessions-per-user",
                  .kind = Kind::Count,
                  .value_name = "N",
                  .help = "sessions one uid may create (default 64)",
                  .lo = 1,
                  .hi = UINT_MAX},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.max_sessions_per_user = static_cast<unsigned>(v.number);
                   return {};
                 }});
    t.push_back({{.name = "max-sets",
                  .kind = Kind::Count,
                  .value_name = "N",
                  .help = "event sets per session, 1..65536 (default 64)",
                  .lo = 1,
                  .hi = 65536},  // ids 0..65535
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.max_sets = static_cast<unsigned>(v.number);
                   return {};
                 }});
    t.push_back({{.name = "max-messages",
                  .kind = Kind::Count,
                  .value_name = "N",
                  .help = "queued messages per session (default 64)",
                  .lo = 1,
                  .hi = UINT_MAX},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.max_messages = static_cast<unsigned>(v.number);
                   return {};
                 }});
    t.push_back({{.name = "max-smpl-bytes-per-user",
                  .kind = Kind::Count,
                  .value_name = "BYTES",
                  .help = "sampling buffer bytes one uid may hold, each buffer in whole pages (default 67108864)",
                  .lo = 1},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.max_smpl_bytes_per_user = v.number;
                   return {};
                 }});
    t.push_back({{.name = "max-cgroup-events-per-user",
                  .kind = Kind::Count,
                  .value_name = "N",
                  .help = "counters one uid's cgroup loads may hold (default 4096)",
                  .lo = 1},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.engine.max_cgroup_events_per_user = v.number;
                   return {};
                 }});
    t.push_back({{.name = "fastpath-deadline",
                  .kind = Kind::Count,
                  .value_name = "MS",
                  .help = "ms a fast-path connection has to send its request, 1..60000 (default 250)",
                  .lo = 1,
                  .hi = 60000},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   o.fastpath_deadline_ms = static_cast<unsigned>(v.number);
                   return {};
                 }});
    t.push_back({{.name = "allow-kernel",
                  .kind = Kind::Flag,
                  .value_name = "",
                  .help = "let non-root users count at kernel level (the OS bit)"},
                 [](DaemonOptions& o, const OptionValue&) -> Status {
                   o.allow_kernel = true;
                   return {};
                 }});
    t.push_back({{.name = "system-group",
                  .kind = Kind::Text,
                  .value_name = "GROUP",
                  .help = "group (name or number) whose members may load system-wide sessions"},
                 [](DaemonOptions& o, const OptionValue& v) -> Status {
                   auto g = lookupGroup(v.text);
                   if (!g) return g.error();
                   o.system_group = *g;
                   return {};
                 }});
    t.push_back({{.name = "help", .kind = Kind::Flag, .value_name = "", .help = "print this help and exit"},
                 [](DaemonOptions& o, const OptionValue&) -> Status {
                   o.help = true;
                   return {};
                 }});
    t.push_back({{.name = "version", .kind = Kind::Flag, .value_name = "", .help = "print the version and exit"},
                 [](DaemonOptions& o, const OptionValue&) -> Status {
                   o.version = true;
                   return {};
                 }});
    return t;
  }();
  return table;
}

const Row* findRow(std::string_view name) {
  for (const Row& r : rows())
    if (name == r.spec.name) return &r;
  return nullptr;
}

bool takesValue(const Row& r) { return r.spec.kind != Kind::Flag; }

// The value checked against its row, then applied; a backend's option is
// kept by name for the backend.
Status applyLong(DaemonOptions& o, const Row& r, std::string_view value) {
  auto v = pmu::parseOptionValue(r.spec, value);
  if (!v) return v.error();
  if (r.apply == keepForBackend) {
    o.backend_options[std::string(r.spec.name)] = std::move(*v);
    return {};
  }
  return r.apply(o, *v);
}

// A backend's options given with --pmu naming another backend.
Status checkBackendOptions(const DaemonOptions& o) {
  if (o.pmu == "auto") return {};
  for (const auto& [name, value] : o.backend_options) {
    const pmu::BackendEntry* owner = pmu::backendOfOption(name);
    if (!owner || owner->name == o.pmu) continue;
    std::string list;
    for (std::size_t i = 0; i < owner->options.size(); ++i) {
      if (i > 0) list += i + 1 == owner->options.size() ? " and " : ", ";
      list += fmt::format("--{}", owner->options[i].name);
    }
    return err(EINVAL, "{} {} {}: not with --pmu={}", list, owner->options.size() > 1 ? "shape" : "shapes", owner->what,
               o.pmu);
  }
  return {};
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
      "defaults",      "auto",     "noauto",     "user",     "nouser",     "users",     "nousers",     "owner",
      "noowner",       "group",    "nogroup",    "_netdev",  "nofail",     "relatime",  "norelatime",  "strictatime",
      "nostrictatime", "lazytime", "nolazytime", "diratime", "nodiratime", "symfollow", "nosymfollow", "silent",
      "loud",          "iversion", "noiversion", "mand",     "nomand",
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
    const Row* row = findRow(name);
    if (row && name != "help" && name != "version") {
      if (takesValue(*row) && eq == std::string_view::npos)
        return err(EINVAL, "-o {}: needs a value ({}={})", printable(opt), printable(opt),
                   pmu::optionValueName(row->spec));
      if (!takesValue(*row) && eq != std::string_view::npos)
        return err(EINVAL, "-o {}: {} takes no value", printable(opt), printable(opt.substr(0, eq)));
      std::string value = eq == std::string_view::npos ? std::string() : unescape(opt.substr(eq + 1));
      Status st = applyLong(o, *row, value);
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
      const Row* row = findRow(name);
      if (!row) return err(EINVAL, "unknown option '--{}' (see --help)", printable(name));
      std::string_view value;
      if (!takesValue(*row)) {
        if (eq != std::string_view::npos) return err(EINVAL, "--{} takes no value", row->spec.name);
      } else if (eq != std::string_view::npos) {
        value = body.substr(eq + 1);
      } else {
        if (i + 1 >= argc || !argv[i + 1])
          return err(EINVAL, "--{} needs a value ({})", row->spec.name, pmu::optionValueName(row->spec));
        value = argv[++i];
      }
      Status st = applyLong(o, *row, value);
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

  if (Status st = checkBackendOptions(o); !st) return st.error();
  if (positionals.size() == 2) o.source = positionals[0];
  if (!positionals.empty()) {
    const std::string& mountpoint = positionals.back();
    if (mountpoint.empty()) return err(EINVAL, "the mount point is an empty string");
    // mount.fuse3's drop_privileges mounts by itself and passes the FUSE
    // descriptor as /dev/fd/N: with its own options, not pfmfsd's
    // default_permissions, on which every file's access check relies.
    if (mountpoint.rfind("/dev/fd/", 0) == 0)
      return err(EINVAL,
                 "mount point {}: a FUSE descriptor mounted by someone else (mount.fuse3's drop_privileges) is not "
                 "supported: pfmfsd mounts itself",
                 printable(mountpoint));
    auto abs = pmu::absolutePath(mountpoint);
    if (!abs) return abs.error();
    o.mountpoint = *abs;
  }
  return o;
}

std::string usageText() {
  std::string out =
      "usage: pfmfsd [options] [[SOURCE] MOUNTPOINT]   (default mount point /run/pfmfs; SOURCE is ignored)\n";
  auto line = [&out](const std::string& left, std::string_view help) {
    out += fmt::format("  {:<32} {}\n", left, help);
  };
  line("-f", "stay in the foreground");
  line("-d", "print FUSE's debug output (implies -f)");
  line("-o OPT[,OPT...]", "mount options, e.g. allow_other; also the long options below: pmu=sim,allow_kernel");
  for (const Row& r : rows()) line(r.spec.name == "help" ? "-h, --help" : pmu::optionSynopsis(r.spec), r.spec.help);
  return out;
}

}  // namespace pfmfs::fs
