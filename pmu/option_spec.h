// Long options as data: a row says an option's name, what its value must be
// and its line of --help. pfmfsd's own options (fs/daemon_options.cpp) and
// each backend's (pmu/backend_registry.h) are such rows; one parser checks a
// value against its row and one function writes the help line, so that
// what --help says and what is accepted cannot drift apart.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "pmu/result.h"

namespace pfmfs::pmu {

struct OptionSpec {
  enum class Kind {
    Flag,   // no value
    Count,  // decimal or 0x hexadecimal, no sign, within [lo, hi]
    Word,   // one of `words`
    Path,   // a file name, made absolute (it must still name the file after the daemon's chdir("/"))
    Text,   // anything not empty; its meaning is the option's (a group name)
  };
  std::string_view name;  // without the leading "--"
  Kind kind = Kind::Flag;
  std::string_view value_name;  // --help's VALUE in --name=VALUE; for a Word, its words joined by '|'
  std::string_view help;
  std::uint64_t lo = 0;  // Count
  std::uint64_t hi = UINT64_MAX;
  std::span<const std::string_view> words = {};  // Word
};

// A value that passed its row: `text` as given (a Path made absolute),
// `number` for a Count.
struct OptionValue {
  std::string text;
  std::uint64_t number = 0;
  bool operator==(const OptionValue&) const = default;
};

// The options given, by name.
using OptionValues = std::map<std::string, OptionValue, std::less<>>;

// Checks `value` against `spec`: EINVAL with a one-line reason that starts
// with --NAME for a missing or malformed value, a number out of range or a
// word not in the list.
Result<OptionValue> parseOptionValue(const OptionSpec& spec, std::string_view value);

// What --help calls the value: value_name, or a Word's words joined by '|'.
std::string optionValueName(const OptionSpec& spec);

// The left column of --help: "--name=VALUE", or "--name" for a flag.
std::string optionSynopsis(const OptionSpec& spec);

// `path` (not empty) as an absolute path: relative ones under the current
// directory, with "." components and repeated or trailing slashes dropped.
Result<std::string> absolutePath(std::string_view path);

// A Count or Word given in `values`, or `fallback` when it was not.
std::uint64_t countOr(const OptionValues& values, std::string_view name, std::uint64_t fallback);
std::string_view textOr(const OptionValues& values, std::string_view name, std::string_view fallback);

}  // namespace pfmfs::pmu
