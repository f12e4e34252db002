// What libpfm_bench's two sections (libpfm_bench.cpp: the sim, and
// libpfm_bench_perf.cpp: perf) share beyond the harness.
#pragma once

#include <string>

#include "bench_harness.h"

namespace libpfm_bench {

// The perf section, on `mount` once the sim's daemon has left it.
void perfSection(const bench::Sizes& z, const std::string& pfmfsd, const std::string& mount, const std::string& tmp);

// Closes a context's descriptor and checks what follows: its session leaves
// the mount within 5 s (FUSE's release is asynchronous, and the fast path's
// mapping answers until then), and pfm_read_pmds on the number is then EBADF.
void closeContext(int fd, const std::string& session);

}  // namespace libpfm_bench
