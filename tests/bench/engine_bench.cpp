// Engine benchmarks over the sim backend with the manual clock and 48-bit
// counters: what a set switch, a live PMD read, a vector write, an overflow
// and a counts() read cost. Each benchmark checks that it measures what it
// says (one switch or one overflow per iteration, the MSR writes a switch
// needs) and reports an error instead of a figure when it does not.
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/sim_backend.h"
#include "session/engine.h"
#include "session/register_rules.h"
#include "session/session.h"

namespace {

using namespace pfmfs;
using session::Caller;
using session::PmcWrite;
using session::PmdWrite;
using session::RegWrite;
using session::SwitchSpec;

constexpr std::uint64_t kUsr = pmu::intel::evtsel::kUsr;
constexpr std::uint64_t kCycles = 0x3c | kUsr;        // 3 per ns
constexpr std::uint64_t kInstructions = 0xc0 | kUsr;  // 2 per ns
constexpr std::uint64_t kRefCycles = 0x013c | kUsr;   // 2.5 per ns
constexpr std::uint64_t kLlcRefs = 0x4f2e | kUsr;
constexpr std::uint64_t kLlcMisses = 0x412e | kUsr;
constexpr std::uint64_t kBranches = 0xc4 | kUsr;
constexpr std::uint64_t kBranchMisses = 0xc5 | kUsr;
constexpr std::uint64_t kPhaseA = 0x01f0 | kUsr;

pid_t gettidNow() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

PmdWrite pmdWrite(unsigned index, std::uint64_t value) {
  PmdWrite w;
  w.index = index;
  w.value = value;
  return w;
}

// A manual-clock engine with one session loaded on this thread.
struct Rig {
  std::unique_ptr<pmu::sim::SimBackend> backend;
  std::unique_ptr<session::Engine> engine;
  std::shared_ptr<session::Session> s;
  std::string error;

  explicit Rig(unsigned counters = 4) {
    pmu::sim::SimOptions o;
    o.shape = pmu::intel::Shape{counters, 48};
    o.clock = pmu::ClockKind::Manual;
    auto b = pmu::sim::SimBackend::create(o);
    if (!b) {
      error = b.error().reason;
      return;
    }
    backend = std::move(*b);
    engine = std::make_unique<session::Engine>(*backend, session::EngineOptions{});
    auto r = engine->createSession(Caller::root(), "bench");
    if (!r) {
      error = r.error().reason;
      return;
    }
    s = *r;
  }
  ~Rig() {
    s.reset();
    engine.reset();
  }

  bool check(benchmark::State& state, const Status& st) {
    if (st.ok()) return true;
    error = st.error().reason;
    state.SkipWithError(error.c_str());
    return false;
  }
  bool ok(benchmark::State& state) {
    if (error.empty()) return true;
    state.SkipWithError(error.c_str());
    return false;
  }
  bool load(benchmark::State& state) {
    return check(state, s->load(Caller::root(), gettidNow())) && check(state, s->start());
  }
  bool advance(benchmark::State& state, std::uint64_t ns) { return check(state, engine->advanceManualClock(ns)); }

  // The registers a switch from `from` to `to` must write: the PMCs whose
  // hardware values differ, every counter `to` uses (its saved value is not
  // what the hardware holds after `from` counted) and the global-control pair.
  std::uint64_t switchCost(unsigned from, unsigned to) {
    const auto& desc = backend->description();
    std::uint64_t n = 0;
    pmu::RegMask used = 0;
    for (const auto& c : desc.pmcs) {
      std::uint64_t a = s->readPmc(from, c.index)->value;
      std::uint64_t b = s->readPmc(to, c.index)->value;
      if (session::hardwarePmcValue(desc, c.index, a, true) != session::hardwarePmcValue(desc, c.index, b, true)) ++n;
      used |= session::countersEnabledBy(desc, c.index, b);
    }
    // Plus PERF_GLOBAL_CTRL off and on: counting stops around every switch.
    return n + static_cast<std::uint64_t>(__builtin_popcountll(used)) + 2;
  }
};

constexpr std::uint64_t kSwitchNs = 1000;

// One set switch per iteration: both sets switch after kSwitchNs of target
// time and each iteration advances the clock by exactly that. Arg 0: the sets
// count different events (PMCs and PMDs differ); arg 1: they share their PMC
// configuration (only the PMDs differ).
void BM_SetSwitch(benchmark::State& state) {
  const bool shared = state.range(0) == 1;
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  if (!r.check(state, s.createSet(1))) return;
  for (unsigned set : {0u, 1u})
    if (!r.check(state, s.setSwitch(set, SwitchSpec{true, kSwitchNs, false}))) return;
  const Caller root = Caller::root();
  if (!r.check(state, s.writePmc(root, 0, PmcWrite{0, kCycles, false})) ||
      !r.check(state, s.writePmc(root, 0, PmcWrite{1, kInstructions, false})) ||
      !r.check(state, s.writePmc(root, 1, PmcWrite{0, shared ? kCycles : kLlcRefs, false})) ||
      !r.check(state, s.writePmc(root, 1, PmcWrite{1, shared ? kInstructions : kBranches, false})) ||
      !r.check(state, s.writePmd(0, pmdWrite(0, 0))) || !r.check(state, s.writePmd(0, pmdWrite(1, 0))) ||
      !r.check(state, s.writePmd(1, pmdWrite(0, 1ull << 40))) ||
      !r.check(state, s.writePmd(1, pmdWrite(1, 1ull << 41))))
    return;
  const std::uint64_t expected = r.switchCost(0, 1);
  if (expected != r.switchCost(1, 0)) {
    state.SkipWithError("the two directions of the switch cost differently");
    return;
  }
  if (!r.load(state)) return;
  const std::uint64_t runs0 = s.setInfo(0)->runs + s.setInfo(1)->runs;
  const std::uint64_t w0 = r.backend->msrWrites();
  for (auto _ : state) {
    if (!r.advance(state, kSwitchNs)) return;
  }
  const std::uint64_t writes = r.backend->msrWrites() - w0;
  const std::uint64_t iters = static_cast<std::uint64_t>(state.iterations());
  const std::uint64_t switches = s.setInfo(0)->runs + s.setInfo(1)->runs - runs0;
  if (switches != iters) {
    state.SkipWithError("not exactly one switch per iteration");
    return;
  }
  if (writes != expected * iters) {
    state.SkipWithError(("MSR writes per switch: " + std::to_string(static_cast<double>(writes) / iters) +
                         ", expected " + std::to_string(expected))
                            .c_str());
    return;
  }
  state.counters["msr_writes_per_switch"] =
      benchmark::Counter(static_cast<double>(writes), benchmark::Counter::kAvgIterations);
  state.counters["expected_writes"] = static_cast<double>(expected);
  state.SetLabel(shared ? "shared PMCs" : "different PMCs");
}
BENCHMARK(BM_SetSwitch)->Arg(0)->Arg(1);

// The same clock step without a switch: what the switch figures include
// besides the switch itself.
void BM_AdvanceNoSwitch(benchmark::State& state) {
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  if (!r.check(state, s.writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false})) ||
      !r.check(state, s.writePmc(Caller::root(), 0, PmcWrite{1, kInstructions, false})))
    return;
  if (!r.load(state)) return;
  const std::uint64_t w0 = r.backend->msrWrites();
  for (auto _ : state) {
    if (!r.advance(state, kSwitchNs)) return;
  }
  if (r.backend->msrWrites() != w0) state.SkipWithError("a plain clock step wrote MSRs");
}
BENCHMARK(BM_AdvanceNoSwitch);

void BM_ReadPmdActive(benchmark::State& state) {
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  if (!r.check(state, s.writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false})) || !r.load(state) ||
      !r.advance(state, 1000))
    return;
  for (auto _ : state) {
    auto v = s.readPmd(0, 0);
    benchmark::DoNotOptimize(v);
  }
  if (s.readPmd(0, 0)->value != 3000) state.SkipWithError("wrong live value");
}
BENCHMARK(BM_ReadPmdActive);

void BM_ReadPmdInactive(benchmark::State& state) {
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  if (!r.check(state, s.createSet(1)) || !r.check(state, s.writePmc(Caller::root(), 1, PmcWrite{0, kCycles, false})) ||
      !r.check(state, s.writePmd(1, pmdWrite(0, 1234))) || !r.load(state))
    return;
  for (auto _ : state) {
    auto v = s.readPmd(1, 0);
    benchmark::DoNotOptimize(v);
  }
  if (s.readPmd(1, 0)->value != 1234) state.SkipWithError("wrong value");
}
BENCHMARK(BM_ReadPmdInactive);

// Every PMC and PMD of a set in one writeRegs call, alternating between two
// images that differ in every general PMC and every PMD, so that each call
// changes every register. Arg 1: the active set (the hardware follows: 4
// PERFEVTSELs and 7 counters written per call, FIXED_CTR_CTRL unchanged);
// arg 0: a set that is not on the hardware (no MSR write at all).
void BM_VectorWriteAll(benchmark::State& state) {
  const bool active = state.range(0) == 1;
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  if (!r.check(state, s.createSet(1))) return;
  const auto& desc = r.backend->description();
  const std::uint64_t events_a[] = {kCycles, kInstructions, kRefCycles, kBranches};
  const std::uint64_t events_b[] = {kInstructions, kCycles, kBranches, kRefCycles};
  std::vector<RegWrite> image[2];
  for (int k = 0; k < 2; ++k) {
    for (const auto& c : desc.pmcs)  // FIXED_CTR_CTRL: all three fixed counters, user level
      image[k].push_back(PmcWrite{c.index, c.index < 4 ? (k ? events_b : events_a)[c.index] : 0x222, false});
    for (const auto& d : desc.pmds) image[k].push_back(pmdWrite(d.index, (k ? 2000 : 1000) + d.index));
  }
  const unsigned set = active ? 0 : 1;
  if (!r.load(state)) return;
  if (!r.check(state, s.writeRegs(Caller::root(), set, image[1]))) return;
  const std::uint64_t w0 = r.backend->msrWrites();
  int k = 0;
  for (auto _ : state) {
    if (!r.check(state, s.writeRegs(Caller::root(), set, image[k]))) return;
    k ^= 1;
  }
  const std::uint64_t writes = r.backend->msrWrites() - w0;
  // Active: 4 PMCs and 7 PMDs differ, plus PERF_GLOBAL_CTRL off and on
  // around the write (counting stops while the set is reprogrammed).
  const std::uint64_t expected = active ? 4 + 7 + 2 : 0;
  if (writes != expected * static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError(("MSR writes per call: " +
                         std::to_string(static_cast<double>(writes) / static_cast<double>(state.iterations())) +
                         ", expected " + std::to_string(expected))
                            .c_str());
    return;
  }
  state.counters["regs_per_call"] = static_cast<double>(image[0].size());
  state.counters["msr_writes_per_call"] =
      benchmark::Counter(static_cast<double>(writes), benchmark::Counter::kAvgIterations);
  state.SetLabel(active ? "active set" : "inactive set");
}
BENCHMARK(BM_VectorWriteAll)->Arg(1)->Arg(0);

// Silent overflows: PMD0 counts cycles (3/ns) from -3000 with short_reset
// -3000, so it overflows every 1000 ns exactly; each iteration advances
// across one overflow (on its last nanosecond). Time per iteration = time
// per overflow, the clock step included.
void BM_OverflowProcessing(benchmark::State& state) {
  // 30 000 cycles: one overflow per 10 us of target time, the rate the
  // engine's overflow budget sustains (EngineOptions::overflow_refill_ns).
  constexpr std::uint64_t kPeriod = 30'000;
  constexpr std::uint64_t kReset = ~std::uint64_t{0} - kPeriod + 1;  // -30000
  Rig r;
  if (!r.ok(state)) return;
  auto& s = *r.s;
  PmdWrite w = pmdWrite(0, kReset);
  w.short_reset = kReset;
  w.long_reset = kReset;
  if (!r.check(state, s.writePmc(Caller::root(), 0, PmcWrite{0, kCycles, false})) ||
      !r.check(state, s.writePmd(0, w)) || !r.load(state))
    return;
  const std::uint64_t w0 = r.backend->msrWrites();
  for (auto _ : state) {
    if (!r.advance(state, kPeriod / 3)) return;
  }
  const std::uint64_t writes = r.backend->msrWrites() - w0;
  const std::uint64_t iters = static_cast<std::uint64_t>(state.iterations());
  // Right after an overflow's reset, and exactly as many resets as iterations:
  // each overflow acknowledges GLOBAL_STATUS and reloads PMD0, two writes.
  if (s.readPmd(0, 0)->value != kReset || s.setInfo(0)->ovfl_pmds != 1 || writes != 2 * iters ||
      s.state().state != session::State::Active) {
    state.SkipWithError("not exactly one silent overflow per iteration");
    return;
  }
  state.counters["msr_writes_per_overflow"] =
      benchmark::Counter(static_cast<double>(writes), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_OverflowProcessing);

// counts() over 8 used PMDs (8 general counters, each with an event).
void BM_Counts(benchmark::State& state) {
  Rig r(8);
  if (!r.ok(state)) return;
  auto& s = *r.s;
  const std::uint64_t events[] = {kCycles,    kInstructions, kRefCycles,    kLlcRefs,
                                  kLlcMisses, kBranches,     kBranchMisses, kPhaseA};
  for (unsigned i = 0; i < 8; ++i)
    if (!r.check(state, s.writePmc(Caller::root(), 0, PmcWrite{i, events[i], false}))) return;
  if (!r.load(state) || !r.advance(state, 1000)) return;
  std::size_t lines = 0;
  for (auto _ : state) {
    auto c = s.counts();
    lines = c.size();
    benchmark::DoNotOptimize(c);
  }
  if (lines != 8) state.SkipWithError("expected 8 count lines");
  state.counters["lines"] = static_cast<double>(lines);
}
BENCHMARK(BM_Counts);

// The console report, remembering whether any benchmark failed its own check.
class CheckingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& run : runs) failed_ = failed_ || run.error_occurred;
    ConsoleReporter::ReportRuns(runs);
  }
  bool failed() const { return failed_; }

 private:
  bool failed_ = false;
};

}  // namespace

// A benchmark that does not measure what it says fails the run, so that CI
// notices (BENCHMARK_MAIN would exit 0).
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  CheckingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return reporter.failed() ? 1 : 0;
}
