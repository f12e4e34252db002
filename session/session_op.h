// Session::Op, the lock of one operation of a Session that changes it or
// brings it to the present. Internal to session/: the files that implement
// Session share it. Reads that do neither take the lock alone.
#pragma once

#include "session/engine.h"
#include "session/session.h"

namespace pfmfs::session {

// Holds the session lock for one operation. The operation ends in publish(),
// written where it returns: what it changed goes out to those who see the
// session without asking it. Its destructor releases the lock, and then,
// when the operation queued messages, tells the observer (who may call back
// into the session, which is why that comes after the lock).
//
// To clang's analysis it is a scoped lock of the session's mutex; its own
// bodies are not analysed, since the analysis cannot name `s_.mutex_` as the
// caller's `mutex_`: the lock is held from the constructor to the unlock in
// the destructor by construction.
class SCOPED_CAPABILITY Session::Op {
 public:
  explicit Op(Session& s) ACQUIRE(s.mutex_) : s_(s) { s_.mutex_.lock(); }
  ~Op() RELEASE() NO_THREAD_SAFETY_ANALYSIS {
    bool notify = s_.notify_pending_;
    s_.notify_pending_ = false;
    if (notify) s_.notifying_.fetch_add(1);  // under the lock: any later operation sees it
    s_.mutex_.unlock();
    if (notify) {
      s_.engine_.notifyQueued(s_);
      s_.notifying_.fetch_sub(1);
    }
  }
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  // Children created from now on start with what the operation left (inherit
  // on a backend that starts them before we hear of them), and libpfm-compat's
  // fast readers see it. Returns `result`, the operation's own; when that is
  // a success and the backend refused the children's image, the refusal, with
  // its reason in error().
  Status publish(Status result = {}) NO_THREAD_SAFETY_ANALYSIS { return s_.publish(std::move(result)); }
  // The same, for an operation with nobody to report a refusal to (an engine
  // hook) or whose answer is right regardless (a read that brought the
  // session to the present): the refusal stays in error() alone, and the
  // image is given again at the end of the next operation.
  void publishUnreported() NO_THREAD_SAFETY_ANALYSIS { (void)s_.publish({}); }

 private:
  Session& s_;
};

}  // namespace pfmfs::session
