// pfmstat.data: what `pfmstat record` writes and `pfmstat report` reads, a
// versioned, line-oriented text (pfmstat(1), FILES): a `pfmstat-data 1`
// first line, then `meta`, `comm`, `fork`, `map` and `sample` lines in the
// order pfmstat learnt of them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "pfmstat/errors.h"

namespace pfmstat {

inline constexpr int kDataVersion = 1;

struct SampleLine {
  std::uint32_t pid = 0, tid = 0, cpu = 0;  // pid: the process (tgid)
  std::uint64_t ip = 0, tstamp = 0;
};

struct MapLine {
  std::uint32_t pid = 0;
  std::uint64_t start = 0, end = 0, pgoff = 0;  // [start, end) maps the file from pgoff
  std::string path;
};

// A process's name; `exec` when it came with an exec, which replaces the
// process's mappings (the maps after it are the new program's).
struct CommLine {
  std::uint32_t pid = 0;
  bool exec = false;
  std::string name;
};

// A new process: its mappings are its parent's until it execs.
struct ForkLine {
  std::uint32_t pid = 0, ppid = 0;
};

// The file's lines in order; `meta` by key.
struct DataFile {
  enum class Kind { Comm, Fork, Map, Sample };
  struct Entry {
    Kind kind;
    std::size_t index;  // into the vector of its kind
  };
  std::map<std::string, std::string> meta;
  std::vector<CommLine> comms;
  std::vector<ForkLine> forks;
  std::vector<MapLine> maps;
  std::vector<SampleLine> samples;
  std::vector<Entry> order;
};

// A file that is not pfmstat data, or a line of it that does not parse:
// the message names the line ("pfmstat.data:12: ..."). What it quotes of
// the file is made printable (a NUL would end the message early).
// A request that cannot be done as asked: it ends pfmstat report with 2.
struct DataError : UsageError {
  using UsageError::UsageError;
};

// Parses a whole file's text; `name` is what messages call it.
DataFile parseDataFile(std::string_view text, const std::string& name);

// Writes the lines as record learns of them. A value must not hold a
// newline: meta values and names are cleaned (newlines become blanks).
class DataWriter {
 public:
  explicit DataWriter(std::FILE* out);
  void meta(const std::string& key, const std::string& value);
  void comm(const CommLine& c);
  void fork(const ForkLine& f);
  void map(const MapLine& m);
  void sample(const SampleLine& s);
  std::uint64_t samples() const { return samples_; }

 private:
  std::FILE* out_;
  std::uint64_t samples_ = 0;
};

}  // namespace pfmstat
