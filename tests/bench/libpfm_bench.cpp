// What libpfm-compat (issue 5) adds to a FUSE round trip: pfm_read_pmds,
// pfm_write_pmds and pfm_stop + pfm_start against a bare round trip to
// floor_fs, the same files of the session read and written by hand, all in
// one run: `libpfm_bench PFMFSD FLOOR_FS [--quick]` (meson test --benchmark).
//
// The context is loaded on the calling thread of a pfmfsd with the manual sim
// clock, advanced by a known time first, so every read in every loop is
// checked for the exact count (rate per ns x ns). pfm_write_pmds writes the
// values the PMDs already hold, which keeps those checks exact. Exit status
// as fs_bench's: 1 when something does not work or a value is wrong, 77
// without /dev/fuse or root (the manual clock is root's), 0 whatever the
// figures (a VM is noisy: figures are reported, never failed).
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/perfmon.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/core.h>

namespace {

struct Sizes {
  int warmup = 1000;
  int iterations = 20000;
};

// Target time given to the context before the loops, and once more after
// them (the reads must follow it: nothing is cached).
constexpr std::uint64_t kAdvanceNs = 1'000'000;
constexpr std::uint64_t kLaterNs = 1000;

// PERFEVTSEL values (USR, INT, EN) of the sim events whose rates are exact.
struct Counter {
  std::uint64_t pmc;
  std::uint64_t per_ns;
};
constexpr std::array<Counter, 4> kCounters{{
    {0x51003c, 3},  // UNHALTED_CORE_CYCLES
    {0x5100c0, 2},  // INSTRUCTION_RETIRED
    {0x51003c, 3},
    {0x5100c0, 2},
}};
constexpr std::string_view kFloorText = "123456\n";
// The floor's entry and attribute timeouts: pfmfsd's, as in fs_bench.
constexpr std::string_view kFloorTimeout = "3600";

std::uint64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&ts, nullptr);
}

// ---- the two daemons: stopped and unmounted on every exit path ----------------
// Plain arrays, so that the signal handler can walk them.

constexpr int kMaxChildren = 2;
pid_t g_pids[kMaxChildren];
char g_mounts[kMaxChildren][PATH_MAX];
char g_logs[kMaxChildren][PATH_MAX];
volatile sig_atomic_t g_child_count = 0;
char g_tmpdir[PATH_MAX];

// Waits up to `ms` for `pid`; its wait status, or -1 while it still runs.
int waitFor(pid_t pid, long ms) {
  for (long waited = 0;; waited += 10) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return 0;  // already reaped
    if (waited >= ms) return -1;
    sleepMs(10);
  }
}

bool stillMounted(const char* mount) {
  struct stat m {}, parent {};
  if (::stat(mount, &m) != 0) return errno == ENOTCONN;  // its daemon died
  return ::stat(g_tmpdir, &parent) == 0 && m.st_dev != parent.st_dev;
}

// Async-signal-safe: SIGTERM, SIGKILL after a grace period, a lazy unmount
// of what is left, then the temporary directories.
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
    if (stillMounted(g_mounts[i])) ::umount2(g_mounts[i], MNT_DETACH);
    ::rmdir(g_mounts[i]);
    ::unlink(g_logs[i]);
  }
  if (g_tmpdir[0] != '\0') ::rmdir(g_tmpdir);
  g_child_count = 0;
}

void onSignal(int sig) {
  cleanupAll();
  ::_exit(128 + sig);
}

std::string errnoText(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

[[noreturn]] void fail(const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr, "libpfm_bench: FAILED: {}\n", what);
  for (int i = 0; i < g_child_count; ++i) {
    fmt::print(stderr, "--- {} ---\n", g_logs[i]);
    const std::string tail = fmt::format("tail -c 2000 '{}' >&2", g_logs[i]);
    if (std::system(tail.c_str()) != 0) fmt::print(stderr, "(unreadable)\n");
  }
  cleanupAll();
  std::exit(1);
}

// Forks and execs argv, output to `log`; the child dies with us (PDEATHSIG).
pid_t spawn(const std::vector<std::string>& argv, const std::string& mount, const std::string& log) {
  const int slot = g_child_count;
  std::snprintf(g_mounts[slot], PATH_MAX, "%s", mount.c_str());
  std::snprintf(g_logs[slot], PATH_MAX, "%s", log.c_str());
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &old);  // no cleanup between fork and the slot's record
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
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

void waitMounted(int slot, const std::string& probe) {
  for (int waited = 0; waited < 15'000; waited += 10) {
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0) return;
    int status = 0;
    if (::waitpid(g_pids[slot], &status, WNOHANG) == g_pids[slot]) {
      g_pids[slot] = 0;
      fail(fmt::format("{} exited (status {:#x}) before it appeared", probe, status));
    }
    sleepMs(10);
  }
  fail(fmt::format("{} did not appear within 15 s", probe));
}

// A daemon must stop, unmount and exit 0 on SIGTERM.
void stopDaemon(int slot) {
  ::kill(g_pids[slot], SIGTERM);
  const int status = waitFor(g_pids[slot], 20'000);
  if (status == -1) fail(fmt::format("the daemon of {} did not exit within 20 s of SIGTERM", g_mounts[slot]));
  g_pids[slot] = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail(fmt::format("the daemon of {} ended with status {:#x}, not exit 0", g_mounts[slot], status));
  if (stillMounted(g_mounts[slot])) fail(fmt::format("the daemon of {} exited but left its mount", g_mounts[slot]));
}

// ---- files and checks ------------------------------------------------------------

int openOrFail(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(fmt::format("open {}: {}", path, errnoText(errno)));
  return fd;
}

void writeFd(int fd, std::string_view text, const std::string& what) {
  const ssize_t n = ::write(fd, text.data(), text.size());
  if (n != static_cast<ssize_t>(text.size()))
    fail(fmt::format("write to {}: {}", what, n < 0 ? errnoText(errno) : fmt::format("{} bytes", n)));
}

std::string readFile(const std::string& path) {
  const int fd = openOrFail(path, O_RDONLY);
  char buf[4096];
  const ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  if (n < 0) fail(fmt::format("read {}: {}", path, errnoText(errno)));
  ::close(fd);
  return std::string(buf, static_cast<std::size_t>(n));
}

void expectBytes(const char* got, ssize_t n, std::string_view want, const std::string& what) {
  if (n == static_cast<ssize_t>(want.size()) && std::memcmp(got, want.data(), want.size()) == 0) return;
  if (n < 0) fail(fmt::format("read {}: {}", what, errnoText(errno)));
  fail(fmt::format("read {}: got \"{}\", want \"{}\"", what, std::string_view(got, static_cast<std::size_t>(n)), want));
}

void expectPrefix(const std::string& got, const std::string& prefix, const std::string& what) {
  if (!got.starts_with(prefix)) fail(fmt::format("{}: got \"{}\", want it to start with \"{}\"", what, got, prefix));
}

void expectCall(int rc, const char* call) {
  if (rc != 0) fail(fmt::format("{}: {}", call, rc < 0 ? errnoText(errno) : fmt::format("returned {}", rc)));
}

// ---- timing ------------------------------------------------------------------------

struct Stats {
  double median = 0;
  double p99 = 0;
};

Stats summarize(std::vector<std::uint64_t> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Stats s;
  s.median = n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2.0;
  s.p99 = static_cast<double>(v[std::min(n - 1, static_cast<std::size_t>(std::ceil(0.99 * n)) - 1)]);
  return s;
}

// One timed operation and what its row compares it with.
struct Op {
  std::string what;
  std::function<void()> run;
  bool library = false;  // a libpfm call: also against the pmd pread
  int by_hand = -1;      // the op doing the same on the mount directly
  int requests = 1;      // FUSE requests it sends: one per write or read (counted with pfmfsd -d)
};

// Every op warmed up, then all of them in turn in ten blocks, so that the
// drift of a noisy machine falls on each figure and its baselines alike.
std::vector<Stats> measureAll(const Sizes& z, const std::vector<Op>& ops) {
  std::vector<std::vector<std::uint64_t>> samples(ops.size());
  for (const auto& op : ops)
    for (int i = 0; i < z.warmup; ++i) op.run();
  constexpr int kBlocks = 10;
  for (int block = 0; block < kBlocks; ++block)
    for (std::size_t k = 0; k < ops.size(); ++k)
      for (int i = 0; i < z.iterations / kBlocks; ++i) {
        const std::uint64_t t0 = nowNs();
        ops[k].run();
        samples[k].push_back(nowNs() - t0);
      }
  std::vector<Stats> out;
  for (auto& v : samples) out.push_back(summarize(std::move(v)));
  return out;
}

// A request that never gets its reply would hang us where signals cannot.
void startWatchdog() {
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(300));
    std::fprintf(stderr, "libpfm_bench: FAILED: not done within 300 s\n");
    cleanupAll();
    ::_exit(1);
  }).detach();
}

// ---- the report --------------------------------------------------------------------
// ops[0] is the floor's pread, ops[1] the pmd pread.

void printTable(const std::vector<Op>& ops, const std::vector<Stats>& st) {
  fmt::print("\n{:<34} {:>10} {:>10} {:>8} {:>11} {:>6}  {}\n", "what", "median ns", "p99 ns", "x floor",
             "x pmd pread", "reqs", "x by hand");
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const double to_floor = st[k].median / st[0].median;
    fmt::print("{:<34} {:>10.0f} {:>10.0f} {:>8.3f} {:>11} {:>6}  {}\n", ops[k].what, st[k].median, st[k].p99,
               to_floor, ops[k].library ? fmt::format("{:.3f}", st[k].median / st[1].median) : "-",
               ops[k].requests,
               ops[k].by_hand >= 0 ? fmt::format("{:.3f}", st[k].median / st[ops[k].by_hand].median) : "-");
  }
  fmt::print("(reqs: the FUSE requests one call sends, as pfmfsd -d counts them: a long `regs` text costs the "
             "daemon more to parse, not another request; x by hand: against the same file read or written "
             "directly, the pmds pread, regs write or ctl pair before it)\n");
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::string_view(argv[3]) != "--quick")) {
    fmt::print(stderr, "usage: {} PFMFSD FLOOR_FS [--quick]\n", argv[0]);
    return 2;
  }
  const Sizes z = argc == 4 ? Sizes{100, 2000} : Sizes{};
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    fmt::print("libpfm_bench: SKIP: /dev/fuse: {}\n", errnoText(errno));
    return 77;
  }
  if (::geteuid() != 0) {
    fmt::print("libpfm_bench: SKIP: needs root (writes pmu/sim/advance)\n");
    return 77;
  }
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  startWatchdog();

  std::snprintf(g_tmpdir, sizeof g_tmpdir, "/tmp/pfmfs-libpfm-bench-XXXXXX");
  if (::mkdtemp(g_tmpdir) == nullptr) fail(fmt::format("mkdtemp: {}", errnoText(errno)));
  const std::string tmp = g_tmpdir, floor_dir = tmp + "/floor", mount = tmp + "/pfmfs";
  for (const std::string& d : {floor_dir, mount})
    if (::mkdir(d.c_str(), 0700) != 0) fail(fmt::format("mkdir {}: {}", d, errnoText(errno)));
  spawn({argv[2], "-f", "-o", fmt::format("default_permissions,timeout={}", kFloorTimeout), floor_dir}, floor_dir,
        tmp + "/floor.log");
  spawn({argv[1], "-f", "--pmu=sim", "--sim-clock=manual", mount}, mount, tmp + "/pfmfsd.log");
  waitMounted(0, floor_dir + "/value");
  waitMounted(1, mount + "/version");
  expectPrefix(readFile(mount + "/pmu/info"), "backend=sim model=intel-arch-v2 ", mount + "/pmu/info");
  // Before the library's first call: it looks for its mount once.
  ::setenv("PFMFS_MOUNT", mount.c_str(), 1);
  fmt::print("libpfm_bench: {} against {}, {} iterations per figure after {} of warm-up\n", argv[1], argv[2],
             z.iterations, z.warmup);

  // ---- a context on this thread: PMDs 0-3 counting, started, given kAdvanceNs ----
  pfarg_ctx_t ctx{};
  const int fd = pfm_create_context(&ctx, nullptr, nullptr, 0);
  if (fd < 0) fail(fmt::format("pfm_create_context: {}", errnoText(errno)));
  char link[PATH_MAX] = "";  // the descriptor is the session's msg file
  if (::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), link, sizeof link - 1) <= 0)
    fail(fmt::format("readlink of descriptor {}: {}", fd, errnoText(errno)));
  const std::string session = std::string(link).substr(0, std::string_view(link).rfind('/'));
  expectPrefix(session, mount + "/sessions/", fmt::format("the session of descriptor {}", fd));
  constexpr int kN = static_cast<int>(kCounters.size());
  pfarg_pmc_t pmcs[kN]{};
  pfarg_pmd_t pmds[kN]{};
  for (int i = 0; i < kN; ++i) {
    pmcs[i].reg_num = pmds[i].reg_num = static_cast<std::uint16_t>(i);
    pmcs[i].reg_value = kCounters[i].pmc;
  }
  expectCall(pfm_write_pmcs(fd, pmcs, kN), "pfm_write_pmcs");
  expectCall(pfm_write_pmds(fd, pmds, kN), "pfm_write_pmds");
  pfarg_load_t load{};
  load.load_pid = static_cast<std::uint32_t>(::gettid());
  expectCall(pfm_load_context(fd, &load), "pfm_load_context");
  expectCall(pfm_start(fd, nullptr), "pfm_start");
  const int advance_fd = openOrFail(mount + "/pmu/sim/advance", O_WRONLY);
  writeFd(advance_fd, fmt::format("{}\n", kAdvanceNs), "pmu/sim/advance");
  std::uint64_t target_ns = kAdvanceNs;
  const std::string active = fmt::format("state=active mode=thread target={} set=0 ", load.load_pid);
  expectPrefix(readFile(session + "/state"), active, session + "/state");

  // Every read must fill in the exact count; stale values are overwritten first.
  auto expected = [&](int i) { return kCounters[static_cast<std::size_t>(i)].per_ns * target_ns; };
  auto readAndCheck = [&](int count, const char* what) {
    pfarg_pmd_t got[kN]{};
    for (int i = 0; i < count; ++i) {
      got[i].reg_num = static_cast<std::uint16_t>(i);
      got[i].reg_value = ~std::uint64_t{0};
    }
    if (pfm_read_pmds(fd, got, count) != 0) fail(fmt::format("{}: {}", what, errnoText(errno)));
    for (int i = 0; i < count; ++i)
      if (got[i].reg_value != expected(i))
        fail(fmt::format("{}: pmd{} = {}, want {} ({} per ns x {} ns)", what, i, got[i].reg_value, expected(i),
                         kCounters[static_cast<std::size_t>(i)].per_ns, target_ns));
  };
  readAndCheck(kN, "pfm_read_pmds before the loops");

  const std::string floor_value = floor_dir + "/value", pmd0 = session + "/sets/0/pmd0";
  const std::string pmds_path = session + "/sets/0/pmds", regs_path = session + "/sets/0/regs";
  const std::string ctl_path = session + "/ctl";
  const int floor_fd = openOrFail(floor_value, O_RDWR);
  const int pmd_fd = openOrFail(pmd0, O_RDONLY);
  const int pmds_fd = openOrFail(pmds_path, O_RDONLY);
  const int regs_fd = openOrFail(regs_path, O_WRONLY);
  const int ctl_fd = openOrFail(ctl_path, O_WRONLY);
  // The writes put back the values the PMDs hold, which keeps every read
  // exact: pfm_write_pmds (every attribute), perfmon3's value-only pfm_write
  // PFM_RW_PMD, and the `regs` text of each by hand.
  pfarg_pmr_t pmrs[kN]{};
  std::string regs_text, values_text;
  std::vector<std::string> pmds_lines;
  for (int i = 0; i < kN; ++i) {
    pmds[i].reg_value = pmrs[i].reg_value = expected(i);
    pmrs[i].reg_num = static_cast<std::uint16_t>(i);
    values_text += fmt::format("pmd{} {}\n", i, expected(i));
    regs_text += fmt::format("pmd{} {} long_reset=0 short_reset=0 switch_cnt=0 reset_pmds=0x0 smpl_pmds=0x0 "
                             "random_mask=0x0 eventid=0 notify=0 random=0\n", i, expected(i));
    pmds_lines.push_back(fmt::format("pmd={} value={} ", i, expected(i)));
  }
  const std::string pmd0_text = fmt::format("{}\n", expected(0));

  char buf[4096];
  auto pmdsOnce = [&] {
    const ssize_t n = ::pread(pmds_fd, buf, sizeof buf, 0);
    if (n < 0) fail(fmt::format("read {}: {}", pmds_path, errnoText(errno)));
    const std::string_view text(buf, static_cast<std::size_t>(n));
    for (const auto& line : pmds_lines)
      if (text.find(line) == std::string_view::npos)
        fail(fmt::format("{}: no \"{}\" in \"{}\"", pmds_path, line, text));
  };
  const std::vector<Op> ops{
      {"floor pread (1 FUSE round trip)",
       [&] { expectBytes(buf, ::pread(floor_fd, buf, sizeof buf, 0), kFloorText, floor_value); }},
      {"pfmfs pread sets/0/pmd0", [&] { expectBytes(buf, ::pread(pmd_fd, buf, sizeof buf, 0), pmd0_text, pmd0); }},
      {"pfmfs pread sets/0/pmds (4 PMDs)", pmdsOnce},
      {"pfm_read_pmds, 1 PMD", [&] { readAndCheck(1, "pfm_read_pmds of 1 PMD"); }, true, 2},
      {"pfm_read_pmds, 4 PMDs", [&] { readAndCheck(4, "pfm_read_pmds of 4 PMDs"); }, true, 2},
      {"floor write", [&] { writeFd(floor_fd, "1\n", floor_value); }},
      {"pfmfs write sets/0/regs, 4 PMDs", [&] { writeFd(regs_fd, regs_text, regs_path); }},
      {"pfm_write_pmds, 4 PMDs", [&] { expectCall(pfm_write_pmds(fd, pmds, kN), "pfm_write_pmds of 4 PMDs"); }, true,
       6},
      {"pfmfs write sets/0/regs, values", [&] { writeFd(regs_fd, values_text, regs_path); }},
      {"pfm_write PFM_RW_PMD, 4 PMDs",
       [&] { expectCall(pfm_write(fd, 0, PFM_RW_PMD, pmrs, sizeof pmrs), "pfm_write PFM_RW_PMD of 4 PMDs"); }, true,
       8},
      {"floor write pair", [&] { writeFd(floor_fd, "1\n", floor_value); writeFd(floor_fd, "2\n", floor_value); },
       false, -1, 2},
      {"pfmfs write ctl stop + start",
       [&] { writeFd(ctl_fd, "stop\n", ctl_path); writeFd(ctl_fd, "start\n", ctl_path); }, false, -1, 2},
      {"pfm_stop + pfm_start",
       [&] { expectCall(pfm_stop(fd), "pfm_stop"); expectCall(pfm_start(fd, nullptr), "pfm_start"); }, true, 11,
       2},
  };
  const std::vector<Stats> st = measureAll(z, ops);

  // Still active, and the reads follow the clock: nothing was cached.
  expectPrefix(readFile(session + "/state"), active, session + "/state");
  writeFd(advance_fd, fmt::format("{}\n", kLaterNs), "pmu/sim/advance");
  target_ns += kLaterNs;
  readAndCheck(4, "pfm_read_pmds after a further advance");
  expectBytes(buf, ::pread(pmd_fd, buf, sizeof buf, 0), fmt::format("{}\n", expected(0)), pmd0);

  // close() ends the session. The library sees the closed descriptor at its
  // next call on that number (EBADF) and then closes its own files on the
  // mount, which would otherwise keep it busy at unmount.
  for (int f : {advance_fd, floor_fd, pmd_fd, pmds_fd, regs_fd, ctl_fd}) ::close(f);
  ::close(fd);
  pfarg_pmd_t after{};
  if (pfm_read_pmds(fd, &after, 1) != -1 || errno != EBADF)
    fail("pfm_read_pmds on the closed descriptor: want -1 with EBADF");
  struct stat gone {};
  for (int waited = 0; ::stat(session.c_str(), &gone) == 0; waited += 10) {
    if (waited >= 5000) fail(fmt::format("{} still there 5 s after close()", session));
    sleepMs(10);
  }

  printTable(ops, st);
  std::fflush(stdout);

  stopDaemon(1);
  stopDaemon(0);
  cleanupAll();
  return 0;
}
