// Room for one call's text (a vector of register lines, a `pmds` snapshot)
// without malloc, so that the calls a SIGIO handler makes are safe: a buffer
// is taken from a small static pool with one atomic operation, or, when every
// one is in use (threads, nested handlers), mapped with mmap, which is also
// async-signal-safe.
#pragma once

#include <stddef.h>

namespace pfmcompat {

class ScratchBuffer {
 public:
  // Enough for any file of a set: 64 PMDs of `pmds` at ~215 bytes a line.
  static constexpr size_t kSize = 64 * 1024;

  ScratchBuffer();
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // nullptr only when the pool is busy and mmap failed (ENOMEM).
  char* data() const { return data_; }
  size_t size() const { return kSize; }

 private:
  char* data_ = nullptr;
  int slot_ = -1;  // pool slot, or -1 when mapped
};

}  // namespace pfmcompat
