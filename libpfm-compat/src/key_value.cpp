// Parsing of the mount's key=value lines, without allocation or locale.
#include "key_value.h"

#include <string.h>

namespace pfmcompat {

bool parseU64(const char* s, size_t n, uint64_t* out) {
  if (n == 0) return false;
  uint64_t v = 0;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    if (n - 2 > 16) return false;
    for (size_t i = 2; i < n; ++i) {
      char c = s[i];
      unsigned d;
      if (c >= '0' && c <= '9')
        d = unsigned(c - '0');
      else if (c >= 'a' && c <= 'f')
        d = unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        d = unsigned(c - 'A' + 10);
      else
        return false;
      v = (v << 4) | d;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      char c = s[i];
      if (c < '0' || c > '9') return false;
      uint64_t d = uint64_t(c - '0');
      if (v > (UINT64_MAX - d) / 10) return false;
      v = v * 10 + d;
    }
  }
  *out = v;
  return true;
}

bool LineCursor::next(Line* line) {
  while (p_ < end_) {
    const char* nl = static_cast<const char*>(memchr(p_, '\n', size_t(end_ - p_)));
    const char* stop = nl ? nl : end_;
    const char* begin = p_;
    p_ = nl ? nl + 1 : end_;
    if (stop > begin) {
      line->begin = begin;
      line->size = size_t(stop - begin);
      return true;
    }
  }
  return false;
}

bool findWord(const Line& line, const char* key, Line* value) {
  const size_t key_len = strlen(key);
  const char* p = line.begin;
  const char* end = line.begin + line.size;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
    const char* word = p;
    while (p < end && *p != ' ' && *p != '\t') ++p;
    size_t word_len = size_t(p - word);
    if (word_len > key_len && memcmp(word, key, key_len) == 0 && word[key_len] == '=') {
      value->begin = word + key_len + 1;
      value->size = word_len - key_len - 1;
      return true;
    }
  }
  return false;
}

bool findNumber(const Line& line, const char* key, uint64_t* out) {
  Line value;
  return findWord(line, key, &value) && parseU64(value.begin, value.size, out);
}

}  // namespace pfmcompat
