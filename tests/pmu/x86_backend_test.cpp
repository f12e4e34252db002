// The parts of the x86 backend that run without the helper module: the PMU
// description shaped by what the module reports, the device's errors, and
// the driver's batched reads the backend relies on. The backend itself runs
// against the module in the QEMU guest (tests/vm/, the NAME-x86 mount tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

#include "pmu/intel_arch_driver.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/x86/helper_device.h"
#include "pmu/x86/x86_backend.h"

namespace pfmfs::pmu::x86 {
namespace {

HelperInfo emulatedInfo() {
  HelperInfo i;
  i.arch_version = 2;
  i.gp_counters = 4;
  i.gp_width = 48;
  i.fixed_counters = 3;
  i.fixed_width = 48;
  i.emulated = true;
  return i;
}

std::vector<unsigned> pmcIndices(const PmuDescription& d) {
  std::vector<unsigned> out;
  for (const auto& p : d.pmcs) out.push_back(p.index);
  return out;
}

std::vector<unsigned> pmdIndices(const PmuDescription& d) {
  std::vector<unsigned> out;
  for (const auto& p : d.pmds) out.push_back(p.index);
  return out;
}

TEST(X86Describe, TheModulesTestPmuIsTheSimsShape) {
  auto d = describe(emulatedInfo());
  ASSERT_TRUE(d) << d.error().reason;
  EXPECT_EQ(d->model, "intel-arch-v2");
  EXPECT_EQ(pmcIndices(*d), (std::vector<unsigned>{0, 1, 2, 3, 16}));
  EXPECT_EQ(pmdIndices(*d), (std::vector<unsigned>{0, 1, 2, 3, 16, 17, 18}));
  EXPECT_EQ(d->features,
            (std::vector<std::string>{"fixed_counters", "global_ctrl", "ovfl_intr", "inherit", "emulated"}));
  ASSERT_EQ(d->events.size(), 7u);  // the architectural events only: no sim phases
  EXPECT_EQ(d->events[0].name, "UNHALTED_CORE_CYCLES");
  EXPECT_EQ(d->events[0].counters, 0xfu | regBit(17));
  for (const auto& p : d->pmds) EXPECT_EQ(p.width, 48u) << p.name;
}

TEST(X86Describe, HardwareWithoutTheEmulationFlagSaysNothingOfIt) {
  HelperInfo i = emulatedInfo();
  i.emulated = false;
  auto d = describe(i);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->features, (std::vector<std::string>{"fixed_counters", "global_ctrl", "ovfl_intr", "inherit"}));
}

// The module attaches to a thread or a cpu only: a control group is refused
// before it is asked (pfmfs(5), CONTROL-GROUP LOADS), and pmu/info says so
// by the missing "cgroup" feature.
TEST(X86Targets, AControlGroupIsRefusedWithEopnotsupp) {
  Target group{TargetKind::Cgroup, 0};
  Status s = checkTarget(group);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), -EOPNOTSUPP);
  EXPECT_NE(s.error().reason.find("the x86 backend cannot count a control group"), std::string::npos)
      << s.error().reason;
  EXPECT_TRUE(checkTarget(Target{TargetKind::Thread, 1}).ok());
  EXPECT_TRUE(checkTarget(Target{TargetKind::Cpu, 0}).ok());
  auto d = describe(emulatedInfo());
  ASSERT_TRUE(d);
  EXPECT_EQ(std::count(d->features.begin(), d->features.end(), "cgroup"), 0);
}

TEST(X86Describe, MoreThanEightGeneralCountersServeTheFirstEight) {
  HelperInfo i = emulatedInfo();
  i.gp_counters = 12;
  auto d = describe(i);
  ASSERT_TRUE(d);
  EXPECT_EQ(pmcIndices(*d), (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7, 16}));
}

TEST(X86Describe, FixedCountersAsTheModuleReportsThem) {
  HelperInfo i = emulatedInfo();
  i.fixed_counters = 0;
  auto none = describe(i);
  ASSERT_TRUE(none);
  EXPECT_EQ(pmcIndices(*none), (std::vector<unsigned>{0, 1, 2, 3}));  // no FIXED_CTR_CTRL without fixed counters
  EXPECT_EQ(pmdIndices(*none), (std::vector<unsigned>{0, 1, 2, 3}));
  for (const auto& e : none->events) EXPECT_EQ(e.counters, 0xfu) << e.name;

  i.fixed_counters = 2;
  i.fixed_width = 40;
  auto two = describe(i);
  ASSERT_TRUE(two);
  EXPECT_EQ(pmdIndices(*two), (std::vector<unsigned>{0, 1, 2, 3, 16, 17}));
  EXPECT_EQ(two->pmds[4].width, 40u);
  EXPECT_EQ(two->pmds[0].width, 48u);
  // Two 4-bit fields, AnyThread (bit 2 of each) reserved on version 2.
  EXPECT_EQ(two->pmcs.back().rsvd_mask, ~std::uint64_t{0xbb});
  i.arch_version = 3;
  EXPECT_EQ(describe(i)->pmcs.back().rsvd_mask, ~std::uint64_t{0xff});
  i.arch_version = 2;
  for (const auto& e : two->events) {
    if (e.name == "UNHALTED_REFERENCE_CYCLES") {
      EXPECT_EQ(e.counters, 0xfu);  // FIXED_CTR2 is missing
    }
  }

  i.fixed_counters = 5;  // more than the architecture's three: the three
  auto five = describe(i);
  ASSERT_TRUE(five);
  EXPECT_EQ(pmdIndices(*five), (std::vector<unsigned>{0, 1, 2, 3, 16, 17, 18}));
}

// A PERFEVTSEL reserves what the PMU does not do: AnyThread before version
// 3; on the module's test PMU also edge, pin control, invert and the
// counter mask, which its rates cannot honour.
TEST(X86Describe, PerfEvtSelReservesWhatThePmuLacks) {
  HelperInfo i = emulatedInfo();
  EXPECT_EQ(describe(i)->pmcs[0].rsvd_mask, 0xffffffffffac0000ull);
  i.emulated = false;
  EXPECT_EQ(describe(i)->pmcs[0].rsvd_mask, 0xffffffff00200000ull);
  i.arch_version = 3;
  EXPECT_EQ(describe(i)->pmcs[0].rsvd_mask, 0xffffffff00000000ull);
  EXPECT_EQ(describe(i)->pmds[0].any_bits, 1ull << 21);
}

TEST(X86Describe, APmuPfmfsCannotDriveIsRefused) {
  HelperInfo i = emulatedInfo();
  i.gp_counters = 0;
  auto none = describe(i);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, -ENODEV);
  EXPECT_NE(none.error().reason.find("no architectural general counters"), std::string::npos);

  i = emulatedInfo();
  i.gp_width = 8;
  auto narrow = describe(i);
  ASSERT_FALSE(narrow);
  EXPECT_EQ(narrow.error().code, -ENODEV);
  EXPECT_NE(narrow.error().reason.find("counter width 8"), std::string::npos);
}

TEST(HelperDeviceOpen, NoDeviceSaysToLoadTheModule) {
  auto dev = HelperDevice::open("/nonexistent/pfmfs_helper");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, -ENOENT);
  EXPECT_NE(dev.error().reason.find("modprobe pfmfs_helper"), std::string::npos);

  auto backend = X86Backend::create(X86Options{"/nonexistent/pfmfs_helper"});
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().code, -ENOENT);
}

TEST(HelperDeviceOpen, AnotherDeviceFailsTheHandshake) {
  auto dev = HelperDevice::open("/dev/null");
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, -ENOTTY);
  EXPECT_NE(dev.error().reason.find("handshake"), std::string::npos);
}

// An MSR file that records what reaches it: the driver's side of the
// contract the x86 backend batches on.
class RecordingMsrs final : public intel::MsrAccess {
 public:
  void writeMsr(std::uint32_t addr, std::uint64_t value) override { regs[addr] = value; }
  std::uint64_t readMsr(std::uint32_t addr) override {
    ++single_reads;
    return regs[addr];
  }
  void readMsrs(std::span<const std::uint32_t> addrs, std::span<std::uint64_t> out) override {
    ++batches;
    batch_sizes.push_back(addrs.size());
    for (std::size_t i = 0; i < addrs.size(); ++i) out[i] = regs[addrs[i]];
  }
  std::map<std::uint32_t, std::uint64_t> regs;
  int single_reads = 0, batches = 0;
  std::vector<std::size_t> batch_sizes;
};

TEST(IntelArchDriverBatches, ReadPmdsIsOneBatchOfTheAskedCountersByDescriptionSlot) {
  auto d = describe(emulatedInfo());
  ASSERT_TRUE(d);
  RecordingMsrs msrs;
  intel::IntelArchDriver driver(*d, msrs);
  msrs.regs[intel::kPmc0 + 1] = 0x1234;
  msrs.regs[intel::kFixedCtr0 + 2] = (std::uint64_t{1} << 50) | 7;  // bits past the width are dropped
  std::vector<std::uint64_t> out(d->pmds.size(), 99);
  driver.readPmds(regBit(1) | regBit(18), out);
  EXPECT_EQ(msrs.batches, 1);
  EXPECT_EQ(msrs.single_reads, 0);
  EXPECT_EQ(msrs.batch_sizes, (std::vector<std::size_t>{2}));
  EXPECT_EQ(out, (std::vector<std::uint64_t>{99, 0x1234, 99, 99, 99, 99, 7}));

  // What was read is known: loading the same bits again writes nothing.
  std::vector<std::uint64_t> pmcs(d->pmcs.size(), 0);
  msrs.regs.clear();
  driver.loadImage(pmcs, regBit(1) | regBit(18), out);
  EXPECT_EQ(msrs.regs.count(intel::kPmc0 + 1), 0u);
  EXPECT_EQ(msrs.regs.count(intel::kFixedCtr0 + 2), 0u);
}

TEST(IntelArchDriverBatches, NoCountersNoRead) {
  auto d = describe(emulatedInfo());
  ASSERT_TRUE(d);
  RecordingMsrs msrs;
  intel::IntelArchDriver driver(*d, msrs);
  std::vector<std::uint64_t> out(d->pmds.size(), 0);
  driver.readPmds(0, out);
  EXPECT_EQ(msrs.batches, 0);
}

TEST(IntelArchDriverBatches, StatusBitsNameThePmds) {
  auto d = describe(emulatedInfo());
  ASSERT_TRUE(d);
  RecordingMsrs msrs;
  intel::IntelArchDriver driver(*d, msrs);
  // General counter 2, fixed counter 1, and bits the PMU does not have
  // (general counter 5, fixed counter 3, the conditions-changed bit 63).
  std::uint64_t status = (1ull << 2) | (1ull << 33) | (1ull << 5) | (1ull << 35) | (1ull << 63);
  EXPECT_EQ(driver.statusToPmds(status), regBit(2) | regBit(17));
  EXPECT_EQ(driver.statusToPmds(0), 0u);
}

}  // namespace
}  // namespace pfmfs::pmu::x86
