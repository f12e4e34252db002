// A session's registers: PMC and PMD writes (one, or a whole regs file,
// all-or-nothing), and their reads, live while their set counts. The rest of
// Session is in session.cpp, session_sets_reads.cpp and session_time.cpp.
#include <algorithm>

#include <fmt/format.h>

#include "session/engine.h"
#include "session/session.h"
#include "session/session_op.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

// ---- registers -----------------------------------------------------------------

Status Session::writePmc(const Caller& caller, unsigned set, const PmcWrite& w) {
  return writeRegs(caller, set, {RegWrite{w}});
}

Status Session::writePmd(unsigned set, const PmdWrite& w) { return writeRegs(Caller{}, set, {RegWrite{w}}); }

Status Session::writeRegs(const Caller& caller, unsigned set, const std::vector<RegWrite>& writes) {
  Op op(*this);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set));
  // All-or-nothing: every write is checked before any is applied.
  for (const auto& w : writes) {
    Status st = std::holds_alternative<PmcWrite>(w) ? checkPmcWrite(desc_, caller, std::get<PmcWrite>(w))
                                                    : checkPmdWrite(desc_, std::get<PmdWrite>(w));
    if (!st) return fail(st.error());
  }
  const bool reprograms =
      std::any_of(writes.begin(), writes.end(), [](const RegWrite& w) { return std::holds_alternative<PmcWrite>(w); });
  bool live = false;
  if (counting()) {
    catchUp();
    if (counting() && !interrupts_) sampleActive();
    s = findSet(set);
    if (counting() && s->id() == active_set_) takeOverflowInSkid();
    live = counting() && s->id() == active_set_;
    // perf's inherited events of any set are reopened by a PMC write, which
    // takes counting off the PMU too.
    if (aggregate_ && reprograms && flags_.inherit) live = counting();
    if (live) {
      disableAll();
      foldAll();
    }
  }
  // A written value is the target's (children keep theirs).
  std::vector<ThreadPmd>& values = valuesOf(target(), *s);
  s->apply(writes, [&values](std::size_t slot, std::uint64_t value) {
    values[slot].value = values[slot].period_start = value;
  });
  // A new control: children created before it are not merged (pfmfs(5), INHERITANCE).
  if (reprograms && loaded()) inheritance_.controlChanged();
  if (live) {
    Status st = prepareSets();
    if (st) st = programAll();
    if (!st) {
      haltCounting(st.error());
      return op.publish(Status(err(-st.code(), "{}", error_)));
    }
    enableAll();
  }
  return op.publish();
}

Result<PmcState> Session::readPmc(unsigned set, unsigned index) {
  MutexLock lock(mutex_);
  EventSet* s = findSet(set);
  if (!s) return fail(err(EINVAL, "no set {}", set)).error();
  int slot = desc_.pmcSlot(index);
  if (slot < 0) return fail(err(EINVAL, "no pmc{} on this PMU", index)).error();
  return s->pmc(static_cast<std::size_t>(slot));
}

// The 64-bit values of the PMDs in `pmds` of `set`, by slot into values_:
// the hardware bits combined with the software upper bits where the set is
// counting (one backend read for all of them), the image otherwise.
void Session::liveValues(const EventSet& set, RegMask pmds) {
  values_.resize(desc_.pmds.size());
  // The target's own values: live while its set counts, folded once it exited.
  const bool on_hw = counting() && set.id() == active_set_ && (!inheritance_.hasTargetExited() || aggregate_);
  RegMask live = on_hw ? pmds & set.usedPmds() : 0;
  if (live) readHw(target(), live);
  // A counter whose interrupt is in skid has wrapped: the carry its interrupt
  // will add is already counted (reads never run backwards).
  RegMask skid = live && interrupts_ ? target().pmu->overflowsInSkid() & live : 0;
  const std::vector<ThreadPmd>& stored = valuesOf(target(), set);
  for (std::size_t slot = 0; slot < desc_.pmds.size(); ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(pmds & regBit(d.index))) continue;
    std::uint64_t v = stored[slot].value;
    if (live & regBit(d.index)) {
      std::uint64_t upper = v & ~d.widthMask();
      if ((skid & regBit(d.index)) && !set.noEmul64(d.index) && d.width < 64) upper += d.widthMask() + 1;
      v = upper | (hw_[slot] & d.widthMask());
    }
    values_[slot] = v;
  }
}

Result<PmdValue> Session::readPmd(unsigned set, unsigned index) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  int slot = desc_.pmdSlot(index);
  if (slot < 0) return fail(err(EINVAL, "no pmd{} on this PMU", index)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  liveValues(s, regBit(index));
  PmdValue v;
  v.state = s.pmd(static_cast<std::size_t>(slot));
  v.value = values_[static_cast<std::size_t>(slot)];
  op.publishUnreported();
  return v;
}

Result<std::vector<RegWrite>> Session::regs(unsigned set) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  // Listed by the stored values (as they stood at the last fold), shown live.
  const std::vector<ThreadPmd>& stored = valuesOf(target(), s);
  values_.resize(stored.size());
  for (std::size_t slot = 0; slot < stored.size(); ++slot) values_[slot] = stored[slot].value;
  std::vector<RegWrite> out = s.nonDefaultRegisters(values_);
  RegMask pmds = 0;
  for (const auto& w : out)
    if (const auto* p = std::get_if<PmdWrite>(&w)) pmds |= regBit(p->index);
  liveValues(s, pmds);
  for (auto& w : out)
    if (auto* p = std::get_if<PmdWrite>(&w)) p->value = values_[static_cast<std::size_t>(desc_.pmdSlot(p->index))];
  op.publishUnreported();
  return out;
}

Result<std::vector<PmdLine>> Session::pmdStates(unsigned set) {
  Op op(*this);
  if (!findSet(set)) return fail(err(EINVAL, "no set {}", set)).error();
  catchUp();
  if (counting() && !interrupts_) sampleActive();
  const EventSet& s = *findSet(set);
  RegMask pmds = s.usedPmds();
  for (std::size_t slot = 0; slot < s.pmdCount(); ++slot)
    if (s.pmd(slot).written) pmds |= regBit(desc_.pmds[slot].index);
  liveValues(s, pmds);
  std::vector<PmdLine> out;
  for (std::size_t slot = 0; slot < s.pmdCount(); ++slot) {
    unsigned index = desc_.pmds[slot].index;
    if (!(pmds & regBit(index))) continue;
    PmdLine l{index, values_[slot], s.pmd(slot)};
    out.push_back(l);
  }
  op.publishUnreported();
  return out;
}

}  // namespace pfmfs::session
