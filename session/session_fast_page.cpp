// The fast path's page of a session (fastpath/fast_page.h): at the end of
// every operation that changes it or brings it to the present (Op::publish)
// the session publishes what a reader outside the daemon
// needs to answer pfm_read_pmds of the active set exactly as readPmd would,
// or that it cannot: then the reader asks the mount.
//
// The page answers alone when nothing moves between two operations: the
// session is loaded and stopped, or the backend's clock is manual (the sim,
// whose time moves only through an operation). While a perf backend counts,
// it carries readPmds' arithmetic over the perf group the reader reads
// itself. Anything else is unusable: masked (the mount must see the
// restart), system mode, inherit (the children's counts are the daemon's),
// a set that switches on time under the real clock (only the daemon knows
// when the switch is due), a backend that cannot say.
#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "fastpath/fast_page.h"
#include "session/engine.h"
#include "session/session.h"
#include "session/session_op.h"

namespace pfmfs::session {

using pmu::regBit;
using pmu::RegMask;

void Session::setFastPage(fastpath::Page* page) {
  Op op(*this);
  fast_page_.setPage(page);
  // The new page's first content.
  op.publishUnreported();
}

Result<std::vector<pmu::Fd>> Session::fastGroupFds(std::uint64_t id) {
  MutexLock lock(mutex_);
  std::optional<pmu::FastGroup> g;
  if (target().pmu) g = target().pmu->fastGroup();
  if (!g || g->id != id) return err(ESTALE, "perf group {} is not the loaded set's any more", id);
  std::vector<pmu::Fd> fds;
  for (int member : g->fds) {
    pmu::Fd fd(::fcntl(member, F_DUPFD_CLOEXEC, 0));
    if (!fd) return err(errno, "perf group {}: {}", id, std::strerror(errno));
    fds.push_back(std::move(fd));
  }
  return fds;
}

void Session::publishFastPage() {
  if (!fast_page_.hasPage()) return;
  fastpath::Page& p = fast_page_.next();
  p.usable = fillFastPage(p) ? 1 : 0;
  fast_page_.publish();
}

bool Session::fillFastPage(fastpath::Page& p) {
  auto fits = [this]() REQUIRES(mutex_) {
    return loaded() && state_ != State::Masked && mode_ == Mode::Thread && target_.kind == pmu::TargetKind::Thread &&
           !flags_.inherit && !inheritance_.hasTargetExited() && target().pmu;
  };
  if (!fits()) return false;
  const bool still = !counting() || engine_.backend().clock() == pmu::ClockKind::Manual;
  if (still) {
    // What a read through the mount does first, so that the page holds what
    // it would answer (it may take an overflow, mask, or see the target gone).
    catchUp();
    if (counting() && !interrupts_) sampleActive();
    if (!fits()) return false;
  }
  const EventSet& s = activeSet();
  // What pmdStates lists: the PMDs written or used in the set.
  RegMask pmds = s.usedPmds();
  for (std::size_t slot = 0; slot < s.pmdCount(); ++slot)
    if (s.pmd(slot).written) pmds |= regBit(desc_.pmds[slot].index);

  std::optional<pmu::FastGroup> group;
  if (still) {
    liveValues(s, pmds);  // exact until the next operation
  } else {
    if (!interrupts_ || s.switch_spec.on_time) return false;
    group = target().pmu->fastGroup();
    if (!group) return false;
    p.group = group->id;
    p.group_size = group->size;
    p.read_format = static_cast<std::uint32_t>(group->read_format);
  }
  p.target_tid = target_.id;
  p.set = s.id();
  const std::vector<ThreadPmd>& values = valuesOf(target(), s);
  for (std::size_t slot = 0; slot < s.pmdCount() && p.pmd_count < fastpath::kMaxPmds; ++slot) {
    const pmu::PmdDesc& d = desc_.pmds[slot];
    if (!(pmds & regBit(d.index))) continue;
    const PmdState& st = s.pmd(slot);
    fastpath::PmdEntry& e = p.pmds[p.pmd_count++];
    e.index = d.index;
    e.last_reset = st.last_reset;
    e.switch_left = st.switch_left;
    e.width_mask = d.widthMask();
    e.member = 0;
    e.ref = 0;
    const pmu::FastGroup::Counter* c = nullptr;
    if (group && (s.usedPmds() & regBit(d.index)))
      for (const auto& gc : group->counters)
        if (gc.slot == slot) c = &gc;
    if (c) {
      e.source = static_cast<std::uint16_t>(fastpath::Source::kPerfGroup);
      e.upper = values[slot].value & ~d.widthMask();
      e.base = c->base;
      e.ref = c->ref;
      e.member = c->member;
    } else if (group && (s.usedPmds() & regBit(d.index))) {
      return false;  // counting, and not in the group: only the daemon knows
    } else {
      e.source = static_cast<std::uint16_t>(fastpath::Source::kPage);
      e.upper = still ? values_[slot] : values[slot].value;
      e.base = 0;
    }
  }
  return true;
}

}  // namespace pfmfs::session
