// A deterministic fuzzer of every text parser (fixed seeds, std::mt19937_64):
// random bytes and mutations of valid inputs. Each answer must be a value or
// -EINVAL with a one-line printable reason, numbers must agree with an
// independent reference, and an accepted value must read back to itself
// through its formatter. PFMFS_FUZZ_SCALE (default 1) multiplies the count.
#include "fs/text_format.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::fs {
namespace {

using session::PmcWrite;
using session::PmdWrite;
using session::RegWrite;

// Inputs per parser and kind (random, mutated) at scale 1: 10 parsers x 2
// kinds x 25 000 = 500 000 inputs.
constexpr std::size_t kPerKind = 25'000;

std::size_t scaled(std::size_t n) {
  const char* s = std::getenv("PFMFS_FUZZ_SCALE");
  if (!s || !*s) return n;
  double f = std::strtod(s, nullptr);
  if (!(f > 0)) return n;
  return static_cast<std::size_t>(static_cast<double>(n) * f) + 1;
}

const pmu::PmuDescription& desc() {
  static const pmu::PmuDescription d = [] {
    std::vector<pmu::EventDesc> table;
    for (const auto& e : pmu::sim::defaultEvents(4)) table.push_back(e.desc);
    return pmu::intel::makeDescription(pmu::intel::Shape{4, 48}, std::move(table));
  }();
  return d;
}

// ---- checks shared by every parser ------------------------------------------

std::size_t g_accepted = 0;
std::size_t g_refused = 0;

template <typename T>
bool checkAnswer(const Result<T>& r, std::string_view input) {
  if (r.ok()) {
    ++g_accepted;
    return true;
  }
  ++g_refused;
  EXPECT_EQ(r.code(), -EINVAL) << "input '" << printable(input) << "'";
  EXPECT_FALSE(r.error().reason.empty()) << "input '" << printable(input) << "'";
  for (char c : r.error().reason) {
    if (c < 0x20 || c >= 0x7f) {
      ADD_FAILURE() << "unprintable reason for '" << printable(input) << "': " << printable(r.error().reason);
      break;
    }
  }
  return false;
}

// Attributes left empty are as good as 0 on a fresh register: what a round
// trip through formatRegs must keep.
struct NormalPmd {
  unsigned index;
  std::uint64_t value, long_reset, short_reset, switch_cnt, reset_pmds, smpl_pmds, random_mask, eventid;
  bool notify, random;
  bool operator==(const NormalPmd&) const = default;
};

NormalPmd normal(const PmdWrite& w) {
  return NormalPmd{w.index,
                   w.value,
                   w.long_reset.value_or(0),
                   w.short_reset.value_or(0),
                   w.switch_cnt.value_or(0),
                   w.reset_pmds.value_or(0),
                   w.smpl_pmds.value_or(0),
                   w.random_mask.value_or(0),
                   w.eventid.value_or(0),
                   w.notify.value_or(false),
                   w.random.value_or(false)};
}

bool sameRegs(const std::vector<RegWrite>& a, const std::vector<RegWrite>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].index() != b[i].index()) return false;
    if (const auto* c = std::get_if<PmcWrite>(&a[i])) {
      const auto& d = std::get<PmcWrite>(b[i]);
      if (c->index != d.index || c->value != d.value || c->no_emul64 != d.no_emul64) return false;
    } else if (!(normal(std::get<PmdWrite>(a[i])) == normal(std::get<PmdWrite>(b[i])))) {
      return false;
    }
  }
  return true;
}

// The number rules written a second way (std::from_chars), to compare with.
std::optional<std::uint64_t> referenceNumber(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\n')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\n')) t.remove_suffix(1);
  auto whole = [](std::string_view s, int base) -> std::optional<std::uint64_t> {
    if (s.empty() || s.front() == '-' || s.front() == '+') return std::nullopt;
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  };
  if (t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return whole(t.substr(2), 16);
  if (!t.empty() && t[0] == '-') {
    auto v = whole(t.substr(1), 10);
    if (!v) return std::nullopt;
    return ~*v + 1;
  }
  return whole(t, 10);
}

// ---- one target per parser: parse, check, round-trip ----------------------------

struct Target {
  const char* name;
  std::vector<std::string> seeds;            // valid inputs to mutate
  std::function<void(std::string_view)> run;  // parse + every check
};

std::vector<Target> targets() {
  std::vector<Target> t;
  t.push_back({"parseNumber",
               {"0", "42", "0x1f", "-1000", "18446744073709551615", "0xffffffffffffffff", "-9223372036854775808",
                " 7\n"},
               [](std::string_view in) {
                 auto r = parseNumber(in);
                 auto ref = referenceNumber(in);
                 EXPECT_EQ(r.ok(), ref.has_value()) << "'" << printable(in) << "'";
                 if (!checkAnswer(r, in)) return;
                 if (ref) {
                   EXPECT_EQ(*r, *ref) << "'" << printable(in) << "'";
                 }
                 auto back = parseNumber(formatPmd(*r));
                 ASSERT_TRUE(back.ok()) << formatPmd(*r);
                 EXPECT_EQ(*back, *r);
               }});
  t.push_back({"parseRegList",
               {"1,2", "0x6", "16,17,18", "0", "63", "0x0"},
               [](std::string_view in) {
                 auto r = parseRegList(in);
                 if (!checkAnswer(r, in)) return;
                 PmdWrite w;
                 w.reset_pmds = *r;
                 auto back = parseRegs(desc(), formatRegs({w}));
                 ASSERT_TRUE(back.ok()) << formatRegs({w});
                 EXPECT_EQ(normal(std::get<PmdWrite>(back->at(0))).reset_pmds, *r) << printable(in);
               }});
  t.push_back({"parsePmcWrite",
               {"0x1003c", "0x13003c no_emul64", "UNHALTED_CORE_CYCLES:u", "instruction_retired:u:k no_emul64",
                "LLC_MISSES:k", "0x222", "-1", "SIM_PHASE_B"},
               [](std::string_view in) {
                 for (unsigned index : {0u, 3u, 16u, 7u}) {
                   auto r = parsePmcWrite(desc(), index, in);
                   if (!checkAnswer(r, in)) continue;
                   EXPECT_EQ(r->index, index);
                   std::string text = formatPmc(session::PmcState{r->value, r->no_emul64});
                   auto back = parsePmcWrite(desc(), index, text);
                   ASSERT_TRUE(back.ok()) << text;
                   EXPECT_EQ(back->value, r->value) << text;
                   EXPECT_EQ(back->no_emul64, r->no_emul64) << text;
                 }
               }});
  t.push_back({"parsePmdWrite",
               {"-1000 long_reset=-1000 short_reset=-500 switch_cnt=2 reset_pmds=1,16 notify",
                "12345 smpl_pmds=0x3 random_mask=0xf0 random eventid=9", "5 notify=0 random=1", "0"},
               [](std::string_view in) {
                 auto r = parsePmdWrite(2, in);
                 if (!checkAnswer(r, in)) return;
                 EXPECT_EQ(r->index, 2u);
                 std::string text = formatRegs({*r});
                 auto back = parseRegs(desc(), text);
                 ASSERT_TRUE(back.ok()) << text << back.error().reason;
                 EXPECT_TRUE(sameRegs({*r}, *back)) << "'" << printable(in) << "' -> " << text;
               }});
  t.push_back({"parseRegs",
               {"pmc0 0x1003c\npmd0 -10 notify\n",
                "pmc1 INSTRUCTION_RETIRED no_emul64\npmd16 5 long_reset=3\npmc16 0x222\n",
                "\npmd3 1 reset_pmds=0,1 smpl_pmds=2 eventid=0x10 random_mask=3 random\n\npmc3 LLC_MISSES:u:k\n"},
               [](std::string_view in) {
                 auto r = parseRegs(desc(), in);
                 if (!checkAnswer(r, in)) return;
                 EXPECT_FALSE(r->empty());
                 std::string text = formatRegs(*r);
                 auto back = parseRegs(desc(), text);
                 ASSERT_TRUE(back.ok()) << text << back.error().reason;
                 EXPECT_TRUE(sameRegs(*r, *back)) << "'" << printable(in) << "' -> " << text;
               }});
  t.push_back({"parseSwitch",
               {"none", "ovfl\n", "time 1000000\n", "time 0x10"},
               [](std::string_view in) {
                 auto r = parseSwitch(in);
                 if (!checkAnswer(r, in)) return;
                 EXPECT_FALSE(r->on_time && r->timeout_ns == 0);
                 auto back = parseSwitch(formatSwitch(*r));
                 ASSERT_TRUE(back.ok()) << formatSwitch(*r);
                 EXPECT_EQ(*back, *r);
               }});
  t.push_back({"parseMode",
               {"thread\n", "system"},
               [](std::string_view in) {
                 auto r = parseMode(in);
                 if (!checkAnswer(r, in)) return;
                 auto back = parseMode(formatMode(*r));
                 ASSERT_TRUE(back.ok());
                 EXPECT_EQ(*back, *r);
               }});
  t.push_back({"parseFlags",
               {"notify_block no_msg", "autoclose,inherit\n", "none", "no_msg , autoclose inherit"},
               [](std::string_view in) {
                 auto r = parseFlags(in);
                 if (!checkAnswer(r, in)) return;
                 auto back = parseFlags(formatFlags(*r));
                 ASSERT_TRUE(back.ok()) << formatFlags(*r);
                 EXPECT_EQ(*back, *r);
               }});
  t.push_back({"parseCtl",
               {"load 1234 set=3\n", "load 7", "start", "start 2\n", "stop", "restart", "unload"},
               [](std::string_view in) {
                 auto r = parseCtl(in);
                 if (!checkAnswer(r, in)) return;
                 EXPECT_GE(r->target, 0);
                 EXPECT_LE(r->set.value_or(0), 65535u);
                 bool load = r->kind == CtlCommand::Kind::Load;
                 EXPECT_TRUE(load || r->target == 0);
                 EXPECT_TRUE(load || r->kind == CtlCommand::Kind::Start || !r->set.has_value());
               }});
  t.push_back({"parseAdvance",
               {"1000\n", "0", "0x10", "18446744073709551615"},
               [](std::string_view in) {
                 auto r = parseAdvance(in);
                 if (!checkAnswer(r, in)) return;
                 auto back = parseAdvance(formatPmd(*r));
                 ASSERT_TRUE(back.ok());
                 EXPECT_EQ(*back, *r);
               }});
  return t;
}

// ---- input generators -------------------------------------------------------------

// Words that mean something to some parser: mutations splice them in so that
// the fuzzer reaches past the first check.
const std::vector<std::string>& dictionary() {
  static const std::vector<std::string> d = {
      "0", "1", "-1", "0x", "0x0", "0xffffffffffffffff", "18446744073709551616", "-", "--", "+", "=", ",", ":",
      "\n", " ", "\t", "pmc0", "pmc16", "pmd0", "pmd63", "pmc64", "no_emul64", "notify", "random", "notify=0",
      "random=2", "long_reset=", "short_reset=-5", "switch_cnt=3", "reset_pmds=1,2", "smpl_pmds=0x3",
      "random_mask=0xff", "eventid=", "UNHALTED_CORE_CYCLES", ":u", ":k", "LLC_MISSES:u:k", "load", "start",
      "stop", "restart", "unload", "set=", "set=70000", "time", "none", "ovfl", "thread", "system",
      "notify_block", "no_msg", "autoclose", "inherit", "65535", "2147483648", "\xff", std::string(1, '\0')};
  return d;
}

std::string randomBytes(std::mt19937_64& rng) {
  std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(rng);
  std::string s(n, '\0');
  // Half the time printable ASCII with blanks and newlines, which parsers
  // look at more closely than arbitrary bytes.
  bool text = rng() & 1;
  for (auto& c : s)
    c = text ? " \t\n,=:-x0123456789abcdefnoptrsu"[rng() % 31] : static_cast<char>(rng() & 0xff);
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
  const auto& dict = dictionary();
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
        if (op == 0) w.insert(w.begin() + static_cast<std::ptrdiff_t>(b), w[a]);
        else if (op == 1) w.erase(w.begin() + static_cast<std::ptrdiff_t>(a));
        else std::swap(w[a], w[b]);
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

class Fuzz : public ::testing::TestWithParam<std::size_t> {};

TEST_P(Fuzz, RandomBytes) {
  Target t = targets()[GetParam()];
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull + GetParam());
  std::size_t n = scaled(kPerKind);
  for (std::size_t i = 0; i < n && !HasFatalFailure() && !HasFailure(); ++i) t.run(randomBytes(rng));
}

TEST_P(Fuzz, MutatedValidInputs) {
  Target t = targets()[GetParam()];
  // Every seed is valid: the mutations start from something accepted.
  for (const auto& s : t.seeds) {
    std::size_t before = g_accepted;
    t.run(s);
    EXPECT_GT(g_accepted, before) << t.name << " refused its seed '" << printable(s) << "'";
  }
  std::mt19937_64 rng(0xc2b2ae3d27d4eb4full + GetParam());
  std::size_t n = scaled(kPerKind);
  std::size_t accepted = g_accepted, refused = g_refused;
  for (std::size_t i = 0; i < n && !HasFatalFailure() && !HasFailure(); ++i) {
    const std::string& seed = t.seeds[rng() % t.seeds.size()];
    t.run(mutate(seed, rng));
  }
  // Both verdicts show up, or the mutations explore nothing.
  EXPECT_GT(g_accepted, accepted) << t.name;
  EXPECT_GT(g_refused, refused) << t.name;
  RecordProperty("accepted", static_cast<int>(g_accepted - accepted));
  RecordProperty("refused", static_cast<int>(g_refused - refused));
}

INSTANTIATE_TEST_SUITE_P(AllParsers, Fuzz, ::testing::Range<std::size_t>(0, 10),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return std::string(targets()[p.param].name);
                         });

}  // namespace
}  // namespace pfmfs::fs
