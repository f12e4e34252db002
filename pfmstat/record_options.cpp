// `pfmstat record` and `pfmstat report` options (record_options.h).
#include "pfmstat/record_options.h"

#include <getopt.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include <fmt/format.h>

#include "pfmstat/comma_list.h"
#include "pfmstat/errors.h"
#include "pfmstat/options.h"

namespace pfmstat {
namespace {

enum LongOnly { kMount = 1000, kBufferBytes, kSort };

// 128-byte header and one 40-byte entry are the format's least; a buffer
// under a page holds too few samples to be worth a restart each.
constexpr std::uint64_t kMinBuffer = 4096;
constexpr std::uint64_t kMaxBuffer = 1ull << 30;

std::uint64_t number(const std::string& text, const char* what, std::uint64_t lo, std::uint64_t hi) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(fmt::format("{} '{}' is not a number", what, text));
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v < lo || v > hi)
    throw UsageError(fmt::format("{} '{}' is out of range ({}..{})", what, text, lo, hi));
  return v;
}

[[noreturn]] void badOption(int c, char** argv) {
  if (c == ':') throw UsageError(fmt::format("{} needs a value", argv[optind - 1]));
  if (optopt) throw UsageError(fmt::format("unknown option -{}", static_cast<char>(optopt)));
  throw UsageError(fmt::format("unknown option {}", argv[optind - 1]));
}

}  // namespace

std::string recordUsage() {
  return "usage: pfmstat record [options] [--] COMMAND [ARGS...]\n"
         "       pfmstat record [options] -p PID[,PID...] | -a | -C CPUS [-- COMMAND...]\n"
         "Samples an event on a pfmfs mount into a file, as perf record does (pfmstat(1)).\n"
         "  -e, --event EVENT      the event to sample (default: cycles, on perf-sw task-clock)\n"
         "  -c, --count N          a sample every N events\n"
         "  -F, --freq HZ          N samples per second of the target's time (clocks and the sim's events)\n"
         "  -o, --output FILE      the data file (default: pfmstat.data)\n"
         "  -i, --no-inherit       sample COMMAND's first thread only, not its children\n"
         "  -p, --pid PIDS         sample every thread of these processes\n"
         "  -a, --all-cpus         sample every online cpu (system mode)\n"
         "  -C, --cpu LIST         sample these cpus (system mode): 0-3,5\n"
         "      --buffer-bytes N   each session's sampling buffer (default: 1048576)\n"
         "      --mount DIR        the pfmfs mount (default: $PFMFS_MOUNT, /run/pfmfs, the first one)\n"
         "  -h, --help             this text\n";
}

std::string reportUsage() {
  return "usage: pfmstat report [-i FILE] [--sort sym|dso]\n"
         "Prints the flat profile of a pfmstat record file (pfmstat(1)).\n"
         "  -i, --input FILE       the data file (default: pfmstat.data)\n"
         "      --sort KEY         sym: by function only; dso: by shared object only (default: both)\n"
         "  -h, --help             this text\n";
}

RecordOptions parseRecordOptions(int argc, char** argv) {
  static const option longs[] = {
      {"event", required_argument, nullptr, 'e'},    {"count", required_argument, nullptr, 'c'},
      {"freq", required_argument, nullptr, 'F'},     {"output", required_argument, nullptr, 'o'},
      {"no-inherit", no_argument, nullptr, 'i'},     {"pid", required_argument, nullptr, 'p'},
      {"all-cpus", no_argument, nullptr, 'a'},       {"cpu", required_argument, nullptr, 'C'},
      {"mount", required_argument, nullptr, kMount}, {"buffer-bytes", required_argument, nullptr, kBufferBytes},
      {"help", no_argument, nullptr, 'h'},           {nullptr, 0, nullptr, 0},
  };
  RecordOptions o;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:e:c:F:o:ip:aC:h", longs, nullptr)) != -1) {
    std::string arg = optarg ? optarg : "";
    switch (c) {
      case 'e':
        if (arg.empty()) throw UsageError("-e needs an event");
        if (!o.event.empty()) throw UsageError("record samples one event: give -e once");
        o.event = arg;
        break;
      case 'c':
        o.period = number(arg, "-c", 1, 1ull << 62);
        break;
      case 'F':
        o.freq = number(arg, "-F", 1, 1'000'000);
        break;
      case 'o':
        if (arg.empty()) throw UsageError("-o needs a file name");
        o.output = arg;
        break;
      case 'i':
        o.inherit = false;
        break;
      case 'p':
        for (const auto& item : splitCommas(arg)) o.pids.push_back(static_cast<pid_t>(number(item, "-p", 1, INT_MAX)));
        break;
      case 'a':
        o.system = true;
        break;
      case 'C':
        o.system = true;
        o.cpus = parseCpuList(arg, "-C");
        break;
      case kMount:
        if (arg.empty()) throw UsageError("--mount needs a directory");
        o.mount = arg;
        break;
      case kBufferBytes:
        o.buffer_bytes = number(arg, "--buffer-bytes", kMinBuffer, kMaxBuffer);
        break;
      case 'h':
        o.help = true;
        break;
      default:
        badOption(c, argv);
    }
  }
  for (int i = optind; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.help) return o;
  if (o.period && o.freq) throw UsageError("-c and -F do not go together: a period or a frequency");
  if (!o.pids.empty() && o.system) throw UsageError("-p samples processes, -a/-C cpus: choose one");
  if (o.pids.empty() && !o.system && o.command.empty())
    throw UsageError("nothing to record: give a command, -p, -a or -C (pfmstat record --help)");
  if (o.system && !o.inherit) throw UsageError("--no-inherit is for processes; -a/-C sample whole cpus");
  return o;
}

ReportOptions parseReportOptions(int argc, char** argv) {
  static const option longs[] = {
      {"input", required_argument, nullptr, 'i'},
      {"sort", required_argument, nullptr, kSort},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  ReportOptions o;
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+:i:h", longs, nullptr)) != -1) {
    std::string arg = optarg ? optarg : "";
    switch (c) {
      case 'i':
        if (arg.empty()) throw UsageError("-i needs a file name");
        o.input = arg;
        break;
      case kSort:
        if (arg == "sym")
          o.sort = ReportOptions::Sort::Symbol;
        else if (arg == "dso")
          o.sort = ReportOptions::Sort::Dso;
        else
          throw UsageError(fmt::format("--sort '{}': the keys are sym and dso", arg));
        break;
      case 'h':
        o.help = true;
        break;
      default:
        badOption(c, argv);
    }
  }
  if (optind < argc) throw UsageError(fmt::format("report takes no argument '{}' (the file is -i FILE)", argv[optind]));
  return o;
}

}  // namespace pfmstat
