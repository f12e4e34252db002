// The sim backend's event generator. Each event is a deterministic stream:
// its k-th occurrence happens at a fixed instant of target time, so a counter
// enabled over the target-time interval (a, b] counts exactly N(b) - N(a),
// where N(t) = floor(R(t)) and R(t) is the integral of the event's rate from
// time 0. Counts therefore never drift, however often a counter is stopped,
// reloaded or switched out: the pieces telescope.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pmu/pmu_description.h"
#include "pmu/result.h"

namespace pfmfs::pmu::sim {

// One phase of a periodic rate: `duration_ns` long at `num / den` events per ns.
struct RatePhase {
  std::uint64_t duration_ns = 0;
  std::uint64_t num = 0;

  bool operator==(const RatePhase&) const = default;
};

// An event rate in events per ns as an exact fraction with denominator den:
// either constant (one phase of duration 0, meaning "forever"), or periodic:
// the phases repeat with period = sum of their durations.
class EventRate {
 public:
  EventRate() = default;  // rate 0: never counts

  static EventRate constant(std::uint64_t num, std::uint64_t den);
  static EventRate phased(std::vector<RatePhase> phases, std::uint64_t den);

  // "2.5", "0.004", "3" (a decimal, at most 9 fractional digits), "1/3" (an
  // exact fraction), or a phase list "DUR:RATE,DUR:RATE,..." (DUR in ns, > 0;
  // RATE as above).
  // Garbage, negative numbers, a zero period, overflowing values: -EINVAL.
  static Result<EventRate> parse(std::string_view text);

  // N(t): the number of occurrences in (0, t]. Saturates at UINT64_MAX.
  std::uint64_t count(std::uint64_t t) const;

  // The smallest t with count(t) >= n; 0 for n == 0; pmu::kNever (UINT64_MAX)
  // when the stream never gets there (rate 0, or beyond UINT64_MAX ns).
  std::uint64_t timeOfCount(std::uint64_t n) const;

  bool isZero() const;
  // Events per ns, rounded up: what the engine needs to size a sampling period.
  std::uint64_t maxRateCeil() const;
  // The text parse() reads back to an equal rate.
  std::string toString() const;

  bool operator==(const EventRate&) const = default;

 private:
  std::vector<RatePhase> phases_;  // one phase with duration 0 = constant
  std::uint64_t den_ = 1;
};

// Which privilege level an event occurs at: a counter counts it only when its
// PMC has the matching privilege bit (USR for user, OS for kernel).
enum class Ring { User, Kernel };

struct SimEvent {
  EventDesc desc;  // name, code, counters, desc, as pmu/events lists them
  EventRate rate;
  Ring ring = Ring::User;
};

// The default table: the seven architectural events at the rates of pfmfs(5)
// (cycles 3/ns, instructions 2/ns, ref cycles 2.5/ns, LLC references 0.05,
// LLC misses 0.01, branches 0.4, branch misses 0.004), all at user level,
// counted by every general counter and by their fixed counter, plus two
// phased events for multiplexing studies:
//   SIM_PHASE_A (0x01f0): 4/ns during the first 1 ms of every 2 ms, 0 after;
//   SIM_PHASE_B (0x02f0): 0 during the first 1 ms of every 2 ms, 4/ns after.
std::vector<SimEvent> defaultEvents(unsigned general_counters);

// A --sim-events file: one event per line as key=value pairs, '#' comments and
// blank lines ignored:
//   name=NAME code=0xCODE rate=RATE [ring=user|kernel] [counters=0xMASK] [desc="text"]
// RATE as EventRate::parse. counters defaults to every general counter plus
// the fixed counter whose code matches. Errors name the line: -EINVAL.
Result<std::vector<SimEvent>> parseEvents(std::string_view text, unsigned general_counters);

// The rate of the event with `code` in `events`, or nullptr.
const SimEvent* findByCode(const std::vector<SimEvent>& events, std::uint64_t code);

}  // namespace pfmfs::pmu::sim
