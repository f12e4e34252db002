// smpl_buf's bytes to samples (sample_buffer.h). Little-endian fields read
// with memcpy: the buffer's offsets are not aligned for every type.
#include "pfmstat/sample_buffer.h"

#include <cstring>

#include <fmt/format.h>

#include "pfmstat/errors.h"

namespace pfmstat {
namespace {

constexpr std::size_t kHeader = 128;         // pfm_dfl_smpl_hdr_t
constexpr std::size_t kEntry = 40;           // pfm_dfl_smpl_entry_t
constexpr std::uint32_t kVersion = 0x10000;  // hdr_version 1.0
constexpr std::size_t kCountAt = 0, kCurAt = 8, kOverflowsAt = 16, kVersionAt = 40;
constexpr std::size_t kPidAt = 0, kIpAt = 16, kTstampAt = 24, kCpuAt = 32, kTgidAt = 36;

template <typename T>
T get(std::string_view b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

}  // namespace

SampleBuffer parseSampleBuffer(std::string_view bytes, unsigned recorded_pmds) {
  if (bytes.size() < kHeader) throw RunError(fmt::format("smpl_buf has {} bytes, less than its header", bytes.size()));
  if (auto v = get<std::uint32_t>(bytes, kVersionAt); v != kVersion)
    throw RunError(fmt::format("smpl_buf has format version {:#x}, pfmstat reads {:#x}", v, kVersion));
  SampleBuffer out;
  out.count = get<std::uint64_t>(bytes, kCountAt);
  out.overflows = get<std::uint64_t>(bytes, kOverflowsAt);
  std::uint64_t cur = get<std::uint64_t>(bytes, kCurAt);
  std::size_t entry = kEntry + 8 * recorded_pmds;
  if (cur > bytes.size() || cur < kHeader || (cur - kHeader) / entry != out.count || (cur - kHeader) % entry != 0)
    throw RunError(
        fmt::format("smpl_buf's header says {} entries ending at {} in {} bytes", out.count, cur, bytes.size()));
  out.samples.reserve(out.count);
  for (std::uint64_t k = 0; k < out.count; ++k) {
    std::size_t at = kHeader + k * entry;
    SampleLine s;
    s.tid = get<std::uint32_t>(bytes, at + kPidAt);  // perfmon2's `pid` is the thread
    s.pid = get<std::uint32_t>(bytes, at + kTgidAt);
    s.ip = get<std::uint64_t>(bytes, at + kIpAt);
    s.tstamp = get<std::uint64_t>(bytes, at + kTstampAt);
    s.cpu = get<std::uint16_t>(bytes, at + kCpuAt);
    out.samples.push_back(s);
  }
  return out;
}

}  // namespace pfmstat
