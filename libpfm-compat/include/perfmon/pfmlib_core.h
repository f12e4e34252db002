/*
 * <perfmon/pfmlib_core.h>: libpfm 3.10's model-specific declarations for the
 * Intel Core microarchitecture (PFMLIB_INTEL_CORE_PMU): the layout of an
 * IA32_PERFEVTSELx register, the model-specific input of
 * pfm_dispatch_events() and pfm_core_is_pebs(). Names, types and layouts are
 * libpfm 3.10's; what pfmfs does with them: docs/libpfm-compat.md, "Event
 * encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_CORE_H
#define PFMFS_PERFMON_PFMLIB_CORE_H
#define __PFMLIB_CORE_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PMU_CORE_NUM_FIXED_COUNTERS 3	/* fixed-function counters */
#define PMU_CORE_NUM_GEN_COUNTERS 2	/* general-purpose counters */
#define PMU_CORE_NUM_COUNTERS 5		/* both kinds */

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
		unsigned long sel_res1:1;		/* reserved */
		unsigned long sel_en:1;			/* counter enabled */
		unsigned long sel_inv:1;		/* invert the threshold test */
		unsigned long sel_cnt_mask:8;		/* threshold */
		unsigned long sel_res2:32;		/* reserved */
	} perfevtsel;
} pfm_core_sel_reg_t;

/* per-counter options of an event */
typedef struct {
	unsigned long		cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_CORE_SEL_* */
} pfmlib_core_counter_t;

#define PFM_CORE_SEL_INV	0x1	/* invert the threshold test */
#define PFM_CORE_SEL_EDGE	0x2	/* count edges */

/* precise event-based sampling */
typedef struct {
	unsigned int pebs_used;	/* 1: the events use PEBS */
} pfmlib_core_pebs_t;

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_core_counter_t	pfp_core_counters[PMU_CORE_NUM_COUNTERS];
	pfmlib_core_pebs_t	pfp_core_pebs;
	uint64_t		reserved[4];	/* unused */
} pfmlib_core_input_param_t;

/* model-specific output of pfm_dispatch_events() */
typedef struct {
	uint64_t	reserved[8];	/* unused */
} pfmlib_core_output_param_t;

/*
 * 1 when the event (with its unit masks) can be measured with PEBS, else 0
 * (also for a bad argument). libpfm 3.10 declared it outside extern "C",
 * which left a C++ program that called it with an undefined reference; here
 * it has C linkage, as the library's definition.
 */
extern int pfm_core_is_pebs(pfmlib_event_t *e);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_CORE_H */
