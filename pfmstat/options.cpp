#include "pfmstat/options.h"

#include <getopt.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <set>

#include <fmt/format.h>

#include "pfmstat/comma_list.h"
#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

enum LongOnly { kSwitchMs = 1000, kJson, kMount, kNoInherit, kMetricTable, kNoMetrics, kListMetrics };

// Plain decimal in [lo, hi]: no sign, no blanks, no trailing text.
std::uint64_t number(const std::string& text, const char* what, std::uint64_t lo, std::uint64_t hi) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(fmt::format("{} '{}' is not a number", what, text));
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi)
    throw UsageError(fmt::format("{} '{}' is out of range ({}..{})", what, text, lo, hi));
  return v;
}

std::vector<pid_t> idList(const std::string& text, const char* what) {
  std::vector<pid_t> ids;
  for (const auto& item : splitCommas(text)) ids.push_back(static_cast<pid_t>(number(item, what, 1, INT_MAX)));
  return ids;
}

}  // namespace

std::vector<int> parseCpuList(const std::string& text, const char* what) {
  std::set<int> cpus;
  for (const auto& item : splitCommas(text)) {
    std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      cpus.insert(static_cast<int>(number(item, what, 0, 65535)));
    } else {
      auto lo = number(item.substr(0, dash), what, 0, 65535);
      auto hi = number(item.substr(dash + 1), what, 0, 65535);
      if (lo > hi) throw UsageError(fmt::format("{} '{}': the range goes down", what, item));
      for (auto c = lo; c <= hi; ++c) cpus.insert(static_cast<int>(c));
    }
  }
  return {cpus.begin(), cpus.end()};
}

std::string usageText() {
  return "usage: pfmstat [options] [--] COMMAND [ARGS...]\n"
         "       pfmstat [options] -p PID[,PID...] | -t TID[,TID...] | -a | -C CPUS | -G PATH [-- COMMAND...]\n"
         "Counts events on a pfmfs mount, as perf stat does (pfmstat(1)).\n"
         "  -e, --event LIST       events: NAME[:u][:k] or rHEX, comma-separated; {A,B} is a group\n"
         "                         that counts together (one event set); repeatable\n"
         "  -M, --metrics LIST     count these derived metrics' events (names or groups) and print\n"
         "                         the metrics; repeatable (pfmstat --list-metrics)\n"
         "      --metric-table F   read more metrics from F (repeatable)\n"
         "      --no-metrics       print no metric but -M's\n"
         "      --list-metrics     list the metrics this mount's PMU can compute, and exit\n"
         "      --switch-ms N      switch event sets every N ms of target time (default: the tick)\n"
         "  -i, --no-inherit       count COMMAND's first thread only, not its children\n"
         "  -p, --pid PIDS         attach to every thread of these processes\n"
         "  -t, --tid TIDS         attach to these threads\n"
         "  -a, --all-cpus         count every online cpu (system mode)\n"
         "  -C, --cpu LIST         count these cpus (system mode): 0-3,5\n"
         "  -G, --cgroup PATH      count a control group on every cpu: a cgroup v2 directory,\n"
         "                         absolute or below the cgroup2 mount\n"
         "  -I, --interval-print N print the counts of every N ms (at least 10)\n"
         "  -x, --field-separator S  CSV: count,event,scaled,running_ns,enabled_ns,percent\n"
         "      --json             one JSON object per line\n"
         "  -r, --repeat N         run COMMAND N times; print the mean and its spread\n"
         "  -o, --output FILE      write the results to FILE (default: stderr)\n"
         "      --mount DIR        the pfmfs mount (default: $PFMFS_MOUNT, /run/pfmfs, the first one)\n"
         "  -h, --help             this text\n"
         "  -V, --version          pfmstat's version\n";
}

Options parseOptions(int argc, char** argv) {
  static const option longs[] = {
      {"event", required_argument, nullptr, 'e'},
      {"metrics", required_argument, nullptr, 'M'},
      {"metric-table", required_argument, nullptr, kMetricTable},
      {"no-metrics", no_argument, nullptr, kNoMetrics},
      {"list-metrics", no_argument, nullptr, kListMetrics},
      {"switch-ms", required_argument, nullptr, kSwitchMs},
      {"no-inherit", no_argument, nullptr, 'i'},
      {"pid", required_argument, nullptr, 'p'},
      {"tid", required_argument, nullptr, 't'},
      {"all-cpus", no_argument, nullptr, 'a'},
      {"cpu", required_argument, nullptr, 'C'},
      {"cgroup", required_argument, nullptr, 'G'},
      {"interval-print", required_argument, nullptr, 'I'},
      {"field-separator", required_argument, nullptr, 'x'},
      {"json", no_argument, nullptr, kJson},
      {"repeat", required_argument, nullptr, 'r'},
      {"output", required_argument, nullptr, 'o'},
      {"mount", required_argument, nullptr, kMount},
      {"help", no_argument, nullptr, 'h'},
      {"version", no_argument, nullptr, 'V'},
      {nullptr, 0, nullptr, 0},
  };
  Options o;
  // "+": options end at the command's name, so `pfmstat -e X ls -l` works
  // without `--`; ":" lets us word the errors ourselves.
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:e:M:ip:t:aC:G:I:x:r:o:hV", longs, nullptr)) != -1) {
    std::string arg = optarg ? optarg : "";
    switch (c) {
      case 'e':
        if (arg.empty()) throw UsageError("-e needs an event list");
        o.events.push_back(arg);
        break;
      case 'M':
        for (const auto& word : splitCommas(arg)) {
          if (word.empty()) throw UsageError(fmt::format("-M '{}': an empty metric name", arg));
          o.metrics.push_back(word);
        }
        break;
      case kMetricTable:
        if (arg.empty()) throw UsageError("--metric-table needs a file name");
        o.metric_tables.push_back(arg);
        break;
      case kNoMetrics:
        o.no_metrics = true;
        break;
      case kListMetrics:
        o.list_metrics = true;
        break;
      case kSwitchMs:
        o.switch_ms = number(arg, "--switch-ms", 1, 3'600'000);
        break;
      case 'i':
        o.inherit = false;
        break;
      case 'p': {
        auto ids = idList(arg, "-p");
        o.pids.insert(o.pids.end(), ids.begin(), ids.end());
        break;
      }
      case 't': {
        auto ids = idList(arg, "-t");
        o.tids.insert(o.tids.end(), ids.begin(), ids.end());
        break;
      }
      case 'a':
        o.system = true;
        break;
      case 'C':
        o.system = true;
        o.cpus = parseCpuList(arg, "-C");
        break;
      case 'G':
        // One group a run; the mount checks the path (pfmfs(5), CONTROL-GROUP LOADS).
        if (arg.empty()) throw UsageError("-G needs a control group's path");
        if (!o.cgroup.empty()) throw UsageError("-G names one control group a run");
        o.cgroup = arg;
        break;
      case 'I':
        o.interval_ms = number(arg, "-I", 10, 3'600'000);
        break;
      case 'x':
        if (arg.empty()) throw UsageError("-x needs a separator");
        o.separator = arg;
        break;
      case kJson:
        o.json = true;
        break;
      case 'r':
        o.repeat = static_cast<unsigned>(number(arg, "-r", 1, 100'000));
        break;
      case 'o':
        if (arg.empty()) throw UsageError("-o needs a file name");
        o.output = arg;
        break;
      case kMount:
        if (arg.empty()) throw UsageError("--mount needs a directory");
        o.mount = arg;
        break;
      case 'h':
        o.help = true;
        break;
      case 'V':
        o.version = true;
        break;
      case ':':
        throw UsageError(fmt::format("{} needs a value", argv[optind - 1]));
      default:
        if (optopt) throw UsageError(fmt::format("unknown option -{}", static_cast<char>(optopt)));
        throw UsageError(fmt::format("unknown option {}", argv[optind - 1]));
    }
  }
  for (int i = optind; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.help || o.version || o.list_metrics) return o;

  bool threads = !o.pids.empty() || !o.tids.empty();
  if (!o.cgroup.empty()) {
    // perf stat wants -a with -G; a group is counted on every cpu anyway.
    if (threads) throw UsageError("-p/-t count threads, -G a control group: choose one");
    if (!o.cpus.empty()) throw UsageError("-G counts its group on every cpu: -C does not go with it");
    if (!o.inherit) throw UsageError("--no-inherit is for threads; -G counts a whole control group");
    o.system = false;
  }
  if (threads && o.system) throw UsageError("-p/-t count threads, -a/-C cpus: choose one");
  if (!threads && !o.system && o.cgroup.empty() && o.command.empty())
    throw UsageError("nothing to count: give a command, -p, -t, -a, -C or -G (pfmstat --help)");
  if (o.repeat > 1 && o.command.empty()) throw UsageError("-r repeats a command: give one");
  if (o.repeat > 1 && !o.cgroup.empty()) throw UsageError("-r and -G do not go together");
  if (o.repeat > 1 && o.interval_ms) throw UsageError("-r and -I do not go together");
  if (o.json && o.separator) throw UsageError("--json and -x do not go together");
  if (o.system && !o.inherit) throw UsageError("--no-inherit is for threads; -a/-C count whole cpus");
  return o;
}

}  // namespace pfmstat
