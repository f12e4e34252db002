// Reading the mount's text formats: one record per line of key=value pairs
// separated by blanks, a value optionally in double quotes, a backslash
// escaping the next character (pmu/events' desc=). Used by pmu_model.cpp and
// for event codes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pfmcompat::pfmlib {

// The pairs of one record, in the order they appear.
class KeyValues {
 public:
  // Splits `line`; nullopt when it is not a well-formed record (a word
  // without '=', an unterminated quote), so that a garbled file is noticed.
  static std::optional<KeyValues> parse(std::string_view line);

  // The value of `key`, or nullptr when the record lacks it.
  const std::string* find(std::string_view key) const;

 private:
  std::vector<std::pair<std::string, std::string>> pairs_;
};

// A whole-text number as the mount prints it: decimal or 0x hexadecimal,
// optional trailing newline. nullopt for anything else or more than 64 bits.
std::optional<std::uint64_t> parseNumber(std::string_view text);

// The text without trailing newlines and blanks.
std::string_view trimRight(std::string_view text);

}  // namespace pfmcompat::pfmlib
