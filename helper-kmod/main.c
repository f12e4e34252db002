// SPDX-License-Identifier: GPL-2.0
/*
 * The parameters of pfmfs_helper.ko, its load and unload: the PMU's shape
 * (CPUID leaf 0xA, or the test PMU's with emulate=1), then every part in
 * order, unwound with gotos.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <asm/cpufeature.h>
#include <asm/processor.h>

#include "pfh.h"

bool pfh_emulate;
module_param_named(emulate, pfh_emulate, bool, 0444);
MODULE_PARM_DESC(emulate, "1: an in-kernel model of the architectural PMU stands in for the MSRs (tests, VMs without a PMU)");

unsigned int pfh_emulate_counters = 4;
module_param_named(emulate_counters, pfh_emulate_counters, uint, 0444);
MODULE_PARM_DESC(emulate_counters, "emulate=1: general-purpose counters, 1..8 (default 4)");

unsigned int pfh_emulate_width = 48;
module_param_named(emulate_width, pfh_emulate_width, uint, 0444);
MODULE_PARM_DESC(emulate_width, "emulate=1: counter width in bits, 16..64 (default 48)");

unsigned int pfh_skid;
module_param_named(skid, pfh_skid, uint, 0444);
MODULE_PARM_DESC(skid, "emulate=1: events counted past a wrap before its interrupt is raised (default 0)");

unsigned int pfh_ring_records = 4096;
module_param_named(ring_records, pfh_ring_records, uint, 0444);
MODULE_PARM_DESC(ring_records, "records in each opener's ring, rounded up to a power of two, 16..65536 (default 4096)");

struct pfh_shape pfh_shape __read_mostly;
struct pfh_stats pfh_stats;

static int pfh_check_params(void)
{
	if (pfh_ring_records < 16 || pfh_ring_records > 65536) {
		pr_err("ring_records=%u: must be 16..65536\n", pfh_ring_records);
		return -EINVAL;
	}
	pfh_ring_records = roundup_pow_of_two(pfh_ring_records);
	if (!pfh_emulate)
		return 0;
	if (pfh_emulate_counters < 1 || pfh_emulate_counters > PFH_MAX_GP) {
		pr_err("emulate_counters=%u: must be 1..%u\n",
		       pfh_emulate_counters, PFH_MAX_GP);
		return -EINVAL;
	}
	if (pfh_emulate_width < 16 || pfh_emulate_width > 64) {
		pr_err("emulate_width=%u: must be 16..64\n", pfh_emulate_width);
		return -EINVAL;
	}
	return 0;
}

static u64 pfh_width_mask(u32 width)
{
	return width >= 64 ? ~0ULL : BIT_ULL(width) - 1;
}

/* The PMU's shape from CPUID leaf 0xA (or the test PMU's answer to it). */
static int pfh_shape_init(void)
{
	struct pfh_shape *s = &pfh_shape;
	u32 eax, ebx, ecx, edx, i;
	u64 caps;

	if (pfh_emulate) {
		pfh_emul_cpuid_0xa(&eax, &ebx, &ecx, &edx);
	} else {
		if (boot_cpu_data.x86_vendor != X86_VENDOR_INTEL ||
		    boot_cpu_data.cpuid_level < 0xa) {
			pr_err("no Intel architectural perfmon on this CPU; emulate=1 loads the test PMU\n");
			return -ENODEV;
		}
		cpuid(0xa, &eax, &ebx, &ecx, &edx);
	}
	s->version = eax & 0xff;
	s->nr_gp = min_t(u32, (eax >> 8) & 0xff, PFH_MAX_GP);
	s->gp_width = (eax >> 16) & 0xff;
	if (s->version < 2 || !s->nr_gp || s->gp_width < 16) {
		pr_err("architectural perfmon version %u with %u counters: version 2 or later is needed; emulate=1 loads the test PMU\n",
		       s->version, (eax >> 8) & 0xff);
		return -ENODEV;
	}
	s->nr_fixed = min_t(u32, edx & 0x1f, PFH_MAX_FIXED);
	s->fixed_width = (edx >> 5) & 0xff;
	if (s->nr_fixed && s->fixed_width < 16)
		s->nr_fixed = 0;

	s->gp_mask = pfh_width_mask(s->gp_width);
	s->fixed_mask = pfh_width_mask(s->fixed_width);
	s->counter_bits = BIT_ULL(s->nr_gp) - 1;
	s->fixed_ctrl_valid = 0;
	for (i = 0; i < s->nr_fixed; i++) {
		s->counter_bits |= BIT_ULL(PFH_FIXED_SHIFT + i);
		s->fixed_ctrl_valid |= (u64)(PFH_FIXED_OS | PFH_FIXED_USR |
					     PFH_FIXED_PMI) << (4 * i);
		if (s->version >= 3)
			s->fixed_ctrl_valid |= (u64)PFH_FIXED_ANY << (4 * i);
	}
	/* Bits 63:32 are model-specific or reserved: the images refuse them. */
	s->evtsel_valid = 0xffffffffULL;
	if (s->version < 3)
		s->evtsel_valid &= ~PFH_EVTSEL_ANY;

	if (pfh_emulate)
		s->fw_write = true;
	else
		s->fw_write = boot_cpu_has(X86_FEATURE_PDCM) &&
			      !rdmsrl_safe(PFH_MSR_PERF_CAPS, &caps) &&
			      (caps & PFH_PERF_CAP_FW_WRITE);
	return 0;
}

static int __init pfh_init(void)
{
	int ret;

	ret = pfh_check_params();
	if (ret)
		return ret;
	ret = pfh_shape_init();
	if (ret)
		return ret;
	pfh_msr_init();

	ret = pfh_emul_init();
	if (ret)
		return ret;
	ret = pfh_nmi_init();
	if (ret)
		goto err_emul;
	ret = pfh_sched_init();
	if (ret)
		goto err_nmi;
	ret = pfh_dev_init();
	if (ret)
		goto err_sched;

	pr_info("%s PMU: perfmon v%u, %u counters of %u bits, %u fixed of %u bits%s\n",
		pfh_emulate ? "emulated" : "hardware", pfh_shape.version,
		pfh_shape.nr_gp, pfh_shape.gp_width, pfh_shape.nr_fixed,
		pfh_shape.fixed_width,
		pfh_shape.fw_write ? "" : " (no full-width counter writes)");
	return 0;

err_sched:
	pfh_sched_exit();
err_nmi:
	pfh_nmi_exit();
err_emul:
	pfh_emul_exit();
	return ret;
}

static void __exit pfh_exit(void)
{
	/* No opener is left: the device's module reference saw to that. */
	pfh_dev_exit();
	pfh_sched_exit();
	/* The test PMU's timers go before the handler of the NMIs they send. */
	pfh_emul_exit();
	pfh_nmi_exit();
	pfh_hold_exit();
	/* Targets freed by call_rcu() run code of this module. */
	rcu_barrier();
}

module_init(pfh_init);
module_exit(pfh_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("pfmfs helper: PMU MSRs, per-thread virtual PMUs and overflow interrupts for pfmfsd");
MODULE_AUTHOR("pfmfs developers");
