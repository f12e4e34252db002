// The parsers of text from outside, each with an oracle: what must hold of
// its answer to any input. Both fuzzers run these: the deterministic one of
// the unit tests (parsers_fuzz_test.cpp, fixed seeds) and the coverage-guided
// libFuzzer targets (libfuzzer_target.cpp, one binary per oracle).
//
// Every oracle checks, beyond "no crash, no sanitizer report": an answer is a
// value or -EINVAL with a one-line printable reason; numbers agree with an
// independent reference; an accepted value reads back to itself through its
// formatter.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pfmfs::fuzz {

// Called once per broken invariant with what broke; the deterministic fuzzer
// records a test failure, a libFuzzer target aborts (which libFuzzer reports
// with the input that did it).
using Fail = void (*)(const std::string& what);

struct Oracle {
  const char* name;                // the parser, e.g. "parseRegs": the libFuzzer binary is fuzz_<name>
  std::vector<std::string> seeds;  // valid inputs: the start of the mutations and of the corpus
  // Parses `input` and checks every invariant; returns whether the parser
  // accepted it.
  bool (*run)(std::string_view input, Fail fail);
};

const std::vector<Oracle>& oracles();
const Oracle* findOracle(std::string_view name);

// Words that mean something to some parser, for mutations (and, as
// tests/fuzz/parsers.dict, for libFuzzer).
const std::vector<std::string>& dictionary();

}  // namespace pfmfs::fuzz
