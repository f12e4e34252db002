// Unit tests of the sim event streams: exact counts of constant and phased
// rates, their inverse, the rate text form and the --sim-events file parser.
#include "pmu/sim/event_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "pmu/backend.h"
#include "pmu/intel_arch_perfmon.h"

namespace pfmfs::pmu::sim {

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

EventRate mustParse(std::string_view text) {
  auto r = EventRate::parse(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().reason);
  return r.ok() ? *r : EventRate();
}

// An independent model of a phased rate: walk the target time nanosecond by
// nanosecond and add each nanosecond's rate, in units of 1/den.
std::vector<std::uint64_t> bruteCounts(const std::vector<RatePhase>& phases, std::uint64_t den, std::uint64_t up_to) {
  std::vector<std::uint64_t> out{0};
  unsigned __int128 value = 0;
  std::size_t phase = 0;
  std::uint64_t left = phases[0].duration_ns;
  for (std::uint64_t t = 1; t <= up_to; ++t) {
    value += phases[phase].num;
    if (--left == 0) {
      phase = (phase + 1) % phases.size();
      left = phases[phase].duration_ns;
    }
    out.push_back(static_cast<std::uint64_t>(value / den));
  }
  return out;
}

// ---------------------------------------------------------------- constant

TEST(EventRateConstant, DefaultIsZero) {
  EventRate r;
  EXPECT_TRUE(r.isZero());
  EXPECT_EQ(r.count(0), 0u);
  EXPECT_EQ(r.count(1), 0u);
  EXPECT_EQ(r.count(kMax), 0u);
  EXPECT_EQ(r.timeOfCount(0), 0u);
  EXPECT_EQ(r.timeOfCount(1), kNever);
  EXPECT_EQ(r.timeOfCount(kMax), kNever);
  EXPECT_EQ(r.maxRateCeil(), 0u);
  EXPECT_EQ(r.toString(), "0");
  EXPECT_EQ(EventRate::constant(0, 7), EventRate());
  EXPECT_EQ(mustParse("0"), EventRate());
  EXPECT_EQ(mustParse("0.000"), EventRate());
  EXPECT_EQ(mustParse("1000:0,5:0"), EventRate());
}

TEST(EventRateConstant, IntegerRate) {
  EventRate r = EventRate::constant(3, 1);
  EXPECT_FALSE(r.isZero());
  EXPECT_EQ(r.count(0), 0u);
  EXPECT_EQ(r.count(1), 3u);
  EXPECT_EQ(r.count(2), 6u);
  EXPECT_EQ(r.count(1000), 3000u);
  EXPECT_EQ(r.count(1'000'000'000), 3'000'000'000u);
  // 2^64 - 1 is divisible by 3: the last t before saturation is exact.
  EXPECT_EQ(r.count(6148914691236517204u), 18446744073709551612u);
  EXPECT_EQ(r.count(6148914691236517205u), kMax);
  EXPECT_EQ(r.count(6148914691236517206u), kMax);  // saturated
  EXPECT_EQ(r.count(kMax), kMax);
  EXPECT_EQ(r.maxRateCeil(), 3u);
}

TEST(EventRateConstant, RateTwoNearTheTop) {
  EventRate r = EventRate::constant(2, 1);
  EXPECT_EQ(r.count(9223372036854775807u), 18446744073709551614u);
  EXPECT_EQ(r.count(9223372036854775808u), kMax);  // 2^64: saturated
  EXPECT_EQ(r.timeOfCount(18446744073709551614u), 9223372036854775807u);
  EXPECT_EQ(r.timeOfCount(kMax), 9223372036854775808u);
}

TEST(EventRateConstant, RateOne) {
  EventRate r = EventRate::constant(1, 1);
  for (std::uint64_t t : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{12345},
                          std::uint64_t{1} << 40, kMax - 1, kMax})
    EXPECT_EQ(r.count(t), t);
  EXPECT_EQ(r.timeOfCount(kMax - 1), kMax - 1);
}

TEST(EventRateConstant, FractionalRate) {
  EventRate r = EventRate::constant(5, 2);  // 2.5 per ns
  const std::uint64_t expect[] = {0, 2, 5, 7, 10, 12, 15, 17, 20};
  for (std::uint64_t t = 0; t < std::size(expect); ++t) EXPECT_EQ(r.count(t), expect[t]) << t;
  EXPECT_EQ(r.count(1001), 2502u);
  // floor((2^64 - 1) / 2.5) = 7378697629483820646, and 2.5 times it is exactly 2^64 - 1.
  EXPECT_EQ(r.count(7378697629483820645u), 18446744073709551612u);
  EXPECT_EQ(r.count(7378697629483820646u), kMax);
  EXPECT_EQ(r.count(7378697629483820647u), kMax);
  EXPECT_EQ(r.count(kMax), kMax);
  EXPECT_EQ(r.maxRateCeil(), 3u);
}

TEST(EventRateConstant, SlowRate) {
  EventRate r = EventRate::constant(1, 250);  // 0.004 per ns
  EXPECT_EQ(r.count(0), 0u);
  EXPECT_EQ(r.count(1), 0u);
  EXPECT_EQ(r.count(249), 0u);
  EXPECT_EQ(r.count(250), 1u);
  EXPECT_EQ(r.count(499), 1u);
  EXPECT_EQ(r.count(500), 2u);
  EXPECT_EQ(r.count(1'000'000'000), 4'000'000u);
  EXPECT_EQ(r.count(kMax), 73786976294838206u);
  EXPECT_EQ(r.timeOfCount(1), 250u);
  EXPECT_EQ(r.timeOfCount(2), 500u);
  EXPECT_EQ(r.timeOfCount(73786976294838206u), 18446744073709551500u);
  EXPECT_EQ(r.timeOfCount(73786976294838207u), kNever);
  EXPECT_EQ(r.maxRateCeil(), 1u);

  EventRate nano = EventRate::constant(1, 1'000'000'000);
  EXPECT_EQ(nano.count(999'999'999), 0u);
  EXPECT_EQ(nano.count(1'000'000'000), 1u);
  EXPECT_EQ(nano.count(kMax), 18446744073u);
}

TEST(EventRateConstant, ExtremeFractions) {
  EventRate tiny = EventRate::constant(1, kMax);
  EXPECT_EQ(tiny.count(kMax - 1), 0u);
  EXPECT_EQ(tiny.count(kMax), 1u);
  EXPECT_EQ(tiny.timeOfCount(1), kMax);
  EXPECT_EQ(tiny.timeOfCount(2), kNever);
  EXPECT_EQ(tiny.maxRateCeil(), 1u);

  // (2^64 - 1) / (2^64 - 2): t + floor(t / (2^64 - 2)).
  EventRate over_one = EventRate::constant(kMax, kMax - 1);
  EXPECT_EQ(over_one.count(1), 1u);
  EXPECT_EQ(over_one.count(kMax - 2), kMax - 2);
  EXPECT_EQ(over_one.count(kMax - 1), kMax);
  EXPECT_EQ(over_one.count(kMax), kMax);  // 2^64: saturated
  EXPECT_EQ(over_one.timeOfCount(kMax), kMax - 1);
  EXPECT_EQ(over_one.maxRateCeil(), 2u);

  EventRate fastest = EventRate::constant(kMax, 1);
  EXPECT_EQ(fastest.count(1), kMax);
  EXPECT_EQ(fastest.count(2), kMax);
  EXPECT_EQ(fastest.count(kMax), kMax);
  EXPECT_EQ(fastest.timeOfCount(kMax), 1u);
  EXPECT_EQ(fastest.maxRateCeil(), kMax);
}

TEST(EventRateConstant, ReducesTheFraction) {
  EXPECT_EQ(EventRate::constant(25, 10), EventRate::constant(5, 2));
  EXPECT_EQ(EventRate::constant(6, 3), EventRate::constant(2, 1));
  EXPECT_EQ(mustParse("2.5"), EventRate::constant(5, 2));
  EXPECT_EQ(mustParse("2.50"), EventRate::constant(5, 2));
  EXPECT_NE(EventRate::constant(5, 2), EventRate::constant(2, 1));
}

TEST(EventRateConstant, TimeOfCountExact) {
  EventRate three = EventRate::constant(3, 1);
  EXPECT_EQ(three.timeOfCount(0), 0u);
  EXPECT_EQ(three.timeOfCount(1), 1u);
  EXPECT_EQ(three.timeOfCount(3), 1u);
  EXPECT_EQ(three.timeOfCount(4), 2u);
  EXPECT_EQ(three.timeOfCount(kMax), 6148914691236517205u);

  EventRate two_half = EventRate::constant(5, 2);
  EXPECT_EQ(two_half.timeOfCount(1), 1u);
  EXPECT_EQ(two_half.timeOfCount(2), 1u);
  EXPECT_EQ(two_half.timeOfCount(3), 2u);
  EXPECT_EQ(two_half.timeOfCount(5), 2u);
  EXPECT_EQ(two_half.timeOfCount(6), 3u);
  EXPECT_EQ(two_half.timeOfCount(kMax), 7378697629483820646u);

  EventRate half = EventRate::constant(1, 2);
  EXPECT_EQ(half.timeOfCount(1), 2u);
  EXPECT_EQ(half.timeOfCount(9223372036854775807u), 18446744073709551614u);
  EXPECT_EQ(half.timeOfCount(9223372036854775808u), kNever);  // at 2^64 ns
  EXPECT_EQ(half.timeOfCount(kMax), kNever);
}

// ---------------------------------------------------------------- phased

TEST(EventRatePhased, DefaultPhasesAreComplementary) {
  auto events = defaultEvents(4);
  const SimEvent* a = findByCode(events, 0x01f0);
  const SimEvent* b = findByCode(events, 0x02f0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->rate.count(1), 4u);
  EXPECT_EQ(a->rate.count(1'000'000), 4'000'000u);
  EXPECT_EQ(a->rate.count(1'000'001), 4'000'000u);
  EXPECT_EQ(a->rate.count(2'000'000), 4'000'000u);
  EXPECT_EQ(a->rate.count(2'000'001), 4'000'004u);
  EXPECT_EQ(a->rate.count(3'000'000), 8'000'000u);
  EXPECT_EQ(a->rate.count(3'500'000), 8'000'000u);
  EXPECT_EQ(b->rate.count(1), 0u);
  EXPECT_EQ(b->rate.count(1'000'000), 0u);
  EXPECT_EQ(b->rate.count(1'000'001), 4u);
  EXPECT_EQ(b->rate.count(2'000'000), 4'000'000u);
  EXPECT_EQ(b->rate.count(3'000'000), 4'000'000u);
  EXPECT_EQ(b->rate.count(3'000'001), 4'000'004u);

  EXPECT_EQ(a->rate.timeOfCount(4'000'000), 1'000'000u);
  EXPECT_EQ(a->rate.timeOfCount(4'000'001), 2'000'001u);
  EXPECT_EQ(a->rate.timeOfCount(4'000'004), 2'000'001u);
  EXPECT_EQ(a->rate.timeOfCount(4'000'005), 2'000'002u);
  EXPECT_EQ(b->rate.timeOfCount(1), 1'000'001u);
  EXPECT_EQ(b->rate.timeOfCount(4'000'000), 2'000'000u);
  EXPECT_EQ(b->rate.timeOfCount(4'000'001), 3'000'001u);

  // Together they are a steady 4/ns, at every instant.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::uint64_t t = rng() % 4'000'000'000'000'000'000ull;
    ASSERT_EQ(a->rate.count(t) + b->rate.count(t), 4 * t) << t;
  }
  for (std::uint64_t t = 0; t < 10'000'000; t += 99'991) ASSERT_EQ(a->rate.count(t) + b->rate.count(t), 4 * t);
  EXPECT_EQ(a->rate.maxRateCeil(), 4u);
  EXPECT_EQ(b->rate.maxRateCeil(), 4u);
}

// A rate whose decimal would not read back (its digits, as one integer, pass
// 64 bits) is written as the fraction. Found by the libFuzzer oracle simRate.
TEST(EventRate, ToStringReadsBackWhereTheDecimalWouldNotFit) {
  EventRate r = mustParse("5257777777777777776/25");  // 210311111111111111.04
  EXPECT_EQ(r.toString(), "5257777777777777776/25");
  EXPECT_EQ(mustParse(r.toString()), r);
  EXPECT_EQ(mustParse("210311111111111111.5").toString(), "210311111111111111.5");
}

TEST(EventRatePhased, FractionalPhasesMatchBruteForce) {
  // 1.5/ns for 3 ns, idle for 2 ns, 0.25/ns for 5 ns: 5.75 per 10 ns period.
  EventRate r = mustParse("3:1.5,2:0,5:0.25");
  EXPECT_EQ(r, EventRate::phased({{3, 6}, {2, 0}, {5, 1}}, 4));
  EXPECT_EQ(r.toString(), "3:1.5,2:0,5:0.25");
  EXPECT_EQ(r.count(10), 5u);
  EXPECT_EQ(r.count(20), 11u);
  EXPECT_EQ(r.count(40), 23u);
  EXPECT_EQ(r.count(1'000'000'000'000), 575'000'000'000u);
  EXPECT_EQ(r.maxRateCeil(), 2u);
  auto brute = bruteCounts({{3, 6}, {2, 0}, {5, 1}}, 4, 2000);
  for (std::uint64_t t = 0; t < brute.size(); ++t) ASSERT_EQ(r.count(t), brute[t]) << t;
}

TEST(EventRatePhased, ManyShapesMatchBruteForce) {
  struct Case {
    std::vector<RatePhase> phases;
    std::uint64_t den;
  };
  const Case cases[] = {
      {{{1, 3}, {1, 1}}, 1},
      {{{7, 1}, {3, 0}}, 3},
      {{{1, 0}, {1, 0}, {1, 5}}, 7},
      {{{13, 2}, {1, 9}, {6, 4}, {2, 0}}, 10},
      {{{5, 1}, {5, 2}, {5, 3}}, 1000},
      {{{1, 999}, {2, 1}}, 1000},
      {{{100, 1}, {1, 100000}}, 3},
  };
  for (const auto& c : cases) {
    EventRate r = EventRate::phased(c.phases, c.den);
    auto brute = bruteCounts(c.phases, c.den, 5000);
    for (std::uint64_t t = 0; t < brute.size(); ++t) ASSERT_EQ(r.count(t), brute[t]) << r.toString() << " t=" << t;
    // The inverse, checked against the same model.
    for (std::uint64_t n = 1; n <= brute.back(); ++n) {
      std::uint64_t t = r.timeOfCount(n);
      ASSERT_LT(t, brute.size()) << r.toString() << " n=" << n;
      ASSERT_GE(brute[t], n);
      ASSERT_LT(brute[t - 1], n);
    }
  }
}

TEST(EventRatePhased, AcrossPeriodsNearTheTop) {
  EventRate r = EventRate::phased({{1, 3}, {1, 1}}, 1);  // 4 events per 2 ns
  EXPECT_EQ(r.count(1), 3u);
  EXPECT_EQ(r.count(2), 4u);
  EXPECT_EQ(r.count(3), 7u);
  EXPECT_EQ(r.count(9223372036854775806u), 18446744073709551612u);
  EXPECT_EQ(r.count(9223372036854775807u), kMax);
  EXPECT_EQ(r.count(9223372036854775808u), kMax);  // 2^64: saturated
  EXPECT_EQ(r.count(kMax), kMax);
  EXPECT_EQ(r.timeOfCount(kMax), 9223372036854775807u);
  EXPECT_EQ(r.timeOfCount(18446744073709551613u), 9223372036854775807u);
  EXPECT_EQ(r.timeOfCount(18446744073709551612u), 9223372036854775806u);

  // A long, slow period: 1 event per second for 1 s, none for 1 s.
  EventRate slow = mustParse("1000000000:0.000000001,1000000000:0");
  // 9223372036 whole periods, then 1.709551615 s: one more event.
  EXPECT_EQ(slow.count(kMax), 9223372037u);
  EXPECT_EQ(slow.count(18446744072999999999u), 9223372036u);
  EXPECT_EQ(slow.timeOfCount(9223372036u), 18446744071000000000u);
  EXPECT_EQ(slow.timeOfCount(9223372037u), 18446744073000000000u);
  EXPECT_EQ(slow.timeOfCount(9223372038u), kNever);
}

TEST(EventRatePhased, HugeValuesSaturate) {
  EventRate burst = EventRate::phased({{1, kMax}, {1, 0}}, 1);
  EXPECT_EQ(burst.count(1), kMax);
  EXPECT_EQ(burst.count(2), kMax);
  EXPECT_EQ(burst.count(3), kMax);
  EXPECT_EQ(burst.count(kMax), kMax);
  EXPECT_EQ(burst.timeOfCount(1), 1u);
  EXPECT_EQ(burst.timeOfCount(kMax), 1u);

  // A denominator near 2^64 and a per-period integral near 2^127 (in units
  // of 1/den): 1/ns for 2^63 - 1 ns, then 1/(2^64 - 1) per ns for 1 ns.
  EventRate wide = EventRate::phased({{kMax / 2, kMax}, {1, 1}}, kMax);
  EXPECT_EQ(wide.count(1), 1u);
  EXPECT_EQ(wide.count(kMax / 2), kMax / 2);
  EXPECT_EQ(wide.timeOfCount(kMax / 2), kMax / 2);
  EXPECT_EQ(wide.count(kMax / 2 + 1), kMax / 2);
  EXPECT_EQ(wide.count(kMax / 2 + 2), kMax / 2 + 1);
  EXPECT_EQ(wide.timeOfCount(kMax / 2 + 1), kMax / 2 + 2);  // the slow ns alone reaches no whole event
}

TEST(EventRatePhased, PeriodLongerThanTimeIsCut) {
  // The period would pass 2^64 ns: no count inside u64 time changes by
  // cutting it at 2^64 - 1.
  EventRate r = EventRate::phased({{kMax - 1, 1}, {5, 2}}, 1);
  EXPECT_EQ(r, EventRate::phased({{kMax - 1, 1}, {1, 2}}, 1));
  EXPECT_EQ(r.toString(), fmt::format("{}:1,1:2", kMax - 1));
  EXPECT_EQ(mustParse(r.toString()), r);
  EXPECT_EQ(r.count(kMax - 1), kMax - 1);
  EXPECT_EQ(r.count(kMax), kMax);  // kMax + 1 events: saturated
  EXPECT_EQ(r.timeOfCount(kMax), kMax);
}

TEST(EventRatePhased, Normalisation) {
  // One rate throughout is a constant, whatever the phases say.
  EXPECT_EQ(EventRate::phased({{10, 2}, {20, 2}}, 1), EventRate::constant(2, 1));
  EXPECT_EQ(EventRate::phased({{10, 4}}, 2), EventRate::constant(2, 1));
  EXPECT_EQ(mustParse("10:2,10:2"), EventRate::constant(2, 1));
  // Empty phases vanish and neighbours with the same rate merge.
  EXPECT_EQ(EventRate::phased({{10, 1}, {0, 9}, {5, 1}, {5, 0}}, 1), EventRate::phased({{15, 1}, {5, 0}}, 1));
  EXPECT_EQ(EventRate::phased({}, 1), EventRate());
  EXPECT_EQ(EventRate::phased({{0, 5}}, 1), EventRate());
  EXPECT_EQ(EventRate::phased({{3, 0}, {4, 0}}, 9), EventRate());
  // The fraction is reduced over all phases together.
  EXPECT_EQ(EventRate::phased({{1, 20}, {1, 10}}, 10), EventRate::phased({{1, 2}, {1, 1}}, 1));
  EXPECT_EQ(EventRate::phased({{1, 5}, {1, 10}}, 10).toString(), "1:0.5,1:1");
}

// ---------------------------------------------------------------- properties

std::vector<EventRate> sampleRates() {
  std::vector<EventRate> rates;
  for (const char* text : {"3", "2", "2.5", "0.05", "0.01", "0.4", "0.004", "1", "0.000000001", "7.123456789",
                           "1000000:4,1000000:0", "1000000:0,1000000:4", "3:1.5,2:0,5:0.25", "1:3,1:1",
                           "17:0.3,4:11,9:0", "1/3", "1000:2/7,1:5", "123456789:0.5,987654321:0.25"})
    rates.push_back(mustParse(text));
  rates.push_back(EventRate::constant(kMax, 3));
  rates.push_back(EventRate::constant(7, kMax));
  rates.push_back(EventRate::phased({{1ull << 62, 1}, {1ull << 62, 3}}, 2));
  return rates;
}

TEST(EventRateProperties, Telescoping) {
  std::mt19937_64 rng(42);
  for (const auto& r : sampleRates()) {
    for (int trial = 0; trial < 50; ++trial) {
      std::uint64_t span = trial % 2 ? 100'000 : 1ull << (20 + trial % 40);
      std::uint64_t start = rng() % (1ull << 60);
      std::uint64_t end = start + rng() % span;
      std::uint64_t sum = 0;
      std::uint64_t a = start;
      while (a < end) {
        std::uint64_t b = std::min(end, a + 1 + rng() % (span / 8 + 1));
        ASSERT_GE(r.count(b), r.count(a));
        sum += r.count(b) - r.count(a);
        a = b;
      }
      ASSERT_EQ(sum, r.count(end) - r.count(start)) << r.toString();
    }
  }
}

TEST(EventRateProperties, IntervalCountsAreFloorOrCeilOfTheIntegral) {
  // Over any interval the count is within one of the exact integral: this
  // holds only if nothing is rounded but the final floor.
  EventRate r = EventRate::constant(7, 3);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    std::uint64_t a = rng() % (1ull << 62);
    std::uint64_t len = rng() % (1ull << 20);
    std::uint64_t got = r.count(a + len) - r.count(a);
    std::uint64_t lo = len * 7 / 3;
    ASSERT_TRUE(got == lo || got == lo + 1) << a << " " << len;
  }
  // A phased rate with a whole number of events per period repeats exactly.
  EventRate p = mustParse("3:1.5,2:0,5:0.25,10:0.125");  // 7 events per 20 ns
  for (int i = 0; i < 5000; ++i) {
    std::uint64_t t = rng() % (1ull << 61);
    std::uint64_t k = rng() % (1ull << 20);
    ASSERT_EQ(p.count(t + 20 * k), p.count(t) + 7 * k) << t << " " << k;
  }
}

TEST(EventRateProperties, TimeOfCountIsTheInverse) {
  std::mt19937_64 rng(1);
  for (const auto& r : sampleRates()) {
    std::vector<std::uint64_t> ns = {1, 2, 3, 4, 5, 10, 99, 100, 101, 1000, 4'000'000, 4'000'001, kMax - 1, kMax};
    for (int i = 0; i < 300; ++i) ns.push_back(rng() >> (rng() % 64));
    for (int i = 0; i < 50; ++i) ns.push_back(r.count(rng()));  // counts actually reached
    for (std::uint64_t n : ns) {
      if (n == 0) continue;
      std::uint64_t t = r.timeOfCount(n);
      if (t == kNever) {
        // Never reached inside u64 time, or reached exactly at its last ns.
        ASSERT_LT(r.count(kMax - 1), n) << r.toString() << " n=" << n;
        continue;
      }
      ASSERT_GE(r.count(t), n) << r.toString() << " n=" << n;
      ASSERT_GE(t, 1u);
      ASSERT_LT(r.count(t - 1), n) << r.toString() << " n=" << n;
    }
    EXPECT_EQ(r.timeOfCount(0), 0u);
  }
}

// ---------------------------------------------------------------- text form

TEST(EventRateText, ParsesDecimals) {
  EXPECT_EQ(mustParse("3"), EventRate::constant(3, 1));
  EXPECT_EQ(mustParse("007"), EventRate::constant(7, 1));
  EXPECT_EQ(mustParse("2.5"), EventRate::constant(25, 10));
  EXPECT_EQ(mustParse("0.004"), EventRate::constant(4, 1000));
  EXPECT_EQ(mustParse("0.000000001"), EventRate::constant(1, 1'000'000'000));
  EXPECT_EQ(mustParse("18446744073709551615"), EventRate::constant(kMax, 1));
  EXPECT_EQ(mustParse("18446744073.709551615"), EventRate::constant(kMax, 1'000'000'000));
  EXPECT_EQ(mustParse("1/3"), EventRate::constant(1, 3));
  EXPECT_EQ(mustParse("4/6"), EventRate::constant(2, 3));
  EXPECT_EQ(mustParse("1000000:4,1000000:0"), EventRate::phased({{1'000'000, 4}, {1'000'000, 0}}, 1));
  EXPECT_EQ(mustParse("1:0.5,2:0.25,3:0.125"), EventRate::phased({{1, 4}, {2, 2}, {3, 1}}, 8));
  EXPECT_EQ(mustParse("1:1/3,1:0.5"), EventRate::phased({{1, 2}, {1, 3}}, 6));
}

TEST(EventRateText, ToString) {
  EXPECT_EQ(EventRate::constant(3, 1).toString(), "3");
  EXPECT_EQ(EventRate::constant(5, 2).toString(), "2.5");
  EXPECT_EQ(EventRate::constant(1, 20).toString(), "0.05");
  EXPECT_EQ(EventRate::constant(1, 250).toString(), "0.004");
  EXPECT_EQ(EventRate::constant(1, 1'000'000'000).toString(), "0.000000001");
  EXPECT_EQ(EventRate::constant(123456789012, 1000).toString(), "123456789.012");
  EXPECT_EQ(EventRate::constant(kMax, 1).toString(), "18446744073709551615");
  EXPECT_EQ(EventRate::constant(1, 3).toString(), "1/3");
  EXPECT_EQ(EventRate::constant(10, 7).toString(), "10/7");
  EXPECT_EQ(EventRate::phased({{1'000'000, 4}, {1'000'000, 0}}, 1).toString(), "1000000:4,1000000:0");
  EXPECT_EQ(EventRate::phased({{5, 1}, {6, 2}}, 3).toString(), "5:1/3,6:2/3");
  EXPECT_EQ(mustParse("2.500").toString(), "2.5");
  EXPECT_EQ(mustParse("00.10").toString(), "0.1");
}

TEST(EventRateText, RoundTrips) {
  auto rates = sampleRates();
  for (const char* text : {"0", "1.000000001", "999999999.999999999", "10:1,10:0.5,10:0", "4:0,4:0.000000001"})
    rates.push_back(mustParse(text));
  for (const auto& e : defaultEvents(8)) rates.push_back(e.rate);
  rates.push_back(EventRate());
  rates.push_back(EventRate::constant(kMax, kMax - 1));
  rates.push_back(EventRate::phased({{kMax, 1}}, 1));
  rates.push_back(EventRate::phased({{3, kMax}, {4, 1}}, kMax - 2));
  for (const auto& r : rates) {
    auto back = EventRate::parse(r.toString());
    ASSERT_TRUE(back.ok()) << r.toString() << ": " << back.error().reason;
    EXPECT_EQ(*back, r) << r.toString();
    EXPECT_EQ(back->toString(), r.toString());
  }
}

TEST(EventRateText, RejectsGarbage) {
  const char* bad[] = {
      "",
      " ",
      "abc",
      "-1",
      "+1",
      "1.",
      ".5",
      "1.2.3",
      "0.0000000001",  // 10 fractional digits
      "1e3",
      "0x10",
      "nan",
      "inf",
      " 1",
      "1 ",
      "1,5",
      "1_000",
      "18446744073709551616",  // 2^64
      "18446744073709551615.5",
      "18446744073.7095516151",
      "1/0",
      "1/",
      "/2",
      "1.5/2",
      "1/2/3",
      "-1/2",
      "0:1",      // zero-length phase
      "0:1,0:2",  // zero period
      ":1",
      "1000:",
      "1000:1,",
      ",1000:1",
      "1000:1,,1000:2",
      "1000:1:2",
      "-5:1",
      "1000:-1",
      "10:1,x:2",
      "1000:2.5.1",
      "1000 :1",
      "1.5:1",
      "18446744073709551615:1,1:1",     // period past 2^64 - 1
      "1:18446744073709551615,1:0.5",   // needs a numerator past 2^64
      "1:1/4294967311,1:1/4294967357",  // common denominator past 2^64
      "99999999999999999999:1",         // a duration past 2^64 - 1
      "1/99999999999999999999",
      "99999999999999999999/1",
      "\xef\xbc\x91",  // a full-width digit one
  };
  static_assert(std::size(bad) >= 20);
  for (const char* text : bad) {
    auto r = EventRate::parse(text);
    ASSERT_FALSE(r.ok()) << "'" << text << "' parsed as " << r->toString();
    EXPECT_EQ(r.code(), -EINVAL) << text;
    EXPECT_FALSE(r.error().reason.empty()) << text;
    EXPECT_EQ(r.error().reason.find('\n'), std::string::npos) << text;
  }
}

TEST(EventRateText, ReasonsSayWhatIsWrong) {
  EXPECT_THAT(EventRate::parse("0.0000000001").error().reason, HasSubstr("fractional digits"));
  EXPECT_THAT(EventRate::parse("99999999999999999999").error().reason, HasSubstr("too large"));
  EXPECT_THAT(EventRate::parse("0:1").error().reason, HasSubstr("0 ns"));
  EXPECT_THAT(EventRate::parse("1/0").error().reason, HasSubstr("denominator 0"));
  EXPECT_THAT(EventRate::parse("99999999999999999999:1").error().reason, HasSubstr("period longer"));
  EXPECT_THAT(EventRate::parse("1:1,x:2").error().reason, HasSubstr("phase 'x:2'"));
  EXPECT_EQ(EventRate::parse("2.5x").error().reason,
            "rate '2.5x': expected a decimal such as 2.5 or a phase list DUR:RATE,...");
}

// ---------------------------------------------------------------- default table

TEST(DefaultEvents, Table) {
  struct Row {
    const char* name;
    std::uint64_t code;
    const char* rate;
    RegMask counters;
  };
  constexpr RegMask kGeneral = 0xf;
  const Row expect[] = {
      {"UNHALTED_CORE_CYCLES", 0x3c, "3", kGeneral | regBit(17)},
      {"INSTRUCTION_RETIRED", 0xc0, "2", kGeneral | regBit(16)},
      {"UNHALTED_REFERENCE_CYCLES", 0x013c, "2.5", kGeneral | regBit(18)},
      {"LLC_REFERENCES", 0x4f2e, "0.05", kGeneral},
      {"LLC_MISSES", 0x412e, "0.01", kGeneral},
      {"BRANCH_INSTRUCTIONS_RETIRED", 0xc4, "0.4", kGeneral},
      {"BRANCH_MISSES_RETIRED", 0xc5, "0.004", kGeneral},
      {"SIM_PHASE_A", 0x01f0, "1000000:4,1000000:0", kGeneral},
      {"SIM_PHASE_B", 0x02f0, "1000000:0,1000000:4", kGeneral},
  };
  auto events = defaultEvents(4);
  ASSERT_EQ(events.size(), std::size(expect));
  for (std::size_t i = 0; i < events.size(); ++i) {
    const SimEvent& e = events[i];
    SCOPED_TRACE(expect[i].name);
    EXPECT_EQ(e.desc.name, expect[i].name);
    EXPECT_EQ(e.desc.code, expect[i].code);
    EXPECT_EQ(e.rate.toString(), expect[i].rate);
    EXPECT_EQ(e.rate, mustParse(expect[i].rate));
    EXPECT_EQ(e.desc.counters, expect[i].counters);
    EXPECT_EQ(e.ring, Ring::User);
    EXPECT_FALSE(e.desc.desc.empty());
    EXPECT_EQ(e.desc.desc.find('\n'), std::string::npos);
    EXPECT_EQ(findByCode(events, expect[i].code), &e);
  }
  EXPECT_EQ(events[0].rate, EventRate::constant(3, 1));
  EXPECT_EQ(events[2].rate, EventRate::constant(5, 2));
  EXPECT_EQ(events[6].rate, EventRate::constant(1, 250));
}

TEST(DefaultEvents, SameAsTheArchitecturalTable) {
  for (unsigned general : {1u, 4u, 8u}) {
    auto events = defaultEvents(general);
    auto arch = intel::architecturalEvents(general);
    ASSERT_EQ(events.size(), arch.size() + 2);
    for (std::size_t i = 0; i < arch.size(); ++i) {
      EXPECT_EQ(events[i].desc.name, arch[i].name);
      EXPECT_EQ(events[i].desc.code, arch[i].code);
      EXPECT_EQ(events[i].desc.counters, arch[i].counters);
      EXPECT_EQ(events[i].desc.desc, arch[i].desc);
    }
    RegMask all_general = (RegMask{1} << general) - 1;
    EXPECT_EQ(events[arch.size()].desc.counters, all_general);
    EXPECT_EQ(events[arch.size() + 1].desc.counters, all_general);
  }
}

TEST(DefaultEvents, RatesMatchSpec) {
  auto events = defaultEvents(4);
  auto rateOf = [&](std::uint64_t code) { return findByCode(events, code)->rate; };
  EXPECT_EQ(rateOf(intel::event::kUnhaltedCoreCycles).count(1'000'000'000), 3'000'000'000u);
  EXPECT_EQ(rateOf(intel::event::kInstructionRetired).count(1'000'000'000), 2'000'000'000u);
  EXPECT_EQ(rateOf(intel::event::kUnhaltedReferenceCycles).count(1'000'000'000), 2'500'000'000u);
  EXPECT_EQ(rateOf(intel::event::kLlcReferences).count(1'000'000'000), 50'000'000u);
  EXPECT_EQ(rateOf(intel::event::kLlcMisses).count(1'000'000'000), 10'000'000u);
  EXPECT_EQ(rateOf(intel::event::kBranchInstructionsRetired).count(1'000'000'000), 400'000'000u);
  EXPECT_EQ(rateOf(intel::event::kBranchMissesRetired).count(1'000'000'000), 4'000'000u);
  EXPECT_EQ(rateOf(0x01f0).count(1'000'000'000), 2'000'000'000u);
  EXPECT_EQ(rateOf(0x02f0).count(1'000'000'000), 2'000'000'000u);
  EXPECT_EQ(findByCode(events, 0x1234), nullptr);
  EXPECT_EQ(findByCode(events, 0), nullptr);
  EXPECT_EQ(findByCode({}, 0x3c), nullptr);
}

// ---------------------------------------------------------------- --sim-events

TEST(ParseEvents, FullFile) {
  const char* text =
      "# a comment line\n"
      "\n"
      "name=CYCLES code=0x3c rate=3 desc=\"Core cycles, simulated\"\n"
      "  \t name=KSTALL\tcode=0x1234 rate=0.125 ring=kernel counters=0x3"
      " desc=\"says \\\"hi\\\" \\\\ #not a comment\"\r\n"
      "name=PHASED code=77 rate=10:1,10:0 ring=user  # trailing comment\n"
      "name=INSTR code=0xC0 rate=2.5 counters=0x10001\n"
      "name=REF_2 code=0x013c rate=1/3";
  auto r = parseEvents(text, 4);
  ASSERT_TRUE(r.ok()) << r.error().reason;
  const auto& ev = *r;
  ASSERT_EQ(ev.size(), 5u);

  EXPECT_EQ(ev[0].desc.name, "CYCLES");
  EXPECT_EQ(ev[0].desc.code, 0x3cu);
  EXPECT_EQ(ev[0].rate, EventRate::constant(3, 1));
  EXPECT_EQ(ev[0].ring, Ring::User);
  EXPECT_EQ(ev[0].desc.counters, 0xfu | regBit(17));  // general plus FIXED_CTR1
  EXPECT_EQ(ev[0].desc.desc, "Core cycles, simulated");

  EXPECT_EQ(ev[1].desc.name, "KSTALL");
  EXPECT_EQ(ev[1].desc.code, 0x1234u);
  EXPECT_EQ(ev[1].rate, EventRate::constant(1, 8));
  EXPECT_EQ(ev[1].ring, Ring::Kernel);
  EXPECT_EQ(ev[1].desc.counters, 0x3u);
  EXPECT_EQ(ev[1].desc.desc, "says \"hi\" \\ #not a comment");

  EXPECT_EQ(ev[2].desc.name, "PHASED");
  EXPECT_EQ(ev[2].desc.code, 77u);
  EXPECT_EQ(ev[2].rate, EventRate::phased({{10, 1}, {10, 0}}, 1));
  EXPECT_EQ(ev[2].ring, Ring::User);
  EXPECT_EQ(ev[2].desc.counters, 0xfu);
  EXPECT_EQ(ev[2].desc.desc, "");

  EXPECT_EQ(ev[3].desc.code, 0xc0u);
  EXPECT_EQ(ev[3].desc.counters, regBit(0) | regBit(16));
  EXPECT_EQ(ev[3].rate, EventRate::constant(5, 2));

  EXPECT_EQ(ev[4].desc.name, "REF_2");
  EXPECT_EQ(ev[4].desc.counters, 0xfu | regBit(18));
  EXPECT_EQ(ev[4].rate, EventRate::constant(1, 3));

  EXPECT_EQ(findByCode(ev, 0x1234), &ev[1]);
  EXPECT_EQ(findByCode(ev, 0x4f2e), nullptr);
}

TEST(ParseEvents, GeneralCountersFollowTheShape) {
  auto one = parseEvents("name=X code=0x2e rate=1\n", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0].desc.counters, 0x1u);
  auto eight = parseEvents("name=X code=0x2e rate=1 counters=0x80\n", 8);
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ((*eight)[0].desc.counters, 0x80u);
  EXPECT_FALSE(parseEvents("name=X code=0x2e rate=1 counters=0x80\n", 4).ok());
}

TEST(ParseEvents, DefaultTableRoundTrips) {
  auto defaults = defaultEvents(4);
  std::string text = "# the default table, written out\n";
  for (const auto& e : defaults)
    text += fmt::format("name={} code={:#x} rate={} ring=user counters={:#x} desc=\"{}\"\n", e.desc.name, e.desc.code,
                        e.rate.toString(), e.desc.counters, e.desc.desc);
  auto r = parseEvents(text, 4);
  ASSERT_TRUE(r.ok()) << r.error().reason;
  ASSERT_EQ(r->size(), defaults.size());
  for (std::size_t i = 0; i < defaults.size(); ++i) {
    EXPECT_EQ((*r)[i].desc.name, defaults[i].desc.name);
    EXPECT_EQ((*r)[i].desc.code, defaults[i].desc.code);
    EXPECT_EQ((*r)[i].desc.counters, defaults[i].desc.counters);
    EXPECT_EQ((*r)[i].desc.desc, defaults[i].desc.desc);
    EXPECT_EQ((*r)[i].rate, defaults[i].rate);
    EXPECT_EQ((*r)[i].ring, defaults[i].ring);
  }
}

struct BadFile {
  const char* text;
  const char* reason;  // expected start of the error reason
};

TEST(ParseEvents, RejectsGarbage) {
  const BadFile bad[] = {
      {"", "no events"},
      {"\n\n   \n", "no events"},
      {"# just a comment\n  # another\n", "no events"},
      {"name=A code=1\n", "line 1: missing rate"},
      {"code=1 rate=1\n", "line 1: missing name"},
      {"name=A rate=1\n", "line 1: missing code"},
      {"name=A code=1 rate=1\n\nname=B code=2 rate=1 foo=3\n", "line 3: unknown key 'foo'"},
      {"name=A code=1 rate=1 Name=B\n", "line 1: unknown key 'Name'"},
      {"name=A code=1 rate=1 name=B\n", "line 1: key 'name' given twice"},
      {"name=A code=1 rate=1\nname=A code=2 rate=1\n", "line 2: name A already defined on line 1"},
      {"name=A code=1 rate=1\n#\nname=B code=0x1 rate=1\n", "line 3: code 0x1 already defined on line 1"},
      {"name=lower code=1 rate=1\n", "line 1: name 'lower'"},
      {"name= code=1 rate=1\n", "line 1: name ''"},
      {"name=A-B code=1 rate=1\n", "line 1: name 'A-B'"},
      {"name=\"A B\" code=1 rate=1\n", "line 1: name 'A B'"},
      {"name=A code=xyz rate=1\n", "line 1: code 'xyz' is not a number"},
      {"name=A code=0x rate=1\n", "line 1: code '0x' is not a number"},
      {"name=A code=-1 rate=1\n", "line 1: code '-1' is not a number"},
      {"name=A code=0x10000 rate=1\n", "line 1: code '0x10000'"},
      {"name=A code=0 rate=1\n", "line 1: code '0'"},
      {"name=A code=0x1g rate=1\n", "line 1: code '0x1g' is not a number"},
      {"name=A code=1 rate=abc\n", "line 1: rate 'abc'"},
      {"name=A code=1 rate=\n", "line 1: rate ''"},
      {"name=A code=1 rate=0:5\n", "line 1: rate '0:5'"},
      {"name=A code=1 rate=1 ring=both\n", "line 1: ring 'both'"},
      {"name=A code=1 rate=1 ring=USER\n", "line 1: ring 'USER'"},
      {"name=A code=1 rate=1 counters=0\n", "line 1: counters '0' names no counter"},
      {"name=A code=1 rate=1 counters=zz\n", "line 1: counters 'zz' is not a number"},
      {"name=A code=1 rate=1 counters=0x100\n", "line 1: counters '0x100'"},  // PMD8 with 4 counters
      {"name=A code=1 rate=1 counters=0x10\n", "line 1: counters '0x10'"},    // PMD4 with 4 counters
      // PMD19: no such fixed counter.
      {"name=A code=1 rate=1 counters=0x80000\n", "line 1: counters '0x80000'"},
      {"name=A code=0x3c rate=1 counters=0x10000\n", "line 1: counters '0x10000'"},  // FIXED_CTR0 counts 0xc0
      // FIXED_CTR2 counts 0x13c.
      {"name=A code=0xc0 rate=1 counters=0x40000\n", "line 1: counters '0x40000'"},
      {"name=A code=1 rate=1 desc=\"open\n", "line 1: desc: unterminated"},
      {"name=A code=1 rate=1 desc=\"x\"y\n", "line 1: desc: text right after"},
      {"name=A code=1 rate=1 bare\n", "line 1: 'bare' is not key=value"},
      {"name=A code=1 rate=1 =5\n", "line 1: '=' with no key"},
      {"name=A code=1 rate=1\nname=B code=2\trate=1 junk\n", "line 2: 'junk' is not key=value"},
      {"\n\n\n\nname=A code=1 rate=1 #x\nname=B\n", "line 6: missing code"},
  };
  static_assert(std::size(bad) >= 20);
  for (const auto& b : bad) {
    auto r = parseEvents(b.text, 4);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_EQ(r.code(), -EINVAL) << b.text;
    EXPECT_THAT(r.error().reason, StartsWith(b.reason)) << b.text;
    EXPECT_EQ(r.error().reason.find('\n'), std::string::npos) << b.text;
  }
}

TEST(ParseEvents, ExactReasons) {
  EXPECT_EQ(parseEvents("name=A code=1 rate=1\n\nname=B code=2 rate=1 foo=3\n", 4).error().reason,
            "line 3: unknown key 'foo'");
  EXPECT_EQ(parseEvents("name=A code=0x3c rate=1 counters=0x10000\n", 4).error().reason,
            "line 1: counters '0x10000': fixed counters 0x10000 count another event than code 0x3c");
  EXPECT_EQ(parseEvents("name=A code=1 rate=1 counters=0x100\n", 4).error().reason,
            "line 1: counters '0x100': 0x100 are not counters (general 0xf, fixed 0x70000)");
}

}  // namespace
}  // namespace pfmfs::pmu::sim
