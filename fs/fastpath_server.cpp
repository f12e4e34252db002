#include "fs/fastpath_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
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

// One answer: "ok" and descriptors, or "err ERRNO reason".
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
  (void)::sendmsg(conn, &m, MSG_NOSIGNAL);
}

}  // namespace

Result<std::unique_ptr<FastPathServer>> FastPathServer::start(Filesystem& fs) {
  pmu::Fd listener(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
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
  if (::listen(listener.get(), 64) != 0) return err(errno, "fast-path socket @{}: listen: {}", name, std::strerror(errno));
  pmu::Fd wake(::eventfd(0, EFD_CLOEXEC));
  if (!wake) return err(errno, "eventfd: {}", std::strerror(errno));
  return std::unique_ptr<FastPathServer>(new FastPathServer(fs, std::move(listener), std::move(wake), "@" + name));
}

FastPathServer::FastPathServer(Filesystem& fs, pmu::Fd listener, pmu::Fd wake, std::string name)
    : fs_(fs), listener_(std::move(listener)), wake_(std::move(wake)), name_(std::move(name)) {
  thread_ = startDaemonThread("pfmfs-fastpath", [this] { run(); });
}

FastPathServer::~FastPathServer() {
  std::uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void FastPathServer::run() {
  pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::Error, "fast-path socket: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    pmu::Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn) {
      // The client went away (it can retry), or we are out of descriptors
      // or memory: the connection waits in the queue, and poll would say so
      // at once again. Let what holds them go first.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) ::usleep(10'000);
      continue;
    }
    serve(conn.get());
  }
}

void FastPathServer::serve(int conn) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return;
  timeval limit{1, 0};
  (void)::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  char buf[kMaxRequest + 1];
  ssize_t n = ::recv(conn, buf, sizeof buf, 0);
  if (n <= 0) return;
  if (static_cast<std::size_t>(n) > kMaxRequest) return reply(conn, err(EINVAL, "request of more than {} bytes", kMaxRequest));
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
    auto page = fs_.fastPage(peer.uid, session);
    if (page.ok()) {
      std::vector<pmu::Fd> one;
      one.push_back(std::move(*page));
      r = std::move(one);
    } else {
      r = page.error();
    }
  } else if (verb == "group") {
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(req.data(), req.data() + req.size(), id);
    if (ec != std::errc() || end != req.data() + req.size() || req.empty())
      r = err(EINVAL, "group: '{}' is not a group number", printable(req));
    else
      r = fs_.fastGroup(peer.uid, session, id);
  }
  reply(conn, r);  // our copies close with r
  log(LogLevel::Debug, "fast path: uid {} pid {}: {} {}: {}", peer.uid, peer.pid, printable(verb), printable(session),
      r.ok() ? "granted" : r.error().reason);
}

}  // namespace pfmfs::fs
