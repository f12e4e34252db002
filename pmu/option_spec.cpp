#include "pmu/option_spec.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include <fmt/format.h>

#include "pmu/number_text.h"

namespace pfmfs::pmu {

namespace {

Result<std::uint64_t> parseCount(const OptionSpec& spec, std::string_view value) {
  for (char c : value)
    if (c == ' ' || c == '\t' || c == '\n' || c == '-' || c == '+')
      return err(EINVAL, "--{}: '{}' is not a non-negative number", spec.name, printable(value));
  auto n = parseNumber(value);
  if (!n) return err(EINVAL, "--{}: {}", spec.name, n.error().reason);
  if (*n < spec.lo || *n > spec.hi) {
    if (spec.hi == UINT64_MAX) return err(EINVAL, "--{}: {} is too small (at least {})", spec.name, *n, spec.lo);
    return err(EINVAL, "--{}: {} is out of range ({}..{})", spec.name, *n, spec.lo, spec.hi);
  }
  return *n;
}

// "a, b or c"
std::string wordList(std::span<const std::string_view> words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace

Result<OptionValue> parseOptionValue(const OptionSpec& spec, std::string_view value) {
  switch (spec.kind) {
    case OptionSpec::Kind::Flag:
      if (!value.empty()) return err(EINVAL, "--{} takes no value", spec.name);
      return OptionValue{};
    case OptionSpec::Kind::Count: {
      auto n = parseCount(spec, value);
      if (!n) return n.error();
      return OptionValue{std::string(value), *n};
    }
    case OptionSpec::Kind::Word:
      for (std::string_view w : spec.words)
        if (value == w) return OptionValue{std::string(value), 0};
      return err(EINVAL, "--{}: '{}' is not {}", spec.name, printable(value), wordList(spec.words));
    case OptionSpec::Kind::Path: {
      if (value.empty()) return err(EINVAL, "--{}: a file name is missing", spec.name);
      auto path = absolutePath(value);
      if (!path) return err(EINVAL, "--{}: {}", spec.name, path.error().reason);
      return OptionValue{std::move(*path), 0};
    }
    case OptionSpec::Kind::Text:
      if (value.empty()) return err(EINVAL, "--{}: {} is missing", spec.name, spec.value_name);
      return OptionValue{std::string(value), 0};
  }
  return err(EINVAL, "--{}: an option of no known kind", spec.name);
}

std::string optionValueName(const OptionSpec& spec) {
  if (!spec.value_name.empty()) return std::string(spec.value_name);
  return fmt::format("{}", fmt::join(spec.words, "|"));
}

std::string optionSynopsis(const OptionSpec& spec) {
  if (spec.kind == OptionSpec::Kind::Flag) return fmt::format("--{}", spec.name);
  return fmt::format("--{}={}", spec.name, optionValueName(spec));
}

Result<std::string> absolutePath(std::string_view path) {
  if (path.empty()) return err(EINVAL, "an empty path");
  std::string joined;
  if (path.front() != '/') {
    std::vector<char> cwd(PATH_MAX);
    if (!::getcwd(cwd.data(), cwd.size()))
      return err(EINVAL, "cannot make '{}' absolute: no current directory", printable(path));
    joined = cwd.data();
    joined += '/';
  }
  joined += path;
  std::string out;
  std::size_t i = 0;
  while (i < joined.size()) {
    while (i < joined.size() && joined[i] == '/') ++i;
    std::size_t start = i;
    while (i < joined.size() && joined[i] != '/') ++i;
    std::string_view part(joined.data() + start, i - start);
    if (part.empty() || part == ".") continue;
    out += '/';
    out += part;
  }
  return out.empty() ? std::string("/") : out;
}

std::uint64_t countOr(const OptionValues& values, std::string_view name, std::uint64_t fallback) {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second.number;
}

std::string_view textOr(const OptionValues& values, std::string_view name, std::string_view fallback) {
  auto it = values.find(name);
  return it == values.end() ? fallback : std::string_view(it->second.text);
}

}  // namespace pfmfs::pmu
