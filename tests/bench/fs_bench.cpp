// Whole-path latency through a real pfmfs mount (issue 3), against floor_fs,
// a bare libfuse server mounted beside it, and a perf_event read(), all in one
// run: `fs_bench PFMFSD FLOOR_FS [--quick]` (meson test --benchmark runs it).
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
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
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
};

// The floor's entry and attribute timeouts: pfmfsd's (kCacheTimeout in
// fs/filesystem.cpp), so that an open costs both the same lookups.
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

constexpr int kMaxChildren = 4;
pid_t g_pids[kMaxChildren];
char g_mounts[kMaxChildren][PATH_MAX];  // "" for a child that mounts nothing
char g_logs[kMaxChildren][PATH_MAX];    // its stdout and stderr
volatile sig_atomic_t g_child_count = 0;
char g_tmpdir[PATH_MAX];

bool stillMounted(const char* mount) {
  struct stat m {}, parent {};
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
  int status = waitFor(pid, 20'000);
  if (slot >= 0) g_pids[slot] = 0;
  if (status == -1) {
    ::kill(pid, SIGKILL);
    waitFor(pid, 10'000);
    fail(fmt::format("{} did not exit within 20 s of SIGTERM", name));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(fmt::format("{} ended with status {:#x} after SIGTERM, not exit 0", name, status));
  if (slot >= 0 && stillMounted(g_mounts[slot])) fail(fmt::format("{} exited but left its mount", name));
}

void waitMounted(pid_t pid, const std::string& probe, const char* name) {
  for (int waited = 0; waited < 15'000; waited += 10) {
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0) return;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      g_pids[slotOf(pid)] = 0;
      fail(fmt::format("{} exited (status {:#x}) before {} appeared", name, status, probe));
    }
    sleepMs(10);
  }
  fail(fmt::format("{} did not mount within 15 s ({} never appeared)", name, probe));
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
    fail(fmt::format("write \"{}\" to {}: {}", text.substr(0, text.size() - (text.ends_with('\n') ? 1 : 0)),
                     what, n < 0 ? errnoText(errno) : fmt::format("{} of {} bytes", n, text.size())));
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
                      const std::function<void()>& trigger,
                      const std::function<void(const char*, ssize_t, int)>& check, const std::function<void()>& after) {
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
    z = Sizes{100, 2000, 1000, 200, 100, 1000};
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
  waitMounted(floor_pid, floor_dir + "/value", "floor_fs");
  waitMounted(daemon_pid, mount_dir + "/version", "pfmfsd");
  expectPrefix(readFile(mount_dir + "/version"), "pfmfs ", mount_dir + "/version");
  const pid_t target = spawn({}, "", "");
  const pid_t ovfl_target = spawn({}, "", "");

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
  rows.push_back(baselineRow("mkdir sessions/NAME", mkdir_stats));
  rows.push_back(baselineRow("rmdir sessions/NAME (idle)", rmdir_stats));
  printTable(rows);

  const double per_session = static_cast<double>(rss_after - rss_before) * 1024.0 / static_cast<double>(idle);
  constexpr double kSessionGoal = 16 * 1024;
  fmt::print("\n{:<40} {:>10.0f} bytes  (VmRSS {} kB -> {} kB over {} idle sessions)  goal <= {:.0f}  {}\n",
             "daemon memory per idle session", per_session, rss_before, rss_after, idle, kSessionGoal,
             per_session <= kSessionGoal ? "met" : "missed");
  std::fflush(stdout);

  stopDaemon(daemon_pid, "pfmfsd");
  stopDaemon(floor_pid, "floor_fs");
  cleanupAll();
  return 0;
}
