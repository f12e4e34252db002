// Mutex and MutexLock: std::mutex and its guard, declared to clang's
// thread-safety analysis (-Wthread-safety, an error in a clang build), and
// the macros that say what a mutex guards and in which order mutexes nest.
//
// libstdc++'s std::mutex carries no capability attributes, so the analysis
// cannot see it; these do. Under GCC the macros expand to nothing and Mutex
// is a std::mutex.
//
//   mutable Mutex mutex_;                      // a leaf
//   std::map<int, Entry> entries_ GUARDED_BY(mutex_);
//   void dropLocked(int key) REQUIRES(mutex_);  // called with it held
//   void notify() EXCLUDES(mutex_);             // takes it, or calls out
//   Mutex join_mutex_ ACQUIRED_BEFORE(mutex_);  // the lock order, declared
//
//   MutexLock lock(mutex_);       // as std::lock_guard, or std::unique_lock:
//   while (!ready_) lock.wait(cv_);  // a std::condition_variable wait
//   lock.unlock(); ...; lock.lock();
//
// Why here, in base/: every unit includes it (the daemon's layers pmu,
// session and fs, and libpfm-compat, which links none of them), and the
// layer graph (scripts/check_layers.py) has no unit below all of them:
// pmu includes nothing else, and libpfm-compat only fastpath/. base/ is
// the row below every unit; it holds headers only and includes nothing
// of ours. Nothing here allocates or throws more than std::mutex does, so
// libpfm-compat's objects (which have no libstdc++) can use it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define PFMFS_THREAD_ATTRIBUTE(x) __attribute__((x))
#else
#define PFMFS_THREAD_ATTRIBUTE(x)
#endif

#define CAPABILITY(x) PFMFS_THREAD_ATTRIBUTE(capability(x))
#define SCOPED_CAPABILITY PFMFS_THREAD_ATTRIBUTE(scoped_lockable)
#define GUARDED_BY(x) PFMFS_THREAD_ATTRIBUTE(guarded_by(x))
#define PT_GUARDED_BY(x) PFMFS_THREAD_ATTRIBUTE(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) PFMFS_THREAD_ATTRIBUTE(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) PFMFS_THREAD_ATTRIBUTE(acquired_after(__VA_ARGS__))
#define REQUIRES(...) PFMFS_THREAD_ATTRIBUTE(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) PFMFS_THREAD_ATTRIBUTE(acquire_capability(__VA_ARGS__))
#define RELEASE(...) PFMFS_THREAD_ATTRIBUTE(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) PFMFS_THREAD_ATTRIBUTE(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) PFMFS_THREAD_ATTRIBUTE(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) PFMFS_THREAD_ATTRIBUTE(assert_capability(x))
#define RETURN_CAPABILITY(x) PFMFS_THREAD_ATTRIBUTE(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS PFMFS_THREAD_ATTRIBUTE(no_thread_safety_analysis)

namespace pfmfs {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  friend class MutexLock;  // its condition-variable waits use the std::mutex
  std::mutex mutex_;
};

// Holds a Mutex for its scope, as std::lock_guard does; unlock() and lock()
// let go of it and take it again within the scope, as std::unique_lock's.
// The waits take a std::condition_variable: the mutex is released while
// asleep and held again when they return, as std::condition_variable's own
// waits do with a std::unique_lock. Each may wake spuriously: call it in a
// loop on the condition, which the analysis checks is read under the lock.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  void lock() ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }

  void wait(std::condition_variable& cv) {
    std::unique_lock<std::mutex> native(mutex_.mutex_, std::adopt_lock);
    cv.wait(native);
    native.release();  // still held: this lock's to release
  }
  // False once `deadline` has passed.
  template <class Clock, class Duration>
  bool waitUntil(std::condition_variable& cv, const std::chrono::time_point<Clock, Duration>& deadline) {
    std::unique_lock<std::mutex> native(mutex_.mutex_, std::adopt_lock);
    bool woken = cv.wait_until(native, deadline) == std::cv_status::no_timeout;
    native.release();
    return woken;
  }
  // False once `timeout` has passed.
  template <class Rep, class Period>
  bool waitFor(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout) {
    return waitUntil(cv, std::chrono::steady_clock::now() + timeout);
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

}  // namespace pfmfs
