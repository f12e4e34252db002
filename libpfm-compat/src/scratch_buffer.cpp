// ScratchBuffer: eight static buffers claimed by bit, mmap beyond that.
#include "scratch_buffer.h"

#include <sys/mman.h>

#include <atomic>

namespace pfmcompat {
namespace {

constexpr int kPoolSlots = 8;
alignas(64) char g_pool[kPoolSlots][ScratchBuffer::kSize];
std::atomic<unsigned> g_busy{0};  // bit i: g_pool[i] is taken

}  // namespace

ScratchBuffer::ScratchBuffer() {
  unsigned busy = g_busy.load(std::memory_order_relaxed);
  for (;;) {
    unsigned free_bits = ~busy & ((1u << kPoolSlots) - 1);
    if (free_bits == 0) break;
    int i = __builtin_ctz(free_bits);
    if (g_busy.compare_exchange_weak(busy, busy | (1u << i), std::memory_order_acquire, std::memory_order_relaxed)) {
      slot_ = i;
      data_ = g_pool[i];
      return;
    }
  }
  void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) data_ = static_cast<char*>(p);
}

ScratchBuffer::~ScratchBuffer() {
  if (slot_ >= 0) {
    g_busy.fetch_and(~(1u << slot_), std::memory_order_release);
  } else if (data_) {
    munmap(data_, kSize);
  }
}

}  // namespace pfmcompat
