// The libFuzzer target of every oracle (oracles.h): one binary, fuzz_parsers,
// built with -Dfuzzers=true (clang, -fsanitize=fuzzer); the environment
// variable PFMFS_ORACLE names the parser to fuzz (PFMFS_ORACLE=list prints
// them). A broken invariant aborts with what broke, and libFuzzer saves the
// input that did it. run-fuzzers.sh drives it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oracles.h"

namespace {

const pfmfs::fuzz::Oracle* g_oracle = nullptr;

void failHard(const std::string& what) {
  std::fprintf(stderr, "oracle %s: %s\n", g_oracle->name, what.c_str());
  std::abort();
}

// libFuzzer's dictionary syntax: "word", with \xNN for quotes, backslashes
// and bytes outside printable ASCII.
void printDictionary() {
  for (const auto& w : pfmfs::fuzz::dictionary()) {
    std::string line = "\"";
    for (unsigned char c : w) {
      char hex[8];
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
        line += static_cast<char>(c);
      } else {
        std::snprintf(hex, sizeof hex, "\\x%02x", c);
        line += hex;
      }
    }
    std::printf("%s\"\n", line.c_str());
  }
}

// The oracle's seeds, one file each, into `dir`: the start of its corpus.
void writeSeeds(const char* dir) {
  int i = 0;
  for (const auto& s : g_oracle->seeds) {
    std::string path = std::string(dir) + "/seed-" + std::to_string(i++);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(s.data(), 1, s.size(), f) != s.size() || std::fclose(f) != 0) {
      std::perror(path.c_str());
      std::exit(1);
    }
  }
}

}  // namespace

// PFMFS_ORACLE=list prints the oracles' names, PFMFS_ORACLE=dict the
// dictionary; with PFMFS_SEED_DIR set the oracle's seeds are written there.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("PFMFS_ORACLE");
  if (name && std::string_view(name) == "list") {
    for (const auto& o : pfmfs::fuzz::oracles()) std::printf("%s\n", o.name);
    std::exit(0);
  }
  if (name && std::string_view(name) == "dict") {
    printDictionary();
    std::exit(0);
  }
  g_oracle = name ? pfmfs::fuzz::findOracle(name) : nullptr;
  if (!g_oracle) {
    std::fprintf(stderr, "fuzz_parsers: set PFMFS_ORACLE to one of the parsers (PFMFS_ORACLE=list names them)\n");
    std::exit(2);
  }
  if (const char* dir = std::getenv("PFMFS_SEED_DIR")) {
    writeSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  g_oracle->run(std::string_view(reinterpret_cast<const char*>(data), size), failHard);
  return 0;
}
