#include "pmu/number_text.h"

#include <cerrno>
#include <cstdint>

namespace pfmfs::pmu {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::uint64_t> decimalDigits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (!isDigit(c)) return std::nullopt;
    auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

std::string_view trimSpace(std::string_view text) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

Result<std::uint64_t> parseNumber(std::string_view text) {
  std::string_view t = trimSpace(text);
  if (t.empty()) return err(EINVAL, "a number is missing");
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    std::string_view digits = t.substr(2);
    if (digits.empty()) return err(EINVAL, "'{}': no hexadecimal digits after 0x", printable(t));
    std::uint64_t v = 0;
    for (char c : digits) {
      int d = hexDigit(c);
      if (d < 0) return err(EINVAL, "'{}' is not a number (bad hexadecimal digit)", printable(t));
      if (v >> 60) return err(EINVAL, "'{}' does not fit 64 bits", printable(t));
      v = v << 4 | static_cast<std::uint64_t>(d);
    }
    return v;
  }
  bool negative = t[0] == '-';
  std::string_view digits = negative ? t.substr(1) : t;
  if (digits.empty() || !isDigit(digits.front()))
    return err(EINVAL, "'{}' is not a number (decimal, 0x hexadecimal or -decimal)", printable(t));
  for (char c : digits)
    if (!isDigit(c)) return err(EINVAL, "'{}' is not a number (decimal, 0x hexadecimal or -decimal)", printable(t));
  auto v = decimalDigits(digits);
  if (!v) return err(EINVAL, "'{}' does not fit 64 bits", printable(t));
  return negative ? ~*v + 1 : *v;  // two's complement
}

}  // namespace pfmfs::pmu
