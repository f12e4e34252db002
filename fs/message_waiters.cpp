// Deferred reads and poll handles of the message files (see message_waiters.h).
#include "fs/message_waiters.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

namespace pfmfs::fs {
namespace {

// Which waiters hold which kept request: the interrupt callback's way back.
// libfuse may call the callback after the request was answered and after its
// session went away, so the callback's data cannot point into a session; it
// points here, a registry that outlives every request.
class Interrupts {
 public:
  void add(fuse_req_t req, const std::weak_ptr<MessageWaiters>& w) {
    MutexLock lock(mutex_);
    map_[req] = w;
  }
  void remove(fuse_req_t req) {
    MutexLock lock(mutex_);
    map_.erase(req);
  }
  std::shared_ptr<MessageWaiters> find(fuse_req_t req) {
    MutexLock lock(mutex_);
    auto it = map_.find(req);
    return it == map_.end() ? nullptr : it->second.lock();
  }

 private:
  Mutex mutex_;  // a leaf
  std::map<fuse_req_t, std::weak_ptr<MessageWaiters>> map_ GUARDED_BY(mutex_);
};

Interrupts& interrupts() {
  static Interrupts* registry = new Interrupts;  // never destroyed: callbacks may come late
  return *registry;
}

}  // namespace

void MessageWaiters::read(fuse_req_t req, std::size_t size, bool binary, bool nonblock) {
  if (binary && size < session::kMessageRecordSize) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  // Registered before the request is kept, outside our lock: libfuse calls
  // the callback at once if the request was already interrupted.
  if (!nonblock) {
    interrupts().add(req, weak_from_this());
    fuse_req_interrupt_func(req, &MessageWaiters::interrupted, nullptr);
  }
  MutexLock lock(mutex_);
  PendingRead r{req, size, binary};
  if (answerLocked(r)) return;
  if (nonblock) {
    fuse_reply_err(req, EAGAIN);
    return;
  }
  if (fuse_req_interrupted(req)) {
    interrupts().remove(req);
    fuse_reply_err(req, EINTR);
    return;
  }
  reads_.push_back(r);
}

// Every reply to a kept request first drops it from the interrupt registry:
// once answered, libfuse may hand its address to a new request.
bool MessageWaiters::answerLocked(const PendingRead& r) {
  if (closed_) {
    interrupts().remove(r.req);
    fuse_reply_buf(r.req, nullptr, 0);  // end of file: the session is gone
    return true;
  }
  std::string out;
  if (r.binary) {
    auto taken = session_->takeMessages(r.size / session::kMessageRecordSize);
    for (const auto& m : taken) {
      auto rec = session::toRecord(m);
      out.append(reinterpret_cast<const char*>(rec.data()), rec.size());
    }
  } else {
    session_->takeMessagesWhile([&](const session::Message& m) {
      std::string line = session::toText(m);
      if (out.size() + line.size() > r.size) return false;
      out += line;
      return true;
    });
    if (out.empty() && session_->queuedMessages() > 0) {
      interrupts().remove(r.req);
      fuse_reply_err(r.req, EINVAL);  // not even one line fits
      return true;
    }
  }
  if (out.empty()) return false;
  interrupts().remove(r.req);
  fuse_reply_buf(r.req, out.data(), out.size());
  return true;
}

void MessageWaiters::interrupted(fuse_req_t req, void*) {
  auto self = interrupts().find(req);
  if (!self) return;
  MutexLock lock(self->mutex_);
  auto it = std::find_if(self->reads_.begin(), self->reads_.end(), [&](const PendingRead& r) { return r.req == req; });
  if (it == self->reads_.end()) return;  // answered meanwhile, or not kept yet
  self->reads_.erase(it);
  interrupts().remove(req);
  fuse_reply_err(req, EINTR);
}

unsigned MessageWaiters::poll(const void* file, fuse_pollhandle* ph) {
  MutexLock lock(mutex_);
  if (ph && closed_) {
    fuse_pollhandle_destroy(ph);  // ready for good: nothing left to notify
    ph = nullptr;
  }
  if (ph) {
    auto [it, fresh] = polls_.try_emplace(file, ph);
    if (!fresh) {
      fuse_pollhandle_destroy(it->second);
      it->second = ph;
    }
  }
  if (closed_) return POLLIN | POLLHUP;
  // POLLPRI: a notification waits for restart, seen even when no message
  // tells of it (no_msg). libpfm-compat's signal thread polls for it.
  return (session_->queuedMessages() > 0 ? POLLIN : 0) | (session_->masked() ? POLLPRI : 0);
}

MessageWaiters::~MessageWaiters() {
  for (auto& [file, ph] : polls_) fuse_pollhandle_destroy(ph);
}

void MessageWaiters::forgetFile(const void* file) {
  MutexLock lock(mutex_);
  auto it = polls_.find(file);
  if (it == polls_.end()) return;
  fuse_pollhandle_destroy(it->second);
  polls_.erase(it);
}

void MessageWaiters::notifyPollsLocked() {
  for (auto& [file, ph] : polls_) {
    // ENOENT/EBADF/ENODEV while unmounting: nobody is left to tell.
    fuse_lowlevel_notify_poll(ph);
    fuse_pollhandle_destroy(ph);
  }
  polls_.clear();
}

void MessageWaiters::wake() {
  MutexLock lock(mutex_);
  while (!reads_.empty() && answerLocked(reads_.front())) reads_.pop_front();
  notifyPollsLocked();
}

void MessageWaiters::close() {
  MutexLock lock(mutex_);
  closed_ = true;
  for (const auto& r : reads_) {
    interrupts().remove(r.req);
    fuse_reply_buf(r.req, nullptr, 0);
  }
  reads_.clear();
  notifyPollsLocked();
}

std::size_t MessageWaiters::pendingReads() const {
  MutexLock lock(mutex_);
  return reads_.size();
}

}  // namespace pfmfs::fs
