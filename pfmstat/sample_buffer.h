// A session's smpl_buf in perfmon2's default format (pfmfs(5), SAMPLING):
// its 128-byte header and its entries, checked against each other.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "pfmstat/data_file.h"

namespace pfmstat {

struct SampleBuffer {
  std::uint64_t count = 0;      // hdr_count
  std::uint64_t overflows = 0;  // hdr_overflows: the times it filled since the load
  std::vector<SampleLine> samples;
};

// `recorded_pmds`: how many u64 values follow each 40-byte entry (the
// sampling PMD's smpl_pmds). Throws RunError on a buffer whose header does
// not match its size or version.
SampleBuffer parseSampleBuffer(std::string_view bytes, unsigned recorded_pmds);

}  // namespace pfmstat
