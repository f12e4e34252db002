// Session registry, target ownership, clocks.
#include "session/engine.h"

#include "session/timer_thread.h"

namespace pfmfs::session {

Engine::Engine(pmu::Backend& backend, EngineOptions options) : backend_(backend), options_(options) {
  if (options_.tick_ns == 0) options_.tick_ns = 1;
  if (backend_.clock() == pmu::ClockKind::Real) timer_ = std::make_unique<TimerThread>(options_.tick_ns);
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  // Threads first: a tick or a backend's listener call may be inside a
  // session, or on its way to the engine or the observer, until joined. The
  // objects stay: a session's unload still tells the timer.
  if (timer_) timer_->stop();
  backend_.shutdown();
  std::vector<std::shared_ptr<Session>> sessions;
  {
    MutexLock l(sessions_mutex_);
    for (const auto& [name, s] : sessions_) sessions.push_back(s);
  }
  for (const auto& s : sessions) (void)s->unload();
}

bool Engine::validName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  for (char c : name) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

Result<std::shared_ptr<Session>> Engine::createSession(const Caller& caller, std::string_view name) {
  if (!validName(name)) return err(EINVAL, "session names are 1-64 of [A-Za-z0-9_.-], not . or ..");
  MutexLock l(sessions_mutex_);
  if (sessions_.count(name)) return err(EEXIST, "session {} exists", name);
  unsigned& n = per_uid_[caller.uid];
  if (n >= options_.max_sessions_per_user)
    return err(ENOSPC, "uid {} has {} sessions, the most allowed", caller.uid, n);
  auto s = std::make_shared<Session>(*this, std::string(name), caller.uid, caller.gid);
  sessions_.emplace(std::string(name), s);
  ++n;
  return s;
}

Status Engine::destroySession(std::string_view name) {
  std::shared_ptr<Session> s;
  {
    MutexLock l(sessions_mutex_);
    auto it = sessions_.find(name);
    if (it == sessions_.end()) return err(ENOENT, "no session {}", printable(name));
    s = it->second;
    sessions_.erase(it);
    if (--per_uid_[s->uid()] == 0) per_uid_.erase(s->uid());
  }
  return s->retire();
}

std::shared_ptr<Session> Engine::find(std::string_view name) const {
  MutexLock l(sessions_mutex_);
  auto it = sessions_.find(name);
  return it == sessions_.end() ? nullptr : it->second;
}

std::vector<std::string> Engine::sessionNames() const {
  MutexLock l(sessions_mutex_);
  std::vector<std::string> out;
  for (const auto& [name, s] : sessions_) out.push_back(name);
  return out;
}

Status Engine::advanceManualClock(std::uint64_t ns) {
  if (backend_.clock() != pmu::ClockKind::Manual) return err(EINVAL, "the clock is not manual");
  // Only loaded sessions have a clock to move: walk the targets, not every
  // session, so an advance costs the same with 10 000 idle sessions present.
  std::vector<std::shared_ptr<Session>> loaded;
  {
    MutexLock l(targets_mutex_);
    for (const auto& [tid, w] : threads_)
      if (auto s = w.lock()) loaded.push_back(s);
    for (const auto& [cpu, w] : cpus_)
      if (auto s = w.lock()) loaded.push_back(s);
    for (const auto& w : cgroups_)
      if (auto s = w.lock()) loaded.push_back(s);
  }
  for (const auto& s : loaded) s->advanceBy(ns);
  return {};
}

void Engine::threadExited(pid_t tid) {
  std::vector<std::shared_ptr<Session>> hit;
  {
    MutexLock l(targets_mutex_);
    auto [lo, hi] = threads_.equal_range(tid);
    for (auto it = lo; it != hi; ++it)
      if (auto s = it->second.lock()) hit.push_back(s);
  }
  for (const auto& s : hit) s->targetGone();
}

Status Engine::claimTarget(Mode mode, int id, const std::shared_ptr<Session>& s) {
  MutexLock l(targets_mutex_);
  if (mode == Mode::Cgroup) {
    // Any number of sessions may count one group, as perf lets any number
    // of events count it (pfmfs(5), CONTROL-GROUP LOADS).
    cgroups_.push_back(s);
    return {};
  }
  if (mode == Mode::System) {
    auto it = cpus_.find(id);
    if (it != cpus_.end())
      if (auto other = it->second.lock()) return err(EBUSY, "cpu {} is taken by session {}", id, other->name());
    cpus_[id] = s;
    return {};
  }
  if (backend_.exclusiveThreads()) {
    auto [lo, hi] = threads_.equal_range(id);
    for (auto it = lo; it != hi; ++it)
      if (auto other = it->second.lock()) return err(EBUSY, "thread {} is taken by session {}", id, other->name());
  }
  threads_.emplace(id, s);
  return {};
}

void Engine::releaseTarget(Mode mode, int id, const Session* s) {
  MutexLock l(targets_mutex_);
  if (mode == Mode::Cgroup) {
    std::erase_if(cgroups_, [&](const std::weak_ptr<Session>& w) {
      auto owner = w.lock();
      return !owner || owner.get() == s;
    });
    return;
  }
  if (mode == Mode::System) {
    auto it = cpus_.find(id);
    if (it != cpus_.end()) {
      auto owner = it->second.lock();
      if (!owner || owner.get() == s) cpus_.erase(it);
    }
    return;
  }
  auto [lo, hi] = threads_.equal_range(id);
  for (auto it = lo; it != hi;) {
    auto owner = it->second.lock();
    it = (!owner || owner.get() == s) ? threads_.erase(it) : std::next(it);
  }
}

void Engine::wantTicks(const std::shared_ptr<Session>& s) {
  if (timer_) timer_->add(s);
}

void Engine::noTicks(const Session* s) {
  if (timer_) timer_->remove(s);
}

namespace {

// One user's share of a per-user budget: `give` back, then `take`; past
// `limit` nothing changes and the caller words the refusal.
bool charge(std::map<uid_t, std::uint64_t>& budget, std::uint64_t limit, uid_t uid, std::uint64_t give,
            std::uint64_t take, std::uint64_t& after) {
  std::uint64_t& used = budget[uid];
  after = used - std::min(used, give) + take;
  bool fits = take == 0 || after <= limit;
  if (fits) used = after;
  if (used == 0) budget.erase(uid);
  return fits;
}

}  // namespace

Status Engine::chargeSampleBytes(uid_t uid, std::uint64_t give, std::uint64_t take) {
  MutexLock l(sessions_mutex_);
  std::uint64_t after = 0;
  if (!charge(smpl_bytes_, options_.max_smpl_bytes_per_user, uid, give, take, after))
    return err(
        ENOMEM,
        "uid {}'s sampling buffers would take {} bytes, more than the {} allowed (pfmfsd --max-smpl-bytes-per-user)",
        uid, after, options_.max_smpl_bytes_per_user);
  return {};
}

Status Engine::chargeCgroupEvents(uid_t uid, std::uint64_t give, std::uint64_t take) {
  MutexLock l(sessions_mutex_);
  std::uint64_t after = 0;
  if (!charge(cgroup_events_, options_.max_cgroup_events_per_user, uid, give, take, after))
    return err(ENOSPC,
               "uid {}'s control-group loads would hold {} counters, more than the {} allowed (pfmfsd "
               "--max-cgroup-events-per-user; a load counts online cpus x (1 + sets x PMDs))",
               uid, after, options_.max_cgroup_events_per_user);
  return {};
}

void Engine::notifyQueued(Session& s) {
  if (SessionObserver* o = observer_.load()) o->messagesQueued(s);
}

}  // namespace pfmfs::session
