// The floor of the whole-path benchmark: the least a libfuse3 low-level server
// can do, serving one small file `/value` with libfuse's own loop
// (fuse_session_loop_mt, API 3.12, clone_fd 0, 8 idle threads; pfmfsd's
// fs/request_loop.h waits for requests in read(2) the same way) and direct_io. fs_bench
// runs it as `floor_fs -f -o default_permissions,timeout=S MOUNT` next to
// pfmfsd and divides by its times.
//
// `value` reads "123456\n". A write is accepted whole and makes the file
// readable for poll until the next read, so that "write -> poll wake -> read"
// has a floor too (libfuse example/poll.c: keep the newest poll handle, notify
// and destroy it when data arrives). SIGTERM/SIGINT or umount: exit 0.
#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace {

constexpr fuse_ino_t kValueIno = 2;
constexpr char kValueName[] = "value";
constexpr char kContent[] = "123456\n";

struct FloorOptions {
  double timeout = 1.0;  // -o timeout=S: entry and attribute timeouts, as pfmfsd's
};

// What poll needs: whether a write is waiting for a read, and the newest
// poll handle. FUSE calls come from several loop threads.
struct PollState {
  std::mutex mutex;
  bool pending = false;
  fuse_pollhandle* handle = nullptr;
};

FloorOptions g_options;
PollState g_poll;

void fillAttr(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_uid = ::getuid();
  st->st_gid = ::getgid();
  if (ino == FUSE_ROOT_ID) {
    st->st_mode = S_IFDIR | 0755;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_size = sizeof kContent - 1;
  }
}

void floorLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (parent != FUSE_ROOT_ID || std::strcmp(name, kValueName) != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e{};
  e.ino = kValueIno;
  e.attr_timeout = g_options.timeout;
  e.entry_timeout = g_options.timeout;
  fillAttr(kValueIno, &e.attr);
  fuse_reply_entry(req, &e);
}

void floorGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  if (ino != FUSE_ROOT_ID && ino != kValueIno) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  struct stat st;
  fillAttr(ino, &st);
  fuse_reply_attr(req, &st, g_options.timeout);
}

void floorOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (ino != kValueIno) {
    fuse_reply_err(req, EISDIR);
    return;
  }
  fi->direct_io = 1;  // as every pfmfs file whose content changes
  fuse_reply_open(req, fi);
}

void floorRead(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info*) {
  {
    std::lock_guard lock(g_poll.mutex);
    g_poll.pending = false;
  }
  constexpr size_t length = sizeof kContent - 1;
  if (off < 0 || static_cast<size_t>(off) >= length) {
    fuse_reply_buf(req, nullptr, 0);
    return;
  }
  const size_t n = length - static_cast<size_t>(off) < size ? length - static_cast<size_t>(off) : size;
  fuse_reply_buf(req, kContent + off, n);
}

void floorWrite(fuse_req_t req, fuse_ino_t, const char*, size_t size, off_t, fuse_file_info*) {
  fuse_pollhandle* handle = nullptr;
  {
    std::lock_guard lock(g_poll.mutex);
    g_poll.pending = true;
    handle = g_poll.handle;
    g_poll.handle = nullptr;
  }
  // Reply first, as a daemon answering a write and then waking pollers would.
  fuse_reply_write(req, size);
  if (handle != nullptr) {
    fuse_lowlevel_notify_poll(handle);
    fuse_pollhandle_destroy(handle);
  }
}

void floorPoll(fuse_req_t req, fuse_ino_t, fuse_file_info*, fuse_pollhandle* ph) {
  unsigned revents = 0;
  fuse_pollhandle* old = nullptr;
  {
    std::lock_guard lock(g_poll.mutex);
    if (ph != nullptr) {
      old = g_poll.handle;
      g_poll.handle = ph;
    }
    if (g_poll.pending) revents = POLLIN | POLLRDNORM;
  }
  if (old != nullptr) fuse_pollhandle_destroy(old);
  fuse_reply_poll(req, revents);
}

void floorRelease(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

void floorFlush(fuse_req_t req, fuse_ino_t, fuse_file_info*) { fuse_reply_err(req, 0); }

const fuse_opt kFloorOpts[] = {
    {"timeout=%lf", offsetof(FloorOptions, timeout), 0},
    FUSE_OPT_END,
};

}  // namespace

int main(int argc, char* argv[]) {
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  if (fuse_opt_parse(&args, &g_options, kFloorOpts, nullptr) != 0) return 2;

  fuse_cmdline_opts opts{};
  if (fuse_parse_cmdline(&args, &opts) != 0) return 2;
  if (opts.show_help || opts.mountpoint == nullptr) {
    std::fprintf(stderr, "usage: %s [-f] [-o timeout=SECONDS] MOUNTPOINT\n", argv[0]);
    fuse_opt_free_args(&args);
    std::free(opts.mountpoint);
    return opts.show_help ? 0 : 2;
  }

  fuse_lowlevel_ops ops{};
  ops.lookup = floorLookup;
  ops.getattr = floorGetattr;
  ops.open = floorOpen;
  ops.read = floorRead;
  ops.write = floorWrite;
  ops.poll = floorPoll;
  ops.flush = floorFlush;
  ops.release = floorRelease;

  int status = 1;
  fuse_session* se = fuse_session_new(&args, &ops, sizeof ops, nullptr);
  if (se != nullptr) {
    if (fuse_set_signal_handlers(se) == 0) {
      if (fuse_session_mount(se, opts.mountpoint) == 0) {
        fuse_daemonize(opts.foreground);
        int rc = 0;
        if (opts.singlethread) {
          rc = fuse_session_loop(se);
        } else {
          fuse_loop_config* loop = fuse_loop_cfg_create();
          fuse_loop_cfg_set_clone_fd(loop, 0);
          fuse_loop_cfg_set_idle_threads(loop, 8);
          rc = fuse_session_loop_mt(se, loop);
          fuse_loop_cfg_destroy(loop);
        }
        // A signal ends the loop with its number: a clean exit.
        status = rc < 0 ? 1 : 0;
        fuse_session_unmount(se);
      } else {
        status = 2;
      }
      fuse_remove_signal_handlers(se);
    }
    fuse_session_destroy(se);
  }
  if (g_poll.handle != nullptr) fuse_pollhandle_destroy(g_poll.handle);
  std::free(opts.mountpoint);
  fuse_opt_free_args(&args);
  return status;
}
