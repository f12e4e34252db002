// The exporter's one Collectable: at every scrape it reads each session's
// `counts` and turns them into metric families (pfmfs-exporter(8),
// EXPOSITION). Nothing is polled in between: a scrape's values are the
// mount's at that scrape.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "exporter/session_pool.h"

namespace exporter {

class CountsCollector : public prometheus::Collectable {
 public:
  // `onFailure` is called (from a scrape's thread) with the reason when a
  // session's counts cannot be read: the mount went away.
  CountsCollector(const SessionPool& pool, std::string version, std::function<void(const std::string&)> onFailure);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const SessionPool& pool_;
  std::string version_;
  std::function<void(const std::string&)> on_failure_;
};

}  // namespace exporter
