#include "fs/fastpath_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "fs/filesystem.h"
#include "fs/log.h"
#include "pmu/daemon_thread.h"

namespace pfmfs::fs {

namespace {

constexpr std::size_t kMaxRequest = 512;
// epoll's data for the listener and the wake-up eventfd; a connection's is
// a number counted from 1, never this high.
constexpr std::uint64_t kListenerTag = ~0ULL;
constexpr std::uint64_t kWakeTag = ~0ULL - 1;

std::uint64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The abstract address of `name` (without its '@').
sockaddr_un addressOf(std::string_view name, socklen_t& len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

// The most descriptors one answer carries: a perf group's members (the
// kernel takes up to 253 in one message).
constexpr std::size_t kMaxFds = 64;

// One answer: "ok" and descriptors, or "err ERRNO reason". Never waits: the
// answer is the first and only message on a fresh connection, which has room.
void reply(int conn, const Result<std::vector<pmu::Fd>>& r) {
  std::string text = r.ok() ? "ok" : fmt::format("err {} {}", -r.code(), r.error().reason);
  if (r.ok() && (r->empty() || r->size() > kMaxFds))
    text = fmt::format("err {} {} descriptors to send", EPROTO, r->size());
  iovec iov{text.data(), text.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  if (r.ok() && !r->empty() && r->size() <= kMaxFds) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(sizeof(int) * r->size());
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * r->size());
    for (std::size_t i = 0; i < r->size(); ++i) {
      const int fd = (*r)[i].get();
      std::memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(int));
    }
  }
  (void)::sendmsg(conn, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool watch(int epoll, int fd, std::uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = tag;
  return ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) == 0;
}

}  // namespace

Result<std::unique_ptr<FastPathServer>> FastPathServer::start(Filesystem& fs, Limits limits) {
  pmu::Fd listener(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!listener) return err(errno, "fast-path socket: {}", std::strerror(errno));
  // A random name, so that nobody can take it before us on purpose; a
  // collision all the same is tried again.
  std::string name;
  for (int attempt = 0;; ++attempt) {
    std::uint64_t nonce = 0;
    if (::getrandom(&nonce, sizeof nonce, 0) != sizeof nonce) return err(EIO, "getrandom failed");
    name = fmt::format("pfmfs-fastpath.{}.{:016x}", ::getpid(), nonce);
    socklen_t len = 0;
    sockaddr_un a = addressOf(name, len);
    if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), len) == 0) break;
    if (errno != EADDRINUSE || attempt == 8) return err(errno, "fast-path socket @{}: {}", name, std::strerror(errno));
  }
  if (::listen(listener.get(), 128) != 0)
    return err(errno, "fast-path socket @{}: listen: {}", name, std::strerror(errno));
  // What a client's SO_PEERCRED will say of us: the kernel took it at listen().
  ucred self{};
  socklen_t self_len = sizeof self;
  if (::getsockopt(listener.get(), SOL_SOCKET, SO_PEERCRED, &self, &self_len) != 0)
    return err(errno, "fast-path socket @{}: SO_PEERCRED: {}", name, std::strerror(errno));
  pmu::Fd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll) return err(errno, "epoll_create1: {}", std::strerror(errno));
  pmu::Fd wake(::eventfd(0, EFD_CLOEXEC));
  if (!wake) return err(errno, "eventfd: {}", std::strerror(errno));
  if (!watch(epoll.get(), listener.get(), kListenerTag) || !watch(epoll.get(), wake.get(), kWakeTag))
    return err(errno, "epoll_ctl: {}", std::strerror(errno));
  FastPathEndpoint endpoint{"@" + name, self.pid, self.uid};
  return std::unique_ptr<FastPathServer>(
      new FastPathServer(fs, limits, std::move(listener), std::move(epoll), std::move(wake), std::move(endpoint)));
}

FastPathServer::FastPathServer(Filesystem& fs, Limits limits, pmu::Fd listener, pmu::Fd epoll, pmu::Fd wake,
                               FastPathEndpoint endpoint)
    : fs_(fs),
      limits_(limits),
      listener_(std::move(listener)),
      epoll_(std::move(epoll)),
      wake_(std::move(wake)),
      endpoint_(std::move(endpoint)) {
  thread_ = startDaemonThread("pfmfs-fastpath", [this] { run(); });
}

FastPathServer::~FastPathServer() {
  std::uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void FastPathServer::run() {
  epoll_event events[64];
  for (;;) {
    // Sleep until the oldest connection's deadline at most.
    int timeout_ms = -1;
    if (!conns_.empty()) {
      const std::uint64_t now = nowNs(), due = conns_.front().deadline_ns;
      timeout_ms = due <= now ? 0 : static_cast<int>((due - now + 999'999) / 1'000'000);
    }
    const int n = ::epoll_wait(epoll_.get(), events, 64, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::Error, "fast-path socket: epoll_wait: {}", std::strerror(errno));
      return;
    }
    const std::uint64_t now = nowNs();
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) return;
      if (tag == kListenerTag) {
        acceptAll(now);
        continue;
      }
      auto it = by_tag_.find(tag);
      if (it == by_tag_.end()) continue;  // closed earlier in this batch
      if (events[i].events & EPOLLIN) serve(*it->second);
      closeConn(it->second);  // one request per connection; a hang-up or error alike
    }
    // Past their deadline: gone, whoever they are.
    while (!conns_.empty() && conns_.front().deadline_ns <= now) closeConn(conns_.begin());
  }
}

void FastPathServer::acceptAll(std::uint64_t now) {
  for (;;) {
    pmu::Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!conn) {
      // EAGAIN: no more for now. The client went away: the next. Out of
      // descriptors or memory: the connection waits in the queue, and epoll
      // would say so at once again; a pause lets what holds them go first.
      if (errno == ECONNABORTED || errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        logLimited(LogLevel::Warning, "fast-path socket: accept: {}", std::strerror(errno));
        ::usleep(10'000);
      }
      return;
    }
    ucred peer{};
    socklen_t len = sizeof peer;
    if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) continue;
    auto u = per_user_.find(peer.uid);
    const unsigned held = u == per_user_.end() ? 0 : u->second;
    if (held >= limits_.per_user) {
      logLimited(LogLevel::Warning, "fast path: uid {} (pid {}) holds {} connections: one more refused", peer.uid,
                 peer.pid, held);
      continue;  // closed here: that user's alone
    }
    if (conns_.size() >= limits_.total) closeConn(conns_.begin());
    const std::uint64_t tag = next_tag_++;
    if (!watch(epoll_.get(), conn.get(), tag)) continue;
    ++per_user_[peer.uid];
    conns_.push_back(
        Conn{std::move(conn), tag, peer.uid, peer.pid, now + std::uint64_t{limits_.deadline_ms} * 1'000'000ULL});
    by_tag_[tag] = std::prev(conns_.end());
  }
}

void FastPathServer::closeConn(ConnList::iterator it) {
  auto u = per_user_.find(it->uid);
  if (u != per_user_.end() && --u->second == 0) per_user_.erase(u);
  by_tag_.erase(it->tag);
  (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->fd.get(), nullptr);
  conns_.erase(it);  // closes it
}

void FastPathServer::serve(const Conn& c) {
  const int conn = c.fd.get();
  char buf[kMaxRequest + 1];
  ssize_t n = ::recv(conn, buf, sizeof buf, MSG_DONTWAIT);
  if (n <= 0) return;
  if (static_cast<std::size_t>(n) > kMaxRequest)
    return reply(conn, err(EINVAL, "request of more than {} bytes", kMaxRequest));
  std::string_view req(buf, static_cast<std::size_t>(n));
  auto word = [&req]() {
    std::size_t sp = req.find(' ');
    std::string_view w = req.substr(0, sp);
    req = sp == std::string_view::npos ? std::string_view() : req.substr(sp + 1);
    return w;
  };
  std::string_view verb = word(), session = word();
  Result<std::vector<pmu::Fd>> r = err(EINVAL, "unknown request '{}'", printable(verb));
  if (verb == "page" && req.empty()) {
    auto page = fs_.fastPage(c.uid, session);
    if (page.ok()) {
      std::vector<pmu::Fd> one;
      one.push_back(std::move(*page));
      r = std::move(one);
    } else {
      r = page.error();
    }
  } else if (verb == "smpl" && req.empty()) {
    auto smpl = fs_.sampleBuffer(c.uid, session);
    if (smpl.ok()) {
      std::vector<pmu::Fd> one;
      one.push_back(std::move(*smpl));
      r = std::move(one);
    } else {
      r = smpl.error();
    }
  } else if (verb == "group") {
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(req.data(), req.data() + req.size(), id);
    if (ec != std::errc() || end != req.data() + req.size() || req.empty())
      r = err(EINVAL, "group: '{}' is not a group number", printable(req));
    else
      r = fs_.fastGroup(c.uid, session, id);
  }
  reply(conn, r);  // our copies close with r
  log(LogLevel::Debug, "fast path: uid {} pid {}: {} {}: {}", c.uid, c.pid, printable(verb), printable(session),
      r.ok() ? "granted" : r.error().reason);
}

}  // namespace pfmfs::fs
