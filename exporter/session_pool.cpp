#include "exporter/session_pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/metric_table.h"
#include "pfmstat/metrics.h"
#include "pfmstat/mount_files.h"
#include "pfmstat/pmu_table.h"

namespace exporter {
namespace {

using pfmstat::UsageError;

// An error found against the mount, prefixed with the line that asked for it.
[[noreturn]] void rethrowAt(const Origin& origin, const std::exception& e) {
  if (origin.where.empty()) throw UsageError(e.what());
  throw UsageError(fmt::format("{}: {}", origin.where, e.what()));
}

}  // namespace

std::vector<long> onlineCpus() {
  std::string text = pfmstat::readFile("/sys/devices/system/cpu/online");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto cpus = parseCpuList(text);
  if (!cpus) throw pfmstat::RunError(fmt::format("cannot parse /sys/devices/system/cpu/online: '{}'", text));
  return *cpus;
}

SessionPool::SessionPool(const ExporterConfig& config, const std::string& mount) : mount_(mount) {
  auto info = pfmstat::parsePmuInfo(pfmstat::readFile(mount + "/pmu/info"));
  auto table = pfmstat::parseEvents(pfmstat::readFile(mount + "/pmu/events"));
  std::vector<pfmstat::GroupSpec> groups;
  try {
    groups = !config.events.empty()   ? pfmstat::parseEventArgs({config.events})
             : config.metrics.empty() ? pfmstat::defaultEvents(table)
                                      : std::vector<pfmstat::GroupSpec>{};
    if (!config.events.empty()) pfmstat::planSets(groups, info, table);  // names checked: errors name events'
  } catch (const UsageError& e) {
    rethrowAt(config.events_origin, e);
  }
  if (!config.metrics.empty()) {
    // As pfmstat -M: each metric's events in one set where they fit, so
    // that a query divides counts of the same set.
    try {
      auto metric_table = pfmstat::loadMetricTables({});
      auto bound = pfmstat::metricsFor(metric_table, config.metrics, table);
      std::erase_if(bound, [](const pfmstat::BoundMetric& m) { return !m.asked; });
      for (auto& g : pfmstat::metricGroups(bound)) groups.push_back(std::move(g));
    } catch (const UsageError& e) {
      rethrowAt(config.metrics_origin, e);
    }
  }
  try {
    sets_ = pfmstat::planSets(groups, info, table);
  } catch (const UsageError& e) {
    rethrowAt(config.metrics.empty() ? config.events_origin : config.metrics_origin, e);
  }
  std::uint64_t switch_ns = config.switch_ms ? *config.switch_ms * 1'000'000ull : info.tick_ns;

  auto online = onlineCpus();
  std::vector<long> cpus = config.cpus ? *config.cpus : online;
  // Every cpu by default, so that an empty configuration counts the machine.
  for (long cpu : cpus) {
    if (!std::binary_search(online.begin(), online.end(), cpu))
      throw UsageError(fmt::format("cpu {} is not online (online: /sys/devices/system/cpu/online)", cpu));
    addCpu(cpu, switch_ns);
  }
  for (std::size_t i = 0; i < config.cgroups.size(); ++i)
    addCgroup(config.cgroups[i], config.cgroup_origins[i], switch_ns);
}

void SessionPool::addCpu(long cpu, std::uint64_t switch_ns) {
  auto s = std::make_unique<pfmstat::Session>(mount_, fmt::format("pfmfs-exporter.{}.cpu{}", ::getpid(), cpu), sets_,
                                              switch_ns, pfmstat::Mode::System, /*inherit=*/false);
  pfmstat::Target target;
  target.cpu = true;
  target.id = cpu;
  s->attach(target);
  sessions_.push_back(std::move(s));
  labels_.push_back({std::to_string(cpu), ""});
}

void SessionPool::addCgroup(const std::string& path, const Origin& origin, std::uint64_t switch_ns) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{}: cgroup {} is not a directory", origin.where, path));
  // Control-group mode (pfmfs(5), CONTROL-GROUP LOADS): `load` takes the
  // group's directory and counts its threads on every cpu.
  auto s = std::make_unique<pfmstat::Session>(mount_, fmt::format("pfmfs-exporter.{}.cg{}", ::getpid(), labels_.size()),
                                              sets_, switch_ns, pfmstat::Mode::Cgroup, /*inherit=*/false);
  try {
    s->attachCgroup(path);
  } catch (const UsageError& e) {
    rethrowAt(origin, e);
  }
  sessions_.push_back(std::move(s));
  labels_.push_back({"", path});
}

}  // namespace exporter
