// A session's sampling buffer in perfmon2's default format (pfmfs(5),
// SAMPLING; fastpath/sample_layout.h): a header, then one entry per
// overflow with the values of the overflowed PMD's smpl_pmds. It lives in
// a sealed region (sealed_region.h) that libpfm-compat maps read-only into
// the program that owns the session. The seals keep anyone else from
// writing it; still, where the next entry goes and how many there are is
// this object's fields, which the header only shows.
//
// Not thread-safe: the session's lock guards it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fastpath/sample_layout.h"
#include "pmu/pmu_description.h"
#include "pmu/result.h"
#include "session/sealed_region.h"

namespace pfmfs::session {

// What smpl_fmt holds: a format and its argument; format "" is none.
struct SamplingSpec {
  std::string format;
  std::uint64_t buf_size = 0;
  std::uint32_t buf_flags = 0;

  bool operator==(const SamplingSpec&) const = default;
};

// One entry as `samples` shows it: the entry's fields, then what the
// binary layout has no room for (which PMDs the values are, the eventid).
struct SampleRecord {
  pid_t tid = 0;
  pid_t pid = 0;
  unsigned pmd = 0;
  std::uint64_t last_reset = 0;
  std::uint64_t ip = 0;
  std::uint64_t tstamp = 0;
  unsigned cpu = 0;
  std::uint16_t set = 0;
  std::uint64_t eventid = 0;
  pmu::RegMask smpl_pmds = 0;
  std::vector<std::uint64_t> values;  // one per bit of smpl_pmds, by PMD number
};

class SampleBuffer {
 public:
  // The room the largest entry needs on a PMU of `pmd_count` PMDs.
  static std::uint64_t minBufSpace(std::size_t pmd_count) {
    return sizeof(fastpath::DflEntry) + 8 * static_cast<std::uint64_t>(pmd_count);
  }
  // EINVAL with the reason for a spec the format refuses (pfmfs(5),
  // smpl_fmt); a spec with no format is valid.
  static Status validate(const SamplingSpec& spec, std::size_t pmd_count);
  // A new, empty buffer; `spec` valid and with a format.
  static Result<std::unique_ptr<SampleBuffer>> create(const SamplingSpec& spec, std::size_t pmd_count,
                                                      const std::string& name);

  // Writes one entry of `record` (its values count: one per smpl_pmds bit).
  // Returns true when the buffer is full after it: hdr_overflows has grown
  // and the next entry must wait for clear(). Never called while full.
  bool append(const SampleRecord& record);
  bool full() const { return full_; }
  void clear();  // restart: no entries, the write offset after the header
  void reset();  // load: clear() and hdr_overflows 0

  const SamplingSpec& spec() const { return spec_; }
  std::uint64_t count() const { return notes_.size(); }
  std::uint64_t overflows() const { return overflows_; }
  // Samples not written: overflows taken while the session was masked
  // (pfmfs(5) SAMPLING, smpl_dropped). Kept like hdr_overflows.
  void dropped(std::uint64_t n) { dropped_ += n; }
  std::uint64_t dropped() const { return dropped_; }
  // The memfd's bytes, what the owner's limit counts.
  std::size_t chargedBytes() const { return region_.size(); }
  int fd() const { return region_.fd(); }

  // buf_size bytes as a program would read them.
  std::vector<std::uint8_t> bytes() const;
  // Every entry, oldest first.
  std::vector<SampleRecord> records() const;

 private:
  struct Note {  // what an entry's bytes do not say
    std::uint64_t offset;
    std::uint64_t eventid;
    pmu::RegMask smpl_pmds;
  };

  SampleBuffer(const SamplingSpec& spec, std::uint64_t min_space, SealedRegion region);
  fastpath::DflHeader& header() { return *static_cast<fastpath::DflHeader*>(region_.data()); }
  std::uint8_t* base() const { return static_cast<std::uint8_t*>(region_.data()); }
  void publishHeader();

  SamplingSpec spec_;
  std::uint64_t min_space_;
  SealedRegion region_;
  std::uint64_t cur_offs_ = sizeof(fastpath::DflHeader);
  std::uint64_t overflows_ = 0;
  std::uint64_t dropped_ = 0;
  bool full_ = false;
  std::vector<Note> notes_;
};

}  // namespace pfmfs::session
