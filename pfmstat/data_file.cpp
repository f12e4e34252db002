// pfmstat.data's lines, written and parsed (data_file.h). The parser takes
// any bytes: every way a line can be wrong ends in one DataError naming it.
#include "pfmstat/data_file.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace pfmstat {
namespace {

// Fields as written, one blank between them: "key=value"; the last field of
// comm and map lines is the rest of the line (names and paths hold blanks).
class LineReader {
 public:
  LineReader(std::string_view rest, const std::string& where) : rest_(rest), where_(where) {}

  std::string_view field(std::string_view key) {
    std::string_view f = rest_.substr(0, rest_.find(' '));
    rest_.remove_prefix(f.size() < rest_.size() ? f.size() + 1 : f.size());
    if (f.size() <= key.size() || f.substr(0, key.size()) != key || f[key.size()] != '=')
      fail(fmt::format("expected {}=", key));
    return f.substr(key.size() + 1);
  }

  // The rest of the line after "key=".
  std::string_view tail(std::string_view key) {
    if (rest_.size() <= key.size() || rest_.substr(0, key.size()) != key || rest_[key.size()] != '=')
      fail(fmt::format("expected {}=", key));
    std::string_view v = rest_.substr(key.size() + 1);
    rest_ = {};
    return v;
  }

  std::uint64_t dec(std::string_view key, std::uint64_t max) { return number(key, field(key), 10, max); }
  std::uint64_t hex(std::string_view key) {
    std::string_view v = field(key);
    if (v.size() < 3 || v[0] != '0' || v[1] != 'x') fail(fmt::format("{}= is not a 0x number", key));
    return number(key, v.substr(2), 16, UINT64_MAX);
  }

  void end() {
    if (!rest_.empty()) fail("unexpected text at the end of the line");
  }

  [[noreturn]] void fail(const std::string& why) const { throw DataError(fmt::format("{}: {}", where_, why)); }

 private:
  std::uint64_t number(std::string_view key, std::string_view v, int base, std::uint64_t max) const {
    const char* digits = base == 10 ? "0123456789" : "0123456789abcdefABCDEF";
    if (v.empty() || v.size() > 20 || v.find_first_not_of(digits) != std::string_view::npos)
      fail(fmt::format("{}= is not a number", key));
    std::string s(v);
    errno = 0;
    unsigned long long n = std::strtoull(s.c_str(), nullptr, base);
    if (errno == ERANGE || n > max) fail(fmt::format("{}= is out of range", key));
    return n;
  }

  std::string_view rest_;
  std::string where_;
};

constexpr std::uint64_t kU32 = 0xffffffffu;

std::string oneLine(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

DataFile parseDataFile(std::string_view text, const std::string& name) {
  DataFile d;
  std::string magic = fmt::format("pfmstat-data {}", kDataVersion);
  std::size_t first_end = text.find('\n');
  std::string_view first = text.substr(0, first_end);
  if (first.substr(0, 13) != "pfmstat-data ")
    throw DataError(fmt::format("{}: not a pfmstat data file (its first line is not '{}')", name, magic));
  if (first != magic)
    throw DataError(fmt::format("{}: pfmstat data version '{}': this pfmstat reads version {}", name,
                                std::string(first.substr(13, 20)), kDataVersion));
  std::size_t at = first_end == std::string_view::npos ? text.size() : first_end + 1;
  for (std::size_t number = 2; at < text.size(); ++number) {
    std::size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.empty() || line[0] == '#') continue;  // blank lines and comments: a reader's notes
    std::string where = fmt::format("{}:{}", name, number);
    std::string_view word = line.substr(0, line.find(' '));
    LineReader r(line.substr(std::min(line.size(), word.size() + 1)), where);
    if (word == "sample") {
      SampleLine s;
      s.pid = static_cast<std::uint32_t>(r.dec("pid", kU32));
      s.tid = static_cast<std::uint32_t>(r.dec("tid", kU32));
      s.cpu = static_cast<std::uint32_t>(r.dec("cpu", kU32));
      s.ip = r.hex("ip");
      s.tstamp = r.dec("tstamp", UINT64_MAX);
      r.end();
      d.order.push_back({DataFile::Kind::Sample, d.samples.size()});
      d.samples.push_back(s);
    } else if (word == "map") {
      MapLine m;
      m.pid = static_cast<std::uint32_t>(r.dec("pid", kU32));
      m.start = r.hex("start");
      m.end = r.hex("end");
      m.pgoff = r.hex("pgoff");
      m.path = std::string(r.tail("path"));
      if (m.end <= m.start) r.fail("end= is not above start=");
      d.order.push_back({DataFile::Kind::Map, d.maps.size()});
      d.maps.push_back(std::move(m));
    } else if (word == "comm") {
      CommLine c;
      c.pid = static_cast<std::uint32_t>(r.dec("pid", kU32));
      c.exec = r.dec("exec", 1) == 1;
      c.name = std::string(r.tail("name"));
      d.order.push_back({DataFile::Kind::Comm, d.comms.size()});
      d.comms.push_back(std::move(c));
    } else if (word == "fork") {
      ForkLine f;
      f.pid = static_cast<std::uint32_t>(r.dec("pid", kU32));
      f.ppid = static_cast<std::uint32_t>(r.dec("ppid", kU32));
      r.end();
      d.order.push_back({DataFile::Kind::Fork, d.forks.size()});
      d.forks.push_back(f);
    } else if (word == "meta") {
      std::string_view kv = line.size() > 5 ? line.substr(5) : std::string_view();
      std::size_t eq = kv.find('=');
      if (eq == 0 || eq == std::string_view::npos) r.fail("expected meta KEY=VALUE");
      d.meta[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    } else {
      r.fail(fmt::format("unknown line type '{}'", std::string(word.substr(0, 32))));
    }
  }
  return d;
}

DataWriter::DataWriter(std::FILE* out) : out_(out) { std::fprintf(out_, "pfmstat-data %d\n", kDataVersion); }

void DataWriter::meta(const std::string& key, const std::string& value) {
  std::fprintf(out_, "meta %s=%s\n", key.c_str(), oneLine(value).c_str());
}

void DataWriter::comm(const CommLine& c) {
  std::fprintf(out_, "comm pid=%u exec=%d name=%s\n", c.pid, c.exec ? 1 : 0, oneLine(c.name).c_str());
}

void DataWriter::fork(const ForkLine& f) { std::fprintf(out_, "fork pid=%u ppid=%u\n", f.pid, f.ppid); }

void DataWriter::map(const MapLine& m) {
  std::fprintf(out_, "map pid=%u start=0x%llx end=0x%llx pgoff=0x%llx path=%s\n", m.pid,
               static_cast<unsigned long long>(m.start), static_cast<unsigned long long>(m.end),
               static_cast<unsigned long long>(m.pgoff), oneLine(m.path).c_str());
}

void DataWriter::sample(const SampleLine& s) {
  ++samples_;
  std::fprintf(out_, "sample pid=%u tid=%u cpu=%u ip=0x%llx tstamp=%llu\n", s.pid, s.tid, s.cpu,
               static_cast<unsigned long long>(s.ip), static_cast<unsigned long long>(s.tstamp));
}

}  // namespace pfmstat
