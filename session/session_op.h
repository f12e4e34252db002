// Session::Op, the lock of one public operation of a Session. Internal to
// session/: the files that implement Session share it.
#pragma once

#include <mutex>

#include "session/engine.h"
#include "session/session.h"

namespace pfmfs::session {

// Holds the session lock for one public operation. When the operation queued
// messages, the observer hears of it after the lock is released, so that it
// may call back into the session.
class Session::Op {
 public:
  explicit Op(const Session& s) : s_(const_cast<Session&>(s)), lock_(s_.mutex_) {}
  ~Op() {
    // Whatever the operation changed, children created from now on start
    // with it (inherit on a backend that starts them before we hear of them).
    s_.publishChildImage();
    // And libpfm-compat's fast readers see what it left.
    s_.publishFastPage();
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

 private:
  Session& s_;
  std::unique_lock<std::mutex> lock_;
};

}  // namespace pfmfs::session
