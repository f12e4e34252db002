#include "pfmstat/run.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "pfmstat/command.h"
#include "pfmstat/errors.h"
#include "pfmstat/event_plan.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/metrics.h"
#include "pfmstat/mount_files.h"
#include "pfmstat/pmu_table.h"
#include "pfmstat/report.h"
#include "pfmstat/results.h"
#include "pfmstat/session.h"

namespace pfmstat {
namespace {

using Clock = std::chrono::steady_clock;
using Sessions = std::vector<std::unique_ptr<Session>>;

// The signals pfmstat waits for, blocked all the time and taken with
// sigtimedwait: no handler runs in the middle of a write to the mount, and a
// ^C during the setup is seen once the sessions exist (and are removed).
sigset_t waitedSignals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, sig);
  return s;
}

struct Plan {
  std::string mount;
  PmuInfo info;
  std::vector<SetPlan> sets;
  std::uint64_t switch_ns = 0;
  bool inherit = false;
  ReportStyle style;
  std::shared_ptr<const MetricTable> metric_table;  // what `metrics` point into
  std::vector<BoundMetric> metrics;
};

// The report's metrics, from the results it prints.
std::vector<MetricValue> metricsOf(const Plan& plan, const std::vector<EventResult>& results) {
  return metricValues(plan.metrics, results);
}

Plan makePlan(const Options& o) {
  Plan p;
  p.mount = findMount(o.mount);
  p.info = parsePmuInfo(readFile(p.mount + "/pmu/info"));
  auto table = parseEvents(readFile(p.mount + "/pmu/events"));
  p.metric_table = std::make_shared<const MetricTable>(loadMetricTables(o.metric_tables));
  p.metrics = metricsFor(*p.metric_table, o.metrics, table);
  if (o.no_metrics) std::erase_if(p.metrics, [](const BoundMetric& m) { return !m.asked; });
  // Without -e, -M's events alone (perf's habit); neither: the default events.
  auto groups = !o.events.empty()   ? parseEventArgs(o.events)
                : o.metrics.empty() ? defaultEvents(table)
                                    : std::vector<GroupSpec>{};
  for (auto& g : metricGroups(p.metrics)) groups.push_back(std::move(g));
  p.sets = planSets(groups, p.info, table);
  p.switch_ns = o.switch_ms ? *o.switch_ms * 1'000'000 : p.info.tick_ns;
  p.inherit = o.inherit && !o.system && o.cgroup.empty();
  if (!o.cgroup.empty() && !p.info.has("cgroup"))
    throw UsageError(fmt::format("-G: the {} backend cannot count a control group (pmu/info has no 'cgroup' feature)",
                                 p.info.backend));
  if (p.inherit && !p.info.has("inherit")) {
    std::fprintf(stderr, "pfmstat: the %s backend cannot follow children: counting the first thread only\n",
                 p.info.backend.c_str());
    p.inherit = false;
  }
  if (o.json) p.style.format = Format::Json;
  if (o.separator) {
    p.style.format = Format::Csv;
    p.style.separator = *o.separator;
  }
  return p;
}

std::string sessionName(std::size_t index) { return fmt::format("pfmstat.{}.{}", ::getpid(), index); }

std::vector<Snapshot> readAll(const Sessions& sessions) {
  std::vector<Snapshot> out;
  for (const auto& s : sessions) out.push_back(parseCounts(s->counts()));
  return out;
}

bool unloaded(const Session& s) { return s.state().find(" target=- ") != std::string::npos; }

// After the command: children followed with inherit are merged when the
// daemon hears of their exits; wait for the session to unload itself (the
// last one gone), for a while, so that their counts are in. Children that
// outlive the command (daemons it started) are not waited for.
void settle(const Session& s, const Plan& plan) {
  if (!plan.inherit) return;
  auto deadline = Clock::now() + std::chrono::seconds(2) + std::chrono::nanoseconds(4 * plan.info.tick_ns);
  while (!unloaded(s) && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Waits for the end of a measurement: the command's exit (when there is
// one), a signal, or (attach mode) every session unloaded by its target's
// exit; prints intervals meanwhile.
class Waiter {
 public:
  Waiter(const Options& o, const Plan& plan, std::FILE* out, Sessions& sessions, Command* command,
         bool stop_when_targets_gone)
      : o_(o),
        plan_(plan),
        out_(out),
        sessions_(sessions),
        command_(command),
        stop_when_targets_gone_(stop_when_targets_gone),
        before_(sessions.size()) {}

  // Returns the command's status, or 0 without one.
  int wait() {
    sigset_t mask = waitedSignals();
    auto interval = std::chrono::milliseconds(o_.interval_ms);
    auto next = start_ + interval;
    while (true) {
      if (command_) {
        if (auto st = command_->poll()) return *st;
      }
      auto now = Clock::now();
      if (o_.interval_ms && now >= next) {
        printInterval(next);
        next += interval;
        continue;
      }
      if (stop_when_targets_gone_ && allUnloaded()) return 0;
      // A command's end comes as SIGCHLD; a target thread's exit has no
      // signal: the sessions are looked at every 100 ms.
      auto wake = now + (command_ && !stop_when_targets_gone_ ? std::chrono::milliseconds(1000)
                                                              : std::chrono::milliseconds(100));
      if (o_.interval_ms && next < wake) wake = next;
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(wake - now).count();
      timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
      siginfo_t info;
      int sig = ::sigtimedwait(&mask, &info, &ts);
      if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
        if (!command_) return 0;
        // Sent to pfmstat alone (kill): passed on, as the command would
        // have had it from the terminal, which sends it to both (si_code
        // SI_KERNEL: not passed again).
        if (info.si_code <= 0) command_->signal(sig);
      }
    }
  }

  // With -I, the last piece, so that the intervals add up to the whole.
  void finish() {
    if (o_.interval_ms) printInterval(Clock::now());
  }

  double elapsed() const { return seconds(Clock::now() - start_); }

 private:
  void printInterval(Clock::time_point at) {
    auto snap = readAll(sessions_);
    auto rs = results(plan_.sets, snap, &before_);
    std::fputs(intervalReport(plan_.style, seconds(at - start_), rs, first_, metricsOf(plan_, rs)).c_str(), out_);
    std::fflush(out_);
    first_ = false;
    before_ = std::move(snap);
  }

  bool allUnloaded() const {
    for (const auto& s : sessions_)
      if (!unloaded(*s)) return false;
    return true;
  }

  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  const Options& o_;
  const Plan& plan_;
  std::FILE* out_;
  Sessions& sessions_;
  Command* command_;
  bool stop_when_targets_gone_;
  Clock::time_point start_ = Clock::now();
  std::vector<Snapshot> before_;
  bool first_ = true;
};

struct Measurement {
  std::vector<EventResult> results;
  double elapsed_s = 0;
  int status = 0;
  bool ran = true;
};

// One run of the command, counted from its first instruction.
Measurement countCommand(const Options& o, const Plan& plan, std::FILE* out, const sigset_t& original_mask,
                         std::size_t run_index) {
  Measurement m;
  Command command(o.command, original_mask);
  if (auto st = command.notRun()) {
    m.ran = false;
    m.status = *st;
    return m;
  }
  Sessions sessions;
  sessions.push_back(std::make_unique<Session>(plan.mount, sessionName(run_index), plan.sets, plan.switch_ns,
                                               Mode::Thread, plan.inherit));
  sessions[0]->attach(Target{false, command.pid()});
  Waiter waiter(o, plan, out, sessions, &command, false);
  if (!command.release()) {
    m.ran = false;
    m.status = command.waitEnd();
    return m;
  }
  m.status = waiter.wait();
  m.elapsed_s = waiter.elapsed();
  settle(*sessions[0], plan);
  waiter.finish();
  sessions[0]->stop();
  m.results = results(plan.sets, readAll(sessions));
  return m;
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

std::vector<int> onlineCpus() {
  std::string text = readFile("/sys/devices/system/cpu/online");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return parseCpuList(text, "/sys/devices/system/cpu/online");
}

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

template <typename T>
std::string idText(const std::vector<T>& ids) {
  std::string s;
  for (auto id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// -p, -t, -a, -C, -G: sessions attached to what runs already, until a
// signal, the optional command's end, or (threads, a group) every target's
// exit (a group's is its removal).
int countAttached(const Options& o, const Plan& plan, std::FILE* out, const sigset_t& original_mask) {
  std::vector<Target> targets;
  std::string what;
  Mode mode = o.system ? Mode::System : Mode::Thread;
  if (!o.cgroup.empty()) {
    mode = Mode::Cgroup;
    targets.push_back(Target{});
    what = fmt::format("cgroup '{}'", o.cgroup);
  } else if (o.system) {
    auto cpus = o.cpus.empty() ? onlineCpus() : o.cpus;
    for (int c : cpus) targets.push_back(Target{true, c});
    what = o.cpus.empty() ? "'system wide'" : fmt::format("'CPU(s) {}'", idText(cpus));
  } else {
    for (pid_t p : o.pids)
      for (pid_t t : threadsOf(p)) targets.push_back(Target{false, t});
    for (pid_t t : o.tids) targets.push_back(Target{false, t});
    what = !o.pids.empty() ? fmt::format("process id '{}'", idText(o.pids)) : "";
    if (!o.tids.empty()) what += (what.empty() ? "" : " and ") + fmt::format("thread id '{}'", idText(o.tids));
  }
  Sessions sessions;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    sessions.push_back(
        std::make_unique<Session>(plan.mount, sessionName(i), plan.sets, plan.switch_ns, mode, plan.inherit));
    if (mode == Mode::Cgroup)
      sessions.back()->attachCgroup(o.cgroup);
    else
      sessions.back()->attach(targets[i]);
  }
  std::unique_ptr<Command> command;
  if (!o.command.empty()) {
    command = std::make_unique<Command>(o.command, original_mask);
    if (auto st = command->notRun()) return *st;
  }
  Waiter waiter(o, plan, out, sessions, command.get(), !o.system && !command);
  if (command && !command->release()) return command->waitEnd();
  int status = waiter.wait();
  double elapsed = waiter.elapsed();
  waiter.finish();
  for (auto& s : sessions) s->stop();
  if (!o.interval_ms) {
    auto rs = results(plan.sets, readAll(sessions));
    auto metrics = metricsOf(plan, rs);
    std::vector<Summary> summaries;
    for (auto& r : rs) summaries.push_back(Summary{std::move(r), 0});
    std::fputs(finalReport(plan.style, what, summaries, 1, elapsed, 0, status, metrics).c_str(), out);
  }
  return status;
}

}  // namespace

int listMetrics(const Options& o, std::FILE* out) {
  return exitStatusOf([&] {
    auto table = loadMetricTables(o.metric_tables);
    auto events = parseEvents(readFile(findMount(o.mount) + "/pmu/events"));
    return std::fputs(metricList(table, events).c_str(), out) < 0 ? kExitRun : 0;
  });
}

int run(const Options& o, std::FILE* out) {
  sigset_t mask = waitedSignals(), original;
  ::sigprocmask(SIG_BLOCK, &mask, &original);
  return exitStatusOf([&] {
    Plan plan = makePlan(o);
    if (!o.pids.empty() || !o.tids.empty() || o.system || !o.cgroup.empty())
      return countAttached(o, plan, out, original);

    std::vector<std::vector<EventResult>> runs;
    std::vector<double> elapsed;
    int status = 0;
    for (unsigned i = 0; i < o.repeat; ++i) {
      Measurement m = countCommand(o, plan, out, original, i);
      status = m.status;
      if (!m.ran) return status;
      runs.push_back(std::move(m.results));
      elapsed.push_back(m.elapsed_s);
      // A command killed by ^C ends the repeats, as in perf.
      if (status == 128 + SIGINT) break;
    }
    if (!o.interval_ms) {
      auto [mean, spread] = meanAndSpread(elapsed);
      std::string what = "'" + joined(o.command, " ") + "'";
      auto summaries = summarize(runs);
      std::vector<EventResult> means;
      for (const auto& s : summaries) means.push_back(s.mean);
      std::fputs(finalReport(plan.style, what, summaries, static_cast<unsigned>(runs.size()), mean, spread, status,
                             metricsOf(plan, means))
                     .c_str(),
                 out);
    }
    return status;
  });
}

}  // namespace pfmstat
