/*
 * <perfmon/pfmlib_i386_p6.h>: libpfm 3.10's model-specific declarations for
 * the P6 core (Pentium Pro, II, III and M: PFMLIB_I386_P6_PMU and its
 * relatives): the layouts of the PerfEvtSel and PerfCtr registers and the
 * model-specific input and output of pfm_dispatch_events(). Names, types
 * and layouts are libpfm 3.10's; what pfmfs does with them:
 * docs/libpfm-compat.md, "Event encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_I386_P6_H
#define PFMFS_PERFMON_PFMLIB_I386_P6_H
#define __PFMLIB_I386_P6_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PMU_I386_P6_NUM_COUNTERS	2	/* counters (PerfEvtSel and PerfCtr pairs) */
#define PMU_I386_P6_NUM_PERFSEL		2	/* PerfEvtSel registers */
#define PMU_I386_P6_NUM_PERFCTR		2	/* PerfCtr registers */
#define PMU_I386_P6_COUNTER_WIDTH	32	/* bits a write to a counter sets */

/* PerfEvtSel0-1, bit 0 first */
typedef union {
	unsigned long	val;				/* the whole register */
	struct {
		unsigned long sel_event_mask:8;		/* event code */
		unsigned long sel_unit_mask:8;		/* unit mask */
		unsigned long sel_usr:1;		/* count at user level */
		unsigned long sel_os:1;			/* count at kernel level */
		unsigned long sel_edge:1;		/* count edges */
		unsigned long sel_pc:1;			/* pin control */
		unsigned long sel_int:1;		/* interrupt on overflow */
		unsigned long sel_res1:1;		/* reserved */
		unsigned long sel_en:1;			/* both counters enabled (PerfEvtSel0) */
		unsigned long sel_inv:1;		/* invert the threshold test */
		unsigned long sel_cnt_mask:8;		/* threshold */
	} perfsel;
} pfm_i386_p6_sel_reg_t;

/* PerfCtr0-1 */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		unsigned long ctr_count:32;	/* the 32 bits a write sets */
		unsigned long ctr_res1:32;	/* the rest */
	} perfctr;
} pfm_i386_p6_ctr_reg_t;

/* threshold of an event: at least 0 to 3 occurrences per cycle */
typedef enum {
	PFM_I386_P6_CNT_MASK_0,
	PFM_I386_P6_CNT_MASK_1,
	PFM_I386_P6_CNT_MASK_2,
	PFM_I386_P6_CNT_MASK_3
} pfm_i386_p6_cnt_mask_t;

/* per-counter options of an event */
typedef struct {
	pfm_i386_p6_cnt_mask_t	cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_I386_P6_SEL_* */
} pfmlib_i386_p6_counter_t;

#define PFM_I386_P6_SEL_INV	0x1	/* invert the threshold test */
#define PFM_I386_P6_SEL_EDGE	0x2	/* count edges */

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_i386_p6_counter_t	pfp_i386_p6_counters[PMU_I386_P6_NUM_COUNTERS];
	uint64_t			reserved[4];	/* unused */
} pfmlib_i386_p6_input_param_t;

/* model-specific output of pfm_dispatch_events() */
typedef struct {
	uint64_t	reserved[8];	/* unused */
} pfmlib_i386_p6_output_param_t;

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_I386_P6_H */
