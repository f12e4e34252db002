/*
 * <perfmon/pfmlib_intel_atom.h>: libpfm 3.10's model-specific declarations
 * for Intel Atom (PFMLIB_INTEL_ATOM_PMU): the layout of an IA32_PERFEVTSELx
 * register, the model-specific input of pfm_dispatch_events() and
 * pfm_intel_atom_has_pebs(). Names, types and layouts are libpfm 3.10's;
 * what pfmfs does with them: docs/libpfm-compat.md, "Event encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_INTEL_ATOM_H
#define PFMFS_PERFMON_PFMLIB_INTEL_ATOM_H
#define __PFMLIB_INTEL_ATOM_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PMU_INTEL_ATOM_NUM_COUNTERS	5	/* 2 general-purpose, 3 fixed-function */

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
		unsigned long sel_any:1;		/* both threads of the core */
		unsigned long sel_en:1;			/* counter enabled */
		unsigned long sel_inv:1;		/* invert the threshold test */
		unsigned long sel_cnt_mask:8;		/* threshold */
		unsigned long sel_res2:32;		/* reserved */
	} perfevtsel;
} pfm_intel_atom_sel_reg_t;

/* per-counter options of an event */
typedef struct {
	unsigned long		cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_INTEL_ATOM_SEL_* */
} pfmlib_intel_atom_counter_t;

#define PFM_INTEL_ATOM_SEL_INV		0x1	/* invert the threshold test */
#define PFM_INTEL_ATOM_SEL_EDGE		0x2	/* count edges */
#define PFM_INTEL_ATOM_SEL_ANYTHR	0x4	/* both threads of the core */

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_intel_atom_counter_t	pfp_intel_atom_counters[PMU_INTEL_ATOM_NUM_COUNTERS];
	unsigned int			pfp_intel_atom_pebs_used;	/* 1: the events use PEBS */
	uint64_t			reserved[4];			/* unused */
} pfmlib_intel_atom_input_param_t;

/*
 * 1 when the event (with its unit masks) can be measured with PEBS, else 0
 * (also for a bad argument). libpfm 3.10 declared it outside extern "C",
 * which left a C++ program that called it with an undefined reference; here
 * it has C linkage, as the library's definition.
 */
extern int pfm_intel_atom_has_pebs(pfmlib_event_t *e);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_INTEL_ATOM_H */
