// perf-sw and perf-x86: descriptions and the register-to-event mapping.
#include "pmu/perf/perf_models.h"

#include <linux/perf_event.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <fmt/format.h>

namespace pfmfs::pmu::perf {

namespace {

using namespace intel;

struct SoftwareEvent {
  const char* name;
  std::uint64_t id;  // PERF_COUNT_SW_*
  const char* desc;
};

constexpr SoftwareEvent kSoftwareEvents[] = {
    {"CPU_CLOCK", PERF_COUNT_SW_CPU_CLOCK, "wall-clock time on a CPU, in ns (cpu-clock)"},
    {"TASK_CLOCK", PERF_COUNT_SW_TASK_CLOCK, "CPU time of the target, in ns (task-clock)"},
    {"PAGE_FAULTS", PERF_COUNT_SW_PAGE_FAULTS, "page faults, minor and major (page-faults)"},
    {"CONTEXT_SWITCHES", PERF_COUNT_SW_CONTEXT_SWITCHES, "context switches (context-switches)"},
    {"CPU_MIGRATIONS", PERF_COUNT_SW_CPU_MIGRATIONS, "moves of a thread to another CPU (cpu-migrations)"},
    {"MINOR_FAULTS", PERF_COUNT_SW_PAGE_FAULTS_MIN, "page faults served without I/O (minor-faults)"},
    {"MAJOR_FAULTS", PERF_COUNT_SW_PAGE_FAULTS_MAJ, "page faults that needed I/O (major-faults)"},
    {"ALIGNMENT_FAULTS", PERF_COUNT_SW_ALIGNMENT_FAULTS,
     "unaligned accesses fixed up by the kernel (alignment-faults)"},
    {"EMULATION_FAULTS", PERF_COUNT_SW_EMULATION_FAULTS, "instructions emulated by the kernel (emulation-faults)"},
};

// The PERFEVTSEL bits perf-x86 passes on as a raw event.
constexpr std::uint64_t kRawBits = evtsel::kEvent | evtsel::kUmask | evtsel::kEdge | evtsel::kInv | evtsel::kCmask;

}  // namespace

perf_event_attr counterAttr(const CounterEvent& ev, bool leads) {
  perf_event_attr a{};
  a.type = ev.type;
  a.config = ev.config;
  a.exclude_user = ev.exclude_user;
  a.exclude_kernel = ev.exclude_kernel;
  a.exclude_hv = 1;
  a.disabled = leads ? 1 : 0;
  return a;
}

std::string modelName(Model model) { return model == Model::Software ? "perf-sw" : "perf-x86"; }

PmuDescription softwareDescription() {
  PmuDescription d;
  d.model = modelName(Model::Software);
  d.features = {"perf_events", "software_events", "ovfl_intr"};
  d.event_field = evtsel::kEvent;
  const std::uint64_t used = evtsel::kEvent | evtsel::kUsr | evtsel::kOs | evtsel::kInt | evtsel::kEn;
  RegMask all = 0;
  for (unsigned n = 0; n < kSoftwareCounters; ++n) {
    d.pmcs.push_back(PmcDesc{n, fmt::format("SWEVTSEL{}", n), 0, 0, ~used});
    PmdDesc p;
    p.index = n;
    p.name = fmt::format("SWCTR{}", n);
    p.width = 64;
    p.ctl_pmc = n;
    p.field_mask = used;
    p.usr_bits = evtsel::kUsr;
    p.os_bits = evtsel::kOs;
    p.enable_bits = evtsel::kEn;
    p.int_bits = evtsel::kInt;
    d.pmds.push_back(p);
    all |= regBit(n);
  }
  for (const auto& e : kSoftwareEvents) d.events.push_back(EventDesc{e.name, e.id, all, e.desc});
  return d;
}

PmuDescription x86Description(unsigned general_counters) {
  Shape shape;
  shape.general_counters = general_counters;
  shape.width = 64;
  shape.evtsel_missing = evtsel::kFilters & ~kRawBits;  // pin control and AnyThread
  PmuDescription d = makeDescription(shape, architecturalEvents(general_counters));
  d.model = modelName(Model::X86);
  d.features = {"perf_events", "fixed_counters", "ovfl_intr"};
  return d;
}

unsigned cpuidGeneralCounters() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(0xa, 0, &eax, &ebx, &ecx, &edx)) return 0;
  if ((eax & 0xff) == 0) return 0;  // no architectural perfmon
  return (eax >> 8) & 0xff;
#else
  return 0;
#endif
}

std::optional<CounterEvent> counterEvent(Model model, const PmuDescription& desc, std::span<const std::uint64_t> pmcs,
                                         std::size_t pmd_slot) {
  const PmdDesc& d = desc.pmds[pmd_slot];
  int pmc_slot = desc.pmcSlot(d.ctl_pmc);
  if (pmc_slot < 0) return std::nullopt;
  const std::uint64_t field = pmcs[static_cast<std::size_t>(pmc_slot)] & d.field_mask;
  const bool usr = field & d.usr_bits, os = field & d.os_bits;
  if (!usr && !os) return std::nullopt;
  CounterEvent e;
  e.exclude_user = !usr;
  e.exclude_kernel = !os;
  if (model == Model::Software) {
    e.type = PERF_TYPE_SOFTWARE;
    e.config = field & evtsel::kEvent;
  } else if (d.isFixed()) {
    e.type = PERF_TYPE_HARDWARE;
    switch (d.fixed_code) {
      case event::kInstructionRetired:
        e.config = PERF_COUNT_HW_INSTRUCTIONS;
        break;
      case event::kUnhaltedCoreCycles:
        e.config = PERF_COUNT_HW_CPU_CYCLES;
        break;
      default:
        e.config = PERF_COUNT_HW_REF_CPU_CYCLES;
        break;
    }
  } else {
    e.type = PERF_TYPE_RAW;
    e.config = field & kRawBits;
  }
  return e;
}

}  // namespace pfmfs::pmu::perf
