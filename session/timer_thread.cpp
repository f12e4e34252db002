// The real clock's timer thread.
#include "session/timer_thread.h"

#include <chrono>
#include <vector>

#include "pmu/daemon_thread.h"
#include "session/session.h"

namespace pfmfs::session {

TimerThread::TimerThread(std::uint64_t tick_ns)
    : tick_ns_(tick_ns), thread_(startDaemonThread("pfmfs-timer", [this] { run(); })) {}

TimerThread::~TimerThread() { stop(); }

void TimerThread::stop() {
  MutexLock j(join_mutex_);
  if (!thread_.joinable()) return;
  {
    MutexLock l(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TimerThread::add(const std::shared_ptr<Session>& s) {
  bool was_empty;
  {
    MutexLock l(mutex_);
    was_empty = sessions_.empty();
    sessions_[s.get()] = s;
  }
  if (was_empty) cv_.notify_all();
}

void TimerThread::remove(const Session* s) {
  MutexLock l(mutex_);
  sessions_.erase(s);
}

std::size_t TimerThread::size() const {
  MutexLock l(mutex_);
  return sessions_.size();
}

void TimerThread::run() {
  using clock = std::chrono::steady_clock;
  const auto tick = std::chrono::nanoseconds(tick_ns_);
  std::vector<std::weak_ptr<Session>> batch;
  MutexLock l(mutex_);
  auto next = clock::now() + tick;
  while (true) {
    // Sleep for good while nothing counts.
    while (!stop_ && sessions_.empty()) l.wait(cv_);
    while (!stop_ && l.waitUntil(cv_, next)) {
    }
    if (stop_) return;
    // Ticks stay on a fixed grid; after a long stall, start a new one.
    auto now = clock::now();
    next += tick;
    if (next <= now) next = now + tick;
    batch.clear();
    for (const auto& [key, w] : sessions_) batch.push_back(w);
    l.unlock();
    for (const auto& w : batch)
      if (auto s = w.lock()) s->tick();
    l.lock();
  }
}

}  // namespace pfmfs::session
