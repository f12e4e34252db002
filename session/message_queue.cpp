// The bounded message queue of a session.
#include "session/message_queue.h"

namespace pfmfs::session {

bool MessageQueue::push(Message m) {
  if (q_.size() >= capacity_) {
    ++lost_;
    return false;
  }
  m.seq = next_seq_++;
  q_.push_back(m);
  return true;
}

std::vector<Message> MessageQueue::take(std::size_t max) {
  std::vector<Message> out;
  while (!q_.empty() && out.size() < max) {
    out.push_back(q_.front());
    q_.pop_front();
  }
  return out;
}

std::vector<Message> MessageQueue::takeWhile(const std::function<bool(const Message&)>& accept) {
  std::vector<Message> out;
  while (!q_.empty() && accept(q_.front())) {
    out.push_back(q_.front());
    q_.pop_front();
  }
  return out;
}

}  // namespace pfmfs::session
