// Numbers as users write them, on the command line and in pfmfs's files:
// the one parser every layer shares, so that "0x10" and "-1" mean the same
// to pfmfsd's options, the sim's event files and a PMD write.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "pmu/result.h"

namespace pfmfs::pmu {

inline bool isDigit(char c) { return c >= '0' && c <= '9'; }

// The value of a hexadecimal digit, -1 for anything else.
int hexDigit(char c);

// Digits only, no sign, no blanks; nullopt on anything else or overflow.
std::optional<std::uint64_t> decimalDigits(std::string_view s);

// The text without the blanks and newlines around it (`echo` adds one).
std::string_view trimSpace(std::string_view text);

// A number: decimal, 0x/0X hexadecimal, or '-' followed by a decimal stored as
// its 64-bit two's complement ("-1000" overflows after 1000 events). Blanks
// and newlines around it are dropped; anything else (empty, signs on hex,
// "+", blanks inside, trailing junk, more than 64 bits of magnitude) is
// EINVAL with a reason that quotes the text.
Result<std::uint64_t> parseNumber(std::string_view text);

}  // namespace pfmfs::pmu
