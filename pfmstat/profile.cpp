// The flat profile and its text (profile.h).
#include "pfmstat/profile.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace pfmstat {
namespace {

struct Process {
  std::string name;
  std::vector<const MapLine*> maps;  // later ones win where they overlap
};

std::vector<ProfileRow> sorted(std::vector<ProfileRow> rows) {
  std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) {
    return std::tie(b.samples, a.command, a.dso, a.symbol) < std::tie(a.samples, b.command, b.dso, b.symbol);
  });
  return rows;
}

std::string meta(const DataFile& d, const std::string& key) {
  auto it = d.meta.find(key);
  return it == d.meta.end() ? "-" : it->second;
}

std::string percent(std::uint64_t n, std::uint64_t total) {
  return fmt::format("{:.2f}%", total ? 100.0 * static_cast<double>(n) / static_cast<double>(total) : 0.0);
}

// Columns: overhead and samples right-aligned, the text ones left-aligned
// to their widest value; the last column unpadded.
std::string table(const std::vector<std::vector<std::string>>& rows, std::size_t right_aligned) {
  std::vector<std::size_t> width(rows[0].size());
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    std::string line = k < 2 ? "#" : " ";
    for (std::size_t i = 0; i < rows[k].size(); ++i) {
      const std::string& v = rows[k][i];
      bool last = i + 1 == rows[k].size();
      if (i < right_aligned)
        line += fmt::format(" {:>{}}", v, width[i]);
      else
        line += last ? " " + v : fmt::format(" {:<{}}", v, width[i]);
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

Profile buildProfile(const DataFile& data, Resolver& resolver) {
  std::unordered_map<std::uint32_t, Process> procs;
  for (const auto& e : data.order) {
    switch (e.kind) {
      case DataFile::Kind::Comm: {
        const CommLine& c = data.comms[e.index];
        Process& p = procs[c.pid];
        if (c.exec) p.maps.clear();  // a new program: the old mappings are gone
        p.name = c.name;
        break;
      }
      case DataFile::Kind::Fork: {
        const ForkLine& f = data.forks[e.index];
        Process& child = procs[f.pid];
        auto parent = procs.find(f.ppid);
        // Only when the child has nothing yet: a fork read after the
        // child's own exec (another cpu's ring) must not undo it.
        if (parent != procs.end() && child.maps.empty()) child.maps = parent->second.maps;
        if (parent != procs.end() && child.name.empty()) child.name = parent->second.name;
        break;
      }
      case DataFile::Kind::Map:
        procs[data.maps[e.index].pid].maps.push_back(&data.maps[e.index]);
        break;
      case DataFile::Kind::Sample:
        break;
    }
  }
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> by_symbol;
  std::map<std::string, std::uint64_t> by_dso;
  std::uint64_t kernel_lost = 0;
  for (const auto& s : data.samples) {
    // perf's records the kernel could not store come as samples with ip 0
    // (docs/backends.md): counted, attributed to nothing.
    if (s.ip == 0) {
      ++kernel_lost;
      continue;
    }
    auto it = procs.find(s.pid);
    const MapLine* map = nullptr;
    if (it != procs.end())
      for (auto m = it->second.maps.rbegin(); m != it->second.maps.rend() && !map; ++m)
        if (s.ip >= (*m)->start && s.ip < (*m)->end) map = *m;
    Symbol sym = resolver.resolve(map, s.ip);
    std::string command = it != procs.end() && !it->second.name.empty() ? it->second.name : fmt::format(":{}", s.pid);
    ++by_symbol[{command, sym.dso, sym.name}];
    ++by_dso[sym.dso];
  }
  Profile p;
  p.total = data.samples.size() - kernel_lost;
  p.kernel_lost = kernel_lost;
  std::vector<ProfileRow> rows;
  for (const auto& [k, n] : by_symbol) rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), n});
  p.by_symbol = sorted(std::move(rows));
  rows.clear();
  for (const auto& [dso, n] : by_dso) rows.push_back({"", dso, "", n});
  p.by_dso = sorted(std::move(rows));
  return p;
}

std::string profileText(const DataFile& d, const Profile& p, ReportOptions::Sort sort, const std::string& file_name) {
  std::string out = fmt::format("# pfmstat report of {}\n", file_name);
  out += fmt::format("# command: {}\n", meta(d, "command"));
  out += fmt::format("# event: {}, a sample every {} events ({})\n", meta(d, "event"), meta(d, "period"),
                     meta(d, "period_from"));
  out += fmt::format("# backend: {}\n", meta(d, "backend"));
  out += fmt::format("# samples: {}\n", p.total);
  out += fmt::format("# buffer fills: {} (counting paused while pfmstat read the buffer)\n", meta(d, "buffer_fills"));
  out += fmt::format("# dropped as the buffer filled: {}\n", meta(d, "dropped"));
  out += fmt::format("# lost by the kernel: {} (samples without an ip)\n", p.kernel_lost);
  out += fmt::format("# throttled: {}\n", meta(d, "throttled"));
  out += fmt::format("# lost notifications: {}\n", meta(d, "lost_messages"));
  out += fmt::format("# lost map records: {}\n", meta(d, "lost_map_records"));
  out += fmt::format("# maps: {}\n", meta(d, "maps"));
  if (p.total == 0) return out + "#\n# no samples\n";
  if (sort != ReportOptions::Sort::Dso) {
    std::vector<std::vector<std::string>> rows{{"overhead", "samples", "command", "shared object", "symbol"},
                                               {"........", ".......", ".......", ".............", "......"}};
    for (const auto& r : p.by_symbol)
      rows.push_back({percent(r.samples, p.total), fmt::format("{}", r.samples), r.command, r.dso, r.symbol});
    out += "#\n# by function\n#\n" + table(rows, 2);
  }
  if (sort != ReportOptions::Sort::Symbol) {
    std::vector<std::vector<std::string>> rows{{"overhead", "samples", "shared object"},
                                               {"........", ".......", "............."}};
    for (const auto& r : p.by_dso) rows.push_back({percent(r.samples, p.total), fmt::format("{}", r.samples), r.dso});
    out += "#\n# by shared object\n#\n" + table(rows, 2);
  }
  return out;
}

}  // namespace pfmstat
