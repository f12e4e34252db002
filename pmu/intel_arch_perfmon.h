// Intel architectural performance monitoring, version 2, at the MSR level:
// register addresses, bit fields, and the PMU description built from them with
// perfmon2's register mapping (PMC0-n = PERFEVTSELn, PMD0-n = PMCn, PMC16 =
// FIXED_CTR_CTRL, PMD16-18 = FIXED_CTR0-2). The sim backend emulates exactly
// these MSRs and the x86 backend programs them on hardware.
#pragma once

#include <cstdint>
#include <vector>

#include "pmu/pmu_description.h"
#include "pmu/result.h"

namespace pfmfs::pmu::intel {

// MSR addresses.
inline constexpr std::uint32_t kPerfEvtSel0 = 0x186;  // + n
inline constexpr std::uint32_t kPmc0 = 0xc1;          // + n
inline constexpr std::uint32_t kFixedCtr0 = 0x309;    // + n
inline constexpr std::uint32_t kFixedCtrCtrl = 0x38d;
inline constexpr std::uint32_t kPerfGlobalStatus = 0x38e;
inline constexpr std::uint32_t kPerfGlobalCtrl = 0x38f;
inline constexpr std::uint32_t kPerfGlobalOvfCtrl = 0x390;

// IA32_PERFEVTSELx fields.
namespace evtsel {
inline constexpr std::uint64_t kEvent = 0xffull;                   // 7:0 event select
inline constexpr std::uint64_t kUmask = 0xff00ull;                 // 15:8 unit mask
inline constexpr std::uint64_t kUsr = 1ull << 16;                  // count at CPL > 0
inline constexpr std::uint64_t kOs = 1ull << 17;                   // count at CPL 0
inline constexpr std::uint64_t kEdge = 1ull << 18;                 // edge detect
inline constexpr std::uint64_t kPc = 1ull << 19;                   // pin control
inline constexpr std::uint64_t kInt = 1ull << 20;                  // APIC interrupt on overflow
inline constexpr std::uint64_t kAny = 1ull << 21;                  // any thread of the core
inline constexpr std::uint64_t kEn = 1ull << 22;                   // counter enable
inline constexpr std::uint64_t kInv = 1ull << 23;                  // invert cmask
inline constexpr std::uint64_t kCmask = 0xffull << 24;             // 31:24 counter mask
inline constexpr std::uint64_t kReserved = 0xffffffff00000000ull;  // 63:32
inline constexpr std::uint64_t kCode = kEvent | kUmask;            // what an event name encodes
// What refines an event's count in hardware (pin control, edge, any thread,
// invert, counter mask): a PMU that emulates its events (the sim) or hands
// them to perf (perf-x86 passes edge, invert and cmask only) reserves what it
// does not do, so that a write asking for it fails instead of counting
// something else.
inline constexpr std::uint64_t kFilters = kEdge | kPc | kAny | kInv | kCmask;
}  // namespace evtsel

// IA32_FIXED_CTR_CTRL: one 4-bit field per fixed counter.
namespace fixedctl {
inline constexpr unsigned kFieldBits = 4;
inline constexpr std::uint64_t kOs = 0x1;   // count at CPL 0
inline constexpr std::uint64_t kUsr = 0x2;  // count at CPL > 0
inline constexpr std::uint64_t kAny = 0x4;  // any thread of the core
inline constexpr std::uint64_t kPmi = 0x8;  // interrupt on overflow
constexpr std::uint64_t field(unsigned n, std::uint64_t bits) { return bits << (kFieldBits * n); }
}  // namespace fixedctl

// IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL: bit n = general counter n,
// bit 32 + n = fixed counter n.
inline constexpr unsigned kGlobalFixedShift = 32;

inline constexpr unsigned kFixedCounters = 3;  // instructions, core cycles, ref cycles
inline constexpr unsigned kFixedCtrlPmc = 16;  // perfmon2 number of FIXED_CTR_CTRL
inline constexpr unsigned kFixedPmd0 = 16;     // perfmon2 number of FIXED_CTR0
inline constexpr unsigned kMaxGeneralCounters = 8;

// The architectural event codes (event | umask << 8).
namespace event {
inline constexpr std::uint64_t kUnhaltedCoreCycles = 0x3c;
inline constexpr std::uint64_t kInstructionRetired = 0xc0;
inline constexpr std::uint64_t kUnhaltedReferenceCycles = 0x013c;
inline constexpr std::uint64_t kLlcReferences = 0x4f2e;
inline constexpr std::uint64_t kLlcMisses = 0x412e;
inline constexpr std::uint64_t kBranchInstructionsRetired = 0xc4;
inline constexpr std::uint64_t kBranchMissesRetired = 0xc5;
}  // namespace event

// The code counted by fixed counter n.
std::uint64_t fixedCounterCode(unsigned n);

// The seven architectural events, counted by any general counter and, for
// instructions and cycles, by their fixed counter too where the PMU has it
// (fixed counter n exists for n < fixed_counters).
std::vector<EventDesc> architecturalEvents(unsigned general_counters, unsigned fixed_counters = kFixedCounters);

struct Shape {
  unsigned general_counters = 4;             // 1..8
  unsigned width = 48;                       // 16..64, general counters (and fixed ones unless fixed_width says)
  unsigned fixed_counters = kFixedCounters;  // 0..3: hardware may implement fewer (CPUID.0AH:EDX[4:0])
  unsigned fixed_width = 0;                  // 16..64, or 0: the same as width
  // PERFEVTSEL bits of evtsel::kFilters this PMU does not implement: reserved
  // besides 63:32 (hardware implements them all).
  std::uint64_t evtsel_missing = 0;
};

Status checkShape(const Shape& shape);

// The description for `shape` with `events` as its event table. `events` may
// name only counters the shape has.
PmuDescription makeDescription(const Shape& shape, std::vector<EventDesc> events);

}  // namespace pfmfs::pmu::intel
