// `pfmstat record`: a sampling session per target, the command forked and
// held before its exec, the memory maps from perf's records or /proc, and
// the data file (record.h).
#include "pfmstat/record.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "pfmstat/command.h"
#include "pfmstat/data_file.h"
#include "pfmstat/errors.h"
#include "pfmstat/map_events.h"
#include "pfmstat/mount_files.h"
#include "pfmstat/options.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/proc_maps.h"
#include "pfmstat/recorder.h"
#include "pfmstat/sampling_plan.h"
#include "pfmstat/session.h"

namespace pfmstat {
namespace {

// How long record waits, after the command's exit, for the children it was
// followed into (the session's end), as the stat mode does.
constexpr double kSettleS = 2.0;

std::vector<int> onlineCpus() {
  std::string text = readFile("/sys/devices/system/cpu/online");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return parseCpuList(text, "/sys/devices/system/cpu/online");
}

std::vector<pid_t> threadsOf(pid_t pid) {
  std::vector<pid_t> tids;
  DIR* d = ::opendir(fmt::format("/proc/{}/task", pid).c_str());
  if (!d) throw UsageError(fmt::format("-p {}: no such process", pid));
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  ::closedir(d);
  return tids;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

struct Output {
  explicit Output(const std::string& path) : path_(path) {
    // Written beside the target and renamed at the end, so that a failed
    // record leaves the previous file as it was.
    tmp_ = path + ".tmp";
    f_ = std::fopen(tmp_.c_str(), "we");
    if (!f_) throw UsageError(fmt::format("cannot write {}: {}", tmp_, std::strerror(errno)));
  }
  ~Output() {
    if (f_) {
      std::fclose(f_);
      ::unlink(tmp_.c_str());
    }
  }
  void commit() {
    bool ok = std::fflush(f_) == 0 && !std::ferror(f_);
    ok = std::fclose(f_) == 0 && ok;
    f_ = nullptr;
    if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      int e = errno;
      ::unlink(tmp_.c_str());
      throw RunError(fmt::format("cannot write {}: {}", path_, std::strerror(e)));
    }
  }
  std::FILE* file() { return f_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
};

int recordAll(const RecordOptions& o, const sigset_t& original_mask) {
  std::string mount = findMount(o.mount);
  PmuInfo info = parsePmuInfo(readFile(mount + "/pmu/info"));
  auto table = parseEvents(readFile(mount + "/pmu/events"));
  SamplingPlan plan = planSampling(o, info, table);
  bool inherit = o.inherit && !o.system;
  if (inherit && !info.has("inherit")) {
    std::fprintf(stderr, "pfmstat: the %s backend cannot follow children: sampling the first thread only\n",
                 info.backend.c_str());
    inherit = false;
  }

  Output output(o.output);
  DataWriter out(output.file());
  out.meta("event", plan.event);
  out.meta("period", fmt::format("{}", plan.period));
  out.meta("period_from", plan.period_from);
  out.meta("backend", fmt::format("{} model={}", info.backend, info.model));
  out.meta("inherit", inherit ? "1" : "0");

  // The sessions, made and given their buffer before anything runs: a
  // refusal (the buffer over the user's limit, an event) is a usage error.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::pair<bool, long>> targets;  // (cpu, id)
  std::string what;
  std::unique_ptr<Command> command;
  if (o.system) {
    for (int c : o.cpus.empty() ? onlineCpus() : o.cpus) targets.emplace_back(true, c);
    what = o.cpus.empty() ? "system wide" : "cpus";
  } else {
    for (pid_t p : o.pids)
      for (pid_t t : threadsOf(p)) targets.emplace_back(false, t);
  }
  if (!o.command.empty()) {
    command = std::make_unique<Command>(o.command, original_mask);
    if (auto st = command->notRun()) return *st;
    if (targets.empty() && o.pids.empty() && !o.system) targets.emplace_back(false, command->pid());
  }
  for (std::size_t i = 0; i < targets.size(); ++i) {
    auto s =
        std::make_unique<Session>(mount, fmt::format("pfmstat.{}.{}", ::getpid(), i), std::vector<SetPlan>{plan.set},
                                  info.tick_ns, o.system ? Mode::System : Mode::Thread, inherit);
    s->write("smpl_fmt", fmt::format("default buf_size={}\n", o.buffer_bytes));
    sessions.push_back(std::move(s));
  }
  std::string pids;
  for (pid_t p : o.pids) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  out.meta("command", !o.command.empty() ? joined(o.command) : o.system ? what : "-p " + pids);

  // Memory maps: perf's records where the kernel lets us open them (on the
  // command before its exec, so that its own exec is the first record),
  // else /proc/PID/maps of every process seen in a sample.
  std::unique_ptr<MapEvents> events;
  ProcMaps proc;
  int err = 0;
  std::vector<int> cpus = o.system && !o.cpus.empty() ? o.cpus : onlineCpus();
  if (command && !o.system && o.pids.empty())
    events = MapEvents::open(command->pid(), cpus, true, err);
  else if (o.system)
    events = MapEvents::open(-1, cpus, false, err);
  else if (o.pids.size() == 1)
    events = MapEvents::open(o.pids[0], cpus, false, err);
  else
    err = ENOTSUP;
  out.meta("maps", events
                       ? (o.system || !o.pids.empty() ? "perf mmap records, /proc/PID/maps of processes that ran before"
                                                      : "perf mmap records")
                       : fmt::format("/proc/PID/maps when a process is first seen ({}: short-lived processes "
                                     "may be unresolved)",
                                     std::strerror(err)));
  for (pid_t p : o.pids) proc.snapshot(p, out);  // what -p's processes had mapped before the record

  std::vector<Session*> raw;
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    sessions[i]->attach(Target{targets[i].first, targets[i].second});
    raw.push_back(sessions[i].get());
  }
  // /proc too where perf's records cannot have every process: those that
  // ran before the record (-a, -p) had mapped their files already.
  bool command_only = command && !o.system && o.pids.empty();
  Recorder recorder(raw, out, events.get(), events && command_only ? nullptr : &proc);
  if (command && !command->release()) return command->waitEnd();
  if (command && !events) proc.snapshot(command->pid(), out);  // right after its exec
  int status = recorder.run(command.get(), inherit ? kSettleS : 0.0);

  const RecordTotals& t = recorder.totals();
  out.meta("samples", fmt::format("{}", t.samples));
  out.meta("buffer_fills", fmt::format("{}", t.fills));
  out.meta("throttled", fmt::format("{}", t.throttled));
  out.meta("lost_messages", fmt::format("{}", t.lost_messages));
  out.meta("dropped", fmt::format("{}", t.dropped));
  out.meta("lost_map_records", events ? fmt::format("{}", events->lost()) : "-");
  output.commit();
  std::fprintf(stderr, "pfmstat record: %llu samples of %s (a sample every %llu events) written to %s\n",
               static_cast<unsigned long long>(t.samples), plan.event.c_str(),
               static_cast<unsigned long long>(plan.period), o.output.c_str());
  if (t.fills)
    std::fprintf(stderr, "pfmstat record: the buffer filled %llu times: counting paused while it was read\n",
                 static_cast<unsigned long long>(t.fills));
  if (t.dropped)
    std::fprintf(stderr, "pfmstat record: %llu overflows came as the buffer filled and wrote no sample\n",
                 static_cast<unsigned long long>(t.dropped));
  if (t.throttled)
    std::fprintf(stderr, "pfmstat record: the kernel throttled the samples %llu times: use a longer period\n",
                 static_cast<unsigned long long>(t.throttled));
  return status;
}

}  // namespace

int record(const RecordOptions& o) {
  sigset_t mask, original;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  ::sigprocmask(SIG_BLOCK, &mask, &original);
  return exitStatusOf([&] { return recordAll(o, original); });
}

}  // namespace pfmstat
