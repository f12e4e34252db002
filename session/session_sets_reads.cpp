// A session's sets (create, delete, switch rules, info) and what a read of
// its state, error, counts and messages shows. The rest of Session is in
// session.cpp, session_registers.cpp and session_time.cpp.
#include <chrono>
#include <thread>

#include "session/engine.h"
#include "session/saturating.h"
#include "session/session.h"
#include "session/session_op.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

// ---- sets --------------------------------------------------------------------------

Status Session::createSet(unsigned id) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "sets can only be created while unloaded"));
  if (id > 0xffff) return fail(err(EINVAL, "set {}: ids are 0..65535", id));
  if (findSet(id)) return fail(err(EEXIST, "set {} exists", id));
  if (sets_.size() >= engine_.options().max_sets)
    return fail(err(ENOSPC, "a session has at most {} sets", engine_.options().max_sets));
  auto sid = static_cast<std::uint16_t>(id);
  sets_.emplace(std::piecewise_construct, std::forward_as_tuple(sid), std::forward_as_tuple(sid, desc_));
  return op.publish();
}

Status Session::deleteSet(unsigned id) {
  Op op(*this);
  if (loaded()) return fail(err(EBUSY, "sets can only be deleted while unloaded"));
  if (!findSet(id)) return fail(err(EINVAL, "no set {}", id));
  if (sets_.size() == 1) return fail(err(EBUSY, "set {} is the last set: a session keeps at least one", id));
  sets_.erase(static_cast<std::uint16_t>(id));
  target().forgetSet(static_cast<std::uint16_t>(id));  // a set made again with this id starts at 0
  if (active_set_ == id) active_set_ = sets_.begin()->first;
  return op.publish();
}

std::vector<std::uint16_t> Session::setIds() const {
  MutexLock lock(mutex_);
  std::vector<std::uint16_t> ids;
  for (const auto& [id, s] : sets_) ids.push_back(id);
  return ids;
}

Status Session::setSwitch(unsigned set, const SwitchSpec& spec) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set));
  if (spec.on_time && spec.timeout_ns == 0)
    return fail(err(EINVAL, "switch time 0: the timeout must be at least 1 ns"));
  if (loaded()) return fail(err(EBUSY, "switching can only change while unloaded"));
  SwitchSpec clean = spec;
  if (!clean.on_time) clean.timeout_ns = 0;
  s->switch_spec = clean;
  return op.publish();
}

Result<SetInfo> Session::setInfo(unsigned set) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  s = findSet(set);
  SetInfo i;
  i.id = s->id();
  i.switch_spec = s->switch_spec;
  i.runs = s->runs;
  i.duration_ns = s->duration_ns;
  i.timeout_ns = effectiveTimeout(s->switch_spec);
  if (loaded() && s->id() == active_set_ && state_ != State::Loaded)
    i.timeout_ns = i.timeout_ns > set_elapsed_ ? i.timeout_ns - set_elapsed_ : 0;
  i.ovfl_pmds = s->ovfl_pmds;
  i.avail_pmcs = desc_.pmcMask();
  i.avail_pmds = desc_.pmdMask();
  op.publishUnreported();
  return i;
}

// ---- reading ------------------------------------------------------------------------

StateInfo Session::state() {
  Op op(*this);
  catchUp();
  StateInfo i;
  i.state = state_;
  i.mode = mode_;
  if (loaded()) i.target = target_.id;
  if (loaded() && target_.cgroup) i.target_path = target_.cgroup->path();
  i.set = set_chosen_ || loaded() ? active_set_ : sets_.begin()->first;
  i.queued = messages_.size();
  i.lost = messages_.lost();
  i.exited = exited_;
  if (loaded()) {
    i.unscheduled_ns = target().pmu->unscheduledNs();
    i.throttled = target().pmu->throttledCount();
  }
  i.inherit = flags_.inherit;
  i.target_exited = loaded() && inheritance_.hasTargetExited();
  i.followed = followedThreads() + inheritance_.aggregateCount();
  i.merged = inheritance_.mergedCount();
  i.dropped = inheritance_.droppedCount();
  if (sample_buffer_) {
    i.sampling = true;
    i.smpl_count = sample_buffer_->count();
    i.smpl_overflows = sample_buffer_->overflows();
    i.smpl_dropped = sample_buffer_->dropped();
  }
  op.publishUnreported();
  return i;
}

std::string Session::error() const {
  MutexLock lock(mutex_);
  return error_;
}

void Session::awaitNotifications() const {
  // Telling the observer is one poll wakeup per waiter: microseconds, so a
  // wait that long is a stuck observer, which the write must not share.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (notifying_.load() != 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

std::vector<CountLine> Session::counts() {
  Op op(*this);
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  std::vector<CountLine> out;
  for (const auto& [id, s] : sets_) {
    liveValues(s, s.usedPmds());
    for (std::size_t slot = 0; slot < s.pmdCount(); ++slot) {
      unsigned index = desc_.pmds[slot].index;
      if (!(s.usedPmds() & regBit(index))) continue;
      CountLine c;
      c.set = id;
      c.pmd = index;
      c.value = values_[slot];
      c.enabled_ns = enabled_ns_;
      c.running_ns = s.duration_ns;
      auto scale = [&c](std::uint64_t v) -> std::optional<std::uint64_t> {
        if (c.running_ns == 0) return std::nullopt;
        unsigned __int128 scaled = static_cast<unsigned __int128>(v) * c.enabled_ns / c.running_ns;
        return scaled > pmu::kNever ? pmu::kNever : static_cast<std::uint64_t>(scaled);
      };
      c.scaled = scale(c.value);
      if (flags_.inherit) {
        c.children = s.pmd(slot).children;
        c.total_scaled = scale(saturatingAdd(c.value, *c.children));
      }
      out.push_back(c);
    }
  }
  op.publishUnreported();
  return out;
}

std::vector<Message> Session::takeMessages(std::size_t max) {
  MutexLock lock(mutex_);
  return messages_.take(max);
}

std::vector<Message> Session::takeMessagesWhile(const std::function<bool(const Message&)>& accept) {
  MutexLock lock(mutex_);
  return messages_.takeWhile(accept);
}

std::size_t Session::queuedMessages() const {
  MutexLock lock(mutex_);
  return messages_.size();
}

bool Session::masked() const {
  MutexLock lock(mutex_);
  return state_ == State::Masked;
}

void Session::queueMessage(const Message& m) {
  if (messages_.push(m)) notify_pending_ = true;
}

}  // namespace pfmfs::session
