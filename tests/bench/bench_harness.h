// What a whole-path benchmark needs around its figures: daemons spawned
// under a temporary directory and stopped, unmounted and removed on every
// exit path (a signal, a failure, a hung request), checks that end the run
// with exit status 1, and timing that interleaves the operations it
// compares. libpfm_bench's sections share it; nothing here knows pfmfs.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

// ---- the run ----------------------------------------------------------------------

// Names the program in failures, makes the temporary directory from
// `tmp_template` (mkdtemp's XXXXXX), and cleans up on SIGTERM, SIGINT and
// SIGHUP. Returns the directory.
std::string begin(const char* program, const char* tmp_template);

// A request that never gets its reply would hang us where signals cannot:
// after `seconds`, fail from another thread.
void startWatchdog(int seconds);

// ---- daemons ------------------------------------------------------------------------
// Each gets a slot, in spawn order; a stopped daemon's slot keeps its mount
// and log for the final cleanup, so a mount point can be used again.

// Forks and execs argv with its output to `log`; the child dies with us.
int spawn(const std::vector<std::string>& argv, const std::string& mount, const std::string& log);
// Waits for `probe` to appear under the slot's mount (15 s), failing if the daemon exits.
void waitMounted(int slot, const std::string& probe);
// SIGTERM: the daemon must unmount and exit 0 within 20 s.
void stopDaemon(int slot);
// Every daemon stopped (SIGKILL after a grace period), every mount detached,
// logs and directories removed. Async-signal-safe.
void cleanupAll();

// ---- failures and checks ---------------------------------------------------------------

std::string errnoText(int e);
// Prints what failed and the tail of every daemon's log, cleans up, exits 1.
[[noreturn]] void fail(const std::string& what);

int openOrFail(const std::string& path, int flags);  // O_CLOEXEC added
void writeFd(int fd, std::string_view text, const std::string& what);
std::string readFile(const std::string& path);   // its first 4 KB
std::string readWhole(const std::string& path);  // all of it (a log)
// The path a descriptor refers to (readlink of /proc/self/fd/FD).
std::string fdPath(int fd);

void expectBytes(const char* got, ssize_t n, std::string_view want, const std::string& what);
void expectPrefix(const std::string& got, const std::string& prefix, const std::string& what);
// rc 0, else the call's errno (rc < 0) or its return value.
void expectCall(int rc, const char* call);

// ---- timing ----------------------------------------------------------------------------

std::uint64_t nowNs();
void sleepMs(long ms);

struct Sizes {
  int warmup = 1000;
  int iterations = 20000;
};

struct Stats {
  double median = 0;
  double p99 = 0;
};
Stats summarize(std::vector<std::uint64_t> v);

// Every op warmed up, then all of them in turn in ten blocks, so that the
// drift of a noisy machine falls on each figure and its baselines alike.
std::vector<Stats> measureAll(const Sizes& z, const std::vector<std::function<void()>>& ops);

// ---- a thread that only waits -------------------------------------------------------------
// The target of a context loaded elsewhere than on the measuring thread (a
// thread can be the target of one loaded context only). It sleeps, so its
// own CPU time and events stand still, until the destructor wakes and joins it.
class ParkedThread {
 public:
  ParkedThread();
  ~ParkedThread();
  ParkedThread(const ParkedThread&) = delete;
  ParkedThread& operator=(const ParkedThread&) = delete;
  pid_t tid() const { return tid_; }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  pid_t tid_ = 0;
  std::thread thread_;
};

}  // namespace bench
