// Whole-path latency through a real pfmfs mount (issue 3), against floor_fs,
// a bare libfuse server mounted beside it, and a perf_event read(), all in one
// run: `fs_bench PFMFSD FLOOR_FS [--quick]` (meson test --benchmark runs it).
//
// The perf backend (issue 4) in the same run: a pfmfsd with --pmu=perf
// --perf-model=sw and one with --pmu=sim (real clock, 8 counters) mounted
// beside the others; pmd and `counts` reads of 8 PMDs on each, against the
// floor and a direct read() of the same perf events; then set switching on a
// busy thread (switches per CPU second, the daemon's CPU time per switch) on
// both. Real clocks make no value exact there: reads are checked for their
// shape and for counts that never go backwards, switching for round robin,
// no early switch and durations that add up to the thread's CPU time. Where
// perf events cannot be opened the perf figures are n/a, not a failure.
//
// Every figure is a median and a p99 of CLOCK_MONOTONIC-timed iterations after
// a warm-up, printed as a ratio to its baseline with the goal. Every
// read is checked against the value the manual sim clock makes exact: the
// exit status is 1 when something does not work (an error or a wrong value),
// 77 without /dev/fuse or root (the manual clock is root's), and 0 whatever
// the figures (a VM is noisy: a missed goal is reported, not failed).
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/core.h>

namespace {

// ---- sizes of the run ------------------------------------------------------

struct Sizes {
  int warmup = 1000;
  int iterations = 20000;       // cheap operations: one or two FUSE round trips
  int open_iterations = 10000;  // open+read+close: four round trips
  int wake_iterations = 2000;   // write -> poll wake -> read, with a pause each
  int sessions_mid = 1000;      // the pmd read with 1, mid and many sessions present
  int sessions_many = 10000;
  int switch_cpu_ms = 1000;  // set switching: the busy thread's CPU time per backend and session
};

// The floor's entry and attribute timeouts: pfmfsd's (kCacheTimeout in
// fs/filesystem_internal.h), so that an open costs both the same lookups.
constexpr std::string_view kFloorTimeout = "3600";
// Cycles count 3 per ns of target time in the default sim PMU.
constexpr std::uint64_t kCyclesPerNs = 3;
// The overflow benchmark's period: 3000 cycles = 1000 ns, crossed by every
// advance of kWakeAdvanceNs.
constexpr std::uint64_t kOvflPeriod = 3000;
constexpr std::uint64_t kWakeAdvanceNs = 1500;

std::uint64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// ---- children and mounts: cleaned up on every exit path ----------------------
// Plain arrays, so that the signal handler can walk them.

constexpr int kMaxChildren = 8;
pid_t g_pids[kMaxChildren];
char g_mounts[kMaxChildren][PATH_MAX];  // "" for a child that mounts nothing
char g_logs[kMaxChildren][PATH_MAX];    // its stdout and stderr
volatile sig_atomic_t g_child_count = 0;
char g_tmpdir[PATH_MAX];

bool stillMounted(const char* mount) {
  struct stat m {
  }, parent{};
  if (::stat(mount, &m) != 0) return errno == ENOTCONN;  // a daemon died under it
  if (::stat(g_tmpdir, &parent) != 0) return false;
  return m.st_dev != parent.st_dev;
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&ts, nullptr);
}

// Waits up to `ms` for `pid`; returns its wait status, or -1 if it is still running.
int waitFor(pid_t pid, long ms) {
  for (long waited = 0;; waited += 10) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return 0;  // already reaped
    if (waited >= ms) return -1;
    sleepMs(10);
  }
}

// Async-signal-safe: SIGTERM (the daemons stop, unload and unmount), SIGKILL
// after a grace period, then a lazy unmount of whatever is left, then the
// temporary directories.
void cleanupAll() {
  for (int i = g_child_count - 1; i >= 0; --i) {
    if (g_pids[i] <= 0) continue;
    ::kill(g_pids[i], SIGTERM);
    if (waitFor(g_pids[i], 10'000) == -1) {
      ::kill(g_pids[i], SIGKILL);
      waitFor(g_pids[i], 10'000);
    }
    g_pids[i] = 0;
  }
  for (int i = 0; i < g_child_count; ++i) {
    if (g_mounts[i][0] == '\0') continue;
    if (stillMounted(g_mounts[i]) && ::umount2(g_mounts[i], MNT_DETACH) != 0) {
      pid_t p = ::fork();
      if (p == 0) {
        const char* argv[] = {"fusermount3", "-u", "-z", g_mounts[i], nullptr};
        ::execvp(argv[0], const_cast<char* const*>(argv));
        ::_exit(127);
      }
      if (p > 0) waitFor(p, 10'000);
    }
    ::rmdir(g_mounts[i]);
  }
  for (int i = 0; i < g_child_count; ++i)
    if (g_logs[i][0] != '\0') ::unlink(g_logs[i]);
  if (g_tmpdir[0] != '\0') ::rmdir(g_tmpdir);
  g_child_count = 0;
}

void onSignal(int sig) {
  cleanupAll();
  ::_exit(128 + sig);
}

std::string tailOf(const char* path, std::size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  return all.size() > bytes ? all.substr(all.size() - bytes) : all;
}

[[noreturn]] void fail(const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr, "fs_bench: FAILED: {}\n", what);
  for (int i = 0; i < g_child_count; ++i) {
    if (g_logs[i][0] == '\0') continue;
    std::string log = tailOf(g_logs[i], 4000);
    if (!log.empty()) fmt::print(stderr, "--- end of {} ---\n{}\n", g_logs[i], log);
  }
  cleanupAll();
  std::exit(1);
}

std::string errnoText(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

// Forks and execs argv with its output in a log file; the child dies with us
// (PR_SET_PDEATHSIG), so a crash of the bench leaves no daemon behind.
pid_t spawn(const std::vector<std::string>& argv, const std::string& mount, const std::string& log) {
  if (g_child_count >= kMaxChildren) fail("too many children");
  const int slot = g_child_count;
  std::snprintf(g_mounts[slot], PATH_MAX, "%s", mount.c_str());
  std::snprintf(g_logs[slot], PATH_MAX, "%s", log.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &old);
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (!log.empty()) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
      }
    }
    if (argv.empty()) {  // a sleeping target for `load`
      for (;;) ::pause();
    }
    ::execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  if (pid > 0) {
    g_pids[slot] = pid;
    g_child_count = slot + 1;
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) fail(fmt::format("fork: {}", errnoText(errno)));
  return pid;
}

// A child's slot, for stopping it.
int slotOf(pid_t pid) {
  for (int i = 0; i < g_child_count; ++i)
    if (g_pids[i] == pid) return i;
  return -1;
}

// SIGTERM and the exit status: a daemon must stop and unmount by itself and exit 0.
void stopDaemon(pid_t pid, const char* name) {
  const int slot = slotOf(pid);
  ::kill(pid, SIGTERM);
  int status = waitFor(pid, 60'000);
  if (slot >= 0) g_pids[slot] = 0;
  if (status == -1) {
    ::kill(pid, SIGKILL);
    waitFor(pid, 10'000);
    fail(fmt::format("{} did not exit within 60 s of SIGTERM", name));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(fmt::format("{} ended with status {:#x} after SIGTERM, not exit 0", name, status));
  if (slot >= 0 && stillMounted(g_mounts[slot])) fail(fmt::format("{} exited but left its mount", name));
}

void waitMounted(pid_t pid, const std::string& probe, const char* name) {
  for (int waited = 0; waited < 60'000; waited += 10) {
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0) return;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      g_pids[slotOf(pid)] = 0;
      fail(fmt::format("{} exited (status {:#x}) before {} appeared", name, status, probe));
    }
    sleepMs(10);
  }
  fail(fmt::format("{} did not mount within 60 s ({} never appeared)", name, probe));
}

// ---- file helpers: every error is a failure of the run -----------------------

int openOrFail(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(fmt::format("open {}: {}", path, errnoText(errno)));
  return fd;
}

void writeFd(int fd, std::string_view text, const std::string& what) {
  ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    fail(fmt::format("write \"{}\" to {}: {}", text.substr(0, text.size() - (text.ends_with('\n') ? 1 : 0)), what,
                     n < 0 ? errnoText(errno) : fmt::format("{} of {} bytes", n, text.size())));
}

void writeFile(const std::string& path, std::string_view text) {
  int fd = openOrFail(path, O_WRONLY);
  writeFd(fd, text, path);
  ::close(fd);
}

std::string preadAll(int fd, const std::string& what) {
  char buf[65536];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n < 0) fail(fmt::format("read {}: {}", what, errnoText(errno)));
  return std::string(buf, static_cast<std::size_t>(n));
}

std::string readFile(const std::string& path) {
  int fd = openOrFail(path, O_RDONLY);
  std::string s = preadAll(fd, path);
  ::close(fd);
  return s;
}

void mkdirOrFail(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) fail(fmt::format("mkdir {}: {}", path, errnoText(errno)));
}

// The exact bytes a read must return; on a difference, the failure quotes both.
void expectBytes(const char* got, ssize_t n, std::string_view want, const std::string& what) {
  if (n == static_cast<ssize_t>(want.size()) && std::memcmp(got, want.data(), want.size()) == 0) return;
  if (n < 0) fail(fmt::format("read {}: {}", what, errnoText(errno)));
  fail(fmt::format("read {}: got \"{}\", want \"{}\"", what, std::string_view(got, static_cast<std::size_t>(n)), want));
}

void expectPrefix(const std::string& got, const std::string& prefix, const std::string& what) {
  if (!got.starts_with(prefix)) fail(fmt::format("{}: got \"{}\", want it to start with \"{}\"", what, got, prefix));
}

long vmRssKb(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("VmRSS:")) return std::strtol(line.c_str() + 6, nullptr, 10);
  fail(fmt::format("no VmRSS in /proc/{}/status", pid));
}

// ---- timing --------------------------------------------------------------------

struct Stats {
  double median = 0;
  double p99 = 0;
};

Stats summarize(std::vector<std::uint64_t> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Stats s;
  s.median = n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2.0;
  s.p99 = static_cast<double>(v[std::min(n - 1, static_cast<std::size_t>(std::ceil(0.99 * n)) - 1)]);
  return s;
}

template <class Op>
void timeInto(std::vector<std::uint64_t>& out, int iterations, Op& op) {
  for (int i = 0; i < iterations; ++i) {
    const std::uint64_t t0 = nowNs();
    op();
    out.push_back(nowNs() - t0);
  }
}

template <class Op>
Stats measure(const Sizes& z, int iterations, Op op) {
  std::vector<std::uint64_t> warm, samples;
  timeInto(warm, z.warmup, op);
  samples.reserve(static_cast<std::size_t>(iterations));
  timeInto(samples, iterations, op);
  return summarize(std::move(samples));
}

// A and B alternate in ten blocks, so that the drift of a noisy machine falls
// on the operation and its baseline alike.
template <class OpA, class OpB>
std::pair<Stats, Stats> measurePair(const Sizes& z, int iterations, OpA a, OpB b) {
  std::vector<std::uint64_t> warm, sa, sb;
  timeInto(warm, z.warmup, a);
  timeInto(warm, z.warmup, b);
  constexpr int kBlocks = 10;
  for (int block = 0; block < kBlocks; ++block) {
    timeInto(sa, iterations / kBlocks, a);
    timeInto(sb, iterations / kBlocks, b);
  }
  return {summarize(std::move(sa)), summarize(std::move(sb))};
}

// "write -> poll wake -> read": a poller thread polls `poll_fd`, the main
// thread times from just before trigger() to the poll's return (wake) and to
// the end of the read (read); after() runs untimed (a restart). The poller is
// given 200 us to be asleep in poll before each trigger.
struct WakeStats {
  Stats wake;
  Stats read;
};

// `readOnce` reads from poll_fd: read(2) for a stream (messages), pread at 0
// for the floor's file.
WakeStats measureWake(const Sizes& z, int poll_fd, const std::function<ssize_t(char*, std::size_t)>& readOnce,
                      const std::function<void()>& trigger, const std::function<void(const char*, ssize_t, int)>& check,
                      const std::function<void()>& after) {
  const int total = z.warmup / 10 + z.wake_iterations;
  std::atomic<int> go{-1};     // the round the poller may start
  std::atomic<int> armed{-1};  // the round the poller is about to poll for
  std::atomic<int> done{-1};   // the round the poller finished
  std::uint64_t t_wake = 0, t_read = 0;
  char buf[4096];
  ssize_t got = 0;
  int poll_error = 0;  // errno of a failed poll or read; ETIMEDOUT when nothing came

  std::thread poller([&] {
    for (int i = 0; i < total; ++i) {
      go.wait(i - 1);
      armed.store(i);
      pollfd p{poll_fd, POLLIN, 0};
      int r = ::poll(&p, 1, 5000);
      t_wake = nowNs();
      if (r <= 0 || !(p.revents & POLLIN)) {
        poll_error = r == 0 ? ETIMEDOUT : (r < 0 ? errno : EIO);
      } else {
        got = readOnce(buf, sizeof buf);
        if (got < 0) poll_error = errno;
      }
      t_read = nowNs();
      done.store(i);
      done.notify_one();
      if (poll_error != 0) return;
    }
  });

  std::vector<std::uint64_t> wakes, reads;
  for (int i = 0; i < total; ++i) {
    go.store(i);
    go.notify_one();
    while (armed.load() != i) std::this_thread::yield();
    timespec pause{0, 200'000};
    ::nanosleep(&pause, nullptr);
    const std::uint64_t t0 = nowNs();
    trigger();
    done.wait(i - 1);
    if (poll_error != 0) {
      poller.join();
      fail(fmt::format("poll/read after the trigger of round {}: {}", i, errnoText(poll_error)));
    }
    if (t_wake < t0) fail(fmt::format("round {}: readable before the trigger", i));
    check(buf, got, i);
    if (i >= total - z.wake_iterations) {
      wakes.push_back(t_wake - t0);
      reads.push_back(t_read - t0);
    }
    after();
  }
  poller.join();
  return {summarize(std::move(wakes)), summarize(std::move(reads))};
}

// ---- the report ----------------------------------------------------------------

struct Row {
  std::string what;
  std::optional<Stats> stats;  // none: could not be measured here
  std::string baseline;        // empty for a baseline row
  std::optional<Stats> base;
  double goal = 0;  // the largest ratio the issue accepts; 0 for none
  std::string note;
  std::optional<double> ratio;  // a ratio computed otherwise, for a row without stats
};

Row baselineRow(std::string what, std::optional<Stats> stats, std::string note = "") {
  return Row{std::move(what), stats, "", std::nullopt, 0, std::move(note), std::nullopt};
}

Row ratioRow(std::string what, std::optional<Stats> stats, std::string baseline, std::optional<Stats> base,
             double goal = 0) {
  return Row{std::move(what), stats, std::move(baseline), base, goal, "", std::nullopt};
}

void printTable(const std::vector<Row>& rows) {
  fmt::print("\n{:<40} {:>10} {:>10}  {:<26} {:>7}  {:<6} {}\n", "what", "median ns", "p99 ns", "baseline", "ratio",
             "goal", "result");
  for (const auto& r : rows) {
    const char* none = r.ratio ? "-" : "n/a";
    std::string median = r.stats ? fmt::format("{:.0f}", r.stats->median) : none;
    std::string p99 = r.stats ? fmt::format("{:.0f}", r.stats->p99) : none;
    std::string ratio = "-", goal = "-", result = "-";
    if (!r.baseline.empty()) {
      if (r.ratio || (r.stats && r.base && r.base->median > 0)) {
        const double q = r.ratio ? *r.ratio : r.stats->median / r.base->median;
        ratio = fmt::format("{:.3f}", q);
        if (r.goal > 0) result = q <= r.goal ? "met" : "missed";
      } else {
        ratio = "n/a";
      }
      if (r.goal > 0) goal = fmt::format("<={:.1f}x", r.goal);
    }
    if (!r.note.empty()) result += " (" + r.note + ")";
    fmt::print("{:<40} {:>10} {:>10}  {:<26} {:>7}  {:<6} {}\n", r.what, median, p99,
               r.baseline.empty() ? "-" : r.baseline, ratio, goal, result);
  }
}

// perf_event_open(2) of the calling thread's task clock: what a read() of a
// kernel counter costs. An error is a reason to print, never a failure.
std::optional<Stats> perfEventRead(const Sizes& z, std::string& why) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;
  attr.exclude_kernel = 1;  // allowed at perf_event_paranoid 2
  attr.exclude_hv = 1;
  const int fd = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0) {
    why = fmt::format("perf_event_open: {}", errnoText(errno));
    return std::nullopt;
  }
  std::uint64_t last = 0;
  bool bad = false;
  Stats s = measure(z, z.iterations, [&] {
    std::uint64_t v = 0;
    if (::read(fd, &v, sizeof v) != sizeof v || v < last) bad = true;
    last = v;
  });
  ::close(fd);
  if (bad) {
    why = "perf_event read() failed or went backwards";
    return std::nullopt;
  }
  return s;
}

// ---- the perf backend (issue 4) -------------------------------------------------
// A pfmfsd with --pmu=perf --perf-model=sw and one with --pmu=sim (real clock,
// 8 general counters) each get the same session: 8 PMDs in set 0, loaded on a
// sleeping thread, so that a read costs what the backend's read costs and
// nothing else. The direct baselines read the same kinds of perf events of
// the same thread: a task-clock alone, as the daemon reads its clock, and a
// group of the 8 events in the daemon's read format.

// perf-sw's events in PMC order, with their perf_event configs.
constexpr std::array<std::pair<std::string_view, std::uint64_t>, 8> kPerfSwEvents{{
    {"TASK_CLOCK", PERF_COUNT_SW_TASK_CLOCK},
    {"CPU_CLOCK", PERF_COUNT_SW_CPU_CLOCK},
    {"PAGE_FAULTS", PERF_COUNT_SW_PAGE_FAULTS},
    {"CONTEXT_SWITCHES", PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"CPU_MIGRATIONS", PERF_COUNT_SW_CPU_MIGRATIONS},
    {"MINOR_FAULTS", PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"MAJOR_FAULTS", PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"ALIGNMENT_FAULTS", PERF_COUNT_SW_ALIGNMENT_FAULTS},
}};
// The sim's 8 general counters (--sim-counters=8): its events, one each.
constexpr std::array<std::string_view, 8> kSimEvents{
    "UNHALTED_CORE_CYCLES", "INSTRUCTION_RETIRED",         "UNHALTED_REFERENCE_CYCLES", "LLC_REFERENCES",
    "LLC_MISSES",           "BRANCH_INSTRUCTIONS_RETIRED", "BRANCH_MISSES_RETIRED",     "SIM_PHASE_A",
};
constexpr int kEightPmds = 8;
// The daemon's group read format (pmu/perf_event/perf_event.h): nr, time_enabled,
// time_running, then {value, id} per member.
constexpr std::uint64_t kGroupFormat =
    PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_ID;
constexpr std::size_t kGroupBytes = (3 + 2 * kEightPmds) * sizeof(std::uint64_t);
// Set switching: every set switches after the engine's tick of target time.
constexpr std::uint64_t kSwitchNs = 1'000'000;

int openPerf(std::uint64_t config, std::uint64_t read_format, pid_t pid, int group_fd, bool disabled = false) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.disabled = disabled;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = config;
  attr.read_format = read_format;
  attr.exclude_kernel = 1;  // :u, as the daemon's PMCs
  attr.exclude_hv = 1;
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, pid, -1, group_fd, PERF_FLAG_FD_CLOEXEC));
}

// The direct baselines on thread `pid`: a task-clock, and the 8 events as one
// group. Closed by the destructor.
struct DirectPerf {
  int single = -1;
  std::vector<int> group;  // the leader first
  ~DirectPerf() {
    if (single >= 0) ::close(single);
    for (int fd : group) ::close(fd);
  }
};

// Opens them, or says why not in `why`.
bool openDirect(pid_t pid, DirectPerf& d, std::string& why) {
  d.single = openPerf(PERF_COUNT_SW_TASK_CLOCK, 0, pid, -1);
  if (d.single < 0) {
    why = fmt::format("perf_event_open(task-clock of thread {}): {}", pid, errnoText(errno));
    return false;
  }
  for (const auto& [name, config] : kPerfSwEvents) {
    const int fd = openPerf(config, kGroupFormat, pid, d.group.empty() ? -1 : d.group.front());
    if (fd < 0) {
      why = fmt::format("perf_event_open({} of thread {}, in a group): {}", name, pid, errnoText(errno));
      return false;
    }
    d.group.push_back(fd);
  }
  return true;
}

// What a set switch costs perf itself: the disable of one group of the 8
// events and the enable of another (two ioctls), on a thread that runs on
// another CPU, as the daemon's switches are. An error is a reason to print.
std::optional<Stats> directSwitch(const Sizes& z, pid_t tid, std::string& why) {
  std::vector<int> fds;
  int leaders[2] = {-1, -1};
  auto closeAll = [&] {
    for (int fd : fds) ::close(fd);
  };
  for (int& leader : leaders)
    for (const auto& [name, config] : kPerfSwEvents) {
      const int fd = openPerf(config, kGroupFormat, tid, leader, true);
      if (fd < 0) {
        why = fmt::format("perf_event_open({} of thread {}): {}", name, tid, errnoText(errno));
        closeAll();
        return std::nullopt;
      }
      fds.push_back(fd);
      if (leader < 0) leader = fd;
    }
  int on = 0;
  bool bad = ::ioctl(leaders[on], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0;
  const Stats s = measure(z, z.wake_iterations, [&] {
    bad |= ::ioctl(leaders[on], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP) != 0;
    on ^= 1;
    bad |= ::ioctl(leaders[on], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0;
  });
  if (bad) why = fmt::format("ioctl(PERF_EVENT_IOC_ENABLE/DISABLE): {}", errnoText(errno));
  closeAll();
  if (bad) return std::nullopt;
  return s;
}

// A pmd's text: a decimal count and a newline, never below the last one read.
void expectCount(const char* got, ssize_t n, std::uint64_t& last, const std::string& what) {
  bool ok = n >= 2 && got[n - 1] == '\n';
  std::uint64_t v = 0;
  for (ssize_t i = 0; ok && i < n - 1; ++i) {
    ok = got[i] >= '0' && got[i] <= '9' && v <= (UINT64_MAX - 9) / 10;
    v = v * 10 + static_cast<std::uint64_t>(got[i] - '0');
  }
  if (!ok) {
    if (n < 0) fail(fmt::format("read {}: {}", what, errnoText(errno)));
    fail(fmt::format("read {}: got \"{}\", want a decimal count", what,
                     std::string_view(got, static_cast<std::size_t>(std::max<ssize_t>(n, 0)))));
  }
  if (v < last) fail(fmt::format("read {}: {} after {}: a count went backwards", what, v, last));
  last = v;
}

// `counts` of a session with PMDs 0..7 in set 0 and nothing else.
void expectEightCounts(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  std::string line;
  int k = 0;
  for (; std::getline(in, line); ++k) {
    const std::string prefix = fmt::format("set=0 pmd={} value=", k);
    if (k >= kEightPmds || !line.starts_with(prefix) || line.find(" enabled_ns=") == std::string::npos ||
        line.find(" running_ns=") == std::string::npos || line.find(" scaled=") == std::string::npos)
      fail(
          fmt::format("{}: line {} is \"{}\"; want {} lines \"set=0 pmd=K value=N enabled_ns=.. running_ns=.. "
                      "scaled=..\"",
                      what, k + 1, line, kEightPmds));
  }
  if (k != kEightPmds || !text.ends_with('\n'))
    fail(fmt::format("{}: want {} lines, got \"{}\"", what, kEightPmds, text));
}

// Within the timed loop: the same shape, checked cheaply.
void expectEightCountsQuick(const char* got, ssize_t n, const std::string& what) {
  constexpr std::string_view kFirst = "set=0 pmd=0 value=";
  if (n > static_cast<ssize_t>(kFirst.size()) && got[n - 1] == '\n' &&
      std::memcmp(got, kFirst.data(), kFirst.size()) == 0 && std::count(got, got + n, '\n') == kEightPmds)
    return;
  if (n < 0) fail(fmt::format("read {}: {}", what, errnoText(errno)));
  expectEightCounts(std::string(got, static_cast<std::size_t>(n)), what);
  fail(fmt::format("read {}: a short read", what));  // the full check passed a different buffer
}

// Puts `events` (":u") in the PMCs 0..7 of a set.
template <class Events>
void programSet(const std::string& set_dir, const Events& names) {
  for (int i = 0; i < kEightPmds; ++i) writeFile(fmt::format("{}/pmc{}", set_dir, i), fmt::format("{}:u\n", names[i]));
}

std::array<std::string_view, 8> perfSwNames() {
  std::array<std::string_view, 8> n{};
  for (std::size_t i = 0; i < n.size(); ++i) n[i] = kPerfSwEvents[i].first;
  return n;
}

// The value of `key=` in a key=value line.
std::uint64_t fieldOf(const std::string& text, const std::string& key, const std::string& what) {
  const std::string k = " " + key + "=";
  std::size_t at = (" " + text).find(k);
  if (at == std::string::npos) fail(fmt::format("{}: no {}= in \"{}\"", what, key, text));
  const char* p = text.c_str() + at + key.size() + 1;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(p, &end, 10);
  if (end == p || errno != 0) fail(fmt::format("{}: {}= is not a count in \"{}\"", what, key, text));
  return v;
}

// A CPU-time clock in ns: of a process (every thread, the ended ones
// included; behind by what a running thread ran since the scheduler's last
// tick), or of a thread of ours (exact: what a check against a perf
// task-clock needs; the kernel gives no other process's thread clock).
class CpuClock {
 public:
  explicit CpuClock(pid_t pid) : what_(fmt::format("process {}", pid)) {
    if (int e = ::clock_getcpuclockid(pid, &id_); e != 0)
      fail(fmt::format("clock_getcpuclockid({}): {}", pid, errnoText(e)));
  }
  explicit CpuClock(std::thread& t) : what_("the busy thread") {
    if (int e = ::pthread_getcpuclockid(t.native_handle(), &id_); e != 0)
      fail(fmt::format("pthread_getcpuclockid: {}", errnoText(e)));
  }
  std::uint64_t ns() const {
    timespec ts{};
    if (::clock_gettime(id_, &ts) != 0) fail(fmt::format("CPU time of {}: {}", what_, errnoText(errno)));
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
  }

 private:
  std::string what_;
  clockid_t id_{};
};

// A thread of ours that spins until destroyed: a target whose CPU time runs.
class BusyThread {
 public:
  BusyThread()
      : thread_([this] {
          tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)));
          tid_.notify_all();
          while (!stop_.load(std::memory_order_relaxed)) {
          }
        }) {
    tid_.wait(0);
  }
  ~BusyThread() {
    stop_.store(true);
    thread_.join();
  }
  pid_t tid() const { return tid_.load(); }
  std::thread& thread() { return thread_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<pid_t> tid_{0};
  std::thread thread_;
};

// One window of counting: the busy thread's CPU time, the wall time and the
// daemon's CPU time from just before `start` to just after `stop`.
struct Window {
  double cpu_ns = 0, wall_ns = 0, daemon_ns = 0;
};

Window countFor(const std::string& session, const CpuClock& busy, const CpuClock& daemon, std::uint64_t cpu_ns) {
  const int ctl = openOrFail(session + "/ctl", O_WRONLY);
  const std::uint64_t c0 = busy.ns(), d0 = daemon.ns(), w0 = nowNs();
  writeFd(ctl, "start\n", session + "/ctl");
  while (busy.ns() - c0 < cpu_ns) {
    if (nowNs() - w0 > 30'000'000'000u)
      fail(fmt::format("{}: the busy thread got {} ms of CPU in 30 s", session, (busy.ns() - c0) / 1'000'000));
    sleepMs(5);
  }
  writeFd(ctl, "stop\n", session + "/ctl");
  const std::uint64_t c1 = busy.ns(), d1 = daemon.ns(), w1 = nowNs();
  ::close(ctl);
  return {static_cast<double>(c1 - c0), static_cast<double>(w1 - w0), static_cast<double>(d1 - d0)};
}

// Set switching on one daemon: a session with two sets of 8 PMDs, each with
// `switch time` one tick, and one with one set alone (no switching: the
// engine's ticks only), loaded in turn on a busy thread for kSwitchRounds
// windows each of `cpu_ns` / kSwitchRounds of its CPU time, so that the
// daemon's CPU time per switch can be told from its CPU time per tick on a
// machine whose load drifts.
constexpr int kSwitchRounds = 4;

struct SwitchFigures {
  std::uint64_t runs0 = 0, runs1 = 0, switches = 0;  // summed over the windows
  Window multiplexed, lone;
  double perCpuSecond() const { return static_cast<double>(switches) * 1e9 / multiplexed.cpu_ns; }
  double daemonPerSwitch() const { return multiplexed.daemon_ns / static_cast<double>(switches); }
  // The daemon's CPU time per wall second while one set counts (ticks, no switches).
  double lonePerSecond() const { return lone.daemon_ns * 1e9 / lone.wall_ns; }
  double marginalPerSwitch() const {
    return (multiplexed.daemon_ns - lonePerSecond() * multiplexed.wall_ns / 1e9) / static_cast<double>(switches);
  }
};

void addTo(Window& sum, const Window& w) {
  sum.cpu_ns += w.cpu_ns;
  sum.wall_ns += w.wall_ns;
  sum.daemon_ns += w.daemon_ns;
}

// runs= and duration_ns= of a set.
std::pair<std::uint64_t, std::uint64_t> setInfo(const std::string& session, int set) {
  const std::string path = fmt::format("{}/sets/{}/info", session, set);
  const std::string info = readFile(path);
  return {fieldOf(info, "runs", path), fieldOf(info, "duration_ns", path)};
}

template <class Events>
SwitchFigures measureSwitching(const std::string& mount, pid_t daemon_pid, BusyThread& busy_thread,
                               const Events& events, std::uint64_t cpu_ns) {
  const pid_t busy_pid = busy_thread.tid();
  const CpuClock busy(busy_thread.thread()), daemon(daemon_pid);
  const std::uint64_t window_ns = cpu_ns / kSwitchRounds;
  SwitchFigures f;
  const std::string sw = mount + "/sessions/switching", lone = mount + "/sessions/lone";
  mkdirOrFail(sw);
  mkdirOrFail(sw + "/sets/1");
  for (const char* set : {"0", "1"}) {
    programSet(fmt::format("{}/sets/{}", sw, set), events);
    writeFile(fmt::format("{}/sets/{}/switch", sw, set), fmt::format("time {}\n", kSwitchNs));
  }
  mkdirOrFail(lone);
  programSet(lone + "/sets/0", events);
  const std::string load = fmt::format("load {} set=0\n", busy_pid);
  for (int round = 0; round < kSwitchRounds; ++round) {
    writeFile(sw + "/ctl", load);
    const auto [runs0, dur0] = setInfo(sw, 0);
    const auto [runs1, dur1] = setInfo(sw, 1);
    const Window w = countFor(sw, busy, daemon, window_ns);
    const auto [runs0_end, dur0_end] = setInfo(sw, 0);
    const auto [runs1_end, dur1_end] = setInfo(sw, 1);
    writeFile(sw + "/ctl", "unload\n");
    const std::uint64_t r0 = runs0_end - runs0, r1 = runs1_end - runs1, switches = r0 + r1 - 1;
    const double duration = static_cast<double>(dur0_end - dur0 + dur1_end - dur1);
    // Round robin from set 0; no set switches before its tick of target
    // time, which is what the sets' duration_ns add up; and that duration is
    // the counting time: more than half the target's CPU time in the window
    // (the kernel's thread CPU clock, which the window brackets) and no more
    // than the window's wall time. The thread CPU clock is no upper bound:
    // perf's task-clock also counts the interrupt and steal time that the
    // scheduler's clock leaves out, 4% more on a busy VM.
    const double cpu = w.cpu_ns, duration_ticks = duration / static_cast<double>(kSwitchNs);
    if (r0 == 0 || r1 > r0 || r0 > r1 + 1)
      fail(fmt::format("{}, window {}: runs {} and {}: not round robin from set 0", sw, round + 1, r0, r1));
    if (static_cast<double>(switches) > 1.02 * duration_ticks + 2 ||
        static_cast<double>(switches) < duration_ticks / 10)
      fail(fmt::format("{}, window {}: {} switches in {:.1f} ms of the sets' duration, switching every {} ns", sw,
                       round + 1, switches, duration / 1e6, kSwitchNs));
    if (duration > w.wall_ns + 2.0 * kSwitchNs || duration < cpu / 2)
      fail(
          fmt::format("{}, window {}: the sets' duration_ns add up to {:.1f} ms, the target ran {:.1f} ms of CPU "
                      "in {:.1f} ms",
                      sw, round + 1, duration / 1e6, cpu / 1e6, w.wall_ns / 1e6));
    f.runs0 += r0;
    f.runs1 += r1;
    f.switches += switches;
    addTo(f.multiplexed, w);

    writeFile(lone + "/ctl", load);
    const std::uint64_t lone_runs = setInfo(lone, 0).first;
    addTo(f.lone, countFor(lone, busy, daemon, window_ns));
    if (setInfo(lone, 0).first != lone_runs + 1)
      fail(fmt::format("{}, window {}: a lone set ran more than once", lone, round + 1));
    writeFile(lone + "/ctl", "unload\n");
  }
  for (const std::string& dir : {sw, lone})
    if (::rmdir(dir.c_str()) != 0) fail(fmt::format("rmdir {}: {}", dir, errnoText(errno)));
  return f;
}

void printSwitching(const std::optional<SwitchFigures>& perf, const SwitchFigures& sim, int cpu_ms,
                    const std::string& perf_why, const std::optional<Stats>& direct, const std::string& direct_why) {
  fmt::print(
      "\nset switching: 2 sets x {} PMDs, switch time {} ns (the tick), on a busy thread for {} ms of its "
      "CPU time in {} windows, each followed by one as long with 1 set (no switching)\n",
      kEightPmds, kSwitchNs, cpu_ms, kSwitchRounds);
  fmt::print("{:<20} {:>9} {:>11} {:>12} {:>18} {:>20} {:>18}\n", "backend", "switches", "runs 0/1", "per CPU s",
             "daemon ns/switch", "daemon ns/s, 1 set", "marginal ns/switch");
  auto line = [](const char* name, const SwitchFigures& f) {
    fmt::print("{:<20} {:>9} {:>11} {:>12.0f} {:>18.0f} {:>20.0f} {:>18.0f}\n", name, f.switches,
               fmt::format("{}/{}", f.runs0, f.runs1), f.perCpuSecond(), f.daemonPerSwitch(), f.lonePerSecond(),
               f.marginalPerSwitch());
  };
  if (perf) {
    line("perf (perf-sw)", *perf);
  } else {
    fmt::print("{:<20} n/a ({})\n", "perf (perf-sw)", perf_why);
  }
  line("sim (real clock)", sim);
  if (perf)
    fmt::print("{:<20} {:>9} {:>11} {:>12.3f} {:>18.3f} {:>20.3f} {:>18.3f}\n", "ratio perf/sim", "-", "-",
               perf->perCpuSecond() / sim.perCpuSecond(), perf->daemonPerSwitch() / sim.daemonPerSwitch(),
               perf->lonePerSecond() / sim.lonePerSecond(), perf->marginalPerSwitch() / sim.marginalPerSwitch());
  fmt::print(
      "(daemon ns/switch: the daemon's CPU time while switching over the switches, its ticks included; "
      "marginal: less its CPU time per second with one set counting)\n");
  if (direct) {
    fmt::print("direct ioctl disable+enable of two 8-event groups of the busy thread: median {:.0f} ns, p99 {:.0f} ns",
               direct->median, direct->p99);
    if (perf) fmt::print("; perf marginal ns/switch / that median: {:.3f}", perf->marginalPerSwitch() / direct->median);
    fmt::print("\n");
  } else {
    fmt::print("direct ioctl disable+enable of two 8-event groups: n/a ({})\n", direct_why);
  }
}

// Measures each op in turn, in ten blocks, as measurePair does for two.
std::vector<Stats> measureAll(const Sizes& z, int iterations, const std::vector<std::function<void()>>& ops) {
  std::vector<std::uint64_t> warm;
  std::vector<std::vector<std::uint64_t>> samples(ops.size());
  for (auto op : ops) timeInto(warm, z.warmup, op);
  constexpr int kBlocks = 10;
  for (int block = 0; block < kBlocks; ++block)
    for (std::size_t i = 0; i < ops.size(); ++i) {
      auto op = ops[i];
      timeInto(samples[i], iterations / kBlocks, op);
    }
  std::vector<Stats> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

// A request that never gets its reply would hang the bench in a system call
// that signals cannot interrupt; killing the daemons aborts the connection.
constexpr int kWatchdogSeconds = 300;

void startWatchdog() {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(kWatchdogSeconds));
    std::fprintf(stderr, "fs_bench: FAILED: not done within %d s\n", kWatchdogSeconds);
    cleanupAll();
    ::_exit(1);
  }).detach();
}

int usage(const char* argv0) {
  fmt::print(stderr, "usage: {} PFMFSD FLOOR_FS [--quick]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 3 || argc > 4) return usage(argv[0]);
  const std::string pfmfsd_path = argv[1], floor_path = argv[2];
  Sizes z;
  if (argc == 4) {
    if (std::string_view(argv[3]) != "--quick") return usage(argv[0]);
    z = Sizes{100, 2000, 1000, 200, 100, 1000, 200};
  }
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    fmt::print("fs_bench: SKIP: /dev/fuse: {}\n", errnoText(errno));
    return 77;
  }
  if (::geteuid() != 0) {  // pmu/sim/advance, the manual clock, is root's
    fmt::print("fs_bench: SKIP: needs root (writes pmu/sim/advance)\n");
    return 77;
  }

  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);

  startWatchdog();

  std::snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/pfmfs-bench-XXXXXX");
  if (::mkdtemp(g_tmpdir) == nullptr) fail(fmt::format("mkdtemp: {}", errnoText(errno)));
  const std::string tmp = g_tmpdir;
  const std::string floor_dir = tmp + "/floor", mount_dir = tmp + "/pfmfs";
  mkdirOrFail(floor_dir);
  mkdirOrFail(mount_dir);

  // Mount both file systems with the same loop and the same kernel options.
  const pid_t floor_pid =
      spawn({floor_path, "-f", "-o", fmt::format("default_permissions,timeout={}", kFloorTimeout), floor_dir},
            floor_dir, tmp + "/floor.log");
  const pid_t daemon_pid = spawn({pfmfsd_path, "-f", "--pmu=sim", "--sim-clock=manual",
                                  fmt::format("--max-sessions-per-user={}", z.sessions_many + 100), mount_dir},
                                 mount_dir, tmp + "/pfmfsd.log");
  // The perf backend's daemon where this machine lets us open perf events
  // (the direct baselines, opened below on the same thread, say why not),
  // and a sim one like it: real clock, 8 general counters as perf-sw has.
  const std::string perf_dir = tmp + "/perf", simr_dir = tmp + "/simr";
  mkdirOrFail(simr_dir);
  const pid_t simr_pid =
      spawn({pfmfsd_path, "-f", "--pmu=sim", "--sim-counters=8", simr_dir}, simr_dir, tmp + "/pfmfsd-simr.log");
  const pid_t target = spawn({}, "", "");
  const pid_t ovfl_target = spawn({}, "", "");
  DirectPerf direct;
  std::string direct_why;
  const bool have_perf = openDirect(target, direct, direct_why);
  pid_t perf_pid = 0;
  if (have_perf) {
    mkdirOrFail(perf_dir);
    perf_pid =
        spawn({pfmfsd_path, "-f", "--pmu=perf", "--perf-model=sw", perf_dir}, perf_dir, tmp + "/pfmfsd-perf.log");
  } else {
    fmt::print("fs_bench: perf backend n/a: {}\n", direct_why);
  }
  waitMounted(floor_pid, floor_dir + "/value", "floor_fs");
  waitMounted(daemon_pid, mount_dir + "/version", "pfmfsd");
  waitMounted(simr_pid, simr_dir + "/version", "pfmfsd --pmu=sim");
  expectPrefix(readFile(mount_dir + "/version"), "pfmfs ", mount_dir + "/version");
  expectPrefix(readFile(simr_dir + "/pmu/info"),
               "backend=sim model=intel-arch-v2 pmcs=0x100ff pmds=0x700ff counters=8 ", simr_dir + "/pmu/info");
  if (have_perf) {
    waitMounted(perf_pid, perf_dir + "/version", "pfmfsd --pmu=perf");
    expectPrefix(readFile(perf_dir + "/pmu/info"), "backend=perf model=perf-sw pmcs=0xff pmds=0xff counters=8 ",
                 perf_dir + "/pmu/info");
  }

  fmt::print("fs_bench: {} against {}, {} iterations per figure after {} of warm-up\n", pfmfsd_path, floor_path,
             z.iterations, z.warmup);
  std::vector<Row> rows;
  char buf[4096];

  // ---- the session everything reads: 7 PMDs in set 0 and 1 in set 1, live ----
  const std::string bench_dir = mount_dir + "/sessions/bench";
  mkdirOrFail(bench_dir);
  writeFile(bench_dir + "/sets/0/pmc0", "0x1003c\n");  // UNHALTED_CORE_CYCLES:u, 3 per ns
  writeFile(bench_dir + "/sets/0/pmc1", "0x100c0\n");  // INSTRUCTION_RETIRED:u
  writeFile(bench_dir + "/sets/0/pmc2", "0x1013c\n");  // UNHALTED_REFERENCE_CYCLES:u
  writeFile(bench_dir + "/sets/0/pmc3", "0x14f2e\n");  // LLC_REFERENCES:u
  writeFile(bench_dir + "/sets/0/pmc16", "0x222\n");   // the three fixed counters, user level
  mkdirOrFail(bench_dir + "/sets/1");
  writeFile(bench_dir + "/sets/1/pmc0", "0x100c4\n");  // BRANCH_INSTRUCTIONS_RETIRED:u
  writeFile(bench_dir + "/ctl", fmt::format("load {}\n", target));
  writeFile(bench_dir + "/ctl", "start\n");
  writeFile(mount_dir + "/pmu/sim/advance", "1000000\n");
  std::uint64_t advanced_ns = 1'000'000;  // the target time of the bench session
  expectPrefix(readFile(bench_dir + "/state"), fmt::format("state=active mode=thread target={} set=0 ", target),
               bench_dir + "/state");
  auto pmd0Text = [&] { return fmt::format("{}\n", kCyclesPerNs * advanced_ns); };

  // ---- baselines: the floor and a perf_event read() ----
  const std::string floor_value = floor_dir + "/value";
  const std::string pmd0 = bench_dir + "/sets/0/pmd0";
  const int floor_fd = openOrFail(floor_value, O_RDWR);
  const int pmd_fd = openOrFail(pmd0, O_RDONLY);
  constexpr std::string_view kFloorText = "123456\n";

  std::string perf_why;
  const std::optional<Stats> perf = perfEventRead(z, perf_why);
  if (!perf) fmt::print("fs_bench: perf_event baseline n/a: {}\n", perf_why);

  // pread of a pmd on an open descriptor, against the floor's pread.
  std::string want = pmd0Text();
  auto [pmd_pread, floor_pread] = measurePair(
      z, z.iterations,
      [&] {
        ssize_t n = ::pread(pmd_fd, buf, sizeof buf, 0);
        expectBytes(buf, n, want, pmd0);
      },
      [&] {
        ssize_t n = ::pread(floor_fd, buf, sizeof buf, 0);
        expectBytes(buf, n, kFloorText, floor_value);
      });

  // open+read+close of the same paths.
  auto [pmd_orc, floor_orc] = measurePair(
      z, z.open_iterations,
      [&] {
        int fd = openOrFail(pmd0, O_RDONLY);
        ssize_t n = ::read(fd, buf, sizeof buf);
        expectBytes(buf, n, want, pmd0);
        if (::close(fd) != 0) fail(fmt::format("close {}: {}", pmd0, errnoText(errno)));
      },
      [&] {
        int fd = openOrFail(floor_value, O_RDONLY);
        ssize_t n = ::read(fd, buf, sizeof buf);
        expectBytes(buf, n, kFloorText, floor_value);
        if (::close(fd) != 0) fail(fmt::format("close {}: {}", floor_value, errnoText(errno)));
      });

  // counts with 8 used PMDs: the first snapshot is checked line by line, the
  // others must be the same bytes (the manual clock stands still).
  const int counts_fd = openOrFail(bench_dir + "/counts", O_RDONLY);
  const std::string counts = preadAll(counts_fd, bench_dir + "/counts");
  if (std::count(counts.begin(), counts.end(), '\n') != 8 || !counts.ends_with('\n'))
    fail(fmt::format("{}/counts: want 8 lines, got \"{}\"", bench_dir, counts));
  expectPrefix(counts, fmt::format("set=0 pmd=0 value={} ", kCyclesPerNs * advanced_ns), bench_dir + "/counts");
  if (counts.find("set=1 pmd=0 value=0 ") == std::string::npos)
    fail(fmt::format("{}/counts: no line for set 1's pmd0 in \"{}\"", bench_dir, counts));
  const Stats counts_read = measure(z, z.iterations, [&] {
    ssize_t n = ::pread(counts_fd, buf, sizeof buf, 0);
    expectBytes(buf, n, counts, bench_dir + "/counts");
  });
  ::close(counts_fd);

  // ---- the perf backend against sim, a direct perf_event read() and the floor ----
  // The same session on both daemons: PMDs 0..7 of set 0, loaded on the
  // sleeping target and started (its counts stand still).
  auto readSession = [&](const std::string& mount, const auto& events) {
    const std::string dir = mount + "/sessions/read";
    mkdirOrFail(dir);
    programSet(dir + "/sets/0", events);
    writeFile(dir + "/ctl", fmt::format("load {}\n", target));
    writeFile(dir + "/ctl", "start\n");
    expectPrefix(readFile(dir + "/state"), fmt::format("state=active mode=thread target={} set=0 ", target),
                 dir + "/state");
    return dir;
  };
  std::optional<Stats> perf_pmd, perf_counts, direct_single, direct_group;
  Stats simr_pmd, simr_counts, floor_pmd_phase, floor_counts_phase;
  {
    const std::string simr_read = readSession(simr_dir, kSimEvents);
    const std::string simr_pmd0 = simr_read + "/sets/0/pmd0", simr_counts_path = simr_read + "/counts";
    const int simr_pmd_fd = openOrFail(simr_pmd0, O_RDONLY);
    const int simr_counts_fd = openOrFail(simr_counts_path, O_RDONLY);
    expectEightCounts(preadAll(simr_counts_fd, simr_counts_path), simr_counts_path);
    std::string perf_read, perf_pmd0, perf_counts_path;
    int perf_pmd_fd = -1, perf_counts_fd = -1;
    if (have_perf) {
      perf_read = readSession(perf_dir, perfSwNames());
      perf_pmd0 = perf_read + "/sets/0/pmd0";
      perf_counts_path = perf_read + "/counts";
      perf_pmd_fd = openOrFail(perf_pmd0, O_RDONLY);
      perf_counts_fd = openOrFail(perf_counts_path, O_RDONLY);
      expectEightCounts(preadAll(perf_counts_fd, perf_counts_path), perf_counts_path);
    }
    std::uint64_t last_perf = 0, last_simr = 0, last_direct = 0;
    auto floorOnce = [&] {
      ssize_t n = ::pread(floor_fd, buf, sizeof buf, 0);
      expectBytes(buf, n, kFloorText, floor_value);
    };
    // pmd0 on both daemons, a read() of a task-clock, the floor.
    std::vector<std::function<void()>> ops{
        [&] { expectCount(buf, ::pread(simr_pmd_fd, buf, sizeof buf, 0), last_simr, simr_pmd0); }, floorOnce};
    if (have_perf) {
      ops.push_back([&] { expectCount(buf, ::pread(perf_pmd_fd, buf, sizeof buf, 0), last_perf, perf_pmd0); });
      ops.push_back([&] {
        std::uint64_t v = 0;
        if (::read(direct.single, &v, sizeof v) != sizeof v)
          fail(fmt::format("read() task-clock: {}", errnoText(errno)));
        if (v < last_direct) fail(fmt::format("read() task-clock: {} after {}", v, last_direct));
        last_direct = v;
      });
    }
    std::vector<Stats> st = measureAll(z, z.iterations, ops);
    simr_pmd = st[0];
    floor_pmd_phase = st[1];
    if (have_perf) {
      perf_pmd = st[2];
      direct_single = st[3];
    }
    // counts (8 lines) on both daemons, a group read() of the 8 events, the floor.
    ops = {[&] { expectEightCountsQuick(buf, ::pread(simr_counts_fd, buf, sizeof buf, 0), simr_counts_path); },
           floorOnce};
    if (have_perf) {
      ops.push_back(
          [&] { expectEightCountsQuick(buf, ::pread(perf_counts_fd, buf, sizeof buf, 0), perf_counts_path); });
      ops.push_back([&] {
        std::uint64_t group[kGroupBytes / sizeof(std::uint64_t)];
        const ssize_t n = ::read(direct.group.front(), group, sizeof group);
        if (n != static_cast<ssize_t>(kGroupBytes) || group[0] != kEightPmds)
          fail(fmt::format("group read() of {} events: {}", kEightPmds,
                           n < 0 ? errnoText(errno) : fmt::format("{} bytes, nr={}", n, group[0])));
      });
    }
    st = measureAll(z, z.iterations, ops);
    simr_counts = st[0];
    floor_counts_phase = st[1];
    if (have_perf) {
      perf_counts = st[2];
      direct_group = st[3];
    }
    for (int fd : {simr_pmd_fd, simr_counts_fd, perf_pmd_fd, perf_counts_fd})
      if (fd >= 0) ::close(fd);
    for (const std::string& dir : {simr_read, perf_read})
      if (!dir.empty() && ::rmdir(dir.c_str()) != 0) fail(fmt::format("rmdir {}: {}", dir, errnoText(errno)));
  }

  // ctl stop+start: two writes, against two writes to the floor.
  const int ctl_fd = openOrFail(bench_dir + "/ctl", O_WRONLY);
  auto [ctl_pair, floor_writes] = measurePair(
      z, z.iterations,
      [&] {
        writeFd(ctl_fd, "stop\n", bench_dir + "/ctl");
        writeFd(ctl_fd, "start\n", bench_dir + "/ctl");
      },
      [&] {
        writeFd(floor_fd, "1\n", floor_value);
        writeFd(floor_fd, "2\n", floor_value);
      });
  expectPrefix(readFile(bench_dir + "/state"), "state=active ", bench_dir + "/state");
  ::pread(floor_fd, buf, sizeof buf, 0);  // the floor's file is readable for poll until read

  // The pmd read with 1, mid and many sessions present (the others created
  // with mkdir only), and the daemon's memory per idle session. Phases run
  // seconds apart, so each one times the floor too: the goal compares each
  // phase's ratio to its floor, which a change of the machine's load between
  // phases does not move.
  want = pmd0Text();
  auto pmdRead = [&] {
    ssize_t n = ::pread(pmd_fd, buf, sizeof buf, 0);
    expectBytes(buf, n, want, pmd0);
  };
  auto floorRead = [&] {
    ssize_t n = ::pread(floor_fd, buf, sizeof buf, 0);
    expectBytes(buf, n, kFloorText, floor_value);
  };
  const auto [pread_1, floor_1] = measurePair(z, z.iterations, pmdRead, floorRead);
  const long rss_before = vmRssKb(daemon_pid);
  std::vector<std::uint64_t> mkdir_ns;
  mkdir_ns.reserve(static_cast<std::size_t>(z.sessions_many));
  auto addSessions = [&](int upto) {  // sessions present, the bench one included
    for (int i = static_cast<int>(mkdir_ns.size()) + 1; i < upto; ++i) {
      const std::string path = fmt::format("{}/sessions/idle{:05}", mount_dir, i);
      const std::uint64_t t0 = nowNs();
      if (::mkdir(path.c_str(), 0700) != 0) fail(fmt::format("mkdir {}: {}", path, errnoText(errno)));
      mkdir_ns.push_back(nowNs() - t0);
    }
  };
  addSessions(z.sessions_mid);
  const Stats pread_mid = measurePair(z, z.iterations, pmdRead, floorRead).first;
  addSessions(z.sessions_many);
  const auto [pread_many, floor_many] = measurePair(z, z.iterations, pmdRead, floorRead);
  const long rss_after = vmRssKb(daemon_pid);
  const std::size_t idle = mkdir_ns.size();
  const Stats mkdir_stats = summarize(mkdir_ns);
  const std::string last_idle = fmt::format("{}/sessions/idle{:05}/state", mount_dir, idle);
  expectPrefix(readFile(last_idle), "state=unloaded mode=thread target=- set=0 ", last_idle);
  // Gone again before the overflows: pmu/sim/advance visits every session.
  std::vector<std::uint64_t> rmdir_ns;
  for (std::size_t i = 1; i <= idle; ++i) {
    const std::string path = fmt::format("{}/sessions/idle{:05}", mount_dir, i);
    const std::uint64_t t0 = nowNs();
    if (::rmdir(path.c_str()) != 0) fail(fmt::format("rmdir {}: {}", path, errnoText(errno)));
    rmdir_ns.push_back(nowNs() - t0);
  }
  const Stats rmdir_stats = summarize(std::move(rmdir_ns));

  // overflow -> poll wake -> message read, against write -> poll wake -> read
  // on the floor. pmd0 = -3000 with notify overflows 1000 ns after each
  // restart; every advance of 1500 ns crosses it once (the time includes the
  // advance: the manual clock's stand-in for the interrupt). Last, because two
  // threads in flight grow both daemons' pools of FUSE worker threads, which
  // changes what one thread's reads cost (measured above, before).
  const int floor_poll_fd = openOrFail(floor_value, O_RDONLY | O_NONBLOCK);
  const WakeStats floor_wake = measureWake(
      z, floor_poll_fd, [&](char* to, std::size_t n) { return ::pread(floor_poll_fd, to, n, 0); },
      [&] { writeFd(floor_fd, "1\n", floor_value); },
      [&](const char* got, ssize_t n, int) { expectBytes(got, n, kFloorText, floor_value); }, [] {});
  ::close(floor_poll_fd);

  const std::string ovfl_dir = mount_dir + "/sessions/ovfl";
  mkdirOrFail(ovfl_dir);
  writeFile(ovfl_dir + "/sets/0/pmc0", "0x1003c\n");
  const std::uint64_t minus_period = ~kOvflPeriod + 1;
  writeFile(ovfl_dir + "/sets/0/pmd0", fmt::format("{:#x} long_reset={:#x} notify\n", minus_period, minus_period));
  writeFile(ovfl_dir + "/ctl", fmt::format("load {}\n", ovfl_target));
  writeFile(ovfl_dir + "/ctl", "start\n");
  const int msg_fd = openOrFail(ovfl_dir + "/messages", O_RDONLY | O_NONBLOCK);
  const int ovfl_ctl = openOrFail(ovfl_dir + "/ctl", O_WRONLY);
  const int advance_fd = openOrFail(mount_dir + "/pmu/sim/advance", O_WRONLY);
  const WakeStats ovfl = measureWake(
      z, msg_fd, [&](char* to, std::size_t n) { return ::read(msg_fd, to, n); },
      [&] {
        writeFd(advance_fd, fmt::format("{}\n", kWakeAdvanceNs), mount_dir + "/pmu/sim/advance");
        advanced_ns += kWakeAdvanceNs;
      },
      [&](const char* got, ssize_t n, int round) {
        std::string line(got, static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        if (std::count(line.begin(), line.end(), '\n') != 1 || !line.ends_with('\n'))
          fail(fmt::format("{}/messages: want one line, got \"{}\"", ovfl_dir, line));
        expectPrefix(line, fmt::format("type=ovfl seq={} set=0 pmds=0x1 ", round + 1), ovfl_dir + "/messages");
      },
      [&] { writeFd(ovfl_ctl, "restart\n", ovfl_dir + "/ctl"); });
  expectPrefix(readFile(ovfl_dir + "/state"), "state=active ", ovfl_dir + "/state");
  ::close(advance_fd);
  ::close(ovfl_ctl);
  ::close(msg_fd);
  if (::rmdir(ovfl_dir.c_str()) != 0) fail(fmt::format("rmdir {}: {}", ovfl_dir, errnoText(errno)));
  expectBytes(buf, ::pread(pmd_fd, buf, sizeof buf, 0), pmd0Text(), pmd0);  // every advance reached it

  ::close(pmd_fd);
  ::close(ctl_fd);
  ::close(floor_fd);

  // ---- set switching on a busy thread: perf, then sim ----
  const std::uint64_t switch_cpu_ns = static_cast<std::uint64_t>(z.switch_cpu_ms) * 1'000'000u;
  std::optional<SwitchFigures> perf_switch;
  std::optional<SwitchFigures> simr_switch_or;
  std::optional<Stats> direct_switch;
  std::string direct_switch_why = direct_why;
  {
    BusyThread busy;
    if (have_perf) direct_switch = directSwitch(z, busy.tid(), direct_switch_why);
    if (have_perf) perf_switch = measureSwitching(perf_dir, perf_pid, busy, perfSwNames(), switch_cpu_ns);
    simr_switch_or = measureSwitching(simr_dir, simr_pid, busy, kSimEvents, switch_cpu_ns);
  }
  const SwitchFigures simr_switch = *simr_switch_or;

  // ---- the report ----
  const std::string floor_pread_name = "floor pread, open fd";
  rows.push_back(baselineRow(floor_pread_name, floor_pread));
  rows.push_back(baselineRow("floor open+read+close", floor_orc));
  rows.push_back(baselineRow("floor write pair", floor_writes));
  rows.push_back(baselineRow("floor write -> poll wake", floor_wake.wake));
  rows.push_back(baselineRow("floor write -> read", floor_wake.read));
  rows.push_back(baselineRow("perf_event read() task-clock", perf, perf ? "" : perf_why));
  rows.push_back(ratioRow("pmd pread, open fd", pmd_pread, floor_pread_name, floor_pread, 1.2));
  rows.push_back(ratioRow("pmd pread, open fd", pmd_pread, "perf_event read()", perf));
  rows.push_back(ratioRow("pmd open+read+close", pmd_orc, "floor open+read+close", floor_orc, 1.2));
  rows.push_back(ratioRow("counts read, 8 PMDs", counts_read, floor_pread_name, floor_pread));
  rows.push_back(ratioRow("ctl stop+start pair", ctl_pair, "floor write pair", floor_writes));
  rows.push_back(ratioRow("overflow -> poll wake", ovfl.wake, "floor write -> poll wake", floor_wake.wake));
  rows.push_back(ratioRow("overflow -> message read", ovfl.read, "floor write -> read", floor_wake.read));
  const std::string one = "pmd pread, 1 session";
  rows.push_back(ratioRow(one, pread_1, "floor pread, same phase", floor_1));
  rows.push_back(ratioRow(fmt::format("pmd pread, {} sessions", z.sessions_mid), pread_mid, one, pread_1));
  const std::string many = fmt::format("pmd pread, {} sessions", z.sessions_many);
  rows.push_back(ratioRow(many, pread_many, one, pread_1));
  const double to_floor_1 = pread_1.median / floor_1.median, to_floor_many = pread_many.median / floor_many.median;
  rows.push_back(Row{fmt::format("{} vs 1 sessions, floor-normalized", z.sessions_many), std::nullopt,
                     "pmd pread / floor pread", std::nullopt, 1.1,
                     fmt::format("{:.2f} -> {:.2f} of the floor", to_floor_1, to_floor_many),
                     to_floor_many / to_floor_1});
  rows.push_back(baselineRow("direct read() task-clock, target", direct_single, have_perf ? "" : direct_why));
  rows.push_back(baselineRow("direct group read(), 8 events", direct_group, have_perf ? "" : direct_why));
  // The perf rows, each block timed in one interleaved run with its floor.
  rows.push_back(baselineRow("floor pread, pmd block", floor_pmd_phase));
  rows.push_back(ratioRow("sim pmd pread (real clock)", simr_pmd, "floor pread, pmd block", floor_pmd_phase));
  rows.push_back(ratioRow("perf pmd pread", perf_pmd, "sim pmd pread (real clock)", simr_pmd));
  rows.push_back(ratioRow("perf pmd pread", perf_pmd, "floor pread, pmd block", floor_pmd_phase));
  rows.push_back(ratioRow("perf pmd pread", perf_pmd, "direct read() task-clock", direct_single));
  rows.push_back(baselineRow("floor pread, counts block", floor_counts_phase));
  rows.push_back(
      ratioRow("sim counts read, 8 PMDs (real clock)", simr_counts, "floor pread, counts block", floor_counts_phase));
  rows.push_back(ratioRow("perf counts read, 8 PMDs", perf_counts, "sim counts read (real clock)", simr_counts));
  rows.push_back(ratioRow("perf counts read, 8 PMDs", perf_counts, "floor pread, counts block", floor_counts_phase));
  rows.push_back(ratioRow("perf counts read, 8 PMDs", perf_counts, "direct group read()", direct_group));
  rows.push_back(baselineRow("mkdir sessions/NAME", mkdir_stats));
  rows.push_back(baselineRow("rmdir sessions/NAME (idle)", rmdir_stats));
  printTable(rows);

  const double per_session = static_cast<double>(rss_after - rss_before) * 1024.0 / static_cast<double>(idle);
  constexpr double kSessionGoal = 16 * 1024;
  fmt::print("\n{:<40} {:>10.0f} bytes  (VmRSS {} kB -> {} kB over {} idle sessions)  goal <= {:.0f}  {}\n",
             "daemon memory per idle session", per_session, rss_before, rss_after, idle, kSessionGoal,
             per_session <= kSessionGoal ? "met" : "missed");

  printSwitching(perf_switch, simr_switch, z.switch_cpu_ms, have_perf ? "" : direct_why, direct_switch,
                 direct_switch_why);
  std::fflush(stdout);

  if (have_perf) stopDaemon(perf_pid, "pfmfsd --pmu=perf");
  stopDaemon(simr_pid, "pfmfsd --pmu=sim");
  stopDaemon(daemon_pid, "pfmfsd");
  stopDaemon(floor_pid, "floor_fs");
  cleanupAll();
  return 0;
}
