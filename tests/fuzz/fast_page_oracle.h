// The oracle of the fast path's page reader (fastpath/fast_read.h,
// fast_page.h): libpfm-compat maps a page another process wrote, so any
// bytes at all must leave the reader inside its own arrays.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "oracles.h"

namespace pfmfs::fuzz {

// The input is a page (zero-padded to 4096 bytes, what is past dropped)
// followed by nothing: snapshot, indexEntries and, for what they accept,
// pmdValue and groupValues over member counts taken from the page itself.
bool fastPage(std::string_view input, Fail fail);
std::vector<std::string> fastPageSeeds();

}  // namespace pfmfs::fuzz
