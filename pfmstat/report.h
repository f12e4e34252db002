// What pfmstat prints: perf stat's table, or CSV (-x) or JSON lines (--json)
// for scripts; the same numbers in each.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pfmstat/metrics.h"
#include "pfmstat/results.h"

namespace pfmstat {

enum class Format { Table, Csv, Json };

struct ReportStyle {
  Format format = Format::Table;
  std::string separator = ",";  // Csv
};

// The whole report after the run(s): `summaries` hold one entry per event
// (with -r the means and spreads; runs == 1 otherwise).
// `metrics` are metricValues() of the summaries' means, by their index.
std::string finalReport(const ReportStyle& style, const std::string& target, const std::vector<Summary>& summaries,
                        unsigned runs, double elapsed_s, double elapsed_spread_pct, int exit_status,
                        const std::vector<MetricValue>& metrics = {});

// One interval of -I: `time_s` since the start; `first` adds the table's header.
std::string intervalReport(const ReportStyle& style, double time_s, const std::vector<EventResult>& results, bool first,
                           const std::vector<MetricValue>& metrics = {});

// 1234567 -> "1,234,567".
std::string grouped(std::uint64_t n);

// A JSON string literal.
std::string jsonString(const std::string& s);

}  // namespace pfmstat
