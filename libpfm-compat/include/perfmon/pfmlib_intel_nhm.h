/*
 * <perfmon/pfmlib_intel_nhm.h>: libpfm 3.10's model-specific declarations
 * for Intel Nehalem and Westmere (PFMLIB_INTEL_NHM_PMU, PFMLIB_INTEL_WSM_PMU):
 * the layouts of the core and uncore event-select registers and of
 * MSR_LBR_SELECT, the model-specific input of pfm_dispatch_events() (PEBS,
 * load latency, LBR filtering) and three model-specific calls. Names, types
 * and layouts are libpfm 3.10's; what pfmfs does with them:
 * docs/libpfm-compat.md, "Event encoding".
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 select nothing.
 */
#ifndef PFMFS_PERFMON_PFMLIB_INTEL_NHM_H
#define PFMFS_PERFMON_PFMLIB_INTEL_NHM_H
#define __PFMLIB_NHM_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Counters of the model: 4 general-purpose and 3 fixed-function ones in
 * each core, 8 general-purpose and 1 fixed-function one in the uncore.
 */
#define PMU_NHM_NUM_COUNTERS 16

/* an event-select register, bit 0 first */
typedef union {
	unsigned long long val;			/* the whole register */
	struct {				/* core: IA32_PERFEVTSELx */
		unsigned long sel_event:8;	/* event code */
		unsigned long sel_umask:8;	/* unit mask */
		unsigned long sel_usr:1;	/* count at user level */
		unsigned long sel_os:1;		/* count at kernel level */
		unsigned long sel_edge:1;	/* count edges */
		unsigned long sel_pc:1;		/* pin control */
		unsigned long sel_int:1;	/* interrupt on overflow */
		unsigned long sel_anythr:1;	/* both threads of the core */
		unsigned long sel_en:1;		/* counter enabled */
		unsigned long sel_inv:1;	/* invert the threshold test */
		unsigned long sel_cnt_mask:8;	/* threshold */
		unsigned long sel_res2:32;	/* reserved */
	} perfevtsel;
	struct {				/* uncore: MSR_UNCORE_PERFEVTSELx */
		unsigned long usel_event:8;	/* event code */
		unsigned long usel_umask:8;	/* unit mask */
		unsigned long usel_res1:1;	/* reserved */
		unsigned long usel_occ:1;	/* reset the occupancy counter */
		unsigned long usel_edge:1;	/* count edges */
		unsigned long usel_res2:1;	/* reserved */
		unsigned long usel_int:1;	/* interrupt on overflow */
		unsigned long usel_res3:1;	/* reserved */
		unsigned long usel_en:1;	/* counter enabled */
		unsigned long usel_inv:1;	/* invert the threshold test */
		unsigned long usel_cnt_mask:8;	/* threshold */
		unsigned long usel_res4:32;	/* reserved */
	} unc_perfevtsel;
	struct {				/* MSR_LBR_SELECT: 1 leaves out */
		unsigned long cpl_eq0:1;	/* branches at ring 0 */
		unsigned long cpl_neq0:1;	/* branches at rings 1 to 3 */
		unsigned long jcc:1;		/* conditional branches */
		unsigned long near_rel_call:1;	/* near relative calls */
		unsigned long near_ind_call:1;	/* near indirect calls */
		unsigned long near_ret:1;	/* near returns */
		unsigned long near_ind_jmp:1;	/* near indirect jumps and calls */
		unsigned long near_rel_jmp:1;	/* near relative jumps */
		unsigned long far_branch:1;	/* far branches */
		unsigned long reserved1:23;	/* reserved */
		unsigned long reserved2:32;	/* reserved */
	} lbr_select;
} pfm_nhm_sel_reg_t;

/* per-counter options of an event */
typedef struct {
	unsigned long		cnt_mask;	/* threshold */
	unsigned int		flags;		/* PFM_NHM_SEL_* */
} pfmlib_nhm_counter_t;

#define PFM_NHM_SEL_INV		0x1	/* invert the threshold test */
#define PFM_NHM_SEL_EDGE	0x2	/* count edges */
#define PFM_NHM_SEL_ANYTHR	0x4	/* both threads of the core (core counters) */
#define PFM_NHM_SEL_OCC_RST	0x8	/* reset the occupancy counter (uncore counters) */

/* last branch record */
typedef struct {
	unsigned int lbr_used;		/* 1: record branches */
	unsigned int lbr_plm;		/* PFM_PLM0 or PFM_PLM3 */
	unsigned int lbr_filter;	/* PFM_NHM_LBR_*: branches to leave out */
} pfmlib_nhm_lbr_t;

/* lbr_filter bits (Intel SDM vol. 3B, 18.6.2) */
#define PFM_NHM_LBR_JCC			0x4	/* conditional branches */
#define PFM_NHM_LBR_NEAR_REL_CALL	0x8	/* near relative calls */
#define PFM_NHM_LBR_NEAR_IND_CALL	0x10	/* near indirect calls */
#define PFM_NHM_LBR_NEAR_RET		0x20	/* near returns */
#define PFM_NHM_LBR_NEAR_IND_JMP	0x40	/* near indirect jumps */
#define PFM_NHM_LBR_NEAR_REL_JMP	0x80	/* near relative jumps */
#define PFM_NHM_LBR_FAR_BRANCH		0x100	/* far branches */
#define PFM_NHM_LBR_ALL			0x1fc	/* every one of the above */

/* precise event-based sampling */
typedef struct {
	unsigned int pebs_used;		/* 1: the events use PEBS */
	unsigned int ld_lat_thres;	/* load latency threshold, in cycles */
} pfmlib_nhm_pebs_t;

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_nhm_counter_t	pfp_nhm_counters[PMU_NHM_NUM_COUNTERS];
	pfmlib_nhm_pebs_t	pfp_nhm_pebs;	/* PEBS */
	pfmlib_nhm_lbr_t	pfp_nhm_lbr;	/* LBR */
	uint64_t		reserved[4];	/* unused */
} pfmlib_nhm_input_param_t;

/* (the model has no model-specific output) */

/*
 * The model's own calls. The first two return 1 or 0, the last
 * PFMLIB_SUCCESS; each returns a PFMLIB_ERR_* code for a bad argument.
 * - pfm_nhm_is_pebs: whether the event (with its unit masks) can use PEBS.
 * - pfm_nhm_is_uncore: whether the event counts in the uncore.
 * - pfm_nhm_data_src_desc: *desc = a description, allocated with malloc(),
 *   of the data source code val (0-15) of a load-latency PEBS record.
 */
extern int pfm_nhm_is_pebs(pfmlib_event_t *e);
extern int pfm_nhm_is_uncore(pfmlib_event_t *e);
extern int pfm_nhm_data_src_desc(unsigned int val, char **desc);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_INTEL_NHM_H */
