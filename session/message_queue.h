// A session's bounded message queue. Messages that do not fit are counted as
// lost; seq numbers go to queued messages only, so they have no gaps.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "session/message.h"

namespace pfmfs::session {

class MessageQueue {
 public:
  explicit MessageQueue(unsigned capacity) : capacity_(capacity) {}

  // Stamps `m` with the next seq and queues it; false (and lost() + 1) if full.
  bool push(Message m);
  // Removes and returns up to `max` messages, oldest first.
  std::vector<Message> take(std::size_t max);
  // Removes and returns messages, oldest first, while `accept` says yes to
  // the next one: how a reader fills a buffer with whole lines only.
  std::vector<Message> takeWhile(const std::function<bool(const Message&)>& accept);
  std::size_t size() const { return q_.size(); }
  bool empty() const { return q_.empty(); }
  std::uint64_t lost() const { return lost_; }

 private:
  unsigned capacity_;
  std::deque<Message> q_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t lost_ = 0;
};

}  // namespace pfmfs::session
