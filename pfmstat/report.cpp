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
                        unsigned runs, double elapsed_s, double elapsed_spread_pct, int exit_status) {
  std::string out;
  switch (style.format) {
    case Format::Table: {
      out += fmt::format("\n Performance counter stats for {}{}:\n\n", target,
                         runs > 1 ? fmt::format(" ({} runs)", runs) : "");
      out += fmt::format("{:>18}  {:<28} {:>18}  {:>9}\n", "count", "event", "scaled", "running");
      for (const auto& s : summaries) {
        out += tableLine(s.mean);
        if (runs > 1) out += fmt::format("  ( +- {:.2f}% )", s.stddev_pct);
        out += '\n';
      }
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
      break;
    case Format::Json:
      for (const auto& s : summaries) {
        out += "{" + jsonFields(s.mean);
        if (runs > 1) out += fmt::format(",\"runs\":{},\"stddev_pct\":{:.2f}", runs, s.stddev_pct);
        out += "}\n";
      }
      out += fmt::format("{{\"target\":{},\"runs\":{},\"elapsed_ns\":{},\"exit_status\":{}}}\n", jsonString(target),
                         runs, static_cast<std::uint64_t>(elapsed_s * 1e9 + 0.5), exit_status);
      break;
  }
  return out;
}

std::string intervalReport(const ReportStyle& style, double time_s, const std::vector<EventResult>& results,
                           bool first) {
  std::string out;
  if (style.format == Format::Table && first)
    out += fmt::format("#{:>15}  {:>18}  {:<28} {:>18}  {:>9}\n", "time", "count", "event", "scaled", "running");
  for (const auto& r : results) {
    switch (style.format) {
      case Format::Table:
        out += fmt::format("{:>16.9f}  {}\n", time_s, tableLine(r));
        break;
      case Format::Csv:
        out += fmt::format("{:.9f}{}{}\n", time_s, style.separator, csvLine(style, r));
        break;
      case Format::Json:
        out += fmt::format("{{\"interval\":{:.9f},{}}}\n", time_s, jsonFields(r));
        break;
    }
  }
  return out;
}

}  // namespace pfmstat
