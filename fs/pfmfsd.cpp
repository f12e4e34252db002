// pfmfsd: mounts pfmfs (docs/pfmfsd.8.md). Parses the command line, builds
// the backend and the engine, mounts, drops the capabilities the backend does
// not need, and serves until SIGTERM/SIGINT or an unmount; then stops and
// unloads every session and exits 0. Bad options or an unusable mount point:
// one line on stderr and exit status 2.
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/capability.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fs/capabilities.h"
#include "fs/daemon_options.h"
#include "fs/fastpath_server.h"
#include "fs/filesystem.h"
#include "fs/log.h"
#include "fs/request_loop.h"
#include "fs/stop_signals.h"
#include "fs/thread_watcher.h"
#include "fs/unmount_keeper.h"
#include "pmu/backend_registry.h"
#include "session/engine.h"

namespace {

using namespace pfmfs;
using namespace pfmfs::fs;

constexpr int kUsageError = 2;
constexpr long kFuseSuperMagic = 0x65735546;  // statfs f_type of any FUSE mount

int usageError(const std::string& reason) {
  std::fprintf(stderr, "pfmfsd: %s\n", reason.c_str());
  return kUsageError;
}

// Whether `path` is a FUSE mount whose daemon is gone: the kernel answers
// ENOTCONN for it. statfs asks the daemon every time; stat may not (the
// root's attributes stay cached), so it is statfs that tells.
bool deadFuseMount(const std::string& path) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) != 0 && errno == ENOTCONN;
}

// A pfmfsd killed or crashed leaves its mount dead until fusermount3's
// auto_unmount helper removes it, which a busy machine was seen to take
// seconds to do. Mounting over it would hide it for good (the helper leaves
// a live mount alone) and bring it back at our own unmount; so it is detached
// first, as `fusermount3 -u -z` would. That is what a daemon restarted at
// once (systemd's Restart=) meets. Root detaches it itself; a plain user's
// daemon asks fusermount3, which detaches that user's own mounts.
Status detachDeadMount(const std::string& path) {
  if (::umount2(path.c_str(), MNT_DETACH) != 0) {
    int e = errno;
    if (e != EPERM)
      return err(e, "mount point {}: cannot detach the dead FUSE mount on it: {}", path, std::strerror(e));
    const char* argv[] = {"fusermount3", "-u", "-z", "--", path.c_str(), nullptr};
    pid_t pid = 0;
    int status = 0;
    if (posix_spawnp(&pid, argv[0], nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0 ||
        waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return err(EPERM, "mount point {}: cannot detach the dead FUSE mount on it (fusermount3 -u -z failed)", path);
  }
  log(LogLevel::Warning, "mount point {}: detached a dead FUSE mount (its daemon is gone: {})", path,
      std::strerror(ENOTCONN));
  return {};
}

// The mount point must be a directory we can mount on; the last component
// is created if missing (the default /run/pfmfs usually is). A FUSE mount
// there already (another pfmfsd, most likely) is refused rather than hidden,
// unless it is dead (detachDeadMount).
Status prepareMountpoint(const std::string& path) {
  // Bounded: each pass detaches one mount, and dead mounts may be stacked.
  for (int pass = 0; pass < 8 && deadFuseMount(path); ++pass)
    if (Status st = detachDeadMount(path); !st) return st;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return err(errno, "mount point {}: {}", path, std::strerror(errno));
    if (::mkdir(path.c_str(), 0755) != 0)
      return err(errno, "cannot create mount point {}: {}", path, std::strerror(errno));
    return {};
  }
  if (!S_ISDIR(st.st_mode)) return err(ENOTDIR, "mount point {} is not a directory", path);
  struct statfs fs {};
  if (statfs(path.c_str(), &fs) == 0 && fs.f_type == kFuseSuperMagic)
    return err(EBUSY, "mount point {} already has a FUSE filesystem mounted on it", path);
  return {};
}

// libfuse reports why it refuses options through its log, sometimes one
// line in several calls; during start-up we collect it so that the refusal
// stays one line of ours.
std::string fuse_messages;
void keepFuseMessage(fuse_log_level, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  fuse_messages += buf;
}
std::string fuseMessages() {
  std::string out;
  for (char c : fuse_messages) {
    if (c != '\n')
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += "; ";
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}
void forwardFuseMessage(fuse_log_level level, const char* fmt, va_list ap) {
  char buf[512];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  std::string line = buf;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  log(level <= FUSE_LOG_ERR       ? LogLevel::Error
      : level <= FUSE_LOG_WARNING ? LogLevel::Warning
                                  : LogLevel::Debug,
      "libfuse: {}", line);
}

// The backend --pmu names (pmu/backend_registry.h); under auto, each one
// passed over is logged with its reason, and pmu/info says the choice.
Result<std::unique_ptr<pmu::Backend>> makeBackend(const DaemonOptions& o) {
  return pmu::createBackend(o.pmu, o.backend_options, [](const std::string& why) { log(LogLevel::Info, "{}", why); });
}

// perf keeps a descriptor per counter of every set loaded: allow as many as
// the hard limit lets us.
void raiseFileLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Without -f pfmfsd goes to the background, which means a fork, and only the
// forking thread lives on in a child: the engine's timer, the thread watcher
// and the backends' pollers would be left behind in the parent. So it forks
// before any of them exists (fuse_daemonize would fork after the mount), and
// the parent waits for the child's word: it exits 0 once the child has
// mounted, or with the child's exit status if the child gives up first (its
// message is on the same stderr).
class Background {
 public:
  void start() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;  // then it serves in the foreground
    std::fflush(nullptr);
    pid_t child = ::fork();
    if (child < 0) {
      ::close(p[0]);
      ::close(p[1]);
      return;
    }
    if (child > 0) {
      ::close(p[1]);
      unsigned char ok = 0;
      if (::read(p[0], &ok, 1) == 1) ::_exit(0);
      int status = 0;
      if (::waitpid(child, &status, 0) == child && WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
      ::_exit(1);
    }
    ::close(p[0]);
    ready_fd_ = p[1];
    (void)::setsid();
  }

  // Mounted: leaves the terminal and lets the parent exit.
  void ready() {
    if (ready_fd_ < 0) return;
    (void)!::chdir("/");
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
      for (int fd = 0; fd <= 2; ++fd) (void)::dup2(null, fd);
      ::close(null);
    }
    (void)!::write(ready_fd_, "", 1);
    ::close(ready_fd_);
    ready_fd_ = -1;
  }

 private:
  int ready_fd_ = -1;
};

int serve(DaemonOptions& o) {
  // mount(8)'s options that mean nothing here (-o nofail,_netdev, ...): said
  // at debug level, so that a mount through fstab stays quiet.
  if (!o.ignored_mount_options.empty())
    log(LogLevel::Debug, "ignoring mount(8)'s options: {}", fmt::join(o.ignored_mount_options, ","));
  Background background;
  if (!o.foreground) background.start();
  // Before any thread exists: every thread blocks the stopping signals, and
  // StopSignals' thread takes them (stop_signals.h). A client gone from a
  // pipe or socket is an error of that write, not an end.
  StopSignals::blockInThisThread();
  RequestLoop::blockWakeSignal();
  ::signal(SIGPIPE, SIG_IGN);
  raiseFileLimit();
  auto backend = makeBackend(o);
  if (!backend) return usageError(backend.error().reason);
  if (Status st = prepareMountpoint(o.mountpoint); !st) return usageError(st.error().reason);

  session::Engine engine(**backend, o.engine);
  Filesystem filesystem(engine, FilesystemConfig{o.allow_kernel, o.system_group});
  engine.setObserver(&filesystem);
  ThreadWatcher watcher([&engine, &filesystem](pid_t tid) {
    engine.threadExited(tid);
    filesystem.threadExited(tid);
  });
  filesystem.setWatcher(&watcher);
  // libpfm-compat's socket: mapped reads (a backend whose counts a page can
  // say how to read: not x86, whose live in the helper module's per-thread
  // images; pmu/info then has no `fastpath` feature, and the socket refuses
  // `page`) and sampling buffers (every backend). Without it, the mount alone
  // (docs/libpfm-compat.md, The fast path).
  std::unique_ptr<FastPathServer> fastpath;
  if (auto s = FastPathServer::start(filesystem, FastPathServer::Limits{o.fastpath_deadline_ms}); s) {
    fastpath = std::move(*s);
    filesystem.setFastPathEndpoint(fastpath->endpoint());
  } else {
    log(LogLevel::Warning, "no fast path for libpfm-compat: {}", s.error().reason);
  }

  // FUSE's own arguments: our fixed mount options first, the user's -o after.
  std::vector<std::string> args = {"pfmfsd", "-o", "default_permissions,auto_unmount,fsname=pfmfs,subtype=pfmfs"};
  for (const auto& opt : o.fuse_options) {
    args.push_back("-o");
    args.push_back(opt);
  }
  if (o.debug) args.push_back("-d");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  fuse_args fargs = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());

  fuse_set_log_func(keepFuseMessage);
  fuse_session* se = fuse_session_new(&fargs, &Filesystem::operations(), sizeof(fuse_lowlevel_ops), &filesystem);
  fuse_opt_free_args(&fargs);
  if (!se) return usageError(fmt::format("bad FUSE options -o {}: {}", fmt::join(o.fuse_options, ","), fuseMessages()));
  filesystem.attach(se);
  fuse_messages.clear();
  const std::set<int> before_mount = openDescriptors();
  if (fuse_session_mount(se, o.mountpoint.c_str()) != 0) {
    fuse_session_destroy(se);
    return usageError(fmt::format("cannot mount on {}: {}", o.mountpoint, fuseMessages()));
  }
  fuse_set_log_func(forwardFuseMessage);
  // auto_unmount must hold also when we are killed (unmount_keeper.h).
  if (Status st = keepUnmountSocket(before_mount, fuse_session_fd(se)); !st)
    log(LogLevel::Warning, "after a SIGKILL the mount may outlive pfmfsd: {}", st.error().reason);

  // Mounted: from here on, only what the backend needs. CAP_SYS_ADMIN stays
  // dormant for the unmount at exit.
  std::string backend_name = (*backend)->name();
  if (Status st = dropCapabilities(capabilitiesNeeded(backend_name), {CAP_SYS_ADMIN}); !st)
    log(LogLevel::Warning, "{}", st.error().reason);

  if (!o.foreground) {
    setupLogging(o.debug ? LogLevel::Debug : LogLevel::Info, true);
    background.ready();
  }
  log(LogLevel::Info, "mounted on {} with the {} backend ({})", o.mountpoint, backend_name,
      (*backend)->description().model);

  RequestLoop loop(se);
  // SIGINT, SIGTERM, SIGHUP: every session goes first (blocked readers get
  // their end of file, pfmfsd(8)), then the loop ends and the mount with it.
  std::optional<StopSignals> stop_signals;
  stop_signals.emplace([&filesystem, &loop](int sig) {
    log(LogLevel::Info, "SIG{}: destroying {} session(s), then unmounting", sigabbrev_np(sig),
        filesystem.sessionCount());
    filesystem.shutdown();
    loop.stop();
  });
  Status served = loop.run();
  stop_signals.reset();  // joined: a stop under way has ended

  log(LogLevel::Info, "stopping: unloading {} session(s)", filesystem.sessionCount());
  // Every thread that calls into the filesystem or the engine is joined
  // before either goes (the FUSE workers are, when the loop returns): the
  // fast-path server, the thread watcher, then the timer and the backend's
  // own (Engine::shutdown, which unloads every session).
  fastpath.reset();
  watcher.stop();
  engine.shutdown();
  filesystem.shutdown();
  engine.setObserver(nullptr);
  // Requests the kernel sent that no worker took (a read of `messages`
  // begun just before the signal, say) are answered now, against the
  // destroyed sessions: that read gets its end of file, as pfmfsd(8)
  // promises, instead of ECONNABORTED from the unmount.
  loop.drain();
  raiseCapability(CAP_SYS_ADMIN);
  fuse_session_unmount(se);
  fuse_session_destroy(se);
  if (!served) {
    log(LogLevel::Error, "session loop failed: {}", served.error().reason);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = parseDaemonOptions(argc, argv);
  if (!parsed) return usageError(parsed.error().reason);
  DaemonOptions& o = *parsed;
  if (o.help) {
    std::fputs(usageText().c_str(), stdout);
    return 0;
  }
  if (o.version) {
    std::printf("pfmfsd %s\n", PFMFS_VERSION);
    return 0;
  }
  setupLogging(o.debug ? LogLevel::Debug : LogLevel::Info, false);
  return serve(o);
}
