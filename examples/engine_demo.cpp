// pfmfs-engine-demo: the engine without the filesystem. Counts six events of
// this process's main thread on the simulated PMU in two multiplexed event
// sets, with the manual clock so the numbers are exact, and prints each
// counter's value, its running and enabled time and the scaled estimate next
// to the true count the simulator generated.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "pmu/event_name.h"
#include "pmu/sim/sim_backend.h"
#include "session/engine.h"

using namespace pfmfs;

namespace {

[[noreturn]] void die(const char* what, const Error& e) {
  std::fprintf(stderr, "pfmfs-engine-demo: %s: %s\n", what, e.reason.c_str());
  std::exit(1);
}

void check(const char* what, const Status& s) {
  if (!s) die(what, s.error());
}

}  // namespace

int main() {
  pmu::sim::SimOptions options;
  options.clock = pmu::ClockKind::Manual;
  auto backend = pmu::sim::SimBackend::create(options);
  if (!backend) die("sim backend", backend.error());
  const pmu::PmuDescription& desc = (*backend)->description();
  session::Engine engine(**backend, {});

  session::Caller me = session::Caller::root();
  auto created = engine.createSession(me, "demo");
  if (!created) die("create session", created.error());
  session::Session& s = **created;

  // Set 0: instructions and LLC misses; set 1: branches and branch misses.
  // Each runs 1 ms of the thread's (virtual) time, then hands over.
  const char* events[2][2] = {{"INSTRUCTION_RETIRED:u", "LLC_MISSES:u"},
                              {"BRANCH_INSTRUCTIONS_RETIRED:u", "BRANCH_MISSES_RETIRED:u"}};
  check("create set 1", s.createSet(1));
  for (unsigned set = 0; set < 2; ++set) {
    for (unsigned pmc = 0; pmc < 2; ++pmc) {
      auto v = pmu::encodeEventName(desc, events[set][pmc], pmc);
      if (!v) die(events[set][pmc], v.error());
      check("write pmc", s.writePmc(me, set, {pmc, *v, false}));
    }
    check("switch", s.setSwitch(set, {true, 1'000'000, false}));
  }

  check("load", s.load(me, static_cast<int>(::syscall(SYS_gettid))));
  check("start", s.start());
  const std::uint64_t run_ns = 10'500'000;  // 10.5 ms: set 0 gets 5.5 ms, set 1 gets 5 ms
  check("advance", engine.advanceManualClock(run_ns));
  check("stop", s.stop());

  std::printf("pfmfs engine demo: sim backend, manual clock, %.1f ms, two sets switching every 1 ms\n\n", run_ns / 1e6);
  std::printf("%-4s %-30s %12s %12s %12s %12s %12s\n", "set", "event", "value", "running_ns", "enabled_ns", "scaled",
              "true");
  for (const auto& c : s.counts()) {
    const char* name = events[c.set][c.pmd];
    auto spec = pmu::parseEventName(desc, name);
    const pmu::sim::SimEvent* ev = pmu::sim::findByCode((*backend)->events(), spec->event->code);
    std::printf("%-4u %-30s %12llu %12llu %12llu %12llu %12llu\n", c.set, name,
                static_cast<unsigned long long>(c.value), static_cast<unsigned long long>(c.running_ns),
                static_cast<unsigned long long>(c.enabled_ns), static_cast<unsigned long long>(c.scaled.value_or(0)),
                static_cast<unsigned long long>(ev->rate.count(c.enabled_ns)));
  }
  auto i0 = s.setInfo(0), i1 = s.setInfo(1);
  std::printf("\nset 0: runs=%llu  set 1: runs=%llu\n", static_cast<unsigned long long>(i0->runs),
              static_cast<unsigned long long>(i1->runs));
  return 0;
}
