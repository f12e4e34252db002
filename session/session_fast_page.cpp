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

namespace {

// Whether two pages say the same: the header after seq, and the entries in use.
bool sameContent(const fastpath::Page& a, const fastpath::Page& b) {
  constexpr std::size_t from = offsetof(fastpath::Page, usable);
  constexpr std::size_t head = offsetof(fastpath::Page, pmds) - from;
  const auto* pa = reinterpret_cast<const unsigned char*>(&a);
  const auto* pb = reinterpret_cast<const unsigned char*>(&b);
  if (std::memcmp(pa + from, pb + from, head) != 0) return false;
  return std::memcmp(a.pmds, b.pmds, a.pmd_count * sizeof(fastpath::PmdEntry)) == 0;
}

}  // namespace

void Session::setFastPage(fastpath::Page* page) {
  Op op(*this);
  if (fast_page_ && fast_page_ != page) {
    // The last word its readers see: ask the mount.
    fastpath::Page off{};
    fastpath::publish(*fast_page_, off);
  }
  fast_page_ = page;
  fast_shown_valid_ = false;
  if (page && !fast_next_) {
    fast_next_ = std::make_unique<fastpath::Page>();
    fast_shown_ = std::make_unique<fastpath::Page>();
  } else if (!page) {
    // 7 KB a session: no page, no copies of it (a destroyed session drops its page).
    fast_next_.reset();
    fast_shown_.reset();
  }
  // The new page's first content.
  op.publishUnreported();
}

Result<std::vector<pmu::Fd>> Session::fastGroupFds(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  std::optional<pmu::FastGroup> g;
  if (pmu_) g = pmu_->fastGroup();
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
  if (!fast_page_) return;
  fastpath::Page& p = *fast_next_;
  p.usable = 0;
  p.target_tid = 0;
  p.read_format = 0;
  p.set = 0;
  p.group = 0;
  p.group_size = 0;
  p.switch_running_ns = std::numeric_limits<std::uint64_t>::max();
  p.pmd_count = 0;
  p.usable = fillFastPage(p) ? 1 : 0;
  if (fast_shown_valid_ && sameContent(p, *fast_shown_)) return;
  fastpath::publish(*fast_page_, p);
  std::memcpy(fast_shown_.get(), &p, sizeof p);
  fast_shown_valid_ = true;
}

bool Session::fillFastPage(fastpath::Page& p) {
  auto fits = [this] {
    return loaded() && state_ != State::Masked && mode_ == Mode::Thread && target_.kind == pmu::TargetKind::Thread &&
           !flags_.inherit && !target_exited_ && pmu_;
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
    group = pmu_->fastGroup();
    if (!group) return false;
    p.group = group->id;
    p.group_size = group->size;
    p.read_format = static_cast<std::uint32_t>(group->read_format);
  }
  p.target_tid = target_.id;
  p.set = s.id();
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
      e.upper = st.value & ~d.widthMask();
      e.base = c->base;
      e.ref = c->ref;
      e.member = c->member;
    } else if (group && (s.usedPmds() & regBit(d.index))) {
      return false;  // counting, and not in the group: only the daemon knows
    } else {
      e.source = static_cast<std::uint16_t>(fastpath::Source::kPage);
      e.upper = still ? values_[slot] : st.value;
      e.base = 0;
    }
  }
  return true;
}

}  // namespace pfmfs::session
