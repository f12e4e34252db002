#include "fs/fast_page_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "fastpath/page_fd.h"

namespace pfmfs::fs {

Result<FastPageMap> FastPageMap::create(const char* name) {
  pmu::Fd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return err(errno, "memfd_create: {}", std::strerror(errno));
  if (::ftruncate(fd.get(), fastpath::kPageBytes) != 0)
    return err(errno, "ftruncate of the fast-path page: {}", std::strerror(errno));
  void* p = ::mmap(nullptr, fastpath::kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) return err(errno, "mmap of the fast-path page: {}", std::strerror(errno));
  // Our writable mapping stays; nobody gets another (F_SEAL_FUTURE_WRITE,
  // Linux 5.1), nor a page of another size, nor to change the seals: the
  // seals libpfm-compat requires of a page before it maps one (page_fd.h).
  if (::fcntl(fd.get(), F_ADD_SEALS, fastpath::kPageSeals) != 0) {
    int e = errno;
    ::munmap(p, fastpath::kPageBytes);
    return err(e, "sealing the fast-path page: {}", std::strerror(e));
  }
  return FastPageMap(std::move(fd), new (p) fastpath::Page{});
}

FastPageMap::FastPageMap(FastPageMap&& o) noexcept : fd_(std::move(o.fd_)), page_(std::exchange(o.page_, nullptr)) {}

FastPageMap::~FastPageMap() {
  if (page_) ::munmap(page_, fastpath::kPageBytes);
}

}  // namespace pfmfs::fs
