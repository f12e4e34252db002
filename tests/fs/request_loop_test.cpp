// fs/request_loop.h on a real mount: every request a worker takes is
// answered, stop() leaves what is queued in the kernel to drain(), and
// nothing a client had sent when the loop stopped fails with ECONNABORTED
// (which is what libfuse's own loop gave a reader of `messages` at SIGINT).
//
// The filesystem is the least that shows it: a root directory and one file,
// `hold`, whose reads a test controls (answered at once, held by a worker
// until released, or kept unanswered without a thread until closed).
#include "fs/request_loop.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pfmfs::fs {
namespace {

using namespace std::chrono_literals;

constexpr fuse_ino_t kHold = 2;

// What the file's reads do, shared with the loop's workers.
struct Served {
  enum class Reads { kAnswer, kBlockWorker, kKeep };

  std::mutex mu;
  std::condition_variable cv;
  Reads reads = Reads::kAnswer;
  int in_handler = 0;            // workers inside a kBlockWorker read now
  std::vector<fuse_req_t> kept;  // kKeep reads not answered yet
  bool closed = false;           // kKeep: later reads get end of file at once

  // Until `pred` holds (under mu), or a minute.
  template <class P>
  bool waitFor(P pred) {
    std::unique_lock l(mu);
    return cv.wait_for(l, 1min, pred);
  }
  void set(Reads r) {
    std::lock_guard l(mu);
    reads = r;
  }
  int inHandler() {
    std::lock_guard l(mu);
    return in_handler;
  }
  // kBlockWorker's workers go on; later reads are answered at once.
  void release() {
    std::lock_guard l(mu);
    reads = Reads::kAnswer;
    cv.notify_all();
  }
  // Kept reads get end of file, as pfmfsd's destroyed sessions give them.
  void close() {
    std::vector<fuse_req_t> now;
    {
      std::lock_guard l(mu);
      closed = true;
      now.swap(kept);
    }
    for (fuse_req_t r : now) fuse_reply_buf(r, nullptr, 0);
  }
};

Served& servedOf(fuse_req_t req) { return *static_cast<Served*>(fuse_req_userdata(req)); }

void fill(fuse_ino_t ino, struct stat* st) {
  std::memset(st, 0, sizeof *st);
  st->st_ino = ino;
  st->st_mode = ino == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0644;
  st->st_nlink = ino == FUSE_ROOT_ID ? 2 : 1;
}

void opLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  if (parent != FUSE_ROOT_ID || std::strcmp(name, "hold") != 0) {
    fuse_reply_err(req, ENOENT);
    return;
  }
  fuse_entry_param e{};
  e.ino = kHold;
  fill(kHold, &e.attr);
  fuse_reply_entry(req, &e);
}

void opGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  struct stat st;
  fill(ino, &st);
  fuse_reply_attr(req, &st, 0);
}

void opOpen(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  fi->direct_io = 1;  // every read reaches the filesystem
  fuse_reply_open(req, fi);
}

void opRead(fuse_req_t req, fuse_ino_t, size_t, off_t, fuse_file_info*) {
  Served& s = servedOf(req);
  std::unique_lock l(s.mu);
  if (s.reads == Served::Reads::kKeep) {
    if (s.closed) {
      l.unlock();
      fuse_reply_buf(req, nullptr, 0);
      return;
    }
    s.kept.push_back(req);
    s.cv.notify_all();
    return;
  }
  if (s.reads == Served::Reads::kBlockWorker) {
    ++s.in_handler;
    s.cv.notify_all();
    s.cv.wait(l, [&] { return s.reads != Served::Reads::kBlockWorker; });
    --s.in_handler;
  }
  l.unlock();
  fuse_reply_buf(req, "x", 1);
}

const fuse_lowlevel_ops kOps = [] {
  fuse_lowlevel_ops ops{};
  ops.lookup = opLookup;
  ops.getattr = opGetattr;
  ops.open = opOpen;
  ops.read = opRead;
  return ops;
}();

// Whether thread `tid` of this process sleeps in read(2) on `fd`: its
// request is then in the kernel, waiting for an answer.
bool asleepReading(pid_t tid, int fd) {
  const std::string base = "/proc/self/task/" + std::to_string(tid);
  std::ifstream stat(base + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  std::istringstream after(line.substr(line.rfind(')') + 1));
  std::string state;
  after >> state;
  if (state != "S") return false;
  std::ifstream sys(base + "/syscall");
  std::string nr, arg;
  sys >> nr >> arg;
  return nr == std::to_string(SYS_pread64) && std::strtol(arg.c_str(), nullptr, 16) == fd;
}

// One pread(2) of `hold` in a thread of its own.
class Reader {
 public:
  explicit Reader(int fd) : fd_(fd), t_([this] { body(); }) {}
  ~Reader() {
    if (t_.joinable()) t_.join();
  }
  // Once its request waits in the kernel (or a minute has passed).
  bool waitAsleep() {
    pid_t tid;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return tid_ != 0; });
      tid = tid_;
    }
    for (auto end = std::chrono::steady_clock::now() + 1min; std::chrono::steady_clock::now() < end;) {
      if (asleepReading(tid, fd_)) return true;
      if (finished()) return false;
      std::this_thread::sleep_for(100us);
    }
    return false;
  }
  bool finished() {
    std::lock_guard l(mu_);
    return done_;
  }
  // The read's result once it returned ("x", "" for end of file, or
  // "errno N"), after at most a minute.
  std::string result() {
    std::unique_lock l(mu_);
    if (!cv_.wait_for(l, 1min, [&] { return done_; })) return "still reading";
    return result_;
  }

 private:
  void body() {
    {
      std::lock_guard l(mu_);
      tid_ = static_cast<pid_t>(::syscall(SYS_gettid));
    }
    cv_.notify_all();
    char buf[16];
    ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
    std::lock_guard l(mu_);
    result_ = n >= 0 ? std::string(buf, static_cast<std::size_t>(n)) : "errno " + std::to_string(errno);
    done_ = true;
    cv_.notify_all();
  }
  const int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  bool done_ = false;
  std::string result_;
  std::thread t_;
};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "request_loop_test: %s\n", what);
  std::abort();
}

// The filesystem mounted on a fresh directory, served by a RequestLoop.
class Mounted {
 public:
  explicit Mounted(unsigned workers) {
    char tmpl[] = "/tmp/pfmfs-request-loop.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) fail("mkdtemp");
    dir_ = tmpl;
    char name[] = "request_loop_test";
    char* argv[] = {name};
    fuse_args args = FUSE_ARGS_INIT(1, argv);
    se_ = fuse_session_new(&args, &kOps, sizeof kOps, &served);
    fuse_opt_free_args(&args);
    if (se_ == nullptr || fuse_session_mount(se_, dir_.c_str()) != 0) fail("cannot mount (root and /dev/fuse needed)");
    RequestLoop::blockWakeSignal();  // as pfmfsd: before the loop's threads
    loop_ = std::make_unique<RequestLoop>(se_, workers);
    runner_ = std::thread([this] { ran_ = loop_->run(); });
  }
  ~Mounted() {
    served.release();
    served.close();
    stopAndWait();
    loop_->drain();
    fuse_session_unmount(se_);
    fuse_session_destroy(se_);  // what is still open fails from now on
    for (int fd : fds_) ::close(fd);
    ::rmdir(dir_.c_str());
  }
  // n descriptors of `hold`, closed with the mount.
  std::vector<int> open(int n) {
    std::vector<int> fds;
    for (int i = 0; i < n; ++i) {
      int fd = ::open((dir_ + "/hold").c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) fail("cannot open hold");
      fds_.push_back(fd);
      fds.push_back(fd);
    }
    return fds;
  }
  void stopAndWait() {
    loop_->stop();
    if (runner_.joinable()) runner_.join();
  }
  // After run() returned: how it ended.
  const Status& ran() const { return ran_; }
  RequestLoop& loop() { return *loop_; }
  const std::string& dir() const { return dir_; }
  bool running() const { return runner_.joinable(); }
  void joinRunner() { runner_.join(); }

  Served served;

 private:
  std::string dir_;
  fuse_session* se_ = nullptr;
  std::unique_ptr<RequestLoop> loop_;
  Status ran_;
  std::thread runner_;
  std::vector<int> fds_;
};

// Readers are declared before their Mounted, which then goes first: its
// end (the device closed) ends a read that was never answered, so that a
// failing test fails instead of hanging in the reader's join.

TEST(RequestLoop, AnswersTheRequestInHandAndLeavesTheQueueToDrain) {
  std::unique_ptr<Reader> in_hand, queued;
  Mounted m(1);
  const std::vector<int> fds = m.open(2);
  const int a = fds[0], b = fds[1];
  m.served.set(Served::Reads::kBlockWorker);
  in_hand = std::make_unique<Reader>(a);
  ASSERT_TRUE(m.served.waitFor([&] { return m.served.in_handler == 1; }));
  queued = std::make_unique<Reader>(b);  // the only worker is busy: this one waits in the kernel
  ASSERT_TRUE(queued->waitAsleep());

  m.loop().stop();
  m.served.release();  // the worker answers what it holds, then stops
  m.stopAndWait();
  EXPECT_TRUE(m.ran().ok());
  EXPECT_EQ(in_hand->result(), "x");
  EXPECT_FALSE(queued->finished()) << "a stopped loop took a request";

  m.loop().drain();
  EXPECT_EQ(queued->result(), "x");
}

TEST(RequestLoop, ServesWithEveryWorkerAtOnce) {
  std::vector<std::unique_ptr<Reader>> readers;
  Mounted m(3);
  const std::vector<int> fds = m.open(4);
  m.served.set(Served::Reads::kBlockWorker);
  for (int i = 0; i < 3; ++i) readers.push_back(std::make_unique<Reader>(fds[i]));
  EXPECT_TRUE(m.served.waitFor([&] { return m.served.in_handler == 3; }));
  readers.push_back(std::make_unique<Reader>(fds[3]));  // no worker free: it waits
  ASSERT_TRUE(readers.back()->waitAsleep());
  EXPECT_EQ(m.served.inHandler(), 3);
  m.served.release();
  for (auto& r : readers) EXPECT_EQ(r->result(), "x");
}

TEST(RequestLoop, EndsWithOkWhenTheFilesystemIsUnmounted) {
  Mounted m(2);
  ASSERT_EQ(::umount2(m.dir().c_str(), MNT_DETACH), 0) << std::strerror(errno);
  m.joinRunner();  // the connection ended: every worker saw it
  EXPECT_TRUE(m.ran().ok()) << m.ran().error().reason;
}

// The race that libfuse's loop lost: requests that reach the kernel just as
// the loop is told to stop. Each round six readers of `hold` start at once
// and the "daemon" closes (kept reads get end of file, later ones too) and
// stops the loop as soon as the first waits: the others' requests are then
// kept, taken by a worker at that moment, queued, or not sent yet. drain()
// answers whatever waits in the kernel, until every reader has its answer;
// a request a worker took and dropped would wait on (and the read fail
// with ECONNABORTED at the unmount).
TEST(RequestLoop, NoRequestSentBeforeTheEndFails) {
  for (int round = 0; round < 300; ++round) {
    std::vector<std::unique_ptr<Reader>> readers;
    Mounted m(4);
    const std::vector<int> fds = m.open(6);
    m.served.set(Served::Reads::kKeep);
    for (int fd : fds) readers.push_back(std::make_unique<Reader>(fd));
    ASSERT_TRUE(readers[0]->waitAsleep());
    m.served.close();
    m.stopAndWait();
    for (int drains = 0; drains < 100; ++drains) {  // until no reader waits
      bool waiting = false;
      for (auto& r : readers) waiting |= !r->finished() && r->waitAsleep();
      if (!waiting) break;
      m.loop().drain();
    }
    for (std::size_t i = 0; i < readers.size(); ++i)
      EXPECT_EQ(readers[i]->result(), "") << "round " << round << ", reader " << i;
  }
}

}  // namespace
}  // namespace pfmfs::fs
