#include "session/sample_buffer.h"

#include <bit>
#include <cstring>

#include <fmt/format.h>

namespace pfmfs::session {

namespace {

// A header word as a reader of the mapping loads it: after the entries it covers.
void store(std::uint64_t& word, std::uint64_t v) { __atomic_store_n(&word, v, __ATOMIC_RELEASE); }

}  // namespace

Status SampleBuffer::validate(const SamplingSpec& spec, std::size_t pmd_count) {
  if (spec.format.empty()) return {};
  if (spec.format != fastpath::kDefaultFormat)
    return err(EINVAL, "no sampling format '{}': the formats are: {}", spec.format, fastpath::kDefaultFormat);
  const std::uint64_t min = sizeof(fastpath::DflHeader) + minBufSpace(pmd_count);
  if (spec.buf_size < min)
    return err(
        EINVAL,
        "buf_size={} is too small: the default format needs at least {} bytes (its header and one entry of {} PMDs)",
        spec.buf_size, min, pmd_count);
  if (spec.buf_flags != 0) return err(EINVAL, "buf_flags={:#x}: the default format has no flags", spec.buf_flags);
  return {};
}

Result<std::unique_ptr<SampleBuffer>> SampleBuffer::create(const SamplingSpec& spec, std::size_t pmd_count,
                                                           const std::string& name) {
  if (Status st = validate(spec, pmd_count); !st) return st.error();
  auto region = SealedRegion::create(name.c_str(), fastpath::sampleBufferFileBytes(spec.buf_size));
  if (!region) return region.error();
  return std::unique_ptr<SampleBuffer>(new SampleBuffer(spec, minBufSpace(pmd_count), std::move(*region)));
}

SampleBuffer::SampleBuffer(const SamplingSpec& spec, std::uint64_t min_space, SealedRegion region)
    : spec_(spec), min_space_(min_space), region_(std::move(region)) {
  // A fresh memfd reads as zeros: only the fields that are not need writing.
  fastpath::DflHeader& h = header();
  h.buf_size = spec.buf_size;
  h.min_buf_space = min_space_;
  h.version = fastpath::kDflVersion;
  h.buf_flags = spec.buf_flags;
  publishHeader();
}

void SampleBuffer::publishHeader() {
  fastpath::DflHeader& h = header();
  store(h.cur_offs, cur_offs_);
  store(h.overflows, overflows_);
  store(h.count, notes_.size());
}

bool SampleBuffer::append(const SampleRecord& r) {
  const std::size_t size = sizeof(fastpath::DflEntry) + 8 * r.values.size();
  std::uint8_t* at = base() + cur_offs_;
  fastpath::DflEntry e{};
  e.tid = static_cast<std::uint32_t>(r.tid);
  e.ovfl_pmd = static_cast<std::uint16_t>(r.pmd);
  e.last_reset_val = r.last_reset;
  e.ip = r.ip;
  e.tstamp = r.tstamp;
  e.cpu = static_cast<std::uint16_t>(r.cpu);
  e.set = r.set;
  e.pid = static_cast<std::uint32_t>(r.pid);
  std::memcpy(at, &e, sizeof e);
  if (!r.values.empty()) std::memcpy(at + sizeof e, r.values.data(), 8 * r.values.size());
  notes_.push_back(Note{cur_offs_, r.eventid, r.smpl_pmds});
  cur_offs_ += size;
  // perfmon2's post-check: full as soon as the largest entry would not fit,
  // so that no overflow finds the buffer without room for its sample.
  if (spec_.buf_size - cur_offs_ < min_space_) {
    full_ = true;
    ++overflows_;
  }
  publishHeader();
  return full_;
}

void SampleBuffer::clear() {
  notes_.clear();
  cur_offs_ = sizeof(fastpath::DflHeader);
  full_ = false;
  publishHeader();
}

void SampleBuffer::reset() {
  overflows_ = 0;
  dropped_ = 0;
  clear();
}

std::vector<std::uint8_t> SampleBuffer::bytes() const {
  return std::vector<std::uint8_t>(base(), base() + spec_.buf_size);
}

std::vector<SampleRecord> SampleBuffer::records() const {
  std::vector<SampleRecord> out;
  out.reserve(notes_.size());
  for (const Note& n : notes_) {
    fastpath::DflEntry e;
    std::memcpy(&e, base() + n.offset, sizeof e);
    SampleRecord& r = out.emplace_back();
    r.tid = static_cast<pid_t>(e.tid);
    r.pid = static_cast<pid_t>(e.pid);
    r.pmd = e.ovfl_pmd;
    r.last_reset = e.last_reset_val;
    r.ip = e.ip;
    r.tstamp = e.tstamp;
    r.cpu = e.cpu;
    r.set = e.set;
    r.eventid = n.eventid;
    r.smpl_pmds = n.smpl_pmds;
    r.values.resize(static_cast<std::size_t>(std::popcount(n.smpl_pmds)));
    if (!r.values.empty()) std::memcpy(r.values.data(), base() + n.offset + sizeof e, 8 * r.values.size());
  }
  return out;
}

}  // namespace pfmfs::session
