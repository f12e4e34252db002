// Reading the mount's text: records of `key=value` words, one per line
// (pmds, info, state), and the numbers in them. Works in place on a buffer
// the caller owns: no allocation, safe in signal handlers.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pfmcompat {

// A number as the mount prints it: decimal or 0x hexadecimal. False on
// anything else, including overflow past 64 bits.
bool parseU64(const char* s, size_t n, uint64_t* out);

// One line of a text buffer (no newline), and the way to the next.
struct Line {
  const char* begin = nullptr;
  size_t size = 0;
};

class LineCursor {
 public:
  LineCursor(const char* text, size_t size) : p_(text), end_(text + size) {}
  // The next non-empty line; false at the end.
  bool next(Line* line);

 private:
  const char* p_;
  const char* end_;
};

// The value of `key=` in a line of space-separated words, as text (in
// place) or as a number. False when the key is absent, or its value is not
// a number.
bool findWord(const Line& line, const char* key, Line* value);
bool findNumber(const Line& line, const char* key, uint64_t* out);

}  // namespace pfmcompat
