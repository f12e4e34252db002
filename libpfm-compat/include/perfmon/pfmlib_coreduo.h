/*
 * <perfmon/pfmlib_coreduo.h>: libpfm 3.10's model-specific declarations for
 * Intel Core Duo and Core Solo (PFMLIB_COREDUO_PMU): the layout of a
 * PERFEVTSELx register and the model-specific input of pfm_dispatch_events().
 * Names, types and layouts are libpfm 3.10's; what pfmfs does with them:
 * docs/libpfm-compat.md, "Event encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_COREDUO_H
#define PFMFS_PERFMON_PFMLIB_COREDUO_H
#define __PFMLIB_COREDUO_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PMU_COREDUO_NUM_COUNTERS 2	/* general-purpose counters */

/* PERFEVTSELx, bit 0 first */
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
} pfm_coreduo_sel_reg_t;

/* per-counter options of an event */
typedef struct {
	unsigned long		cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_COREDUO_SEL_* */
} pfm_coreduo_counter_t;

#define PFM_COREDUO_SEL_INV	0x1	/* invert the threshold test */
#define PFM_COREDUO_SEL_EDGE	0x2	/* count edges */

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfm_coreduo_counter_t	pfp_coreduo_counters[PMU_COREDUO_NUM_COUNTERS];
	uint64_t		reserved[4];	/* unused */
} pfmlib_coreduo_input_param_t;

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_COREDUO_H */
