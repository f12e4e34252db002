// The engine: all sessions of one daemon over one backend. It owns the
// namespace of session names and the per-user limits, knows which threads and
// CPUs are taken, runs the real clock's timer thread and the manual clock.
//
// Lock order (a lock may be taken while holding only locks above it):
//   1. Session::mutex_          one session's state
//   2. Engine::sessions_mutex_  the name map and per-user counts (leaf)
//      Engine::targets_mutex_   loaded threads and cpus (leaf)
//      TimerThread::mutex_      the sessions that want ticks (leaf)
// No engine lock is held while the observer is called or while a session's
// lock is taken from the engine (the engine copies what it needs, then locks).
// The leaves are Mutexes (base/mutex.h): the fields they guard and their
// place after Session::mutex_ are declared, and clang checks both
// (TimerThread's order is this comment's: it knows Session by name only).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "pmu/backend.h"
#include "pmu/result.h"
#include "session/caller.h"
#include "session/engine_options.h"
#include "session/session.h"

namespace pfmfs::session {

class TimerThread;

// What the fs layer learns from the engine. Called with no engine lock held.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void messagesQueued(Session& session) = 0;
};

class Engine {
 public:
  Engine(pmu::Backend& backend, EngineOptions options);
  ~Engine();  // shutdown()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The end of the engine's life, before anything the sessions call into
  // (the observer, the engine itself) goes: stops the timer thread and the
  // backend's threads (Backend::shutdown), each joined after the call into a
  // session it may be in, then unloads every session. From then on only the
  // caller's threads call into sessions, and loads are refused. Sessions
  // stay registered (destroySession works). The caller holds no session's
  // lock. Idempotent.
  void shutdown() EXCLUDES(sessions_mutex_);

  // EINVAL bad name; EEXIST taken; ENOSPC the caller's uid has too many.
  Result<std::shared_ptr<Session>> createSession(const Caller& caller, std::string_view name) EXCLUDES(sessions_mutex_);
  // Stops, unloads and forgets the session. ENOENT if there is none.
  Status destroySession(std::string_view name) EXCLUDES(sessions_mutex_);
  std::shared_ptr<Session> find(std::string_view name) const EXCLUDES(sessions_mutex_);
  std::vector<std::string> sessionNames() const EXCLUDES(sessions_mutex_);

  // Manual clock: every loaded target moves `ns` forward; every switch and
  // overflow inside happens at its exact instant. Returns when all is done.
  Status advanceManualClock(std::uint64_t ns) EXCLUDES(targets_mutex_);

  // The target-gone path: the thread exited.
  void threadExited(pid_t tid) EXCLUDES(targets_mutex_);

  void setObserver(SessionObserver* observer) { observer_.store(observer); }

  pmu::Backend& backend() { return backend_; }
  const EngineOptions& options() const { return options_; }

  static bool validName(std::string_view name);

 private:
  friend class Session;

  // Exclusive use of a thread or cpu by one loaded session.
  Status claimTarget(Mode mode, int id, const std::shared_ptr<Session>& s) EXCLUDES(targets_mutex_);
  void releaseTarget(Mode mode, int id, const Session* s) EXCLUDES(targets_mutex_);
  void wantTicks(const std::shared_ptr<Session>& s);
  void noTicks(const Session* s);
  void notifyQueued(Session& s);
  // The owner's sampling buffers grow by `take` and shrink by `give` bytes:
  // ENOMEM, nothing changed, past max_smpl_bytes_per_user.
  Status chargeSampleBytes(uid_t uid, std::uint64_t give, std::uint64_t take) EXCLUDES(sessions_mutex_);
  // The same for control-group loads' counters: ENOSPC past
  // max_cgroup_events_per_user.
  Status chargeCgroupEvents(uid_t uid, std::uint64_t give, std::uint64_t take) EXCLUDES(sessions_mutex_);

  pmu::Backend& backend_;
  EngineOptions options_;
  std::atomic<SessionObserver*> observer_{nullptr};

  mutable Mutex sessions_mutex_ ACQUIRED_AFTER(Session::mutex_);  // a leaf
  std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_ GUARDED_BY(sessions_mutex_);
  std::map<uid_t, unsigned> per_uid_ GUARDED_BY(sessions_mutex_);
  std::map<uid_t, std::uint64_t> smpl_bytes_ GUARDED_BY(sessions_mutex_);
  std::map<uid_t, std::uint64_t> cgroup_events_ GUARDED_BY(sessions_mutex_);

  Mutex targets_mutex_ ACQUIRED_AFTER(Session::mutex_);  // a leaf
  // tid -> sessions loaded on it
  std::multimap<int, std::weak_ptr<Session>> threads_ GUARDED_BY(targets_mutex_);
  // cpu -> the system-wide session on it
  std::map<int, std::weak_ptr<Session>> cpus_ GUARDED_BY(targets_mutex_);
  // the sessions loaded on control groups, any number per group
  std::vector<std::weak_ptr<Session>> cgroups_ GUARDED_BY(targets_mutex_);

  std::unique_ptr<TimerThread> timer_;
};

}  // namespace pfmfs::session
