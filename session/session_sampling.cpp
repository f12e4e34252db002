// Sampling (pfmfs(5), SAMPLING): the format's buffer, and the entries the
// overflow path writes into it.
#include <fmt/format.h>

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>

#include "session/session_op.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

Status Session::setSampling(const SamplingSpec& spec) {
  Op op(*this);
  if (retired_) return fail(err(ENOENT, "session {} was destroyed", name_));
  if (loaded()) return fail(err(EBUSY, "the sampling format is chosen while unloaded: unload first"));
  if (Status st = SampleBuffer::validate(spec, desc_.pmds.size()); !st) return fail(st.error());
  const std::uint64_t limit = engine_.options().max_smpl_bytes_per_user;
  if (!spec.format.empty() && spec.buf_size > limit)
    return fail(err(
        ENOMEM, "buf_size={} is more than the {} bytes a user's buffers may take (pfmfsd --max-smpl-bytes-per-user)",
        spec.buf_size, limit));
  const std::uint64_t old_bytes = sample_buffer_ ? sample_buffer_->chargedBytes() : 0;
  std::unique_ptr<SampleBuffer> fresh;
  if (!spec.format.empty()) {
    const std::uint64_t bytes = fastpath::sampleBufferFileBytes(spec.buf_size);
    if (Status st = engine_.chargeSampleBytes(uid_, old_bytes, bytes); !st) return fail(st.error());
    auto made = SampleBuffer::create(spec, desc_.pmds.size(), fmt::format("pfmfs-smpl-{}", name_));
    if (!made) {
      (void)engine_.chargeSampleBytes(uid_, bytes, old_bytes);  // back as it was
      return fail(made.error());
    }
    fresh = std::move(*made);
  } else {
    (void)engine_.chargeSampleBytes(uid_, old_bytes, 0);
  }
  sample_buffer_ = std::move(fresh);
  return op.publish();
}

void Session::releaseSampleBuffer() {
  if (!sample_buffer_) return;
  (void)engine_.chargeSampleBytes(uid_, sample_buffer_->chargedBytes(), 0);
  sample_buffer_.reset();
}

SamplingSpec Session::sampling() const {
  MutexLock lock(mutex_);
  return sample_buffer_ ? sample_buffer_->spec() : SamplingSpec{};
}

std::vector<std::uint8_t> Session::sampleBytes() {
  Op op(*this);
  catchUp();
  op.publishUnreported();
  return sample_buffer_ ? sample_buffer_->bytes() : std::vector<std::uint8_t>{};
}

std::vector<SampleRecord> Session::samples() {
  Op op(*this);
  catchUp();
  op.publishUnreported();
  return sample_buffer_ ? sample_buffer_->records() : std::vector<SampleRecord>{};
}

Result<std::pair<pmu::Fd, std::uint64_t>> Session::sampleBufferFd() {
  MutexLock lock(mutex_);
  if (!sample_buffer_) return err(ENOENT, "session {} has no sampling format", name_);
  pmu::Fd fd(::fcntl(sample_buffer_->fd(), F_DUPFD_CLOEXEC, 0));
  if (!fd) return err(errno, "dup of the sampling buffer: {}", std::strerror(errno));
  return std::make_pair(std::move(fd), sample_buffer_->spec().buf_size);
}

// A followed child's overflow that the backend counted itself (perf): an
// entry, and the buffer-full notification if it fills; no carry, no reset
// (its counts and its period are the kernel's).
void Session::handleChildSample(DrivenThread& t, const pmu::HwOverflow& o) {
  if (!sample_buffer_) return;
  if (!counting()) {
    if (state_ == State::Masked) sample_buffer_->dropped(static_cast<std::uint64_t>(std::popcount(o.pmds)));
    return;
  }
  // Its set's, which may have been switched out since (or removed).
  EventSet* s = findSet(o.set);
  if (!s) {
    sample_buffer_->dropped(static_cast<std::uint64_t>(std::popcount(o.pmds)));
    return;
  }
  if (RegMask notify = recordSamples(t, *s, o.pmds & s->usedPmds(), o)) notifyOverflow(t, notify, 0, o);
}

// One entry per PMD of `pmds` in increasing number, until the buffer fills.
RegMask Session::recordSamples(DrivenThread& t, EventSet& s, RegMask pmds, const pmu::HwOverflow& o) {
  SampleRecord& r = record_;
  const bool target_thread = isTarget(t);
  r.tid = target_thread ? o.tid : t.tid;
  r.pid = target_thread ? o.pid : t.pid;
  r.ip = o.ip;
  r.tstamp = o.time_ns ? o.time_ns : counted_to_;
  r.cpu = static_cast<unsigned>(o.cpu);
  r.set = s.id();
  std::vector<ThreadPmd>& values = valuesOf(t, s);
  // The recorded PMDs' values at the interrupt: those counting now are in
  // the hardware below their upper bits.
  RegMask wanted = 0;
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot)
    if (pmds & regBit(desc_.pmds[slot].index)) wanted |= s.pmd(slot).smpl_pmds;
  // perf's sample carries them (HwOverflow::read_pmds); the others are read
  // now, which on the sim and x86 is still the interrupt's instant.
  // A child's sample on perf: its values are the kernel's, unknown here (0).
  RegMask live = o.child_sample ? 0 : wanted & s.usedPmds();
  const RegMask carried = o.read_values.size() == desc_.pmds.size() ? live & o.read_pmds : 0;
  hw_.resize(desc_.pmds.size());
  if (RegMask now = live & ~carried) readHw(t, now);
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot)
    if (carried & regBit(desc_.pmds[slot].index)) hw_[slot] = o.read_values[slot];
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const unsigned index = desc_.pmds[slot].index;
    if (!(pmds & regBit(index))) continue;
    const PmdState& p = s.pmd(slot);
    r.pmd = index;
    r.last_reset = values[slot].period_start;
    r.eventid = p.eventid;
    r.smpl_pmds = p.smpl_pmds;
    r.values.clear();
    for (std::size_t k = 0; k < desc_.pmds.size(); ++k) {
      const pmu::PmdDesc& d = desc_.pmds[k];
      if (!(p.smpl_pmds & regBit(d.index))) continue;
      std::uint64_t v = o.child_sample ? 0 : values[k].value;
      if (live & regBit(d.index)) v = (v & ~d.widthMask()) | (hw_[k] & d.widthMask());
      r.values.push_back(v);
    }
    if (sample_buffer_->append(r)) {
      // Full: the PMDs of this interrupt after it write no entry.
      const RegMask later = pmds & ~((regBit(index) << 1) - 1);
      sample_buffer_->dropped(static_cast<std::uint64_t>(std::popcount(later)));
      return regBit(index);
    }
  }
  return 0;
}

}  // namespace pfmfs::session
