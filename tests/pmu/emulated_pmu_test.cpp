// Unit tests of the sim's MSR-level PMU model (pfmfs(5), "The sim PMU") and of the driver
// that programs it: what counts when, exact counts over target time, wraps,
// GLOBAL_STATUS, interrupts and their exact instants, skid, faults.
#include "pmu/sim/emulated_pmu.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "pmu/backend.h"
#include "pmu/intel_arch_driver.h"
#include "pmu/intel_arch_perfmon.h"
#include "pmu/sim/event_stream.h"

namespace pfmfs::pmu::sim {
namespace {

using namespace intel;

constexpr std::uint64_t kCycles = event::kUnhaltedCoreCycles;           // 3 per ns
constexpr std::uint64_t kInstr = event::kInstructionRetired;            // 2 per ns
constexpr std::uint64_t kRefCycles = event::kUnhaltedReferenceCycles;   // 2.5 per ns
constexpr std::uint64_t kBranches = event::kBranchInstructionsRetired;  // 0.4 per ns

constexpr std::uint64_t kUserEn = evtsel::kUsr | evtsel::kEn;
constexpr std::uint64_t kGlobalAll4 = 0xfull | 0x7ull << 32;  // 4 general + 3 fixed

std::uint64_t gbit(unsigned general) { return 1ull << general; }
std::uint64_t gfixed(unsigned n) { return 1ull << (32 + n); }

// A description, its events and an emulated PMU over them, as the sim backend
// builds them.
struct Rig {
  explicit Rig(unsigned counters = 4, unsigned width = 48, std::vector<SimEvent> ev = {}, std::uint64_t skid = 0)
      : events(ev.empty() ? defaultEvents(counters) : std::move(ev)),
        desc(makeDescription(Shape{counters, width}, table(events))),
        pmu(desc, events, &writes, skid) {}

  static std::vector<EventDesc> table(const std::vector<SimEvent>& ev) {
    std::vector<EventDesc> t;
    for (const auto& e : ev) t.push_back(e.desc);
    return t;
  }

  std::uint64_t rd(std::uint32_t addr) { return pmu.readMsr(addr); }
  void wr(std::uint32_t addr, std::uint64_t v) { pmu.writeMsr(addr, v); }

  std::atomic<std::uint64_t> writes{0};
  std::vector<SimEvent> events;
  PmuDescription desc;
  EmulatedPmu pmu;
};

// ------------------------------------------------------------ registers

TEST(EmulatedPmu, FreshState) {
  Rig r;
  EXPECT_EQ(r.pmu.now(), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalCtrl), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  EXPECT_EQ(r.rd(kFixedCtrCtrl), 0u);
  for (unsigned n = 0; n < 4; ++n) {
    EXPECT_EQ(r.rd(kPerfEvtSel0 + n), 0u);
    EXPECT_EQ(r.rd(kPmc0 + n), 0u);
  }
  for (unsigned n = 0; n < 3; ++n) EXPECT_EQ(r.rd(kFixedCtr0 + n), 0u);
  EXPECT_EQ(r.pmu.nextInterruptNs(), kNever);
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.msrWrites(), 0u);
  EXPECT_EQ(r.pmu.faults(), 0u);
}

TEST(EmulatedPmu, RegistersReadBackWhatWasWritten) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0 + 2, 0x12345678);
  r.wr(kFixedCtrCtrl, 0xabc);
  r.wr(kPerfGlobalCtrl, 0x5);
  r.wr(kPmc0 + 1, 0x1234);
  r.wr(kFixedCtr0 + 2, 0xfedc);
  EXPECT_EQ(r.rd(kPerfEvtSel0 + 2), 0x12345678u);
  EXPECT_EQ(r.rd(kFixedCtrCtrl), 0xabcu);
  EXPECT_EQ(r.rd(kPerfGlobalCtrl), 0x5u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 0x1234u);
  EXPECT_EQ(r.rd(kFixedCtr0 + 2), 0xfedcu);
  EXPECT_EQ(r.pmu.faults(), 0u);
}

TEST(EmulatedPmu, CounterWritesKeepTheImplementedBitsOnly) {
  Rig r(4, 16);
  r.wr(kPmc0, 0x123456789);
  EXPECT_EQ(r.rd(kPmc0), 0x6789u);
  r.wr(kFixedCtr0 + 1, ~0ull);
  EXPECT_EQ(r.rd(kFixedCtr0 + 1), 0xffffu);
  Rig w(4, 64);
  w.wr(kPmc0, ~0ull);
  EXPECT_EQ(w.rd(kPmc0), ~0ull);
}

TEST(EmulatedPmu, MsrWritesCountEveryWrite) {
  Rig r;
  r.wr(kPerfEvtSel0, 1);
  r.wr(kPerfEvtSel0, 1);  // same value: still a write
  r.wr(kPmc0, 0);
  r.wr(kFixedCtrCtrl, 0);
  r.wr(kFixedCtr0, 0);
  r.wr(kPerfGlobalCtrl, 0);
  r.wr(kPerfGlobalOvfCtrl, 0);
  r.wr(kPerfGlobalStatus, 0);  // read-only: a fault, but a write all the same
  r.wr(0x1234, 0);             // no such MSR
  EXPECT_EQ(r.pmu.msrWrites(), 9u);
  EXPECT_EQ(r.writes.load(), 9u);
  (void)r.rd(kPmc0);
  (void)r.rd(kPerfGlobalStatus);
  EXPECT_EQ(r.pmu.msrWrites(), 9u) << "reads are not writes";
}

TEST(EmulatedPmu, NoWriteCounterIsFine) {
  auto events = defaultEvents(4);
  auto desc = makeDescription(Shape{}, Rig::table(events));
  EmulatedPmu pmu(desc, events);
  pmu.writeMsr(kPmc0, 5);
  EXPECT_EQ(pmu.msrWrites(), 1u);
}

TEST(EmulatedPmu, UnknownMsrsFault) {
  Rig r(4, 48);
  EXPECT_EQ(r.rd(0x1234), 0u);
  EXPECT_EQ(r.pmu.faults(), 1u);
  r.wr(0x1234, 7);
  EXPECT_EQ(r.pmu.faults(), 2u);
  // One past each implemented range.
  r.wr(kPerfEvtSel0 + 4, kCycles | kUserEn);
  EXPECT_EQ(r.pmu.faults(), 3u);
  EXPECT_EQ(r.rd(kPerfEvtSel0 + 4), 0u);
  EXPECT_EQ(r.pmu.faults(), 4u);
  r.wr(kPmc0 + 4, 1);
  EXPECT_EQ(r.rd(kPmc0 + 4), 0u);
  EXPECT_EQ(r.pmu.faults(), 6u);
  r.wr(kFixedCtr0 + 3, 1);
  EXPECT_EQ(r.rd(kFixedCtr0 + 3), 0u);
  EXPECT_EQ(r.pmu.faults(), 8u);
  // GLOBAL_STATUS is read-only: writing it faults and changes nothing.
  r.wr(kPerfGlobalStatus, 1);
  EXPECT_EQ(r.pmu.faults(), 9u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  EXPECT_EQ(r.pmu.faults(), 9u);
  // A faulting write to a general counter's neighbour changed no counter.
  for (unsigned n = 0; n < 4; ++n) EXPECT_EQ(r.rd(kPmc0 + n), 0u);
}

TEST(EmulatedPmu, EightCountersHaveEightPairs) {
  Rig r(8, 48);
  r.wr(kPerfEvtSel0 + 7, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(7));
  r.pmu.advanceTo(100);
  EXPECT_EQ(r.rd(kPmc0 + 7), 300u);
  EXPECT_EQ(r.pmu.faults(), 0u);
}

// ------------------------------------------------------------ what counts

TEST(EmulatedPmu, GeneralCounterNeedsGlobalBitAndEnBit) {
  Rig r;
  r.wr(kPerfEvtSel0 + 0, kCycles | kUserEn);       // EN, global on: counts
  r.wr(kPerfEvtSel0 + 1, kCycles | evtsel::kUsr);  // no EN
  r.wr(kPerfEvtSel0 + 2, kCycles | kUserEn);       // global bit off
  r.wr(kPerfEvtSel0 + 3, kInstr | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0) | gbit(1) | gbit(3));
  r.pmu.advanceTo(1000);
  EXPECT_EQ(r.rd(kPmc0 + 0), 3000u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 0u);
  EXPECT_EQ(r.rd(kPmc0 + 2), 0u);
  EXPECT_EQ(r.rd(kPmc0 + 3), 2000u);
  EXPECT_EQ(r.pmu.now(), 1000u);
}

TEST(EmulatedPmu, NothingCountsBeforeGlobalCtrl) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kFixedCtrCtrl, fixedctl::field(0, fixedctl::kUsr));
  r.pmu.advanceTo(1000);
  EXPECT_EQ(r.rd(kPmc0), 0u);
  EXPECT_EQ(r.rd(kFixedCtr0), 0u);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(1500);  // only (1000, 1500] counts
  EXPECT_EQ(r.rd(kPmc0), 1500u);
  EXPECT_EQ(r.rd(kFixedCtr0), 1000u);
}

TEST(EmulatedPmu, GlobalCtrlOffStopsAndKeepsValues) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(10);
  r.wr(kPerfGlobalCtrl, 0);
  r.pmu.advanceTo(1000);
  EXPECT_EQ(r.rd(kPmc0), 30u);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(1010);
  EXPECT_EQ(r.rd(kPmc0), 60u);
}

TEST(EmulatedPmu, FixedCountersNeedAPrivilegeBit) {
  Rig r;
  // FIXED_CTR0 user, FIXED_CTR1 user + kernel, FIXED_CTR2 PMI only (no level).
  r.wr(kFixedCtrCtrl, fixedctl::field(0, fixedctl::kUsr) | fixedctl::field(1, fixedctl::kUsr | fixedctl::kOs) |
                          fixedctl::field(2, fixedctl::kPmi));
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(1001);
  EXPECT_EQ(r.rd(kFixedCtr0 + 0), 2002u);  // instructions, 2/ns
  EXPECT_EQ(r.rd(kFixedCtr0 + 1), 3003u);  // core cycles, 3/ns
  EXPECT_EQ(r.rd(kFixedCtr0 + 2), 0u);
  r.wr(kFixedCtrCtrl, fixedctl::field(2, fixedctl::kUsr));
  r.pmu.advanceTo(2002);
  EXPECT_EQ(r.rd(kFixedCtr0 + 0), 2002u);  // stopped
  EXPECT_EQ(r.rd(kFixedCtr0 + 1), 3003u);
  EXPECT_EQ(r.rd(kFixedCtr0 + 2), 2503u);  // ref cycles 2.5/ns over (1001, 2002]: 5005 - 2502
}

TEST(EmulatedPmu, FixedCounterNeedsItsGlobalBit) {
  Rig r;
  r.wr(kFixedCtrCtrl, fixedctl::field(0, fixedctl::kUsr) | fixedctl::field(1, fixedctl::kUsr));
  r.wr(kPerfGlobalCtrl, gfixed(1));
  r.pmu.advanceTo(100);
  EXPECT_EQ(r.rd(kFixedCtr0 + 0), 0u);
  EXPECT_EQ(r.rd(kFixedCtr0 + 1), 300u);
}

TEST(EmulatedPmu, PrivilegeBitsExcludingTheEventsRingCountNothing) {
  Rig r;
  // The default events all occur at user level.
  r.wr(kPerfEvtSel0 + 0, kCycles | evtsel::kOs | evtsel::kEn);
  r.wr(kPerfEvtSel0 + 1, kCycles | evtsel::kOs | evtsel::kUsr | evtsel::kEn);
  r.wr(kPerfEvtSel0 + 2, kCycles | evtsel::kEn);  // neither level
  r.wr(kFixedCtrCtrl, fixedctl::field(0, fixedctl::kOs) | fixedctl::field(1, fixedctl::kOs | fixedctl::kUsr));
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(100);
  EXPECT_EQ(r.rd(kPmc0 + 0), 0u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 300u);
  EXPECT_EQ(r.rd(kPmc0 + 2), 0u);
  EXPECT_EQ(r.rd(kFixedCtr0 + 0), 0u);
  EXPECT_EQ(r.rd(kFixedCtr0 + 1), 300u);
}

TEST(EmulatedPmu, KernelEventsNeedTheOsBit) {
  std::vector<SimEvent> ev = {
      SimEvent{EventDesc{"KERNEL_THING", 0x77, 0xf, ""}, EventRate::constant(1, 1), Ring::Kernel},
  };
  Rig r(4, 48, ev);
  r.wr(kPerfEvtSel0 + 0, 0x77 | evtsel::kUsr | evtsel::kEn);
  r.wr(kPerfEvtSel0 + 1, 0x77 | evtsel::kOs | evtsel::kEn);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(50);
  EXPECT_EQ(r.rd(kPmc0 + 0), 0u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 50u);
}

TEST(EmulatedPmu, UnknownEventCodeCountsNothing) {
  Rig r;
  r.wr(kPerfEvtSel0, 0x99 | kUserEn);
  r.wr(kPerfEvtSel0 + 1, kCycles | 0x200 | kUserEn);  // a umask makes another code (0x23c)
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(1000);
  EXPECT_EQ(r.rd(kPmc0), 0u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 0u);
}

// ------------------------------------------------------------ exact counts

TEST(EmulatedPmu, CountsAreNOfBMinusNOfA) {
  Rig r;
  r.pmu.advanceTo(1);
  r.wr(kPerfEvtSel0, kRefCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(4);
  // N(t) = floor(2.5 t): N(4) - N(1) = 10 - 2.
  EXPECT_EQ(r.rd(kPmc0), 8u);
}

TEST(EmulatedPmu, CountsTelescopeAcrossSteps) {
  Rig one, many;
  for (Rig* r : {&one, &many}) {
    r->pmu.advanceTo(3);
    r->wr(kPerfEvtSel0, kRefCycles | kUserEn);
    r->wr(kPerfEvtSel0 + 1, kBranches | kUserEn);
    r->wr(kPerfGlobalCtrl, gbit(0) | gbit(1));
  }
  one.pmu.advanceTo(10'003);
  for (std::uint64_t t = 4; t <= 10'003; t += 7) many.pmu.advanceTo(t);
  many.pmu.advanceTo(10'003);
  // floor(2.5 * 10003) - floor(2.5 * 3) = 25007 - 7; floor(0.4 * 10003) - floor(0.4 * 3) = 4001 - 1.
  EXPECT_EQ(one.rd(kPmc0), 25000u);
  EXPECT_EQ(many.rd(kPmc0), 25000u);
  EXPECT_EQ(one.rd(kPmc0 + 1), 4000u);
  EXPECT_EQ(many.rd(kPmc0 + 1), 4000u);
}

TEST(EmulatedPmu, AdvanceBackwardsOrToNowIsANoOp) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(100);
  r.pmu.advanceTo(100);
  r.pmu.advanceTo(50);
  EXPECT_EQ(r.pmu.now(), 100u);
  EXPECT_EQ(r.rd(kPmc0), 300u);
}

TEST(EmulatedPmu, WritingACountingCounterRestartsFromTheValue) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(10);
  r.wr(kPmc0, 1000);
  r.pmu.advanceTo(20);
  EXPECT_EQ(r.rd(kPmc0), 1030u);
}

TEST(EmulatedPmu, ChangingTheEventMidwayCountsEachOverItsInterval) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(10);
  r.wr(kPerfEvtSel0, kRefCycles | kUserEn);
  r.pmu.advanceTo(13);
  // 30 cycles over (0, 10], then floor(32.5) - floor(25) = 7 ref cycles over (10, 13].
  EXPECT_EQ(r.rd(kPmc0), 37u);
}

TEST(EmulatedPmu, ReenablingDoesNotCountTheGap) {
  Rig r;
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(5);
  r.wr(kPerfEvtSel0, kCycles | evtsel::kUsr);  // EN off
  r.pmu.advanceTo(500);
  r.wr(kPerfEvtSel0, kCycles | kUserEn);
  r.pmu.advanceTo(505);
  EXPECT_EQ(r.rd(kPmc0), 30u);
}

// ------------------------------------------------------- wraps, interrupts

TEST(EmulatedPmu, WrapSetsStatusWithoutInterruptBit) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0, kCycles | kUserEn);  // no INT
  r.wr(kPmc0, 0xffff - 5);
  r.wr(kPerfGlobalCtrl, gbit(0));
  EXPECT_EQ(r.pmu.nextInterruptNs(), kNever);
  r.pmu.advanceTo(1);
  EXPECT_EQ(r.rd(kPmc0), 0xfffdu);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  r.pmu.advanceTo(2);  // 0xfffa + 6 = 0x10000
  EXPECT_EQ(r.rd(kPmc0), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  EXPECT_FALSE(r.pmu.interruptPending());
}

TEST(EmulatedPmu, WrapWithIntRaisesTheInterrupt) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0 + 2, kInstr | kUserEn | evtsel::kInt);
  r.wr(kPmc0 + 2, 0xfffe);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  EXPECT_EQ(r.pmu.nextInterruptNs(), 1u);
  r.pmu.advanceTo(1);
  EXPECT_EQ(r.rd(kPmc0 + 2), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(2));
  EXPECT_TRUE(r.pmu.interruptPending());
  r.pmu.clearInterrupt();
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(2)) << "the line and the status are separate";
}

TEST(EmulatedPmu, NextInterruptIsExact) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0, kCycles | kUserEn | evtsel::kInt);
  r.wr(kPerfGlobalCtrl, gbit(0));
  // 65536 cycles at 3/ns: ceil(65536 / 3) = 21846 ns.
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21846u);
  r.pmu.advanceTo(21845);
  EXPECT_EQ(r.rd(kPmc0), 65535u);
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21846u);
  r.pmu.advanceTo(21846);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  EXPECT_EQ(r.rd(kPmc0), 2u);  // 65538 - 65536
  // The next wrap: 65536 more from 65538 total, i.e. at count 131072 = ceil(131072 / 3) = 43691.
  EXPECT_EQ(r.pmu.nextInterruptNs(), 43691u);
}

TEST(EmulatedPmu, NextInterruptFromAnOffset) {
  Rig r(4, 16);
  r.pmu.advanceTo(1000);
  r.wr(kPerfEvtSel0, kRefCycles | kUserEn | evtsel::kInt);
  r.wr(kPmc0, 0xffff - 9);  // 10 to go
  r.wr(kPerfGlobalCtrl, gbit(0));
  // N(1000) = 2500; 10 more at N(t) >= 2510: t = 1004.
  EXPECT_EQ(r.pmu.nextInterruptNs(), 1004u);
  r.pmu.advanceTo(1003);  // N = 2507: 7 of 10
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 0xfffdu);
  r.pmu.advanceTo(1004);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 0u);
}

TEST(EmulatedPmu, NextInterruptIsTheEarliestOfSeveral) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0 + 0, kInstr | kUserEn | evtsel::kInt);   // 2/ns, 100 to go: t = 50
  r.wr(kPerfEvtSel0 + 1, kCycles | kUserEn | evtsel::kInt);  // 3/ns, 99 to go: t = 33
  r.wr(kPerfEvtSel0 + 2, kCycles | kUserEn);                 // no INT: never an interrupt
  r.wr(kPmc0 + 0, 0x10000 - 100);
  r.wr(kPmc0 + 1, 0x10000 - 99);
  r.wr(kPmc0 + 2, 0x10000 - 1);
  // FIXED_CTR1 (cycles) with PMI, 60 to go: t = 20.
  r.wr(kFixedCtrCtrl, fixedctl::field(1, fixedctl::kUsr | fixedctl::kPmi));
  r.wr(kFixedCtr0 + 1, 0x10000 - 60);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  EXPECT_EQ(r.pmu.nextInterruptNs(), 20u);
  r.pmu.advanceTo(19);
  EXPECT_FALSE(r.pmu.interruptPending());
  // PMC2 wrapped at t = 1 without INT: status only.
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(2));
  r.pmu.advanceTo(20);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(2) | gfixed(1));
  r.pmu.clearInterrupt();
  EXPECT_EQ(r.pmu.nextInterruptNs(), 33u);
  r.pmu.advanceTo(33);
  EXPECT_TRUE(r.pmu.interruptPending());
  r.pmu.clearInterrupt();
  EXPECT_EQ(r.pmu.nextInterruptNs(), 50u);
}

TEST(EmulatedPmu, FixedCounterPmi) {
  Rig r(4, 16);
  r.wr(kFixedCtrCtrl, fixedctl::field(1, fixedctl::kUsr | fixedctl::kPmi));
  r.wr(kPerfGlobalCtrl, gfixed(1));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21846u);
  r.pmu.advanceTo(21845);
  EXPECT_FALSE(r.pmu.interruptPending());
  r.pmu.advanceTo(21846);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gfixed(1));
}

TEST(EmulatedPmu, NoInterruptWhileNotCounting) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0, kCycles | evtsel::kUsr | evtsel::kInt);  // no EN
  r.wr(kFixedCtrCtrl, fixedctl::field(0, fixedctl::kPmi));    // no level
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  EXPECT_EQ(r.pmu.nextInterruptNs(), kNever);
  r.wr(kPerfEvtSel0, kCycles | kUserEn | evtsel::kInt);
  r.wr(kPerfGlobalCtrl, 0);
  EXPECT_EQ(r.pmu.nextInterruptNs(), kNever);
}

TEST(EmulatedPmu, GlobalOvfCtrlClearsStatusBits) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0 + 0, kCycles | kUserEn);
  r.wr(kPerfEvtSel0 + 1, kCycles | kUserEn);
  r.wr(kFixedCtrCtrl, fixedctl::field(2, fixedctl::kUsr));
  r.wr(kPmc0 + 0, 0xffff);
  r.wr(kPmc0 + 1, 0xffff);
  r.wr(kFixedCtr0 + 2, 0xffff);
  r.wr(kPerfGlobalCtrl, kGlobalAll4);
  r.pmu.advanceTo(1);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gbit(1) | gfixed(2));
  r.wr(kPerfGlobalOvfCtrl, gbit(1));
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gfixed(2));
  r.wr(kPerfGlobalOvfCtrl, gbit(3));  // not set: no effect
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gfixed(2));
  r.wr(kPerfGlobalOvfCtrl, ~0ull);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  EXPECT_EQ(r.pmu.faults(), 0u);
}

TEST(EmulatedPmu, Width64NeverWrapsInPractice) {
  Rig r(4, 64);
  r.wr(kPerfEvtSel0, kCycles | kUserEn | evtsel::kInt);
  r.wr(kPmc0, ~0ull - 2);  // 3 to go
  r.wr(kPerfGlobalCtrl, gbit(0));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 1u);
  r.pmu.advanceTo(1);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
}

TEST(EmulatedPmu, WrapMoreThanOnceInOneStepStillSetsStatus) {
  Rig r(4, 16);
  r.wr(kPerfEvtSel0, kCycles | kUserEn | evtsel::kInt);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(100'000);  // 300000 cycles: 4 wraps and 37856 left
  EXPECT_EQ(r.rd(kPmc0), 300'000u % 65536u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  EXPECT_TRUE(r.pmu.interruptPending());
}

// ------------------------------------------------------------ skid

constexpr std::uint64_t kUserInt = kUserEn | evtsel::kInt;

// A skid of N: the status bit at the wrap, the line when the counter's own
// stream has counted N more.
TEST(EmulatedPmuSkid, TheInterruptComesNEventsAfterTheWrap) {
  Rig r(4, 16, {}, 10);
  EXPECT_EQ(r.pmu.skid(), 10u);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);
  r.wr(kPmc0, 0x10000 - 6);  // wraps at the 6th cycle (t = 2); the 16th comes at t = 16/3, so at 6
  r.wr(kPerfGlobalCtrl, gbit(0));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 6u);
  r.pmu.advanceTo(2);
  EXPECT_EQ(r.rd(kPmc0), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0)) << "status is set at the wrap";
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.skidStatus(), gbit(0));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 6u);
  r.pmu.advanceTo(5);
  EXPECT_EQ(r.rd(kPmc0), 9u);
  EXPECT_FALSE(r.pmu.interruptPending());
  r.pmu.advanceTo(6);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 12u);  // 10 past the wrap, and 2 more in that ns
  EXPECT_EQ(r.pmu.skidStatus(), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  r.pmu.clearInterrupt();
  // The next wrap: 65524 more cycles from count 18, then 10: count 65552 at t = 21851.
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21851u);

  Rig none(4, 16);
  none.wr(kPerfEvtSel0, kCycles | kUserInt);
  none.wr(kPmc0, 0x10000 - 6);
  none.wr(kPerfGlobalCtrl, gbit(0));
  EXPECT_EQ(none.pmu.nextInterruptNs(), 2u) << "skid 0: at the wrap";
  none.pmu.advanceTo(2);
  EXPECT_TRUE(none.pmu.interruptPending());
  EXPECT_EQ(none.pmu.skidStatus(), 0u);
}

// Skid is counted on the counter's own event stream, whatever the rate, while
// the other counters go on counting.
TEST(EmulatedPmuSkid, CountedOnTheCountersOwnStream) {
  Rig r(4, 16, {}, 2);
  r.wr(kPerfEvtSel0, kBranches | kUserInt);  // 0.4/ns: the 1st branch at t = 3, the 3rd at t = 8
  r.wr(kPmc0, 0xffff);
  r.wr(kPerfEvtSel0 + 1, kCycles | kUserEn);
  r.wr(kPerfGlobalCtrl, gbit(0) | gbit(1));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 8u);
  r.pmu.advanceTo(7);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 1u);
  r.pmu.advanceTo(8);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 2u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 24u);
}

// Counters that wrap within one skid share one interrupt, which reports them
// all: here pmc0's, due first; pmc1 has counted fewer than the skid.
TEST(EmulatedPmuSkid, WrapsWithinOneSkidShareOneInterrupt) {
  Rig r(4, 16, {}, 30);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);  // wraps at t = 1 (count 3); count 33 at t = 11
  r.wr(kPmc0, 0x10000 - 3);
  r.wr(kPerfEvtSel0 + 1, kInstr | kUserInt);  // wraps at t = 5 (count 10); count 40 at t = 20
  r.wr(kPmc0 + 1, 0x10000 - 10);
  r.wr(kPerfGlobalCtrl, gbit(0) | gbit(1));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 11u);
  r.pmu.advanceTo(4);
  EXPECT_EQ(r.pmu.skidStatus(), gbit(0));
  r.pmu.advanceTo(10);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gbit(1));
  EXPECT_EQ(r.pmu.skidStatus(), gbit(0) | gbit(1));
  EXPECT_FALSE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.nextInterruptNs(), 11u);
  r.pmu.advanceTo(11);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.skidStatus(), 0u);
  EXPECT_EQ(r.rd(kPmc0), 30u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 12u);
  IntelArchDriver d(r.desc, r.pmu);
  EXPECT_EQ(d.takeOverflowStatus(), regBit(0) | regBit(1)) << "one interrupt, both counters";
  r.pmu.clearInterrupt();
  // Each starts a skid of its own at its next wrap: pmc0 first, at count 65569 (t = 21857).
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21857u);
}

// The line goes up at the first instant any wrap asks for, even when a later
// wrap asks for an earlier one: pmc1 (cycles) wraps after pmc0 (branches) but
// is due first; pmc0 has counted 1 of its skid of 4.
TEST(EmulatedPmuSkid, TheEarliestInstantAnyWrapAsksForRaisesTheLine) {
  Rig r(4, 16, {}, 4);
  r.wr(kPerfEvtSel0, kBranches | kUserInt);  // wraps at t = 3; its 5th branch at t = 13
  r.wr(kPmc0, 0xffff);
  r.wr(kPerfEvtSel0 + 1, kCycles | kUserInt);  // wraps at t = 5 (count 15); count 19 at t = 7
  r.wr(kPmc0 + 1, 0x10000 - 15);
  r.wr(kPerfGlobalCtrl, gbit(0) | gbit(1));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 7u);
  r.pmu.advanceTo(6);
  EXPECT_EQ(r.pmu.skidStatus(), gbit(0) | gbit(1));
  EXPECT_FALSE(r.pmu.interruptPending());
  r.pmu.advanceTo(7);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 1u);
  EXPECT_EQ(r.rd(kPmc0 + 1), 6u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gbit(1));
}

// The instant is fixed at the wrap: disabling, reprogramming or reloading the
// counter does not move or cancel the interrupt (status was set at the wrap).
TEST(EmulatedPmuSkid, TheInterruptComesWhateverTheCounterDoesMeanwhile) {
  {
    Rig r(4, 16, {}, 10);  // cycles: wraps at t = 2, due at 6
    r.wr(kPerfEvtSel0, kCycles | kUserInt);
    r.wr(kPmc0, 0x10000 - 6);
    r.wr(kPerfGlobalCtrl, gbit(0));
    r.pmu.advanceTo(3);
    r.wr(kPerfGlobalCtrl, 0);  // everything stops
    EXPECT_EQ(r.pmu.nextInterruptNs(), 6u);
    r.pmu.advanceTo(5);
    EXPECT_FALSE(r.pmu.interruptPending());
    r.pmu.advanceTo(6);
    EXPECT_TRUE(r.pmu.interruptPending());
    EXPECT_EQ(r.rd(kPmc0), 3u) << "stopped at t = 3";
    EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  }
  {
    Rig r(4, 16, {}, 10);
    r.wr(kPerfEvtSel0, kCycles | kUserInt);
    r.wr(kPmc0, 0x10000 - 6);
    r.wr(kPerfGlobalCtrl, gbit(0));
    r.pmu.advanceTo(3);
    r.wr(kPerfEvtSel0, kBranches | kUserEn);  // another event, no INT
    r.wr(kPmc0, 100);
    EXPECT_EQ(r.pmu.nextInterruptNs(), 6u);
    r.pmu.advanceTo(6);
    EXPECT_TRUE(r.pmu.interruptPending());
    EXPECT_EQ(r.rd(kPmc0), 101u);  // 100 + floor(2.4) - floor(1.2)
  }
  {
    // Acknowledged in skid: the interrupt still comes and finds nothing.
    Rig r(4, 16, {}, 10);
    IntelArchDriver d(r.desc, r.pmu);
    r.wr(kPerfEvtSel0, kCycles | kUserInt);
    r.wr(kPmc0, 0x10000 - 6);
    r.wr(kPerfGlobalCtrl, gbit(0));
    r.pmu.advanceTo(3);
    EXPECT_EQ(d.takeOverflowStatus(), regBit(0));
    EXPECT_EQ(r.pmu.skidStatus(), 0u);
    r.pmu.advanceTo(6);
    EXPECT_TRUE(r.pmu.interruptPending());
    EXPECT_EQ(d.takeOverflowStatus(), 0u);
  }
}

// endSkid: what the engine asks for before it takes a set off the PMU.
TEST(EmulatedPmuSkid, EndSkidRaisesTheInterruptNow) {
  Rig r(4, 16, {}, 10);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);
  r.wr(kPmc0, 0x10000 - 6);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.endSkid();  // nothing in skid: nothing happens
  EXPECT_FALSE(r.pmu.interruptPending());
  r.pmu.advanceTo(3);
  EXPECT_EQ(r.pmu.skidStatus(), gbit(0));
  r.pmu.endSkid();
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.skidStatus(), 0u);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0));
  EXPECT_EQ(r.rd(kPmc0), 3u);
  r.pmu.clearInterrupt();
  // No interrupt at 6 any more: the next is the next wrap's (count 65552 at t = 21851).
  EXPECT_EQ(r.pmu.nextInterruptNs(), 21851u);
  r.pmu.advanceTo(21850);
  EXPECT_FALSE(r.pmu.interruptPending());
}

// Wraps while the line is up join the interrupt the handler is about to take.
TEST(EmulatedPmuSkid, WrapsWhileTheLineIsUpJoinIt) {
  Rig r(4, 16, {}, 10);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);  // wraps at t = 2, due at 6
  r.wr(kPmc0, 0x10000 - 6);
  r.wr(kPerfEvtSel0 + 1, kInstr | kUserInt);  // wraps at t = 7
  r.wr(kPmc0 + 1, 0x10000 - 14);
  r.wr(kPerfGlobalCtrl, gbit(0) | gbit(1));
  r.pmu.advanceTo(6);
  EXPECT_TRUE(r.pmu.interruptPending());
  r.pmu.advanceTo(8);
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(0) | gbit(1));
  EXPECT_EQ(r.pmu.skidStatus(), 0u);
  r.pmu.clearInterrupt();
  r.pmu.advanceTo(30);
  EXPECT_FALSE(r.pmu.interruptPending()) << "pmc1's wrap was reported with the interrupt at 6";
}

// One long step raises what stepping would have: an interrupt due within it.
TEST(EmulatedPmuSkid, OneLongStep) {
  Rig r(4, 16, {}, 10);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);
  r.wr(kPerfGlobalCtrl, gbit(0));
  r.pmu.advanceTo(100'000);  // 4 wraps
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.pmu.skidStatus(), 0u);
  EXPECT_EQ(r.rd(kPmc0), 300'000u % 65536u);
}

// The largest skid the sim takes leaves a 16-bit counter in its first wrap.
TEST(EmulatedPmuSkid, TheLargestSkidWrapsOnce) {
  Rig r(4, 16, {}, 32767);
  r.wr(kPerfEvtSel0, kCycles | kUserInt);
  r.wr(kPmc0, 0xffff);  // wraps at the first cycle; the 32768th comes at t = 10923
  r.wr(kPerfGlobalCtrl, gbit(0));
  EXPECT_EQ(r.pmu.nextInterruptNs(), 10923u);
  r.pmu.advanceTo(10922);
  EXPECT_FALSE(r.pmu.interruptPending());
  r.pmu.advanceTo(10923);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPmc0), 32768u);
}

// ------------------------------------------------------------ the driver

TEST(IntelArchDriver, GlobalBits) {
  EXPECT_EQ(IntelArchDriver::globalBit(0), 1u);
  EXPECT_EQ(IntelArchDriver::globalBit(3), 8u);
  EXPECT_EQ(IntelArchDriver::globalBit(7), 0x80u);
  EXPECT_EQ(IntelArchDriver::globalBit(16), 1ull << 32);
  EXPECT_EQ(IntelArchDriver::globalBit(17), 1ull << 33);
  EXPECT_EQ(IntelArchDriver::globalBit(18), 1ull << 34);
}

TEST(IntelArchDriver, EnableDisable) {
  Rig r(4, 48);
  IntelArchDriver d(r.desc, r.pmu);
  d.enable();
  EXPECT_EQ(r.rd(kPerfGlobalCtrl), kGlobalAll4);
  d.disable();
  EXPECT_EQ(r.rd(kPerfGlobalCtrl), 0u);
  EXPECT_EQ(r.pmu.msrWrites(), 2u);

  Rig e(8, 48);
  IntelArchDriver d8(e.desc, e.pmu);
  d8.enable();
  EXPECT_EQ(e.rd(kPerfGlobalCtrl), 0xffull | 0x7ull << 32);
  Rig o(1, 48);
  IntelArchDriver d1(o.desc, o.pmu);
  d1.enable();
  EXPECT_EQ(o.rd(kPerfGlobalCtrl), 0x1ull | 0x7ull << 32);
}

TEST(IntelArchDriver, RegistersByPerfmonNumber) {
  Rig r(4, 16);
  IntelArchDriver d(r.desc, r.pmu);
  d.writePmc(1, kCycles | kUserEn);
  EXPECT_EQ(r.rd(kPerfEvtSel0 + 1), kCycles | kUserEn);
  d.writePmc(16, 0x222);
  EXPECT_EQ(r.rd(kFixedCtrCtrl), 0x222u);
  d.writePmd(3, 0x123456);  // width 16: the driver keeps the low bits
  EXPECT_EQ(r.rd(kPmc0 + 3), 0x3456u);
  d.writePmd(18, 0xabcd);
  EXPECT_EQ(r.rd(kFixedCtr0 + 2), 0xabcdu);
  EXPECT_EQ(d.readPmd(3), 0x3456u);
  EXPECT_EQ(d.readPmd(18), 0xabcdu);
  EXPECT_EQ(r.pmu.faults(), 0u);
  EXPECT_EQ(r.pmu.msrWrites(), 4u);
}

TEST(IntelArchDriver, CountsThroughTheDriver) {
  Rig r(4, 48);
  IntelArchDriver d(r.desc, r.pmu);
  d.writePmc(0, kInstr | kUserEn);
  d.writePmc(16, fixedctl::field(1, fixedctl::kUsr));
  d.writePmd(0, 0);
  d.writePmd(17, 0);
  d.enable();
  r.pmu.advanceTo(500);
  EXPECT_EQ(d.readPmd(0), 1000u);
  EXPECT_EQ(d.readPmd(17), 1500u);
  d.disable();
  r.pmu.advanceTo(900);
  EXPECT_EQ(d.readPmd(0), 1000u);
  EXPECT_EQ(d.readPmd(17), 1500u);
}

TEST(IntelArchDriver, TakeOverflowStatusMapsBitsToPmds) {
  Rig r(4, 16);
  IntelArchDriver d(r.desc, r.pmu);
  d.writePmc(1, kCycles | kUserEn | evtsel::kInt);
  d.writePmc(16,
             fixedctl::field(0, fixedctl::kUsr | fixedctl::kPmi) | fixedctl::field(2, fixedctl::kUsr | fixedctl::kPmi));
  d.writePmd(1, 0xffff);
  d.writePmd(16, 0xfffe);  // instructions, 2/ns
  d.writePmd(18, 0xfffd);  // ref cycles, 2.5/ns: N(1) = 2, not yet
  d.enable();
  EXPECT_EQ(d.takeOverflowStatus(), 0u);
  std::uint64_t writes = r.pmu.msrWrites();
  EXPECT_EQ(d.takeOverflowStatus(), 0u);
  EXPECT_EQ(r.pmu.msrWrites(), writes) << "nothing to acknowledge: no write";

  r.pmu.advanceTo(1);
  EXPECT_TRUE(r.pmu.interruptPending());
  EXPECT_EQ(r.rd(kPerfGlobalStatus), gbit(1) | gfixed(0));
  EXPECT_EQ(d.takeOverflowStatus(), regBit(1) | regBit(16));
  EXPECT_EQ(r.pmu.msrWrites(), writes + 1) << "one GLOBAL_OVF_CTRL write acknowledges";
  EXPECT_EQ(r.rd(kPerfGlobalStatus), 0u);
  EXPECT_EQ(d.takeOverflowStatus(), 0u);

  r.pmu.advanceTo(2);  // N(2) = 5 ref cycles: 0xfffd + 5 wraps
  EXPECT_EQ(d.takeOverflowStatus(), regBit(18));
  EXPECT_EQ(r.pmu.faults(), 0u);
}

TEST(IntelArchDriver, TakeOverflowStatusOfEveryCounter) {
  Rig r(8, 16);
  IntelArchDriver d(r.desc, r.pmu);
  for (unsigned n = 0; n < 8; ++n) {
    d.writePmc(n, kCycles | kUserEn);
    d.writePmd(n, 0xffff);
  }
  d.writePmc(16, 0x222);
  for (unsigned n = 16; n <= 18; ++n) d.writePmd(n, 0xffff);
  d.enable();
  r.pmu.advanceTo(1);
  EXPECT_EQ(d.takeOverflowStatus(), 0xffull | 0x7ull << 16);
}

}  // namespace
}  // namespace pfmfs::pmu::sim
