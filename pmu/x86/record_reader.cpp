// The x86 backend's record thread.
#include "pmu/x86/record_reader.h"

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
  r->thread_ = std::thread([q = r.get()] { q->run(); });
  return r;
}

RecordReader::RecordReader(HelperDevice& device, Fd wake) : device_(device), wake_(std::move(wake)) {}

RecordReader::~RecordReader() {
  std::uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  if (thread_.joinable()) thread_.join();
}

void RecordReader::watch(const Target& target, std::shared_ptr<Watch> w) {
  std::lock_guard l(mutex_);
  watches_[Key{static_cast<int>(target.kind), target.id}] = std::move(w);
}

void RecordReader::unwatch(const Target& target) {
  std::lock_guard l(mutex_);
  watches_.erase(Key{static_cast<int>(target.kind), target.id});
}

std::shared_ptr<Watch> RecordReader::route(const pfmfs_helper_record& r) {
  std::shared_ptr<Watch> w;
  {
    std::lock_guard l(mutex_);
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
      std::lock_guard l(w->mutex);
      w->overflows.push_back(r);
      w->frozen.store(true);
      return w;
    }
    case PFMFS_HELPER_REC_EXIT:
      w->exited.store(true);
      return w;
    default:  // FORK: inheritance is not acted on by this backend yet
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
          std::lock_guard l(mutex_);
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
