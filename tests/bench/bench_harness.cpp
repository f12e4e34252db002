// The harness of bench_harness.h. The daemons' records are plain arrays so
// that the signal handler and the watchdog can walk them without locks or
// allocation.
#include "bench_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

namespace bench {
namespace {

// The sim daemon and the floor, then perf's daemon on the sim's mount point.
constexpr int kMaxChildren = 4;
pid_t g_pids[kMaxChildren];
char g_mounts[kMaxChildren][PATH_MAX];
char g_logs[kMaxChildren][PATH_MAX];
volatile sig_atomic_t g_child_count = 0;
char g_tmpdir[PATH_MAX];
const char* g_program = "bench";

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
  struct stat m {
  }, parent{};
  if (::stat(mount, &m) != 0) return errno == ENOTCONN;  // its daemon died
  return ::stat(g_tmpdir, &parent) == 0 && m.st_dev != parent.st_dev;
}

void onSignal(int sig) {
  cleanupAll();
  ::_exit(128 + sig);
}

}  // namespace

std::uint64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void sleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  ::nanosleep(&ts, nullptr);
}

std::string begin(const char* program, const char* tmp_template) {
  g_program = program;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigfillset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  std::snprintf(g_tmpdir, sizeof g_tmpdir, "%s", tmp_template);
  if (::mkdtemp(g_tmpdir) == nullptr) {
    const int e = errno;
    g_tmpdir[0] = '\0';
    fail(fmt::format("mkdtemp {}: {}", tmp_template, errnoText(e)));
  }
  return g_tmpdir;
}

void startWatchdog(int seconds) {
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::fprintf(stderr, "%s: FAILED: not done within %d s\n", g_program, seconds);
    cleanupAll();
    ::_exit(1);
  }).detach();
}

// SIGTERM, SIGKILL after a grace period, a lazy unmount of what is left,
// then the temporary directories. Slots may share a mount point.
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

std::string errnoText(int e) { return fmt::format("{} ({})", std::strerror(e), e); }

void fail(const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr, "{}: FAILED: {}\n", g_program, what);
  for (int i = 0; i < g_child_count; ++i) {
    fmt::print(stderr, "--- {} ---\n", g_logs[i]);
    const std::string tail = fmt::format("tail -c 2000 '{}' >&2", g_logs[i]);
    if (std::system(tail.c_str()) != 0) fmt::print(stderr, "(unreadable)\n");
  }
  cleanupAll();
  std::exit(1);
}

int spawn(const std::vector<std::string>& argv, const std::string& mount, const std::string& log) {
  const int slot = g_child_count;
  if (slot >= kMaxChildren) fail(fmt::format("more than {} daemons", kMaxChildren));
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
  return slot;
}

void waitMounted(int slot, const std::string& probe) {
  for (int waited = 0; waited < 60'000; waited += 10) {
    struct stat st {};
    if (::stat(probe.c_str(), &st) == 0 && stillMounted(g_mounts[slot])) return;
    int status = 0;
    if (::waitpid(g_pids[slot], &status, WNOHANG) == g_pids[slot]) {
      g_pids[slot] = 0;
      fail(fmt::format("{} exited (status {:#x}) before it appeared", probe, status));
    }
    sleepMs(10);
  }
  fail(fmt::format("{} did not appear within 60 s", probe));
}

void stopDaemon(int slot) {
  ::kill(g_pids[slot], SIGTERM);
  const int status = waitFor(g_pids[slot], 60'000);
  if (status == -1) fail(fmt::format("the daemon of {} did not exit within 60 s of SIGTERM", g_mounts[slot]));
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

std::string readWhole(const std::string& path) {
  const int fd = openOrFail(path, O_RDONLY);
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) fail(fmt::format("read {}: {}", path, errnoText(errno)));
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string fdPath(int fd) {
  char link[PATH_MAX] = "";
  const ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), link, sizeof link - 1);
  if (n <= 0) fail(fmt::format("readlink of descriptor {}: {}", fd, errnoText(errno)));
  return std::string(link, static_cast<std::size_t>(n));
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

Stats summarize(std::vector<std::uint64_t> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  Stats s;
  s.median = n % 2 ? static_cast<double>(v[n / 2]) : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2.0;
  s.p99 = static_cast<double>(v[std::min(n - 1, static_cast<std::size_t>(std::ceil(0.99 * n)) - 1)]);
  return s;
}

std::vector<Stats> measureAll(const Sizes& z, const std::vector<std::function<void()>>& ops) {
  std::vector<std::vector<std::uint64_t>> samples(ops.size());
  for (const auto& op : ops)
    for (int i = 0; i < z.warmup; ++i) op();
  constexpr int kBlocks = 10;
  for (int block = 0; block < kBlocks; ++block)
    for (std::size_t k = 0; k < ops.size(); ++k)
      for (int i = 0; i < z.iterations / kBlocks; ++i) {
        const std::uint64_t t0 = nowNs();
        ops[k]();
        samples[k].push_back(nowNs() - t0);
      }
  std::vector<Stats> out;
  for (auto& v : samples) out.push_back(summarize(std::move(v)));
  return out;
}

// ---- a thread that only waits ----------------------------------------------------------

ParkedThread::ParkedThread() {
  std::unique_lock lock(mutex_);
  thread_ = std::thread([this] {
    std::unique_lock inner(mutex_);
    tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
    cv_.notify_all();
    cv_.wait(inner, [this] { return done_; });
  });
  cv_.wait(lock, [this] { return tid_ != 0; });
}

ParkedThread::~ParkedThread() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace bench
