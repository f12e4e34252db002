// perfmon2's default sampling format as it lies in memory (pfmfs(5),
// SAMPLING): the buffer pfmfsd fills (session/sample_buffer.h) and
// libpfm-compat maps into a program, whose C declaration is
// <perfmon/perfmon_dfl_smpl.h>. Like fast_page.h a contract between two
// builds: fixed-size fields, no pointers, no C++ runtime.
//
// The daemon is the only writer. It writes an entry before the header
// fields that cover it, each header word with a release store, so that a
// reader that loads hdr_count (acquire) and then walks that many entries
// reads entries that are complete, as perfmon2's kernel wrote them before
// it raised the count.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>

#include "fastpath/page_fd.h"

namespace pfmfs::fastpath {

inline constexpr char kDefaultFormat[] = "default";
inline constexpr std::uint32_t kDflVersion = 0x10000;  // 1.0, PFM_DFL_SMPL_VERSION

struct DflHeader {
  std::uint64_t count;          // hdr_count: entries in the buffer
  std::uint64_t cur_offs;       // hdr_cur_offs: where the next entry goes
  std::uint64_t overflows;      // hdr_overflows: times the buffer filled
  std::uint64_t buf_size;       // hdr_buf_size
  std::uint64_t min_buf_space;  // hdr_min_buf_space: the largest entry
  std::uint32_t version;        // hdr_version
  std::uint32_t buf_flags;      // hdr_buf_flags
  std::uint64_t reserved[10];
};

struct DflEntry {
  std::uint32_t tid;  // perfmon2's `pid`: the thread
  std::uint16_t ovfl_pmd;
  std::uint16_t reserved;
  std::uint64_t last_reset_val;
  std::uint64_t ip;
  std::uint64_t tstamp;
  std::uint16_t cpu;
  std::uint16_t set;
  std::uint32_t pid;  // perfmon2's `tgid`: the process
  // then one u64 per PMD of the overflowed PMD's smpl_pmds, by PMD number
};

static_assert(sizeof(DflHeader) == 128 && offsetof(DflHeader, version) == 40 && offsetof(DflHeader, reserved) == 48);
static_assert(sizeof(DflEntry) == 40 && offsetof(DflEntry, ip) == 16 && offsetof(DflEntry, cpu) == 32 &&
              offsetof(DflEntry, pid) == 36);

// The memfd of a buffer of `buf_size` bytes: its size rounded up to pages
// (the last page's worth of sizes, which no memfd has, to the last page).
inline std::size_t sampleBufferFileBytes(std::uint64_t buf_size) {
  const std::uint64_t pages = buf_size / kPageBytes + (buf_size % kPageBytes != 0);
  return static_cast<std::size_t>(pages * kPageBytes);
}

// Whether `fd` is a sampling buffer of `buf_size` bytes as pfmfsd seals it
// (the seals of page_fd.h: no writable mapping but the daemon's, no change
// of size), so that a mapping of it cannot be cut short under a reader.
inline bool isSampleBufferFd(int fd, std::uint64_t buf_size) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kPageSeals) != kPageSeals) return false;
  struct stat st;
  return ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
         static_cast<std::uint64_t>(st.st_size) == sampleBufferFileBytes(buf_size);
}

}  // namespace pfmfs::fastpath
