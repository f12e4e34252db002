#include "pfmstat/report.h"

#include <fmt/format.h>

namespace pfmstat {
namespace {

std::string percentText(const EventResult& r) { return r.percent() ? fmt::format("{:.2f}", *r.percent()) : ""; }

std::string tableLine(const EventResult& r) {
  std::string count = r.scaled ? grouped(r.count) : "<not counted>";
  std::string scaled = r.scaled ? grouped(*r.scaled) : "-";
  std::string running = r.percent() ? fmt::format("({:.2f}%)", *r.percent()) : "";
  return fmt::format("{:>18}  {:<28} {:>18}  {:>9}", count, r.label, scaled, running);
}

std::string csvLine(const ReportStyle& s, const EventResult& r) {
  const std::string& x = s.separator;
  return fmt::format("{}{}{}{}{}{}{}{}{}{}{}", r.count, x, r.label, x, r.scaled ? std::to_string(*r.scaled) : "", x,
                     r.running_ns, x, r.enabled_ns, x, percentText(r));
}

std::string jsonFields(const EventResult& r) {
  return fmt::format(
      "\"event\":{},\"set\":{},\"count\":{},\"scaled\":{},\"enabled_ns\":{},\"running_ns\":{},\"percent\":{}",
      jsonString(r.label), r.set, r.count, r.scaled ? std::to_string(*r.scaled) : "null", r.enabled_ns, r.running_ns,
      r.percent() ? fmt::format("{:.2f}", *r.percent()) : "null");
}

// A metric in the table: beside its first event's line, as perf stat
// prints "insn per cycle"; `~` marks an estimate.
std::string metricText(const MetricValue& m) {
  std::string value = m.value ? fmt::format("{}{:.3f}", m.estimate ? "~" : "", *m.value) : "-";
  return fmt::format("  # {:>12} {}", value, m.metric->unit.empty() ? m.metric->name : m.metric->unit);
}

// Scripts get every digit: the shortest text that reads back as the same double.
std::string metricNumber(const MetricValue& m, const char* none) {
  return m.value ? fmt::format("{}", *m.value) : std::string(none);
}

std::string metricCsv(const ReportStyle& s, const MetricValue& m) {
  const std::string& x = s.separator;
  return fmt::format("{}{}{}{}{}{}{}", metricNumber(m, ""), x, m.metric->name, x, m.metric->unit, x,
                     m.estimate ? "estimate" : "exact");
}

std::string metricJson(const MetricValue& m) {
  return fmt::format("\"metric\":{},\"value\":{},\"unit\":{},\"estimate\":{}", jsonString(m.metric->name),
                     metricNumber(m, "null"), jsonString(m.metric->unit), m.estimate ? "true" : "false");
}

// The table's lines: each event's, the metrics anchored to it beside it
// (the second and later on lines of their own), `tails[i]` (-r's spread)
// at the end of the event's own line.
std::string tableLines(const std::string& prefix, const std::vector<EventResult>& results,
                       const std::vector<std::string>& tails, const std::vector<MetricValue>& metrics) {
  std::string out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string line = prefix + tableLine(results[i]);
    // A label past its column widens its line: the metrics below follow it.
    std::string blank(line.size(), ' ');
    bool first = true;
    for (const auto& m : metrics) {
      if (m.anchor != i) continue;
      if (!first) line += "\n" + blank;
      line += metricText(m);
      if (first) line += tails[i];
      first = false;
    }
    if (first) line += tails[i];
    out += line + '\n';
  }
  return out;
}

std::string estimateNote(const std::vector<MetricValue>& metrics) {
  for (const auto& m : metrics)
    if (m.estimate)
      return "\n  ~ an estimate: the metric's events were counted in different sets, multiplexed (pfmstat(1))\n";
  return "";
}

}  // namespace

std::string grouped(std::uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string finalReport(const ReportStyle& style, const std::string& target, const std::vector<Summary>& summaries,
                        unsigned runs, double elapsed_s, double elapsed_spread_pct, int exit_status,
                        const std::vector<MetricValue>& metrics) {
  std::string out;
  switch (style.format) {
    case Format::Table: {
      out += fmt::format("\n Performance counter stats for {}{}:\n\n", target,
                         runs > 1 ? fmt::format(" ({} runs)", runs) : "");
      out += fmt::format("{:>18}  {:<28} {:>18}  {:>9}\n", "count", "event", "scaled", "running");
      std::vector<EventResult> means;
      std::vector<std::string> tails;
      for (const auto& s : summaries) {
        means.push_back(s.mean);
        tails.push_back(runs > 1 ? fmt::format("  ( +- {:.2f}% )", s.stddev_pct) : "");
      }
      out += tableLines("", means, tails, metrics);
      out += estimateNote(metrics);
      out += fmt::format("\n{:>18.9f} seconds time elapsed", elapsed_s);
      if (runs > 1) out += fmt::format("  ( +- {:.2f}% )", elapsed_spread_pct);
      out += "\n\n";
      break;
    }
    case Format::Csv:
      for (const auto& s : summaries) {
        out += csvLine(style, s.mean);
        if (runs > 1) out += fmt::format("{}{:.2f}", style.separator, s.stddev_pct);
        out += '\n';
      }
      for (const auto& m : metrics) out += metricCsv(style, m) + '\n';
      break;
    case Format::Json:
      for (const auto& s : summaries) {
        out += "{" + jsonFields(s.mean);
        if (runs > 1) out += fmt::format(",\"runs\":{},\"stddev_pct\":{:.2f}", runs, s.stddev_pct);
        out += "}\n";
      }
      for (const auto& m : metrics) out += "{" + metricJson(m) + "}\n";
      out += fmt::format("{{\"target\":{},\"runs\":{},\"elapsed_ns\":{},\"exit_status\":{}}}\n", jsonString(target),
                         runs, static_cast<std::uint64_t>(elapsed_s * 1e9 + 0.5), exit_status);
      break;
  }
  return out;
}

std::string intervalReport(const ReportStyle& style, double time_s, const std::vector<EventResult>& results, bool first,
                           const std::vector<MetricValue>& metrics) {
  std::string out;
  switch (style.format) {
    case Format::Table:
      if (first)
        out += fmt::format("#{:>15}  {:>18}  {:<28} {:>18}  {:>9}\n", "time", "count", "event", "scaled", "running");
      out += tableLines(fmt::format("{:>16.9f}  ", time_s), results, std::vector<std::string>(results.size()), metrics);
      out += estimateNote(metrics);
      break;
    case Format::Csv:
      for (const auto& r : results) out += fmt::format("{:.9f}{}{}\n", time_s, style.separator, csvLine(style, r));
      for (const auto& m : metrics) out += fmt::format("{:.9f}{}{}\n", time_s, style.separator, metricCsv(style, m));
      break;
    case Format::Json:
      for (const auto& r : results) out += fmt::format("{{\"interval\":{:.9f},{}}}\n", time_s, jsonFields(r));
      for (const auto& m : metrics) out += fmt::format("{{\"interval\":{:.9f},{}}}\n", time_s, metricJson(m));
      break;
  }
  return out;
}

}  // namespace pfmstat
