#include "exporter/exporter_config.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <civetweb.h>
#include <fmt/format.h>

#include "pfmstat/errors.h"
#include "pfmstat/event_plan.h"

namespace exporter {
namespace {

using pfmstat::UsageError;

// A key's parser: stores `value` or returns why it cannot.
using Setter = std::function<std::string(ExporterConfig&, const std::string& value, const Origin&)>;

struct Key {
  const char* name;
  bool repeatable;  // cgroup: one line per group
  Setter set;
};

std::optional<unsigned long> parseNumber(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::strtoul(s.c_str(), nullptr, 10);
}

// A cgroup v2 directory as the mount's `load` takes it (pfmfs(5),
// CONTROL-GROUP LOADS): absolute, one word of printable ASCII, and with no
// component that would make two spellings of one group.
std::string checkCgroup(const std::string& path) {
  if (path.empty() || path[0] != '/') return "a cgroup is an absolute path (/sys/fs/cgroup/...)";
  if (path.size() > 4095) return "a cgroup path has at most 4095 bytes";
  for (unsigned char c : path)
    if (c <= 0x20 || c >= 0x7f) return "a cgroup path is one word of printable ASCII";
  std::istringstream parts(path);
  std::string part;
  bool first = true;
  while (std::getline(parts, part, '/')) {
    if (first) {
      first = false;
      continue;
    }
    if (part == "." || part == "..") return "a cgroup path has no '.' or '..' components";
  }
  if (path.find("//") != std::string::npos) return "a cgroup path has no empty components";
  return "";
}

const Key kKeys[] = {
    {"listen", false,
     [](ExporterConfig& c, const std::string& v, const Origin&) {
       if (auto why = checkListen(v); !why.empty()) return why;
       c.listen = v;
       return std::string();
     }},
    {"mount", false,
     [](ExporterConfig& c, const std::string& v, const Origin&) {
       if (v.empty() || v[0] != '/') return std::string("the mount is an absolute directory");
       c.mount = v;
       return std::string();
     }},
    {"events", false,
     [](ExporterConfig& c, const std::string& v, const Origin& o) {
       // The syntax now; the names against the mount's PMU at start.
       try {
         if (pfmstat::parseEventArgs({v}).empty()) return std::string("events names no event");
       } catch (const UsageError& e) {
         // pfmstat's reasons name its option: "-e 'LIST': why".
         std::string why = e.what();
         return why.starts_with("-e ") ? "events " + why.substr(3) : why;
       }
       c.events = v;
       c.events_origin = o;
       return std::string();
     }},
    {"metrics", false,
     [](ExporterConfig& c, const std::string& v, const Origin& o) {
       std::istringstream words(v);
       std::string w;
       while (std::getline(words, w, ',')) {
         if (w.empty() || w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos)
           return fmt::format("'{}' is not a metric or group name ([a-z0-9_]+, comma-separated)", w);
         c.metrics.push_back(w);
       }
       if (v.back() == ',') return std::string("a metric list does not end in ','");
       c.metrics_origin = o;
       return std::string();
     }},
    {"cpus", false,
     [](ExporterConfig& c, const std::string& v, const Origin&) {
       if (v == "all") {
         c.cpus.reset();
         return std::string();
       }
       if (v == "none") {  // control groups alone: no right to system mode needed
         c.cpus = std::vector<long>{};
         return std::string();
       }
       c.cpus = parseCpuList(v);
       if (!c.cpus) return std::string("cpus is 'all', 'none' or a list such as 0-3,8 (ascending, no repeats)");
       return std::string();
     }},
    {"cgroup", true,
     [](ExporterConfig& c, const std::string& v, const Origin& o) {
       if (auto why = checkCgroup(v); !why.empty()) return why;
       std::string path = v.size() > 1 && v.back() == '/' ? v.substr(0, v.size() - 1) : v;
       for (std::size_t i = 0; i < c.cgroups.size(); ++i)
         if (c.cgroups[i] == path) return fmt::format("cgroup {} is already at {}", path, c.cgroup_origins[i].where);
       c.cgroups.push_back(path);
       c.cgroup_origins.push_back(o);
       return std::string();
     }},
    {"switch_ms", false,
     [](ExporterConfig& c, const std::string& v, const Origin&) {
       auto n = parseNumber(v);
       // A set switch every ms at the least, every minute at the most: a
       // longer one would leave sets unseen between 15-s scrapes.
       if (!n || *n < 1 || *n > 60000) return std::string("switch_ms is a number of ms from 1 to 60000");
       c.switch_ms = static_cast<unsigned>(*n);
       return std::string();
     }},
};

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

std::string checkListen(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos) return fmt::format("'{}' is not ADDR:PORT", text);
  std::string addr = text.substr(0, colon), port = text.substr(colon + 1);
  auto p = parseNumber(port);
  if (!p || *p < 1 || *p > 65535) return fmt::format("'{}': the port is a number from 1 to 65535", text);
  unsigned char buf[16];
  if (addr.size() > 2 && addr.front() == '[' && addr.back() == ']') {
    if (::inet_pton(AF_INET6, addr.substr(1, addr.size() - 2).c_str(), buf) != 1)
      return fmt::format("'{}': '{}' is not an IPv6 address", text, addr);
    // Debian 12's civetweb is built without it: say so here, not as
    // civetweb's "invalid port spec" at the bind.
    constexpr unsigned kIpv6Feature = 8;  // civetweb.h, mg_check_feature: USE_IPV6
    if (!::mg_check_feature(kIpv6Feature))
      return fmt::format("'{}': the HTTP server (civetweb) was built without IPv6; listen on IPv4", text);
    return "";
  }
  if (::inet_pton(AF_INET, addr.c_str(), buf) == 1) return "";
  return fmt::format("'{}': the address is a numeric IPv4 address or a [bracketed] IPv6 one", text);
}

std::optional<std::vector<long>> parseCpuList(const std::string& text) {
  std::vector<long> out;
  std::istringstream parts(text);
  std::string part;
  while (std::getline(parts, part, ',')) {
    auto dash = part.find('-');
    auto lo = parseNumber(part.substr(0, dash));
    auto hi = dash == std::string::npos ? lo : parseNumber(part.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || *hi > 65535) return std::nullopt;
    for (auto c = *lo; c <= *hi; ++c) {
      if (!out.empty() && static_cast<long>(c) <= out.back()) return std::nullopt;
      out.push_back(static_cast<long>(c));
    }
  }
  if (out.empty() || text.back() == ',') return std::nullopt;
  return out;
}

ExporterConfig parseConfig(const std::string& text, const std::string& file) {
  ExporterConfig c;
  std::map<std::string, unsigned> seen;  // key -> its line
  std::istringstream in(text);
  std::string raw;
  unsigned line = 0;
  while (std::getline(in, raw)) {
    ++line;
    auto fail = [&](const std::string& why) { return UsageError(fmt::format("{}:{}: {}", file, line, why)); };
    std::string l = trim(raw);
    if (l.empty() || l[0] == '#') continue;
    auto blank = l.find_first_of(" \t");
    std::string name = l.substr(0, blank);
    std::string value = blank == std::string::npos ? "" : trim(l.substr(blank));
    const Key* key = nullptr;
    for (const auto& k : kKeys)
      if (name == k.name) key = &k;
    if (!key) {
      std::string known;
      for (const auto& k : kKeys) known += std::string(known.empty() ? "" : ", ") + k.name;
      throw fail(fmt::format("unknown key '{}' (known: {})", name, known));
    }
    if (value.empty()) throw fail(fmt::format("{} needs a value", name));
    if (!key->repeatable) {
      if (auto it = seen.find(name); it != seen.end())
        throw fail(fmt::format("{} is already set at line {}", name, it->second));
      seen[name] = line;
    }
    if (auto why = key->set(c, value, Origin{fmt::format("{}:{}", file, line)}); !why.empty()) throw fail(why);
  }
  return c;
}

ExporterConfig loadConfig(const std::string& path, bool required) {
  std::ifstream f(path);
  if (!f) {
    if (!required && errno == ENOENT) return ExporterConfig{};
    throw UsageError(fmt::format("cannot read the configuration {}: {}", path, std::strerror(errno)));
  }
  std::stringstream text;
  text << f.rdbuf();
  return parseConfig(text.str(), path);
}

}  // namespace exporter
