// pfmfs-exporter: pfmfs sessions per cpu and per control group, served to
// Prometheus over HTTP by prometheus-cpp (pfmfs-exporter(8)). The main
// thread waits for signals; civetweb's threads serve the scrapes.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <prometheus/exposer.h>

#include "exporter/counts_collector.h"
#include "exporter/exporter_config.h"
#include "exporter/session_pool.h"
#include "pfmstat/errors.h"
#include "pfmstat/mount_files.h"

namespace {

constexpr const char* kDefaultConfig = "/etc/pfmfs/exporter.conf";
constexpr int kExitOk = 0, kExitRun = 1, kExitUsage = 2;

const char kHelp[] =
    "Usage: pfmfs-exporter [--config FILE] [--listen ADDR:PORT] [--mount DIR]\n"
    "Serves pfmfs counts per cpu and per control group to Prometheus (pfmfs-exporter(8)).\n"
    "\n"
    "  --config FILE       the configuration (default /etc/pfmfs/exporter.conf, if it exists)\n"
    "  --listen ADDR:PORT  where to serve /metrics (default 127.0.0.1:9464; [::1]:9464 for IPv6)\n"
    "  --mount DIR         the pfmfs mount (default: $PFMFS_MOUNT, /run/pfmfs, the first one)\n"
    "  --help, --version\n"
    "Exit status: 0 on SIGTERM/SIGINT, 1 when the mount goes away or the address is in use,\n"
    "2 on a bad option, configuration, or a session the mount refuses.\n";

struct Options {
  std::string config = kDefaultConfig;
  bool config_given = false;
  std::optional<std::string> listen, mount;
};

// Returns the options, or exits (--help, --version, a bad one).
Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help") {
      std::fputs(kHelp, stdout);
      std::exit(kExitOk);
    }
    if (a == "--version") {
      std::printf("pfmfs-exporter %s\n", PFMFS_VERSION);
      std::exit(kExitOk);
    }
    std::string name = a.substr(0, a.find('=')), value;
    if (name != "--config" && name != "--listen" && name != "--mount")
      throw pfmstat::UsageError(fmt::format("unknown option '{}' (see --help)", a));
    if (a.size() > name.size()) {
      value = a.substr(name.size() + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw pfmstat::UsageError(fmt::format("{} needs a value", name));
    }
    if (value.empty()) throw pfmstat::UsageError(fmt::format("{} needs a value", name));
    if (name == "--config") {
      o.config = value;
      o.config_given = true;
    } else if (name == "--listen") {
      if (auto why = exporter::checkListen(value); !why.empty()) throw pfmstat::UsageError("--listen " + why);
      o.listen = value;
    } else {
      o.mount = value;
    }
  }
  return o;
}

// What a scrape's thread tells the main one: the mount's failure.
class Failure {
 public:
  void set(const std::string& reason) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!reason_.empty()) return;
      reason_ = reason;
    }
    ::kill(::getpid(), SIGUSR1);  // wakes the main thread's sigtimedwait
  }
  std::string get() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reason_;
  }

 private:
  std::mutex mutex_;
  std::string reason_;
};

int run(int argc, char** argv) {
  // Blocked in every thread (civetweb's inherit the mask) and taken by the
  // main thread alone, so that the sessions are removed by their owner.
  sigset_t waited;
  sigemptyset(&waited);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&waited, sig);
  ::pthread_sigmask(SIG_BLOCK, &waited, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  Options o = parseOptions(argc, argv);
  exporter::ExporterConfig config = exporter::loadConfig(o.config, o.config_given);
  if (o.listen) config.listen = *o.listen;
  if (o.mount) config.mount = *o.mount;
  std::string mount = pfmstat::findMount(config.mount);

  // The address first: a port in use costs no session.
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", config.listen, "num_threads", "2"});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pfmfs-exporter: cannot listen on %s (in use, or not an address of this machine): %s\n",
                 config.listen.c_str(), e.what());
    return kExitRun;
  }

  exporter::SessionPool pool(config, mount);
  Failure failure;
  auto collector = std::make_shared<exporter::CountsCollector>(pool, PFMFS_VERSION,
                                                               [&failure](const std::string& r) { failure.set(r); });
  exposer->RegisterCollectable(collector);
  std::fprintf(stderr, "pfmfs-exporter: serving %zu sessions of %s on http://%s/metrics\n", pool.size(), mount.c_str(),
               config.listen.c_str());

  int status = kExitOk;
  while (true) {
    timespec second{1, 0};
    int sig = ::sigtimedwait(&waited, nullptr, &second);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) break;
    std::string reason = failure.get();
    if (reason.empty() && sig < 0) {
      // The periodic check: without scrapes, a mount gone is noticed too.
      try {
        (void)pfmstat::readFile(mount + "/version");
      } catch (const pfmstat::RunError& e) {
        reason = e.what();
      }
    }
    if (!reason.empty()) {
      std::fprintf(stderr, "pfmfs-exporter: the mount %s went away: %s\n", mount.c_str(), reason.c_str());
      status = kExitRun;
      break;
    }
  }
  // No scrape while the sessions go: the server first.
  exposer.reset();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const pfmstat::UsageError& e) {
    std::fprintf(stderr, "pfmfs-exporter: %s\n", e.what());
    return kExitUsage;
  } catch (const pfmstat::RunError& e) {
    std::fprintf(stderr, "pfmfs-exporter: %s\n", e.what());
    return kExitRun;
  }
}
