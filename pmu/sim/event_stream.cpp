// Exact event streams for the sim backend: rational rates, their integrals in
// integer arithmetic, and their text form. The event table and the
// --sim-events file format are sim_events.cpp's.
#include "pmu/sim/event_stream.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "pmu/backend.h"
#include "pmu/number_text.h"

namespace pfmfs::pmu::sim {

namespace {

using u128 = unsigned __int128;

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr unsigned kMaxFractionDigits = 9;
constexpr std::uint64_t kDecimalScale = 1'000'000'000;  // 10^kMaxFractionDigits

// Integrals are kept in units of 1/den and clamped at cap = 2^64 * den: any
// value that large already means a count past UINT64_MAX, and clamping keeps
// every product and sum inside 128 bits however large the inputs.
u128 capOf(std::uint64_t den) { return static_cast<u128>(den) << 64; }

u128 satAdd(u128 a, u128 b, u128 cap) { return a >= cap - b ? cap : a + b; }

u128 satMul(u128 a, std::uint64_t b, u128 cap) {
  if (a == 0 || b == 0) return 0;
  if (a > cap / b) return cap;
  return a * b;
}

std::uint64_t countOf(u128 value, std::uint64_t den) {
  return value >= capOf(den) ? kU64Max : static_cast<std::uint64_t>(value / den);
}

struct Fraction {
  std::uint64_t num = 0;
  std::uint64_t den = 1;
};

// Digits only. decimalDigits (pmu/number_text.h) answers nullopt for garbage
// and for overflow alike; this tells the two apart for the error reasons.
bool allDigits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), isDigit); }

Fraction reduced(std::uint64_t num, std::uint64_t den) {
  std::uint64_t g = std::gcd(num, den);
  return {num / g, den / g};
}

// One rate value: a decimal with at most 9 fractional digits, or NUM/DEN so
// that every EventRate, whatever its denominator, has a text form.
Result<Fraction> parseRateValue(std::string_view s) {
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    std::string_view num_text = s.substr(0, slash);
    std::string_view den_text = s.substr(slash + 1);
    if (!allDigits(num_text) || !allDigits(den_text))
      return err(EINVAL, "rate '{}': expected NUM/DEN in plain integers", printable(s));
    auto num = decimalDigits(num_text);
    auto den = decimalDigits(den_text);
    if (!num || !den) return err(EINVAL, "rate '{}': too large", printable(s));
    if (*den == 0) return err(EINVAL, "rate '{}': denominator 0", printable(s));
    return reduced(*num, *den);
  }
  std::string_view int_part = s;
  std::string_view frac_part;
  bool has_point = false;
  if (auto point = s.find('.'); point != std::string_view::npos) {
    int_part = s.substr(0, point);
    frac_part = s.substr(point + 1);
    has_point = true;
  }
  if (!allDigits(int_part) || (has_point && !allDigits(frac_part)))
    return err(EINVAL, "rate '{}': expected a decimal such as 2.5 or a phase list DUR:RATE,...", printable(s));
  if (frac_part.size() > kMaxFractionDigits)
    return err(EINVAL, "rate '{}': more than {} fractional digits", printable(s), kMaxFractionDigits);
  auto whole = decimalDigits(int_part);
  auto frac = decimalDigits(frac_part);
  if (!whole) return err(EINVAL, "rate '{}': too large", printable(s));
  std::uint64_t den = 1;
  for (std::size_t i = 0; i < frac_part.size(); ++i) den *= 10;
  u128 num = static_cast<u128>(*whole) * den + (has_point ? *frac : 0);
  if (num > kU64Max) return err(EINVAL, "rate '{}': too large", printable(s));
  return reduced(static_cast<std::uint64_t>(num), den);
}

// num/den as parse() reads it back: a decimal where den divides 10^9 and
// the decimal's digits, read as one integer, fit 64 bits (parse's limit);
// else the fraction.
std::string rateText(std::uint64_t num, std::uint64_t den) {
  if (kDecimalScale % den != 0) return fmt::format("{}/{}", num, den);
  std::string out = fmt::format("{}", num / den);
  std::uint64_t frac = (num % den) * (kDecimalScale / den);
  if (frac != 0) {
    std::string digits = fmt::format("{:09}", frac);
    digits.erase(digits.find_last_not_of('0') + 1);
    u128 scaled = static_cast<u128>(num / den);
    std::uint64_t tail = frac;  // the digits kept, as an integer
    for (std::size_t i = 0; i < digits.size(); ++i) scaled *= 10;
    for (std::size_t i = digits.size(); i < kMaxFractionDigits; ++i) tail /= 10;
    if (scaled + tail > kU64Max) return fmt::format("{}/{}", num, den);
    out += '.';
    out += digits;
  }
  return out;
}

}  // namespace

EventRate EventRate::constant(std::uint64_t num, std::uint64_t den) {
  assert(den != 0);
  EventRate r;
  if (den == 0 || num == 0) return r;
  Fraction f = reduced(num, den);
  r.phases_.push_back(RatePhase{0, f.num});
  r.den_ = f.den;
  return r;
}

// Normalises so that equal rate functions mostly get equal representations:
// empty phases go, neighbours with one rate merge, one phase left is a
// constant, and the fraction is reduced.
EventRate EventRate::phased(std::vector<RatePhase> phases, std::uint64_t den) {
  assert(den != 0);
  if (den == 0) return EventRate();
  std::vector<RatePhase> kept;
  std::uint64_t period = 0;
  for (const auto& p : phases) {
    if (p.duration_ns == 0) continue;
    // A period past UINT64_MAX never completes inside the time range, so
    // cutting it there changes no count and keeps the period a u64.
    std::uint64_t dur = std::min(p.duration_ns, kU64Max - period);
    if (dur == 0) break;
    period += dur;
    if (!kept.empty() && kept.back().num == p.num)
      kept.back().duration_ns += dur;
    else
      kept.push_back(RatePhase{dur, p.num});
  }
  if (kept.empty()) return EventRate();
  if (kept.size() == 1) return constant(kept[0].num, den);
  std::uint64_t g = den;
  for (const auto& p : kept) g = std::gcd(g, p.num);
  EventRate r;
  for (auto& p : kept) p.num /= g;
  r.phases_ = std::move(kept);
  r.den_ = den / g;
  return r;
}

Result<EventRate> EventRate::parse(std::string_view text) {
  if (text.find(':') == std::string_view::npos) {
    auto f = parseRateValue(text);
    if (!f) return f.error();
    return constant(f->num, f->den);
  }
  std::vector<std::pair<std::uint64_t, Fraction>> items;
  std::uint64_t period = 0;
  std::uint64_t den = 1;
  std::size_t pos = 0;
  while (true) {
    std::size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    std::size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      return err(EINVAL, "rate '{}': phase '{}' is not DUR:RATE", printable(text), printable(item));
    std::string_view dur_text = item.substr(0, colon);
    if (!allDigits(dur_text))
      return err(EINVAL, "rate '{}': phase '{}': duration is not a number of ns", printable(text), printable(item));
    auto dur = decimalDigits(dur_text);
    if (!dur) return err(EINVAL, "rate '{}': period longer than 2^64 ns", printable(text));
    if (*dur == 0) return err(EINVAL, "rate '{}': phase '{}' lasts 0 ns", printable(text), printable(item));
    if (*dur > kU64Max - period) return err(EINVAL, "rate '{}': period longer than 2^64 ns", printable(text));
    period += *dur;
    std::string_view value = item.substr(colon + 1);
    if (value.find(':') != std::string_view::npos)
      return err(EINVAL, "rate '{}': phase '{}' is not DUR:RATE", printable(text), printable(item));
    auto f = parseRateValue(value);
    if (!f) return err(EINVAL, "rate '{}': phase '{}': {}", printable(text), printable(item), f.error().reason);
    // The common denominator is the lcm of reduced fractions: the smallest
    // possible, so "too large" below means no representation fits.
    u128 lcm = static_cast<u128>(den / std::gcd(den, f->den)) * f->den;
    if (lcm > kU64Max) return err(EINVAL, "rate '{}': no common denominator fits 64 bits", printable(text));
    den = static_cast<std::uint64_t>(lcm);
    items.emplace_back(*dur, *f);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::vector<RatePhase> phases;
  for (const auto& [dur, f] : items) {
    u128 num = static_cast<u128>(f.num) * (den / f.den);
    if (num > kU64Max) return err(EINVAL, "rate '{}': rate too large for a common denominator", printable(text));
    phases.push_back(RatePhase{dur, static_cast<std::uint64_t>(num)});
  }
  return phased(std::move(phases), den);
}

std::uint64_t EventRate::count(std::uint64_t t) const {
  if (phases_.empty()) return 0;
  const u128 cap = capOf(den_);
  if (phases_.size() == 1 && phases_[0].duration_ns == 0) return countOf(satMul(phases_[0].num, t, cap), den_);

  std::uint64_t period = 0;
  u128 per_period = 0;
  for (const auto& p : phases_) {
    period += p.duration_ns;
    per_period = satAdd(per_period, satMul(p.num, p.duration_ns, cap), cap);
  }
  std::uint64_t rest = t % period;
  u128 value = satMul(per_period, t / period, cap);
  for (const auto& p : phases_) {
    if (rest == 0) break;
    std::uint64_t d = std::min(rest, p.duration_ns);
    value = satAdd(value, satMul(p.num, d, cap), cap);
    rest -= d;
  }
  return countOf(value, den_);
}

std::uint64_t EventRate::timeOfCount(std::uint64_t n) const {
  if (n == 0) return 0;
  if (isZero()) return kNever;
  const u128 cap = capOf(den_);
  const u128 target = static_cast<u128>(n) * den_;  // < cap, so exact below
  if (phases_.size() == 1 && phases_[0].duration_ns == 0) {
    std::uint64_t num = phases_[0].num;
    u128 t = (target + num - 1) / num;
    return t > kU64Max ? kNever : static_cast<std::uint64_t>(t);
  }

  std::uint64_t period = 0;
  u128 per_period = 0;
  for (const auto& p : phases_) {
    period += p.duration_ns;
    per_period = satAdd(per_period, satMul(p.num, p.duration_ns, cap), cap);
  }
  // Whole periods strictly below the target; a clamped per_period exceeds
  // the target, so then the answer lies in the first period, as computed.
  u128 periods = (target - 1) / per_period;
  if (periods > kU64Max) return kNever;
  u128 base = periods * period;
  if (base > kU64Max) return kNever;
  u128 needed = target - periods * per_period;  // in (0, per_period]
  u128 acc = 0;
  std::uint64_t start = 0;
  for (const auto& p : phases_) {
    u128 part = satMul(p.num, p.duration_ns, cap);
    if (part >= needed - acc) {
      u128 t = base + start + (needed - acc + p.num - 1) / p.num;
      return t > kU64Max ? kNever : static_cast<std::uint64_t>(t);
    }
    acc += part;
    start += p.duration_ns;
  }
  assert(false && "per_period covers the target");
  return kNever;
}

bool EventRate::isZero() const {
  for (const auto& p : phases_)
    if (p.num != 0) return false;
  return true;
}

std::uint64_t EventRate::maxRateCeil() const {
  std::uint64_t most = 0;
  for (const auto& p : phases_) most = std::max(most, p.num / den_ + (p.num % den_ != 0 ? 1 : 0));
  return most;
}

std::string EventRate::toString() const {
  if (phases_.empty()) return "0";
  if (phases_.size() == 1 && phases_[0].duration_ns == 0) return rateText(phases_[0].num, den_);
  std::string out;
  for (const auto& p : phases_) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}:{}", p.duration_ns, rateText(p.num, den_));
  }
  return out;
}

}  // namespace pfmfs::pmu::sim
