#include "session/sealed_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "fastpath/page_fd.h"

namespace pfmfs::session {

Result<SealedRegion> SealedRegion::create(const char* name, std::size_t bytes) {
  pmu::Fd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return err(errno, "memfd_create: {}", std::strerror(errno));
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return err(errno, "ftruncate of a shared region of {} bytes: {}", bytes, std::strerror(errno));
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return err(errno, "mmap of a shared region of {} bytes: {}", bytes, std::strerror(errno));
  // Our writable mapping stays; nobody gets another (F_SEAL_FUTURE_WRITE,
  // Linux 5.1), nor a region of another size, nor to change the seals.
  if (::fcntl(fd.get(), F_ADD_SEALS, fastpath::kPageSeals) != 0) {
    int e = errno;
    ::munmap(p, bytes);
    return err(e, "sealing a shared region: {}", std::strerror(e));
  }
  return SealedRegion(std::move(fd), p, bytes);
}

SealedRegion::SealedRegion(SealedRegion&& o) noexcept
    : fd_(std::move(o.fd_)), data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

SealedRegion& SealedRegion::operator=(SealedRegion&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = std::move(o.fd_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

SealedRegion::~SealedRegion() { reset(); }

void SealedRegion::reset() {
  if (data_) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pfmfs::session
