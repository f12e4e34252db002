// The sim engine fixture.
#include "tests/support/sim_fixture.h"

namespace pfmfs::testing {

SimEngine::SimEngine(const SimConfig& config) {
  pmu::sim::SimOptions o;
  o.shape.general_counters = config.counters;
  o.shape.width = config.width;
  o.clock = config.clock;
  o.interrupts = config.interrupts;
  o.skid = config.skid;
  auto b = pmu::sim::SimBackend::create(o);
  if (!b) ADD_FAILURE() << "sim backend: " << b.error().reason;
  backend_ = std::move(*b);
  engine_ = std::make_unique<session::Engine>(*backend_, config.engine);
}

SimEngine::~SimEngine() { engine_.reset(); }

std::shared_ptr<session::Session> SimEngine::newSession(const std::string& name) {
  auto s = engine_->createSession(session::Caller::root(), name);
  if (!s) {
    ADD_FAILURE() << "createSession(" << name << "): " << s.error().reason;
    return nullptr;
  }
  return *s;
}

void SimEngine::advance(std::uint64_t ns) {
  Status st = engine_->advanceManualClock(ns);
  if (!st) ADD_FAILURE() << "advance: " << st.error().reason;
}

}  // namespace pfmfs::testing
