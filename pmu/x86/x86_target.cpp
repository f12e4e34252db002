// The x86 backend's per-target PMU.
#include "pmu/x86/x86_target.h"

#include <algorithm>
#include <cstdio>

namespace pfmfs::pmu::x86 {

// ---- TargetMsrs ------------------------------------------------------------------

void TargetMsrs::writeMsr(std::uint32_t addr, std::uint64_t value) {
  queue_.push_back(pfmfs_helper_msr{addr, 0, value});
  if (queue_.size() == PFMFS_HELPER_MAX_BATCH) flush();
}

std::uint64_t TargetMsrs::readMsr(std::uint32_t addr) {
  std::uint64_t v = 0;
  readMsrs(std::span(&addr, 1), std::span(&v, 1));
  return v;
}

void TargetMsrs::readMsrs(std::span<const std::uint32_t> addrs, std::span<std::uint64_t> out) {
  flush();
  pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH];
  for (std::size_t done = 0; done < addrs.size();) {
    std::size_t n = std::min<std::size_t>(addrs.size() - done, PFMFS_HELPER_MAX_BATCH);
    for (std::size_t i = 0; i < n; ++i) ops[i] = pfmfs_helper_msr{addrs[done + i], 0, 0};
    Status st = device_.readMsrs(target_, std::span(ops, n));
    for (std::size_t i = 0; i < n; ++i) out[done + i] = st ? ops[i].value : 0;
    keep(st);
    done += n;
  }
}

void TargetMsrs::flush() {
  if (queue_.empty()) return;
  keep(device_.writeMsrs(target_, queue_));
  queue_.clear();
}

Status TargetMsrs::takeError() {
  Status st = std::move(error_);
  error_ = Status{};
  return st;
}

void TargetMsrs::keep(Status st) {
  if (st) return;
  if (st.code() == -ESRCH || st.code() == -ENOENT) lost_ = true;
  if (error_.ok()) error_ = std::move(st);
}

namespace {

// Collects the writes a driver makes: the module's child template is the
// image the driver would put on a PMU that holds nothing.
class RecordedMsrs final : public intel::MsrAccess {
 public:
  void writeMsr(std::uint32_t addr, std::uint64_t value) override { ops.push_back(pfmfs_helper_msr{addr, 0, value}); }
  std::uint64_t readMsr(std::uint32_t) override { return 0; }
  std::vector<pfmfs_helper_msr> ops;
};

}  // namespace

// ---- X86Target --------------------------------------------------------------------

X86Target::X86Target(const PmuDescription& desc, HelperDevice& device, RecordReader& reader, const Target& target,
                     std::shared_ptr<Watch> watch, std::optional<ThreadCpuTime> cpu_time, bool from_creation)
    : desc_(desc),
      device_(device),
      reader_(reader),
      target_(target),
      watch_(std::move(watch)),
      msrs_(device, target),
      driver_(desc, msrs_),
      cpu_time_(std::move(cpu_time)) {
  if (!from_creation) base_ = rawTime();
}

X86Target::~X86Target() {
  // A family's children not adopted yet go with it; adopted ones are
  // followers, which the engine lets go itself.
  if (watch_->family && !watch_->child) reader_.closeFamily(*watch_->family);
  reader_.unwatch(target_);
  (void)device_.detach(target_);  // fails harmlessly for a thread the module already let go
}

Status X86Target::loadSet(const SetImage& image) {
  skip_enable_ = false;
  if (auto born = std::exchange(born_, std::nullopt); born && born->sameAs(image)) {
    // The module gave this child that very image at its creation: what it
    // counted since then stays.
    skip_enable_ = born->counting;
    return {};
  }
  driver_.loadImage(image.pmcs, image.pmds, image.pmd_bits);
  msrs_.flush();
  return msrs_.takeError();
}

// The module froze the counters at the interrupt, so a reload now is a
// reload at the interrupt (but for the skid of a real PMU).
void X86Target::reloadPmd(unsigned index, std::uint64_t hw_bits) {
  skip_enable_ = false;
  driver_.writePmd(index, hw_bits);
  msrs_.flush();
  report(msrs_.takeError());
}

void X86Target::readPmds(RegMask pmds, std::span<std::uint64_t> out) {
  driver_.readPmds(pmds, out);
  report(msrs_.takeError());
}

void X86Target::enable() {
  enabled_ = true;
  if (std::exchange(skip_enable_, false)) return;  // counting since its creation (and frozen if it overflowed)
  watch_->frozen.store(false);
  driver_.enable();
  msrs_.flush();
  report(msrs_.takeError());
}

void X86Target::disable() {
  skip_enable_ = false;
  enabled_ = false;
  driver_.disable();
  msrs_.flush();
  report(msrs_.takeError());
}

// A thread's time stops where its counts stopped: at its last switch-out,
// whose CPU time the module's EXIT record carries. (Its schedstat, read
// while it runs, is as of its last tick: up to 4 ms short.)
std::uint64_t X86Target::timeNs() {
  if (frozen_time_) return *frozen_time_;
  if (watch_->exited.load()) return freeze(watch_->exit_cpu_ns.load());
  return liveTimeNs();
}

std::uint64_t X86Target::liveTimeNs() {
  std::uint64_t raw = rawTime();
  std::uint64_t t = raw >= base_ ? raw - base_ : 0;
  if (t < last_) t = last_;  // never backwards, whatever the source does
  return last_ = t;
}

// At the CPU time the module reported, or where it was last read if that
// is later.
std::uint64_t X86Target::freeze(std::optional<std::uint64_t> final_time_ns) {
  std::uint64_t t = liveTimeNs();
  if (final_time_ns && *final_time_ns >= base_) t = std::max(t, *final_time_ns - base_);
  frozen_time_ = t;
  return t;
}

std::optional<HwOverflow> X86Target::takeOverflow() {
  pfmfs_helper_record r{};
  {
    MutexLock l(watch_->mutex);
    if (!watch_->overflows.empty()) {
      r = watch_->overflows.front();
      watch_->overflows.pop_front();
    }
  }
  if (r.type == 0) {
    // Every interrupt is taken: the engine has applied its resets, so the
    // counters the module froze may count again, unless the engine itself
    // stopped them meanwhile (a mask, an unload).
    if (watch_->frozen.exchange(false) && enabled_) {
      driver_.enable();
      msrs_.flush();
      report(msrs_.takeError());
    }
    return std::nullopt;
  }
  HwOverflow o;
  o.pmds = driver_.statusToPmds(r.value);
  o.ip = r.ip;
  o.time_ns = r.time_ns;
  o.cpu = static_cast<int>(r.cpu);
  o.pid = static_cast<pid_t>(r.pid);
  o.tid = static_cast<pid_t>(r.tid);
  return o;
}

// An interrupt the module took (the counters froze there) whose record
// the engine has not taken yet: the engine takes it before the set leaves
// the PMU, so that its carry lands in the set that counted it. (A record
// still in the module's ring, not yet read by the record thread, is not
// seen here: a window of microseconds after the NMI.)
RegMask X86Target::overflowsInSkid() {
  std::uint64_t status = 0;
  {
    MutexLock l(watch_->mutex);
    for (const auto& r : watch_->overflows) status |= r.value;
  }
  return status ? driver_.statusToPmds(status) : 0;
}

void X86Target::hold(bool held) { report(device_.hold(target_, held)); }

bool X86Target::gone() {
  if (watch_->exited.load() || msrs_.lost()) return true;
  return cpu_time_ && !cpu_time_->read();
}

void X86Target::takeChildEvents(std::vector<ChildEvent>& out) {
  if (!watch_->family) return;
  MutexLock l(watch_->family->mutex);
  auto& events = watch_->family->events;
  out.insert(out.end(), events.begin(), events.end());
  events.clear();
}

// A child the module attached at its creation, with the template of that
// moment: its PMU is its register image there. Adopted with its time from
// its creation; already reaped, with its time from its EXIT record.
Result<std::unique_ptr<TargetPmu>> X86Target::adoptChild(pid_t tid, std::weak_ptr<TargetListener> /*listener*/) {
  if (!watch_->family) return err(EINVAL, "thread {} does not follow its children (no inherit)", target_.id);
  Family::Born born;
  {
    MutexLock l(watch_->family->mutex);
    auto it = watch_->family->born.find(tid);
    if (it == watch_->family->born.end())
      return err(ESRCH, "thread {} was not attached by the helper module at its creation", tid);
    born = std::move(it->second);
    watch_->family->born.erase(it);
  }
  // Its listener is the family's, set by the reader: the same session.
  auto child = std::make_unique<X86Target>(desc_, device_, reader_, Target{TargetKind::Thread, tid}, born.watch,
                                           ThreadCpuTime::open(tid), /*from_creation=*/true);
  if (published_ && born.tag == published_tag_) child->born_ = published_;
  return std::unique_ptr<TargetPmu>(std::move(child));
}

// Its time stops at its exit (the same EXIT record as timeNs() sees).
void X86Target::childExited(std::optional<std::uint64_t> final_time_ns) {
  if (!frozen_time_) freeze(final_time_ns);
}

// The template is the image a PMU that holds nothing gets from the driver,
// enabled or not; the module gives it to every child created from now on.
Status X86Target::setChildImage(const SetImage& image, bool counting) {
  if (!watch_->family) return {};
  RecordedMsrs rec;
  intel::IntelArchDriver driver(desc_, rec);
  driver.loadImage(image.pmcs, image.pmds, image.pmd_bits);
  if (counting) driver.enable();
  const std::uint64_t tag = published_tag_ + 1;
  if (Status st = device_.setTemplate(target_.id, rec.ops, tag); !st) {
    // Children then start with an older image: their first load is a whole one.
    published_.reset();
    return st;
  }
  published_tag_ = tag;
  published_ = ImageCopy::of(image, counting);
  return {};
}

X86Target::ImageCopy X86Target::ImageCopy::of(const SetImage& image, bool counting) {
  ImageCopy c;
  c.set = image.set;
  c.pmcs.assign(image.pmcs.begin(), image.pmcs.end());
  c.pmds = image.pmds;
  c.pmd_bits.assign(image.pmd_bits.begin(), image.pmd_bits.end());
  c.counting = counting;
  return c;
}

bool X86Target::ImageCopy::sameAs(const SetImage& image) const {
  if (set != image.set || pmds != image.pmds ||
      !std::equal(pmcs.begin(), pmcs.end(), image.pmcs.begin(), image.pmcs.end()))
    return false;
  return std::equal(pmd_bits.begin(), pmd_bits.end(), image.pmd_bits.begin(), image.pmd_bits.end());
}

std::uint64_t X86Target::rawTime() {
  if (target_.kind == TargetKind::Cpu) return monotonicNs();
  if (cpu_time_)
    if (auto t = cpu_time_->read()) last_raw_ = *t;
  return last_raw_;
}

// A failure the engine has no way to take: the daemon's log has it, and
// gone() tells the engine when the target is lost.
void X86Target::report(const Status& st) {
  if (!st && !reported_) {
    reported_ = true;
    std::fprintf(stderr, "pfmfsd: x86: %s\n", st.error().reason.c_str());
  }
}

}  // namespace pfmfs::pmu::x86
