// The real clock's one timer thread for all sessions: every tick it lets each
// counting session catch up with its target's time (set switches, sim
// overflows, sampling). It sleeps without waking while no session counts.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "base/mutex.h"

namespace pfmfs::session {

class Session;

class TimerThread {
 public:
  explicit TimerThread(std::uint64_t tick_ns);
  ~TimerThread();  // stop()
  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  void add(const std::shared_ptr<Session>& s) EXCLUDES(mutex_);
  void remove(const Session* s) EXCLUDES(mutex_);
  std::size_t size() const EXCLUDES(mutex_);

  // Stops the thread and joins it, after the tick it may be in: no session is
  // ticked again (add and remove still work). Idempotent.
  void stop() EXCLUDES(join_mutex_, mutex_);

 private:
  void run() EXCLUDES(mutex_);

  const std::uint64_t tick_ns_;
  mutable Mutex mutex_;  // a leaf: never held while a session is called
  std::condition_variable cv_;
  std::map<const Session*, std::weak_ptr<Session>> sessions_ GUARDED_BY(mutex_);
  bool stop_ GUARDED_BY(mutex_) = false;
  Mutex join_mutex_ ACQUIRED_BEFORE(mutex_);  // serialises stop()
  std::thread thread_;
};

}  // namespace pfmfs::session
