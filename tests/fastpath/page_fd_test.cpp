// fastpath/page_fd.h: the reader maps only a page the daemon could have
// made (a memfd of exactly one page with kPageSeals), so that nobody who
// answers in the daemon's place can hand it a file that shrinks under the
// mapping (SIGBUS) or changes as its owner likes. The daemon's own page
// (fs/fast_page_map.cpp) is the one that passes.
#include "fastpath/page_fd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>

#include "fs/fast_page_map.h"
#include "pmu/fd.h"

namespace pfmfs::fastpath {
namespace {

pmu::Fd memfdOf(std::size_t size, int seals) {
  pmu::Fd fd(::memfd_create("page_fd_test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd) << std::strerror(errno);
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0) << std::strerror(errno);
  if (seals) {
    EXPECT_EQ(::fcntl(fd.get(), F_ADD_SEALS, seals), 0) << std::strerror(errno);
  }
  return fd;
}

TEST(PageFd, TheDaemonsPageIsMappedAndReadsWhatItPublishes) {
  auto map = fs::FastPageMap::create("page_fd_test");
  ASSERT_TRUE(map.ok()) << map.error().reason;
  ASSERT_TRUE(isPageFd(map->fd()));
  const Page* page = mapPageFd(map->fd());
  ASSERT_NE(page, nullptr);
  Page next{};
  next.usable = 1;
  next.target_tid = 4242;
  next.pmd_count = 1;
  next.pmds[0].base = 77;
  publish(*map->page(), next);
  Page copy{};
  ASSERT_TRUE(snapshot(*page, copy));
  EXPECT_EQ(copy.target_tid, 4242);
  EXPECT_EQ(copy.pmds[0].base, 77u);
  // Read-only, for good: no writable mapping, no write(2), no new size.
  EXPECT_EQ(::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, map->fd(), 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(::pwrite(map->fd(), "x", 1, 0), -1);
  EXPECT_EQ(::ftruncate(map->fd(), 0), -1);
  EXPECT_EQ(errno, EPERM);
  ::munmap(const_cast<Page*>(page), kPageBytes);
}

TEST(PageFd, AMemfdWithoutEverySealIsRefused) {
  EXPECT_FALSE(isPageFd(memfdOf(kPageBytes, 0).get())) << "no seals: its owner can shrink it under the mapping";
  EXPECT_EQ(mapPageFd(memfdOf(kPageBytes, 0).get()), nullptr);
  for (int missing : {F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_FUTURE_WRITE, F_SEAL_SEAL}) {
    pmu::Fd fd = memfdOf(kPageBytes, kPageSeals & ~missing);
    EXPECT_FALSE(isPageFd(fd.get())) << "without seal 0x" << std::hex << missing;
    EXPECT_EQ(mapPageFd(fd.get()), nullptr);
  }
  EXPECT_TRUE(isPageFd(memfdOf(kPageBytes, kPageSeals).get()));
}

TEST(PageFd, APageOfAnotherSizeIsRefused) {
  for (std::size_t size : {std::size_t{0}, kPageBytes - 1, kPageBytes + 1, 2 * kPageBytes}) {
    pmu::Fd fd = memfdOf(size, kPageSeals);
    EXPECT_FALSE(isPageFd(fd.get())) << size << " bytes";
    EXPECT_EQ(mapPageFd(fd.get()), nullptr) << size << " bytes";
  }
}

TEST(PageFd, FilesThatAreNoMemfdAreRefused) {
  char path[] = "/tmp/page_fd_test.XXXXXX";
  pmu::Fd file(::mkstemp(path));
  ASSERT_TRUE(file);
  ::unlink(path);
  ASSERT_EQ(::ftruncate(file.get(), kPageBytes), 0);
  EXPECT_FALSE(isPageFd(file.get())) << "a regular file has no seals";
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pmu::Fd r(p[0]), w(p[1]);
  EXPECT_FALSE(isPageFd(r.get()));
  EXPECT_FALSE(isPageFd(-1));
  EXPECT_EQ(mapPageFd(-1), nullptr);
}

}  // namespace
}  // namespace pfmfs::fastpath
