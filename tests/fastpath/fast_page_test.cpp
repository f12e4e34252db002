// The fast path's sequence lock (fastpath/fast_page.h): a reader never keeps
// a torn page, whatever the writer does meanwhile, in the same process (under
// TSan in CI) and through a read-only mapping of a memfd in another process,
// as libpfm-compat reads it.
#include "fastpath/fast_page.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace pfmfs::fastpath {
namespace {

// A page whose every field says which generation `g` wrote it: a copy that
// mixes two generations is caught by consistentWith().
Page generation(std::uint64_t g) {
  Page p{};
  p.usable = static_cast<std::uint32_t>(g & 1);
  p.target_tid = static_cast<std::int32_t>(g % 100000);
  p.set = static_cast<std::uint32_t>(g % 65536);
  p.group = g;
  p.group_size = g * 3;
  p.switch_running_ns = ~g;
  p.pmd_count = 1 + g % kMaxPmds;
  for (std::size_t i = 0; i < kMaxPmds; ++i) {
    p.pmds[i].upper = g << 32;
    p.pmds[i].base = g + i;
    p.pmds[i].ref = g * 7 + i;
    p.pmds[i].width_mask = (1ULL << 47) - 1;
    p.pmds[i].last_reset = g ^ i;
    p.pmds[i].switch_left = g * i;
    p.pmds[i].index = static_cast<std::uint32_t>(i + (g % 3));
    p.pmds[i].source = static_cast<std::uint16_t>(1 + (g + i) % 2);
    p.pmds[i].member = static_cast<std::uint16_t>(g + i);
  }
  return p;
}

// The header and the first pmd_count entries are all of generation
// copy.group; what is the first word that is not, or -1.
int tornAt(const Page& copy) {
  const Page want = generation(copy.group);
  if (copy.pmd_count != want.pmd_count) return 0;
  if (std::memcmp(&copy.usable, &want.usable, offsetof(Page, pmds) - offsetof(Page, usable)) != 0) return 1;
  for (std::size_t i = 0; i < copy.pmd_count; ++i)
    if (std::memcmp(&copy.pmds[i], &want.pmds[i], sizeof(PmdEntry)) != 0) return 2 + static_cast<int>(i);
  return -1;
}

TEST(FastPage, NotReadyUntilTheFirstPublication) {
  auto shared = std::make_unique<Page>();
  Page copy{};
  EXPECT_FALSE(snapshot(*shared, copy));
  publish(*shared, generation(5));
  ASSERT_TRUE(snapshot(*shared, copy));
  EXPECT_EQ(copy.magic, kMagic);
  EXPECT_EQ(copy.version, kVersion);
  EXPECT_EQ(copy.seq, 2u);
  EXPECT_EQ(copy.group, 5u);
  EXPECT_EQ(tornAt(copy), -1);
}

TEST(FastPage, EachPublicationAdvancesTheSequenceByTwo) {
  auto shared = std::make_unique<Page>();
  Page copy{};
  for (std::uint64_t g = 1; g <= 10; ++g) {
    publish(*shared, generation(g));
    ASSERT_TRUE(snapshot(*shared, copy));
    EXPECT_EQ(copy.seq, 2 * g);
    EXPECT_EQ(copy.group, g);
    EXPECT_EQ(tornAt(copy), -1);
  }
}

TEST(FastPage, AnotherVersionIsNotRead) {
  auto shared = std::make_unique<Page>();
  publish(*shared, generation(1));
  shared->version = kVersion + 1;
  Page copy{};
  EXPECT_FALSE(snapshot(*shared, copy));
  shared->version = kVersion;
  shared->magic = 0;
  EXPECT_FALSE(snapshot(*shared, copy));
}

TEST(FastPage, AWriterInTheMiddleIsWaitedForThenGivenUp) {
  auto shared = std::make_unique<Page>();
  publish(*shared, generation(1));
  shared->seq = 3;  // a writer stopped half way
  Page copy{};
  EXPECT_FALSE(snapshot(*shared, copy, 1000));
  shared->seq = 4;
  EXPECT_TRUE(snapshot(*shared, copy));
}

TEST(FastPage, AnOutOfRangeCountStaysInsideThePage) {
  auto shared = std::make_unique<Page>();
  Page bad = generation(1);
  bad.pmd_count = 1000;
  publish(*shared, bad);
  Page copy{};
  ASSERT_TRUE(snapshot(*shared, copy));
  EXPECT_EQ(copy.pmd_count, 1000u);  // the caller bounds it; the copy did
}

// Readers against a writer that publishes as fast as it can, but for a
// pause of a few microseconds between publications (the daemon publishes at the end of an
// operation, never back to back; a writer that never stops would starve
// the readers, which then ask the mount): every copy a reader keeps is one
// generation whole, and generations never go back.
TEST(FastPage, ReadersNeverKeepATornPage) {
  auto shared = std::make_unique<Page>();
  publish(*shared, generation(1));
  constexpr std::uint64_t kGenerations = 20000;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (std::uint64_t g = 2; g <= kGenerations; ++g) {
      publish(*shared, generation(g));
      for (int i = 0; i < 256; ++i) detail::relax();
    }
    done = true;
  });
  constexpr int kReaders = 2;
  std::vector<std::uint64_t> kept(kReaders), refused(kReaders), torn(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r)
    readers.emplace_back([&, r] {
      Page copy{};
      std::uint64_t last = 0;
      while (!done.load(std::memory_order_relaxed) || last < kGenerations) {
        if (!snapshot(*shared, copy)) {
          ++refused[r];
          continue;
        }
        ++kept[r];
        if (tornAt(copy) >= 0 || copy.group < last) ++torn[r];
        last = copy.group;
      }
    });
  writer.join();
  for (auto& t : readers) t.join();
  for (int r = 0; r < kReaders; ++r) {
    EXPECT_EQ(torn[r], 0u) << "reader " << r << " kept " << kept[r] << " copies";
    EXPECT_GT(kept[r], 0u) << "reader " << r << " was refused " << refused[r] << " times";
  }
}

// As libpfm-compat reads it: another process, a read-only mapping of the
// daemon's memfd.
TEST(FastPage, AReadOnlyMappingInAnotherProcessSeesWholePages) {
  int fd = memfd_create("pfmfs-fast-page-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kPageBytes), 0);
  void* rw = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(rw, MAP_FAILED);
  auto* page = static_cast<Page*>(rw);
  publish(*page, generation(1));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    void* ro = mmap(nullptr, kPageBytes, PROT_READ, MAP_SHARED, fd, 0);
    if (ro == MAP_FAILED) _exit(10);
    const auto* seen = static_cast<const Page*>(ro);
    Page copy{};
    std::uint64_t last = 0, kept = 0;
    // Until the parent's last generation, 200000.
    while (last < 200000) {
      if (!snapshot(*seen, copy, 4)) continue;
      if (tornAt(copy) >= 0) _exit(11);
      if (copy.group < last) _exit(12);
      last = copy.group;
      ++kept;
    }
    _exit(kept > 0 ? 0 : 13);
  }
  for (std::uint64_t g = 2; g <= 200000; ++g) publish(*page, generation(g));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  munmap(rw, kPageBytes);
  close(fd);
}

}  // namespace
}  // namespace pfmfs::fastpath
