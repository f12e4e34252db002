// TextBuilder: appends that stop at the buffer's end and say so.
#include "text_builder.h"

#include <string.h>

namespace pfmcompat {

TextBuilder& TextBuilder::append(const char* s, size_t n) {
  // One byte is kept for the terminating NUL, so paths can be passed as is.
  if (len_ + n >= cap_) {
    overflow_ = true;
    return *this;
  }
  memcpy(buf_ + len_, s, n);  // memcpy and strlen are async-signal-safe
  len_ += n;
  buf_[len_] = '\0';
  return *this;
}

TextBuilder& TextBuilder::add(char c) { return append(&c, 1); }

TextBuilder& TextBuilder::add(const char* s) { return append(s, strlen(s)); }

TextBuilder& TextBuilder::dec(uint64_t v) {
  char digits[20];
  size_t n = sizeof digits;
  do {
    digits[--n] = char('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return append(digits + n, sizeof digits - n);
}

TextBuilder& TextBuilder::hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  char digits[18];
  size_t n = sizeof digits;
  do {
    digits[--n] = kDigits[v & 0xf];
    v >>= 4;
  } while (v != 0);
  digits[--n] = 'x';
  digits[--n] = '0';
  return append(digits + n, sizeof digits - n);
}

void TextBuilder::truncate(size_t len) {
  if (len < len_) len_ = len;
  terminate();
}

}  // namespace pfmcompat
