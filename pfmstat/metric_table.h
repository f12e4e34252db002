// The derived metrics pfmstat knows: named formulas over event names, read
// from table files (pfmstat(1), METRICS). One metric per line:
//
//   metric=ipc expr="instructions / cycles" unit="insn per cycle" groups=default
//
// A later definition of a name replaces an earlier one, so a user's table
// can change an installed metric as well as add new ones.
#pragma once

#include <string>
#include <vector>

#include "pfmstat/metric_expr.h"

namespace pfmstat {

struct Metric {
  std::string name;  // lower case: [a-z][a-z0-9_]*
  MetricExpr expr;
  std::string unit;                 // what the value is in: "insn per cycle", "%", "GHz"
  std::vector<std::string> groups;  // "default": shown whenever its events were counted
  std::string desc;
  std::string origin;  // FILE:LINE, for messages

  bool inGroup(const std::string& group) const;
};

class MetricTable {
 public:
  // One table's text; `file` names it in errors. Throws UsageError
  // "FILE:LINE: reason" at the first bad line, and adds nothing then.
  void addText(const std::string& text, const std::string& file);
  // Throws UsageError when the file cannot be read.
  void addFile(const std::string& path);

  const std::vector<Metric>& metrics() const { return metrics_; }
  const Metric* find(const std::string& name) const;

  // -M's word: a metric's name, or a group's (its metrics in table order).
  // Throws UsageError for neither.
  std::vector<const Metric*> select(const std::string& word) const;

 private:
  std::vector<Metric> metrics_;
};

// The tables pfmstat reads, in order: the installed one (pfmstat.metrics next
// to the program in a build tree, else DATADIR/pfmfs/metrics), the user's
// ($XDG_CONFIG_HOME/pfmfs/metrics, or ~/.config/pfmfs/metrics) when it
// exists, then every --metric-table FILE.
MetricTable loadMetricTables(const std::vector<std::string>& extra_files);

// Where the installed table is looked for (for --list-metrics and errors).
std::string installedTablePath();

}  // namespace pfmstat
