// The perf backend's epoll thread.
#include "pmu/perf_event/perf_poller.h"

#include "pmu/daemon_thread.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace pfmfs::pmu::perf {

Result<std::unique_ptr<Poller>> Poller::create() {
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep) return err(errno, "epoll_create1: {}", std::strerror(errno));
  Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return err(errno, "eventfd: {}", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, wake.get(), &ev) < 0)
    return err(errno, "epoll_ctl: {}", std::strerror(errno));
  std::unique_ptr<Poller> p(new Poller(std::move(ep), std::move(wake)));
  p->thread_ = startDaemonThread("pfmfs-poller", [q = p.get()] { q->run(); });
  return p;
}

Poller::Poller(Fd epoll, Fd wake) : epoll_(std::move(epoll)), wake_(std::move(wake)) {}

Poller::~Poller() { stop(); }

void Poller::stop() {
  MutexLock l(stop_mutex_);
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

Result<std::uint64_t> Poller::watch(int fd, std::shared_ptr<Watch> w) {
  MutexLock l(mutex_);
  std::uint64_t key = next_key_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = key;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) < 0) {
    int e = errno;
    return err(e, "epoll_ctl ADD of a perf event: {}", std::strerror(e));
  }
  entries_.emplace(key, Entry{fd, std::move(w)});
  return key;
}

void Poller::unwatch(std::uint64_t key) {
  MutexLock l(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  // Already gone from the epoll set when the poller saw a hang-up.
  if (!it->second.watch->hup.load()) (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
  entries_.erase(it);
}

void Poller::run() {
  epoll_event events[64];
  std::vector<std::shared_ptr<Watch>> ready;
  for (;;) {
    int n = ::epoll_wait(epoll_.get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    ready.clear();
    {
      MutexLock l(mutex_);
      for (int i = 0; i < n; ++i) {
        // A copy: epoll_event is packed on x86-64, so data.u64 is misaligned
        // and find() must not bind its const reference to it (UBSan).
        const std::uint64_t key = events[i].data.u64;
        if (key == 0) return;  // stop
        auto it = entries_.find(key);
        if (it == entries_.end()) continue;
        if (events[i].events & (EPOLLHUP | EPOLLERR)) {
          // A perf event keeps reporting its hang-up: stop watching it, or
          // the loop would spin until the session unloads.
          it->second.watch->hup.store(true);
          (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
        }
        ready.push_back(it->second.watch);
      }
    }
    for (const auto& w : ready)
      if (auto listener = w->listener.lock()) listener->attention();
  }
}

}  // namespace pfmfs::pmu::perf
