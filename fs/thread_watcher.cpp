// Thread-exit detection with pidfds (see thread_watcher.h).
#include "fs/thread_watcher.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>

#include "fs/log.h"
#include "pmu/daemon_thread.h"

namespace pfmfs::fs {
namespace {

#ifndef PIDFD_THREAD
constexpr unsigned kPidfdThread = O_EXCL;  // Linux 6.9: a pidfd for one thread
#else
constexpr unsigned kPidfdThread = PIDFD_THREAD;
#endif

int pidfdOpen(pid_t pid, unsigned flags) { return static_cast<int>(syscall(SYS_pidfd_open, pid, flags)); }

// The process a thread belongs to, from /proc; 0 if it is gone.
pid_t processOf(pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::stol(line.substr(5)));
  return 0;
}

// How often a thread watched through its process's pidfd is looked for.
constexpr int kPollMs = 100;

}  // namespace

ThreadWatcher::ThreadWatcher(ExitFn on_exit, bool thread_pidfds)
    : on_exit_(std::move(on_exit)), thread_pidfds_(thread_pidfds) {
  // Where the kernel has no thread pidfds, the watcher's thread wakes every
  // kPollMs to look for the threads it cannot wait on.
  if (thread_pidfds_) {
    int probe = pidfdOpen(static_cast<pid_t>(syscall(SYS_gettid)), kPidfdThread);
    if (probe >= 0) close(probe);
    poll_ms_ = probe >= 0 ? -1 : kPollMs;
  } else {
    poll_ms_ = kPollMs;
  }
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = UINT64_MAX;  // not a tid
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = startDaemonThread("pfmfs-watcher", [this] { run(); });
}

ThreadWatcher::~ThreadWatcher() {
  stop();
  for (auto& [tid, e] : entries_) close(e.fd);
  close(wake_fd_);
  close(epoll_fd_);
}

void ThreadWatcher::stop() {
  MutexLock j(join_mutex_);
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) log(LogLevel::Error, "thread watcher: cannot wake: {}", errno);
  thread_.join();
}

int ThreadWatcher::openPidfd(pid_t tid, pid_t& polled_tgid) const {
  polled_tgid = 0;
  if (thread_pidfds_) {
    int fd = pidfdOpen(tid, kPidfdThread);
    if (fd >= 0 || errno != EINVAL) return fd;
  }
  // Before Linux 6.9 a pidfd names a whole process: exact for a process's
  // main thread; another thread is looked for as well (run()).
  pid_t tgid = processOf(tid);
  if (tgid == 0) {
    errno = ESRCH;
    return -1;
  }
  int fd = pidfdOpen(tgid, 0);
  if (fd >= 0 && tgid != tid) polled_tgid = tgid;
  return fd;
}

void ThreadWatcher::watch(pid_t tid) {
  {
    MutexLock lock(mutex_);
    auto it = entries_.find(tid);
    if (it != entries_.end()) {
      ++it->second.refs;
      return;
    }
    pid_t polled_tgid = 0;
    int fd = openPidfd(tid, polled_tgid);
    if (fd >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<std::uint64_t>(tid);
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
      entries_[tid] = Entry{fd, 1, polled_tgid};
      return;
    }
    if (errno != ESRCH) {
      logLimited(LogLevel::Warning, "pidfd_open({}) failed (errno {}): its exit will not be noticed", tid, errno);
      return;
    }
  }
  on_exit_(tid);  // gone between the load and now
}

void ThreadWatcher::unwatch(pid_t tid) {
  MutexLock lock(mutex_);
  auto it = entries_.find(tid);
  if (it == entries_.end() || --it->second.refs > 0) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  close(it->second.fd);
  entries_.erase(it);
}

std::size_t ThreadWatcher::watched() const {
  MutexLock lock(mutex_);
  return entries_.size();
}

std::vector<pid_t> ThreadWatcher::takeGoneLocked() {
  std::vector<pid_t> gone;
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    // Signal 0 to that thread of that process: ESRCH once it has exited
    // (EPERM says it is there).
    if (e.polled_tgid != 0 && syscall(SYS_tgkill, e.polled_tgid, it->first, 0) != 0 && errno == ESRCH) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, e.fd, nullptr);
      close(e.fd);
      gone.push_back(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

void ThreadWatcher::run() {
  for (;;) {
    epoll_event events[16];
    int n = epoll_wait(epoll_fd_, events, 16, poll_ms_);
    if (n < 0) {
      if (errno == EINTR) continue;
      log(LogLevel::Error, "thread watcher: epoll_wait failed (errno {})", errno);
      return;
    }
    if (poll_ms_ >= 0) {
      std::vector<pid_t> gone;
      {
        MutexLock lock(mutex_);
        gone = takeGoneLocked();
      }
      for (pid_t tid : gone) {
        log(LogLevel::Debug, "thread {} exited (its process lives on)", tid);
        on_exit_(tid);
      }
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == UINT64_MAX) return;
      auto tid = static_cast<pid_t>(events[i].data.u64);
      {
        MutexLock lock(mutex_);
        auto it = entries_.find(tid);
        if (it == entries_.end()) continue;  // unwatched meanwhile
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
        close(it->second.fd);
        entries_.erase(it);
      }
      log(LogLevel::Debug, "thread {} exited", tid);
      on_exit_(tid);
    }
  }
}

}  // namespace pfmfs::fs
