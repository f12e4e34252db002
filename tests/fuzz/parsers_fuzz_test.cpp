// The deterministic fuzzer of every parser of outside text (fixed seeds,
// std::mt19937_64): random bytes and mutations of valid inputs through each
// oracle of oracles.h, whose checks become test failures. The libFuzzer
// targets (libfuzzer_target.cpp) run the same oracles guided by coverage.
// PFMFS_FUZZ_SCALE (default 1) multiplies the count.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "oracles.h"
#include "pmu/result.h"

namespace pfmfs {
namespace {

// Inputs per parser and kind (random, mutated) at scale 1: 18 oracles x 2
// kinds x 15 000 = 540 000 inputs.
constexpr std::size_t kPerKind = 15'000;

std::size_t scaled(std::size_t n) {
  const char* s = std::getenv("PFMFS_FUZZ_SCALE");
  if (!s || !*s) return n;
  double f = std::strtod(s, nullptr);
  if (!(f > 0)) return n;
  return static_cast<std::size_t>(static_cast<double>(n) * f) + 1;
}

void recordFailure(const std::string& what) { ADD_FAILURE() << what; }

// ---- input generators -------------------------------------------------------------

std::string randomBytes(std::mt19937_64& rng) {
  std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(rng);
  std::string s(n, '\0');
  // Half the time printable ASCII with blanks and newlines, which parsers
  // look at more closely than arbitrary bytes.
  bool text = rng() & 1;
  for (auto& c : s) c = text ? " \t\n,=:-x0123456789abcdefnoptrsu"[rng() % 31] : static_cast<char>(rng() & 0xff);
  return s;
}

std::vector<std::string> splitWords(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\n') {
      if (!cur.empty()) out.push_back(cur);
      out.push_back(std::string(1, c));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string joinWords(const std::vector<std::string>& w) {
  std::string s;
  for (const auto& x : w) s += x;
  return s;
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  const auto& dict = fuzz::dictionary();
  int rounds = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < rounds; ++i) {
    std::size_t pos = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 9) {
      case 0:  // flip one bit
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(s[pos % s.size()] ^ (1 << (rng() % 8)));
        break;
      case 1:  // replace a byte
        if (!s.empty()) s[pos % s.size()] = static_cast<char>(rng() & 0xff);
        break;
      case 2:  // insert a byte
        s.insert(pos, 1, static_cast<char>(rng() & 0xff));
        break;
      case 3:  // delete a run of bytes
        if (!s.empty()) s.erase(pos % s.size(), 1 + rng() % 4);
        break;
      case 4:  // insert a dictionary word
        s.insert(pos, dict[rng() % dict.size()]);
        break;
      case 5:
      case 6:
      case 7: {  // word-level: duplicate, delete or swap a token
        std::vector<std::string> w = splitWords(s);
        if (w.empty()) break;
        std::size_t a = rng() % w.size(), b = rng() % w.size();
        int op = static_cast<int>(rng() % 3);
        if (op == 0)
          w.insert(w.begin() + static_cast<std::ptrdiff_t>(b), w[a]);
        else if (op == 1)
          w.erase(w.begin() + static_cast<std::ptrdiff_t>(a));
        else
          std::swap(w[a], w[b]);
        s = joinWords(w);
        break;
      }
      case 8:  // truncate
        s.resize(pos);
        break;
    }
  }
  return s;
}

// ---- the runs ---------------------------------------------------------------------

class Fuzz : public ::testing::TestWithParam<std::size_t> {
 protected:
  const fuzz::Oracle& oracle() const { return fuzz::oracles()[GetParam()]; }
};

TEST_P(Fuzz, RandomBytes) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull + GetParam());
  std::size_t n = scaled(kPerKind);
  for (std::size_t i = 0; i < n && !HasFailure(); ++i) oracle().run(randomBytes(rng), recordFailure);
}

TEST_P(Fuzz, MutatedValidInputs) {
  const fuzz::Oracle& o = oracle();
  // Every seed is valid: the mutations start from something accepted.
  for (const auto& s : o.seeds)
    EXPECT_TRUE(o.run(s, recordFailure)) << o.name << " refused its seed '" << printable(s) << "'";
  std::mt19937_64 rng(0xc2b2ae3d27d4eb4full + GetParam());
  std::size_t n = scaled(kPerKind), accepted = 0, refused = 0;
  for (std::size_t i = 0; i < n && !HasFailure(); ++i) {
    const std::string& seed = o.seeds[rng() % o.seeds.size()];
    (o.run(mutate(seed, rng), recordFailure) ? accepted : refused)++;
  }
  // Both verdicts show up, or the mutations explore nothing.
  EXPECT_GT(accepted, 0u) << o.name;
  EXPECT_GT(refused, 0u) << o.name;
  RecordProperty("accepted", static_cast<int>(accepted));
  RecordProperty("refused", static_cast<int>(refused));
}

INSTANTIATE_TEST_SUITE_P(AllParsers, Fuzz, ::testing::Range<std::size_t>(0, fuzz::oracles().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return std::string(fuzz::oracles()[p.param].name);
                         });

}  // namespace
}  // namespace pfmfs
