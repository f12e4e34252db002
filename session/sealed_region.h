// Memory pfmfsd shares read-only with a client: a memfd of whole pages,
// mapped writable here once and then sealed (fastpath/page_fd.h's seals:
// no other writable mapping, no write(2), no change of size or seals). A
// client that receives the descriptor (over the fast-path socket) can map
// it read-only and nothing else. The fast-path page (fs/fast_page_map.h)
// and the sampling buffers (sample_buffer.h) live in one each.
#pragma once

#include <cstddef>

#include "pmu/fd.h"
#include "pmu/result.h"

namespace pfmfs::session {

class SealedRegion {
 public:
  // `bytes` a multiple of the page size; `name` shows in /proc/PID/fd.
  static Result<SealedRegion> create(const char* name, std::size_t bytes);
  SealedRegion() = default;
  ~SealedRegion();
  SealedRegion(SealedRegion&& o) noexcept;
  SealedRegion& operator=(SealedRegion&& o) noexcept;
  SealedRegion(const SealedRegion&) = delete;
  SealedRegion& operator=(const SealedRegion&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  int fd() const { return fd_.get(); }

 private:
  SealedRegion(pmu::Fd fd, void* data, std::size_t size) : fd_(std::move(fd)), data_(data), size_(size) {}
  void reset();

  pmu::Fd fd_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace pfmfs::session
