// The x86 backend's record thread.
#include "pmu/x86/record_reader.h"

#include "pmu/daemon_thread.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace pfmfs::pmu::x86 {

Result<std::unique_ptr<RecordReader>> RecordReader::create(HelperDevice& device) {
  Fd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return err(errno, "eventfd: {}", std::strerror(errno));
  std::unique_ptr<RecordReader> r(new RecordReader(device, std::move(wake)));
  r->thread_ = startDaemonThread("pfmfs-records", [q = r.get()] { q->run(); });
  return r;
}

RecordReader::RecordReader(HelperDevice& device, Fd wake) : device_(device), wake_(std::move(wake)) {}

RecordReader::~RecordReader() { stop(); }

void RecordReader::stop() {
  MutexLock l(stop_mutex_);
  if (!thread_.joinable()) return;
  std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void RecordReader::watch(const Target& target, std::shared_ptr<Watch> w) {
  MutexLock l(mutex_);
  watches_[Key{static_cast<int>(target.kind), target.id}] = std::move(w);
}

void RecordReader::unwatch(const Target& target) {
  MutexLock l(mutex_);
  watches_.erase(Key{static_cast<int>(target.kind), target.id});
}

void RecordReader::closeFamily(Family& family) {
  std::map<pid_t, Family::Born> born;
  {
    MutexLock l(family.mutex);
    family.closed = true;
    born.swap(family.born);
  }
  for (auto& [tid, b] : born) {
    Target t{TargetKind::Thread, tid};
    unwatch(t);
    (void)device_.detach(t);  // fails harmlessly for a thread the module let go
  }
}

std::shared_ptr<Watch> RecordReader::routeFork(const pfmfs_helper_record& r) {
  const bool attached = (r.flags & PFMFS_HELPER_FORK_ATTACHED) != 0;
  const Target child{TargetKind::Thread, static_cast<int>(r.child_tid)};
  std::shared_ptr<Watch> parent;
  {
    MutexLock l(mutex_);
    auto it = watches_.find(Key{static_cast<int>(TargetKind::Thread), static_cast<int>(r.tid)});
    if (it != watches_.end()) parent = it->second;
  }
  if (parent && r.time_ns >= parent->attached_ns && parent->family) {
    Family& fam = *parent->family;
    MutexLock l(fam.mutex);
    if (!fam.closed) {
      ChildEvent e;
      e.kind = ChildEvent::Kind::Created;
      e.pid = static_cast<pid_t>(r.child_pid);
      e.tid = static_cast<pid_t>(r.child_tid);
      e.parent_tid = static_cast<pid_t>(r.tid);
      fam.events.push_back(e);
      // Not attached (no memory, a full ring): the engine's adoption fails
      // and counts it as dropped.
      if (attached) {
        auto w = std::make_shared<Watch>();
        w->listener = parent->listener;
        w->attached_ns = r.time_ns;
        w->family = parent->family;
        w->child = true;
        watch(child, w);
        fam.born[child.id] = Family::Born{std::move(w), r.value};
      }
      return parent;
    }
  }
  // Nobody follows it: the module must not keep it counting.
  if (attached) (void)device_.detach(child);
  return nullptr;
}

std::shared_ptr<Watch> RecordReader::route(const pfmfs_helper_record& r) {
  if (r.type == PFMFS_HELPER_REC_FORK) return routeFork(r);
  std::shared_ptr<Watch> w;
  {
    MutexLock l(mutex_);
    // Thread and cpu targets never coexist (the module refuses it), so an
    // interrupt belongs to the thread it hit if that is attached, else to
    // the cpu it hit.
    auto it = watches_.find(Key{static_cast<int>(TargetKind::Thread), static_cast<int>(r.tid)});
    if (it == watches_.end() && r.type == PFMFS_HELPER_REC_OVERFLOW)
      it = watches_.find(Key{static_cast<int>(TargetKind::Cpu), static_cast<int>(r.cpu)});
    if (it == watches_.end()) return nullptr;
    w = it->second;
  }
  if (r.time_ns < w->attached_ns) return nullptr;
  switch (r.type) {
    case PFMFS_HELPER_REC_OVERFLOW: {
      MutexLock l(w->mutex);
      w->overflows.push_back(r);
      w->frozen.store(true);
      return w;
    }
    case PFMFS_HELPER_REC_EXIT:
      w->exit_cpu_ns.store(r.value);
      w->exited.store(true);
      if (w->child && w->family) {
        ChildEvent e;
        e.kind = ChildEvent::Kind::Exited;
        e.pid = static_cast<pid_t>(r.pid);
        e.tid = static_cast<pid_t>(r.tid);
        e.final_time_ns = r.value;  // its CPU time: it may be reaped before we read it
        MutexLock l(w->family->mutex);
        w->family->events.push_back(e);
      }
      return w;
    default:
      return nullptr;
  }
}

void RecordReader::run() {
  std::vector<pfmfs_helper_record> buf(64);
  pollfd fds[2] = {{device_.fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) {
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return;
      continue;
    }
    auto n = device_.readRecords(buf);
    if (!n) return;
    for (std::size_t i = 0; i < *n; ++i) {
      const pfmfs_helper_record& r = buf[i];
      if (r.type == PFMFS_HELPER_REC_LOST) {
        // The ring was full: an interrupt went unreported. Every target is
        // told, so that none stays frozen waiting for a record that will
        // never come (takeOverflow unfreezes when its queue is empty).
        lost_.fetch_add(r.value, std::memory_order_relaxed);
        std::vector<std::shared_ptr<Watch>> all;
        {
          MutexLock l(mutex_);
          for (auto& [key, w] : watches_) all.push_back(w);
        }
        for (auto& w : all) {
          w->frozen.store(true);
          if (auto l = w->listener.lock()) l->attention();
        }
        continue;
      }
      if (auto w = route(r))
        if (auto l = w->listener.lock()) l->attention();
    }
  }
}

}  // namespace pfmfs::pmu::x86
