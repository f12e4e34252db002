// Parsing of key=value records and numbers from the mount (see key_values.h).
#include "key_values.h"

#include "key_value.h"  // parseU64: the core's number syntax, shared

namespace pfmcompat::pfmlib {

namespace {

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::optional<KeyValues> KeyValues::parse(std::string_view line) {
  KeyValues out;
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && isBlank(line[i])) ++i;
    if (i == line.size()) break;
    std::size_t eq = line.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key(line.substr(i, eq - i));
    if (key.empty() || key.find_first_of(" \t") != std::string::npos) return std::nullopt;
    i = eq + 1;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      // Quoted: runs to the next unescaped quote, blanks included.
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) c = line[i++];
        value += c;
      }
      if (!closed) return std::nullopt;
    } else {
      while (i < line.size() && !isBlank(line[i])) value += line[i++];
    }
    out.pairs_.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

const std::string* KeyValues::find(std::string_view key) const {
  for (const auto& [k, v] : pairs_)
    if (k == key) return &v;
  return nullptr;
}

std::string_view trimRight(std::string_view text) {
  while (!text.empty() && isBlank(text.back())) text.remove_suffix(1);
  return text;
}

std::optional<std::uint64_t> parseNumber(std::string_view text) {
  text = trimRight(text);
  std::uint64_t v = 0;
  if (!parseU64(text.data(), text.size(), &v)) return std::nullopt;
  return v;
}

}  // namespace pfmcompat::pfmlib
