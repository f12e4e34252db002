// The backend registry: the backends in --pmu=auto's order, each with its
// own options (no name twice), its capabilities, and how --pmu picks and
// makes one: by name, by the options that choose it, or the first that
// serves here, with a reason for each one passed over.
#include "pmu/backend_registry.h"

#include <linux/capability.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <set>
#include <string>
#include <vector>

#include "pmu/x86/x86_backend.h"

namespace pfmfs::pmu {
namespace {

std::vector<std::string> names() {
  std::vector<std::string> out;
  for (const BackendEntry* e : backendEntries()) out.emplace_back(e->name);
  return out;
}

OptionValues given(std::initializer_list<std::pair<const char*, const char*>> options) {
  OptionValues out;
  for (const auto& [name, value] : options) {
    const BackendEntry* owner = backendOfOption(name);
    EXPECT_NE(owner, nullptr) << name;
    for (const auto& spec : owner->options)
      if (spec.name == name) {
        auto v = parseOptionValue(spec, value);
        EXPECT_TRUE(v.ok()) << name << "=" << value;
        if (v) out[name] = *v;
      }
  }
  return out;
}

TEST(BackendRegistry, AutoOrderIsX86ThenPerfThenSim) {
  EXPECT_EQ(names(), (std::vector<std::string>{"x86", "perf", "sim"}));
  for (const BackendEntry* e : backendEntries()) {
    EXPECT_EQ(findBackend(e->name), e);
    EXPECT_NE(e->create, nullptr) << e->name;
    EXPECT_FALSE(e->what.empty()) << e->name;
  }
  EXPECT_EQ(findBackend("auto"), nullptr);
  EXPECT_EQ(findBackend("simulator"), nullptr);
}

TEST(BackendRegistry, EveryOptionHasOneOwnerAndItsNamePrefix) {
  std::set<std::string_view> seen;
  for (const BackendEntry* e : backendEntries())
    for (const auto& spec : e->options) {
      EXPECT_TRUE(seen.insert(spec.name).second) << spec.name;
      EXPECT_EQ(spec.name.substr(0, e->name.size() + 1), std::string(e->name) + "-") << spec.name;
      EXPECT_EQ(backendOfOption(spec.name), e);
      EXPECT_FALSE(spec.help.empty()) << spec.name;
    }
  EXPECT_EQ(backendOfOption("tick"), nullptr);
  EXPECT_EQ(seen.size(), 6u);  // --perf-model, --sim-clock, --sim-width, --sim-counters, --sim-events, --sim-skid
}

TEST(BackendRegistry, CapabilitiesKeptPerBackend) {
  auto caps = [](std::string_view name) {
    const BackendEntry* e = findBackend(name);
    return std::vector<int>(e->capabilities.begin(), e->capabilities.end());
  };
  EXPECT_EQ(caps("sim"), (std::vector<int>{CAP_PERFMON, CAP_SYS_PTRACE}));
  EXPECT_EQ(caps("perf"), (std::vector<int>{CAP_PERFMON, CAP_SYS_PTRACE}));
  EXPECT_TRUE(caps("x86").empty());
}

TEST(BackendRegistry, TheSimsOptionsChooseIt) {
  EXPECT_EQ(backendChosenBy({}), nullptr);
  EXPECT_EQ(backendChosenBy(given({{"sim-skid", "0"}})), findBackend("sim"));
  EXPECT_EQ(backendChosenBy(given({{"perf-model", "sw"}})), nullptr);  // it shapes perf, it does not ask for it
  std::vector<std::string> passed;
  auto b = createBackend("auto", given({{"sim-clock", "manual"}, {"sim-width", "32"}, {"sim-counters", "2"}}),
                         [&](const std::string& why) { passed.push_back(why); });
  ASSERT_TRUE(b.ok()) << b.error().reason;
  EXPECT_EQ((*b)->name(), "sim");
  EXPECT_EQ((*b)->clock(), ClockKind::Manual);
  EXPECT_EQ((*b)->description().width(), 32u);
  EXPECT_TRUE(passed.empty());
}

TEST(BackendRegistry, ByNameOrRefused) {
  auto none = [](const std::string&) { ADD_FAILURE() << "nothing is passed over when a backend is named"; };
  auto sim = createBackend("sim", given({{"perf-model", "sw"}}), none);  // another backend's options: not its own
  ASSERT_TRUE(sim.ok()) << sim.error().reason;
  EXPECT_EQ((*sim)->name(), "sim");
  EXPECT_EQ((*sim)->clock(), ClockKind::Real);

  auto bad = createBackend("nope", {}, none);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), -EINVAL);
  EXPECT_EQ(bad.error().reason, "--pmu=nope: no such backend");

  auto missing = createBackend("sim", given({{"sim-events", "/nonexistent/pfmfs-events"}}), none);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.code(), -ENOENT);
  EXPECT_EQ(missing.error().reason.rfind("--pmu=sim: --sim-events=/nonexistent/pfmfs-events: ", 0), 0u)
      << missing.error().reason;
}

// Where the helper module is not loaded (here and in CI; the vm suite's
// guest has it), auto passes x86 over with the reason and takes perf or the
// sim, and --pmu=x86 is refused with it.
TEST(BackendRegistry, AutoSaysWhyItPassedOneOver) {
  std::vector<std::string> passed;
  auto b = createBackend("auto", {}, [&](const std::string& why) { passed.push_back(why); });
  ASSERT_TRUE(b.ok()) << b.error().reason;
  if (::access(PFMFS_HELPER_DEVICE, F_OK) == 0) {
    EXPECT_EQ((*b)->name(), "x86");
    EXPECT_TRUE(passed.empty());
    return;
  }
  ASSERT_FALSE(passed.empty());
  EXPECT_EQ(passed[0].rfind("not using x86: " PFMFS_HELPER_DEVICE ": ", 0), 0u) << passed[0];
  if ((*b)->name() == "sim") {
    ASSERT_EQ(passed.size(), 2u);
    EXPECT_EQ(passed[1].rfind("not using perf: ", 0), 0u) << passed[1];
  } else {
    EXPECT_EQ((*b)->name(), "perf");
    EXPECT_EQ(passed.size(), 1u);
  }
  auto x86 = createBackend("x86", {}, [](const std::string&) {});
  ASSERT_FALSE(x86.ok());
  EXPECT_EQ(x86.error().reason.rfind("--pmu=x86: " PFMFS_HELPER_DEVICE ": ", 0), 0u) << x86.error().reason;
}

}  // namespace
}  // namespace pfmfs::pmu
