/*
 * <perfmon/pfmlib_amd64.h>: libpfm 3.10's model-specific declarations for
 * AMD64 processors (PFMLIB_AMD64_PMU: K7, K8, families 10h and 15h): the
 * layouts of the PerfEvtSel and PerfCtr registers and of the IBS (instruction
 * based sampling) registers, and the model-specific input and output of
 * pfm_dispatch_events(). Names, types and layouts are libpfm 3.10's; what
 * pfmfs does with them: docs/libpfm-compat.md, "Event encoding". As in
 * libpfm 3.10 this header does not include <perfmon/pfmlib.h>.
 *
 * Privilege levels on this PMU: PFM_PLM3 is user level, PFM_PLM0 kernel
 * level; PFM_PLM1 and PFM_PLM2 are invalid.
 */
#ifndef PFMFS_PERFMON_PFMLIB_AMD64_H
#define PFMFS_PERFMON_PFMLIB_AMD64_H
#define __PFMLIB_AMD64_H__	/* libpfm 3.10's guard, which programs may test */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMU_AMD64_MAX_COUNTERS	6	/* counters of the largest model */

/* PerfEvtSel0-3 (MSR 0xc0010000-0xc0010003), bit 0 first */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t sel_event_mask:8;	/* event code, bits 7:0 */
		uint64_t sel_unit_mask:8;	/* unit mask */
		uint64_t sel_usr:1;		/* count at user level */
		uint64_t sel_os:1;		/* count at kernel level */
		uint64_t sel_edge:1;		/* count edges */
		uint64_t sel_pc:1;		/* pin control */
		uint64_t sel_int:1;		/* interrupt on overflow */
		uint64_t sel_res1:1;		/* reserved */
		uint64_t sel_en:1;		/* counter enabled */
		uint64_t sel_inv:1;		/* invert the threshold test */
		uint64_t sel_cnt_mask:8;	/* threshold */
		uint64_t sel_event_mask2:4;	/* event code, bits 11:8 (family 10h on) */
		uint64_t sel_res2:4;		/* reserved */
		uint64_t sel_guest:1;		/* count in guests only (family 10h on) */
		uint64_t sel_host:1;		/* count in the host only (family 10h on) */
		uint64_t sel_res3:22;		/* reserved */
	} perfsel;
} pfm_amd64_sel_reg_t;

/* PerfCtr0-3 (MSR 0xc0010004-0xc0010007) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t ctr_count:48;		/* the 48-bit count */
		uint64_t ctr_res1:16;		/* reserved */
	} perfctr;
} pfm_amd64_ctr_reg_t;

/* IbsFetchCtl (MSR 0xc0011030) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t ibsfetchmaxcnt:16;	/* fetch period, in 16s */
		uint64_t ibsfetchcnt:16;	/* fetches counted toward it */
		uint64_t ibsfetchlat:16;	/* latency of the sampled fetch */
		uint64_t ibsfetchen:1;		/* sampling enabled */
		uint64_t ibsfetchval:1;		/* a sample is there */
		uint64_t ibsfetchcomp:1;	/* the fetch completed */
		uint64_t ibsicmiss:1;		/* instruction cache miss */
		uint64_t ibsphyaddrvalid:1;	/* the physical address is valid */
		uint64_t ibsl1tlbpgsz:2;	/* L1 TLB page size */
		uint64_t ibsl1tlbmiss:1;	/* L1 TLB miss */
		uint64_t ibsl2tlbmiss:1;	/* L2 TLB miss */
		uint64_t ibsranden:1;		/* randomize the period */
		uint64_t reserved:6;		/* reserved */
	} reg;
} ibsfetchctl_t;

/* IbsOpCtl (MSR 0xc0011033) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t ibsopmaxcnt:16;	/* op period, in 16s */
		uint64_t reserved1:1;		/* reserved */
		uint64_t ibsopen:1;		/* sampling enabled */
		uint64_t ibsopval:1;		/* a sample is there */
		uint64_t ibsopcntl:1;		/* count dispatched ops, not cycles */
		uint64_t reserved2:44;		/* reserved */
	} reg;
} ibsopctl_t;

/* IbsOpData (MSR 0xc0011035) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t ibscomptoretctr:16;	/* cycles from completion to retirement */
		uint64_t ibstagtoretctr:16;	/* cycles from tagging to retirement */
		uint64_t ibsopbrnresync:1;	/* resync op */
		uint64_t ibsopmispreturn:1;	/* mispredicted return */
		uint64_t ibsopreturn:1;		/* return */
		uint64_t ibsopbrntaken:1;	/* taken branch */
		uint64_t ibsopbrnmisp:1;	/* mispredicted branch */
		uint64_t ibsopbrnret:1;		/* retired branch */
		uint64_t reserved:26;		/* reserved */
	} reg;
} ibsopdata_t;

/* IbsOpData2 (MSR 0xc0011036) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t nbibsreqsrc:3;		/* northbridge data source */
		uint64_t reserved1:1;		/* reserved */
		uint64_t nbibsreqdstproc:1;	/* served by a remote node */
		uint64_t nbibsreqcachehitst:1;	/* cache hit state: 1 owned, 0 modified */
		uint64_t reserved2:58;		/* reserved */
	} reg;
} ibsopdata2_t;

/* IbsOpData3 (MSR 0xc0011037) */
typedef union {
	uint64_t val;				/* the whole register */
	struct {
		uint64_t ibsldop:1;		/* load */
		uint64_t ibsstop:1;		/* store */
		uint64_t ibsdcl1tlbmiss:1;	/* L1 DTLB miss */
		uint64_t ibsdcl2tlbmiss:1;	/* L2 DTLB miss */
		uint64_t ibsdcl1tlbhit2m:1;	/* L1 DTLB hit, 2M page */
		uint64_t ibsdcl1tlbhit1g:1;	/* L1 DTLB hit, 1G page */
		uint64_t ibsdcl2tlbhit2m:1;	/* L2 DTLB hit, 2M page */
		uint64_t ibsdcmiss:1;		/* data cache miss */
		uint64_t ibsdcmissacc:1;	/* misaligned access */
		uint64_t ibsdcldbnkcon:1;	/* load bank conflict */
		uint64_t ibsdcstbnkcon:1;	/* store bank conflict */
		uint64_t ibsdcsttoldfwd:1;	/* store forwarded to a load */
		uint64_t ibsdcsttoldcan:1;	/* store-to-load forwarding cancelled */
		uint64_t ibsdcucmemacc:1;	/* uncacheable access */
		uint64_t ibsdcwcmemacc:1;	/* write-combining access */
		uint64_t ibsdclockedop:1;	/* locked operation */
		uint64_t ibsdcmabhit:1;		/* miss address buffer hit */
		uint64_t ibsdclinaddrvalid:1;	/* the linear address is valid */
		uint64_t ibsdcphyaddrvalid:1;	/* the physical address is valid */
		uint64_t reserved1:13;		/* reserved */
		uint64_t ibsdcmisslat:16;	/* data cache miss latency */
		uint64_t reserved2:16;		/* reserved */
	} reg;
} ibsopdata3_t;

/* per-counter options of an event */
typedef struct {
	uint32_t	cnt_mask;	/* threshold (4-255 reserved) */
	uint32_t	flags;		/* PFM_AMD64_SEL_* */
} pfmlib_amd64_counter_t;

#define PFM_AMD64_SEL_INV	0x1	/* invert the threshold test */
#define PFM_AMD64_SEL_EDGE	0x2	/* count edges */
#define PFM_AMD64_SEL_GUEST	0x4	/* count in guests only */
#define PFM_AMD64_SEL_HOST	0x8	/* count in the host only */

/* one kind of IBS sampling */
typedef struct {
	unsigned int maxcnt;	/* period: 20 bits, the low 4 of them zero */
	unsigned int options;	/* IBS_OPTIONS_* */
} ibs_param_t;

#define IBS_OPTIONS_RANDEN 1	/* fetch sampling: randomize the period */
#define IBS_OPTIONS_UOPS   1	/* op sampling: count dispatched ops */

/* model-specific input of pfm_dispatch_events(): entry i for event i */
typedef struct {
	pfmlib_amd64_counter_t pfp_amd64_counters[PMU_AMD64_MAX_COUNTERS];
	uint32_t	flags;		/* PFMLIB_AMD64_USE_* */
	uint32_t	reserved1;	/* unused */
	ibs_param_t	ibsfetch;	/* IBS fetch sampling */
	ibs_param_t	ibsop;		/* IBS op sampling */
	uint64_t	reserved2;	/* unused */
} pfmlib_amd64_input_param_t;

/* flags: the IBS kinds to set up (either or both) */
#define PFMLIB_AMD64_USE_IBSFETCH	1
#define PFMLIB_AMD64_USE_IBSOP		2

/*
 * model-specific output of pfm_dispatch_events(): where each IBS kind's
 * registers start in pfp_pmds[] (the PMD_IBS* offsets below from there)
 */
typedef struct {
	uint32_t	ibsfetch_base;	/* first IBS fetch PMD */
	uint32_t	ibsop_base;	/* first IBS op PMD */
	uint64_t	reserved[7];	/* unused */
} pfmlib_amd64_output_param_t;

/* the IBS PMDs, from ibsfetch_base */
#define PMD_IBSFETCHCTL		0
#define PMD_IBSFETCHLINAD	1
#define PMD_IBSFETCHPHYSAD	2
/* the IBS PMDs, from ibsop_base */
#define PMD_IBSOPCTL		0
#define PMD_IBSOPRIP		1
#define PMD_IBSOPDATA		2
#define PMD_IBSOPDATA2		3
#define PMD_IBSOPDATA3		4
#define PMD_IBSDCLINAD		5
#define PMD_IBSDCPHYSAD		6

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_AMD64_H */
