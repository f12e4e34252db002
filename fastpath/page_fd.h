// The fast-path page's descriptor, as both sides check it: pfmfsd makes a
// memfd of one page and seals it (fs/fast_page_map.cpp); libpfm-compat maps
// a descriptor it received only if it has exactly those seals and that
// size, which no other file has. A page with the seals cannot shrink under
// the reader's mapping (SIGBUS), cannot grow, and cannot be written through
// any mapping or write(2) made after the daemon's own. Plain system calls:
// usable from a signal handler, with no C++ runtime.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fastpath/fast_page.h"

namespace pfmfs::fastpath {

// F_SEAL_FUTURE_WRITE (Linux 5.1): the daemon keeps its writable mapping,
// nobody gets another. F_SEAL_SEAL: nobody may change the set.
inline constexpr int kPageSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL;

// Whether `fd` is such a page. The seals first: once they hold, the size
// can no longer change between the check and the mapping.
inline bool isPageFd(int fd) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kPageSeals) != kPageSeals) return false;
  struct stat st;
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == static_cast<off_t>(kPageBytes);
}

// `fd` mapped read-only if isPageFd(fd); nullptr otherwise. The caller
// closes fd either way, and unmaps kPageBytes.
inline const Page* mapPageFd(int fd) {
  if (!isPageFd(fd)) return nullptr;
  void* m = ::mmap(nullptr, kPageBytes, PROT_READ, MAP_SHARED, fd, 0);
  return m == MAP_FAILED ? nullptr : static_cast<const Page*>(m);
}

}  // namespace pfmfs::fastpath
