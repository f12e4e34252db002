// Readers and pollers of one session's `messages` and `msg` files. A read on
// an empty queue is not answered by a sleeping thread: the request is kept
// here and answered when the engine says messages were queued (wake), when
// the reader is interrupted, or when the session goes away (close).
//
// Lock order: MessageWaiters::mutex_ is taken before Session::mutex_ (reads
// take messages while holding it) and after nothing of the fs.
#pragma once

#include <fuse_lowlevel.h>

#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include "base/mutex.h"
#include "session/session.h"

namespace pfmfs::fs {

// The longest `messages` line (type=ovfl with every field at its widest),
// newline included.
inline constexpr std::size_t kMaxMessageLine = 160;

class MessageWaiters : public std::enable_shared_from_this<MessageWaiters> {
 public:
  explicit MessageWaiters(std::shared_ptr<session::Session> session) : session_(std::move(session)) {}
  ~MessageWaiters();
  MessageWaiters(const MessageWaiters&) = delete;
  MessageWaiters& operator=(const MessageWaiters&) = delete;

  // Answers a read now (messages, EAGAIN, EINVAL, end of file once closed)
  // or keeps it until one of wake/close/interrupt.
  void read(fuse_req_t req, std::size_t size, bool binary, bool nonblock) EXCLUDES(mutex_);
  // The poll reply: POLLIN while messages are queued (or once closed), POLLPRI
  // while the session is masked. `ph`,
  // when given, replaces the handle kept for `file` and is notified later.
  unsigned poll(const void* file, fuse_pollhandle* ph) EXCLUDES(mutex_);
  void forgetFile(const void* file) EXCLUDES(mutex_);  // its last release: drop its handle
  void wake() EXCLUDES(mutex_);                        // the engine queued messages
  void close() EXCLUDES(mutex_);                       // the session was destroyed
  std::size_t pendingReads() const EXCLUDES(mutex_);

 private:
  struct PendingRead {
    fuse_req_t req;
    std::size_t size;
    bool binary;
  };
  static void interrupted(fuse_req_t req, void* data);
  // Replies with queued messages if there are any; false if it must wait.
  bool answerLocked(const PendingRead& r) REQUIRES(mutex_);
  void notifyPollsLocked() REQUIRES(mutex_);

  const std::shared_ptr<session::Session> session_;
  // Before Session::mutex_ (answerLocked takes messages). Not declared:
  // Session's lock is private, and the engine does not name the fs classes
  // above it to let them see it; filesystem.h's order and TSan hold this.
  mutable Mutex mutex_;
  std::deque<PendingRead> reads_ GUARDED_BY(mutex_);
  std::map<const void*, fuse_pollhandle*> polls_ GUARDED_BY(mutex_);
  bool closed_ GUARDED_BY(mutex_) = false;
};

}  // namespace pfmfs::fs
