// Loading a session on a control group (mode cgroup; pfmfs(5), CONTROL-GROUP
// LOADS): the path checked and opened, the delegation rule, then the same
// attach as a thread or a CPU (session.cpp).
#include <fmt/format.h>

#include "pmu/cgroup_dir.h"
#include "pmu/host_info.h"
#include "session/monitor_rule.h"
#include "session/session.h"
#include "session/session_op.h"

namespace pfmfs::session {

Status Session::loadCgroup(const Caller& caller, std::string_view path, std::optional<unsigned> set) {
  Op op(*this);
  auto first = loadableLocked(set);
  if (!first) return fail(first.error());
  // Checked first: the reasons below may show the word, printable only.
  auto resolved = pmu::resolveCgroupPath(path, "");
  if (!resolved) return fail(resolved.error());
  if (mode_ != Mode::Cgroup)
    return fail(err(EINVAL, "load: '{}' is not a thread id or cpu number (a control group's path needs mode cgroup)",
                    path.substr(0, 64)));
  // A relative path is below the hierarchy the daemon sees mounted, and an
  // absolute one must be: the daemon opens nothing outside it.
  auto root = pmu::cgroup2Root();
  if (!root) return fail(root.error());
  if (path.front() != '/') resolved = pmu::resolveCgroupPath(path, *root);
  if (!resolved) return fail(resolved.error());
  auto dir = pmu::CgroupDir::open(*resolved, *root, mayEnterFor(caller));
  if (!dir) return fail(dir.error());
  if (Status may = mayMonitorCgroup(caller, **dir); !may) return fail(may.error());
  // A group is counted on every cpu, each set's counters on each (perf:
  // one descriptor apiece): charged to the user whatever the backend, so
  // that a limit holds the same everywhere. Those who may count any group
  // may count whole cpus, and are not charged.
  std::uint64_t events = 0;
  if (!caller.may_any_cgroup) {
    events = pmu::onlineCpus().size() * (1 + sets_.size() * desc_.pmds.size());
    if (Status s = engine_.chargeCgroupEvents(uid_, 0, events); !s) return fail(s.error());
  }
  pmu::Target t{pmu::TargetKind::Cgroup, 0};
  t.cgroup = std::move(*dir);
  if (Status s = attachLocked(caller, std::move(t), 0, *first, set.has_value()); !s) {
    (void)engine_.chargeCgroupEvents(uid_, events, 0);
    return s;
  }
  cgroup_events_ = events;
  return op.publish();
}

}  // namespace pfmfs::session
