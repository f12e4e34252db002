/*
 * <perfmon/pfmlib_gen_ia32.h>: libpfm 3.10's model-specific declarations for
 * Intel's architectural PMU (PFMLIB_GEN_IA32_PMU): the layout of an
 * IA32_PERFEVTSELx register and the model-specific input of
 * pfm_dispatch_events(). Names, types and layouts are libpfm 3.10's; what
 * pfmfs does with them: docs/libpfm-compat.md, "Event encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_GEN_IA32_H
#define PFMFS_PERFMON_PFMLIB_GEN_IA32_H
#define __PFMLIB_GEN_IA32_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* room for counters in the input below; the PMU says how many it has */
#define PMU_GEN_IA32_MAX_COUNTERS PFMLIB_MAX_PMCS

/*
 * Bits a write to a counter sets freely: the architecture takes the low 32
 * bits of a write (whatever width CPUID leaf 0xa reports).
 */
#define PMU_GEN_IA32_COUNTER_WIDTH       32

/* IA32_PERFEVTSELx, bit 0 first */
typedef union {
	unsigned long long val;				/* the whole register */
	struct {
		unsigned long sel_event_select:8;	/* event code */
		unsigned long sel_unit_mask:8;		/* unit mask */
		unsigned long sel_usr:1;		/* count at user level */
		unsigned long sel_os:1;			/* count at kernel level */
		unsigned long sel_edge:1;		/* count edges */
		unsigned long sel_pc:1;			/* pin control */
		unsigned long sel_int:1;		/* interrupt on overflow */
		unsigned long sel_any:1;		/* both threads of the core (v3 and up) */
		unsigned long sel_en:1;			/* counter enabled */
		unsigned long sel_inv:1;		/* invert the threshold test */
		unsigned long sel_cnt_mask:8;		/* threshold */
		unsigned long sel_res2:32;		/* reserved */
	} perfevtsel;
} pfm_gen_ia32_sel_reg_t;

/* per-counter options of an event */
typedef struct {
	unsigned long		cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_GEN_IA32_SEL_* */
} pfmlib_gen_ia32_counter_t;

#define PFM_GEN_IA32_SEL_INV	0x1	/* invert the threshold test */
#define PFM_GEN_IA32_SEL_EDGE	0x2	/* count edges */
#define PFM_GEN_IA32_SEL_ANYTHR 0x4	/* both threads of the core (v3 and up) */

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_gen_ia32_counter_t	pfp_gen_ia32_counters[PMU_GEN_IA32_MAX_COUNTERS];
	uint64_t			reserved[4];	/* unused */
} pfmlib_gen_ia32_input_param_t;

/* model-specific output of pfm_dispatch_events() */
typedef struct {
	uint64_t	reserved[8];	/* unused */
} pfmlib_gen_ia32_output_param_t;

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_GEN_IA32_H */
