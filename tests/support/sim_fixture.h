// A test fixture with an engine over the sim backend and the manual clock:
// every count, run and duration it produces is exact.
#pragma once

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "pmu/sim/sim_backend.h"
#include "session/engine.h"

namespace pfmfs::testing {

inline pid_t gettidNow() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

struct SimConfig {
  unsigned counters = 4;
  unsigned width = 48;
  bool interrupts = true;
  std::uint64_t skid = 0;  // --sim-skid
  pmu::ClockKind clock = pmu::ClockKind::Manual;
  session::EngineOptions engine;
};

class SimEngine {
 public:
  explicit SimEngine(const SimConfig& config = {});
  ~SimEngine();

  pmu::sim::SimBackend& backend() { return *backend_; }
  session::Engine& engine() { return *engine_; }
  const pmu::PmuDescription& desc() { return backend_->description(); }

  // A new session owned by root (asserts success).
  std::shared_ptr<session::Session> newSession(const std::string& name = "s");
  // Advance the manual clock (asserts success).
  void advance(std::uint64_t ns);
  std::uint64_t msrWrites() { return backend_->msrWrites(); }

 private:
  std::unique_ptr<pmu::sim::SimBackend> backend_;
  std::unique_ptr<session::Engine> engine_;
};

// Event encodings for PERFEVTSEL (user level), from the sim's default table.
inline constexpr std::uint64_t kUsr = 1ull << 16;
inline constexpr std::uint64_t kOs = 1ull << 17;
inline constexpr std::uint64_t kCycles = 0x3c | kUsr;        // 3 per ns
inline constexpr std::uint64_t kInstructions = 0xc0 | kUsr;  // 2 per ns
inline constexpr std::uint64_t kRefCycles = 0x013c | kUsr;   // 2.5 per ns
inline constexpr std::uint64_t kLlcRefs = 0x4f2e | kUsr;     // 0.05 per ns
inline constexpr std::uint64_t kLlcMisses = 0x412e | kUsr;   // 0.01 per ns
inline constexpr std::uint64_t kBranches = 0xc4 | kUsr;      // 0.4 per ns
inline constexpr std::uint64_t kBranchMisses = 0xc5 | kUsr;  // 0.004 per ns

}  // namespace pfmfs::testing
