// Session::Op, the lock of one operation of a Session that changes it or
// brings it to the present. Internal to session/: the files that implement
// Session share it. Reads that do neither take the lock alone.
#pragma once

#include <mutex>

#include "session/engine.h"
#include "session/session.h"

namespace pfmfs::session {

// Holds the session lock for one operation. The operation ends in publish(),
// written where it returns: what it changed goes out to those who see the
// session without asking it. Its destructor releases the lock, and then,
// when the operation queued messages, tells the observer (who may call back
// into the session, which is why that comes after the lock).
class Session::Op {
 public:
  explicit Op(Session& s) : s_(s), lock_(s_.mutex_) {}
  ~Op() {
    bool notify = s_.notify_pending_;
    s_.notify_pending_ = false;
    if (notify) s_.notifying_.fetch_add(1);  // under the lock: any later operation sees it
    lock_.unlock();
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
  Status publish(Status result = {}) { return s_.publish(std::move(result)); }
  // The same, for an operation with nobody to report a refusal to (an engine
  // hook) or whose answer is right regardless (a read that brought the
  // session to the present): the refusal stays in error() alone, and the
  // image is given again at the end of the next operation.
  void publishUnreported() { (void)s_.publish({}); }

 private:
  Session& s_;
  std::unique_lock<std::mutex> lock_;
};

}  // namespace pfmfs::session
