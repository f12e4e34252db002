// Building the text the library writes to the mount (register lines, ctl
// commands, paths) in a caller's fixed buffer: no allocation, no locale, no
// stdio, so it can run inside a signal handler (pfm_restart from SIGIO).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pfmcompat {

class TextBuilder {
 public:
  TextBuilder(char* buf, size_t cap) : buf_(buf), cap_(cap) { terminate(); }

  TextBuilder& add(const char* s);
  TextBuilder& add(char c);
  TextBuilder& dec(uint64_t v);
  TextBuilder& hex(uint64_t v);  // "0x..." lower case

  const char* data() const { return buf_; }
  size_t size() const { return len_; }
  // True when something did not fit: the text is then cut and must not be used.
  bool overflowed() const { return overflow_; }
  // Back to an earlier size (to drop a line that did not fit).
  void truncate(size_t len);
  void clear() {
    truncate(0);
    overflow_ = false;
  }

 private:
  TextBuilder& append(const char* s, size_t n);  // all of it, or overflowed()
  void terminate() {
    if (cap_ > 0) buf_[len_ < cap_ ? len_ : cap_ - 1] = '\0';
  }

  char* buf_;
  size_t cap_;
  size_t len_ = 0;
  bool overflow_ = false;
};

}  // namespace pfmcompat
