// The sessions pfmfs-exporter counts with: one system-mode session per cpu
// and one per control group, all with the same sets, made at start and
// removed by their destructors (and by autoclose if the exporter is killed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "exporter/exporter_config.h"
#include "pfmstat/event_plan.h"
#include "pfmstat/session.h"

namespace exporter {

// What one session counts for, as the labels of its series: cpu "" for a
// control group's session, cgroup "" for a cpu's.
struct SessionLabels {
  std::string cpu;
  std::string cgroup;
};

class SessionPool {
 public:
  // Plans the sets (the config's events and metrics on the mount's PMU)
  // and makes every session, loaded and started. Throws UsageError with the
  // mount's reason (an unknown event, no right to system mode or to a
  // group); the sessions made until then are removed.
  SessionPool(const ExporterConfig& config, const std::string& mount);

  const std::string& mount() const { return mount_; }
  const std::vector<pfmstat::SetPlan>& sets() const { return sets_; }
  std::size_t size() const { return sessions_.size(); }
  const SessionLabels& labels(std::size_t i) const { return labels_[i]; }
  // The session's `counts`, read now; RunError when it cannot be read.
  std::string counts(std::size_t i) const { return sessions_[i]->counts(); }

 private:
  void addCpu(long cpu, std::uint64_t switch_ns);
  void addCgroup(const std::string& path, const Origin& origin, std::uint64_t switch_ns);

  std::string mount_;
  std::vector<pfmstat::SetPlan> sets_;
  std::vector<std::unique_ptr<pfmstat::Session>> sessions_;
  std::vector<SessionLabels> labels_;  // parallel to sessions_
};

// The online cpus (/sys/devices/system/cpu/online).
std::vector<long> onlineCpus();

}  // namespace exporter
