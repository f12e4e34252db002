#include "pfmstat/metric_table.h"

#include <unistd.h>

#include <cstdlib>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "pfmstat/comma_list.h"
#include "pfmstat/errors.h"
#include "pfmstat/mount_files.h"

#ifndef PFMFS_METRICS_TABLE
#define PFMFS_METRICS_TABLE "/usr/local/share/pfmfs/metrics"
#endif

namespace pfmstat {
namespace {

constexpr std::size_t kMaxLine = 4096;  // a formula longer than this is no table a person keeps

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A name of a metric or group: lower case, digits and '_', a letter first.
bool isMetricName(const std::string& s) {
  if (s.empty() || s.size() > 64 || !(s[0] >= 'a' && s[0] <= 'z')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// key=value fields; a value may be "quoted" (\" and \\ inside); '#' where a
// field would start comments out the rest.
std::vector<std::pair<std::string, std::string>> fields(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> out;  // in line order: the first bad one is reported
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && isBlank(line[i])) ++i;
    if (i == line.size() || line[i] == '#') return out;
    std::size_t start = i;
    while (i < line.size() && line[i] != '=' && !isBlank(line[i])) ++i;
    std::string key = line.substr(start, i - start);
    if (i == line.size() || line[i] != '=') throw UsageError(fmt::format("'{}' is not key=value", key));
    if (key.empty()) throw UsageError("'=' with no key before it");
    ++i;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      bool closed = false;
      for (++i; i < line.size();) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size() && (line[i] == '"' || line[i] == '\\')) c = line[i++];
        value += c;
      }
      if (!closed) throw UsageError(fmt::format("{}: the quoted value is not closed", key));
      if (i < line.size() && !isBlank(line[i])) throw UsageError(fmt::format("{}: text right after the quote", key));
    } else {
      std::size_t vstart = i;
      while (i < line.size() && !isBlank(line[i])) ++i;
      value = line.substr(vstart, i - vstart);
    }
    for (const auto& f : out)
      if (f.first == key) throw UsageError(fmt::format("{} is given twice", key));
    out.emplace_back(key, value);
  }
}

Metric parseLine(const std::string& line) {
  auto kv = fields(line);
  Metric m;
  for (const auto& [key, value] : kv) {
    if (key == "metric") {
      if (!isMetricName(value))
        throw UsageError(fmt::format("metric name '{}': lower case letters, digits and _, a letter first", value));
      m.name = value;
    } else if (key == "expr") {
      try {
        m.expr = MetricExpr::parse(value);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("expr: {}", e.what()));
      }
    } else if (key == "unit") {
      m.unit = value;
    } else if (key == "desc") {
      m.desc = value;
    } else if (key == "groups") {
      for (const auto& g : splitCommas(value)) {
        if (!isMetricName(g))
          throw UsageError(fmt::format("group name '{}': lower case letters, digits and _, a letter first", g));
        m.groups.push_back(g);
      }
    } else {
      throw UsageError(fmt::format("unknown key '{}' (metric, expr, unit, groups, desc)", key));
    }
  }
  if (m.name.empty()) throw UsageError("no metric= name");
  bool has_expr = false;
  for (const auto& f : kv) has_expr |= f.first == "expr";
  if (!has_expr) throw UsageError("no expr= formula");
  // Printable ASCII: what a terminal, a CSV field and a JSON string all show as written.
  for (unsigned char c : m.unit + m.desc)
    if (c < 0x20 || c >= 0x7f) throw UsageError("unit and desc are printable ASCII");
  return m;
}

}  // namespace

bool Metric::inGroup(const std::string& group) const {
  for (const auto& g : groups)
    if (g == group) return true;
  return false;
}

void MetricTable::addText(const std::string& text, const std::string& file) {
  std::vector<Metric> parsed;
  std::size_t start = 0;
  for (unsigned line_no = 1; start < text.size(); ++line_no) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    start = nl + 1;
    try {
      if (line.size() > kMaxLine) throw UsageError(fmt::format("longer than {} bytes", kMaxLine));
      if (line.find('\0') != std::string::npos) throw UsageError("a NUL byte");
      if (fields(line).empty()) continue;
      Metric m = parseLine(line);
      for (const auto& p : parsed)
        if (p.name == m.name) throw UsageError(fmt::format("metric {} is defined at {} already", m.name, p.origin));
      m.origin = fmt::format("{}:{}", file, line_no);
      parsed.push_back(std::move(m));
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}:{}: {}", file, line_no, e.what()));
    }
  }
  for (auto& m : parsed) {
    bool replaced = false;
    for (auto& old : metrics_)
      if (old.name == m.name) {
        old = m;
        replaced = true;
      }
    if (!replaced) metrics_.push_back(std::move(m));
  }
}

void MetricTable::addFile(const std::string& path) {
  std::string text;
  try {
    text = readFile(path);
  } catch (const RunError& e) {
    throw UsageError(fmt::format("metrics table: {}", e.what()));
  }
  addText(text, path);
}

const Metric* MetricTable::find(const std::string& name) const {
  for (const auto& m : metrics_)
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<const Metric*> MetricTable::select(const std::string& word) const {
  if (const Metric* m = find(word)) return {m};
  std::vector<const Metric*> out;
  for (const auto& m : metrics_)
    if (m.inGroup(word)) out.push_back(&m);
  if (out.empty())
    throw UsageError(fmt::format("-M {}: no such metric or metric group (pfmstat --list-metrics)", word));
  return out;
}

std::string installedTablePath() {
  // A build tree keeps its table next to the program; an installed pfmstat
  // reads DATADIR's (never a stale installed one while testing a build).
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir.erase(dir.rfind('/') + 1);
    std::string local = dir + "pfmstat.metrics";
    if (::access(local.c_str(), F_OK) == 0) return local;
  }
  return PFMFS_METRICS_TABLE;
}

MetricTable loadMetricTables(const std::vector<std::string>& extra_files) {
  MetricTable t;
  std::string installed = installedTablePath();
  if (::access(installed.c_str(), F_OK) == 0) t.addFile(installed);
  std::string user;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg == '/')
    user = std::string(xdg) + "/pfmfs/metrics";
  else if (const char* home = std::getenv("HOME"); home && *home == '/')
    user = std::string(home) + "/.config/pfmfs/metrics";
  if (!user.empty() && ::access(user.c_str(), F_OK) == 0) t.addFile(user);
  for (const auto& f : extra_files) t.addFile(f);
  return t;
}

}  // namespace pfmstat
