/*
 * <perfmon/pfmlib_pentium4.h>: libpfm 3.10's model-specific declarations for
 * the NetBurst microarchitecture (Pentium 4, Xeon of that generation:
 * PFMLIB_PENTIUM4_PMU): the layouts of its ESCR and CCCR registers. Names,
 * types and layouts are libpfm 3.10's; the registers are unsigned long wide,
 * as in libpfm 3.10 (the architecture's 64-bit MSRs keep their upper half
 * reserved).
 */
#ifndef PFMFS_PERFMON_PFMLIB_PENTIUM4_H
#define PFMFS_PERFMON_PFMLIB_PENTIUM4_H
#define __PFMLIB_PENTIUM4_H__	/* libpfm 3.10's guard, which programs may test */

#include "pfmlib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EVENT_MASK_BITS 16	/* width of an ESCR's event mask */
#define EVENT_SELECT_BITS 6	/* width of an ESCR's event select */

/*
 * An event selection control register (ESCR: up to 45 of them, each counter
 * able to use some), bit 0 first. Bits 0-3 enable counting in user and
 * kernel mode for each of the two logical processors.
 */
typedef union {
	unsigned long val;					/* the whole register */
	struct {
		unsigned long t1_usr:1;				/* thread 1, user mode */
		unsigned long t1_os:1;				/* thread 1, kernel mode */
		unsigned long t0_usr:1;				/* thread 0, user mode */
		unsigned long t0_os:1;				/* thread 0, kernel mode */
		unsigned long tag_enable:1;			/* tag uops */
		unsigned long tag_value:4;			/* the tag */
		unsigned long event_mask:EVENT_MASK_BITS;	/* bits 9-24 */
		unsigned long event_select:EVENT_SELECT_BITS;	/* bits 25-30 */
		unsigned long reserved:1;			/* bit 31 */
	} bits;
} pentium4_escr_value_t;

/*
 * A counter configuration control register (CCCR: one per counter, 18 of
 * them), bit 0 first.
 */
typedef union {
	unsigned long val;			/* the whole register */
	struct {
		unsigned long reserved1:12;	/* bits 0-11 */
		unsigned long enable:1;		/* counter enabled */
		unsigned long escr_select:3;	/* the ESCR that selects the event */
		unsigned long active_thread:2;	/* with HT: 0 none, 1 single, 2 both, 3 any */
		unsigned long compare:1;	/* filter with the threshold */
		unsigned long complement:1;	/* count at most (not above) the threshold */
		unsigned long threshold:4;	/* the threshold */
		unsigned long edge:1;		/* count rising edges of the comparison */
		unsigned long force_ovf:1;	/* overflow on every increment */
		unsigned long ovf_pmi_t0:1;	/* interrupt thread 0 on overflow */
		unsigned long ovf_pmi_t1:1;	/* interrupt thread 1 on overflow */
		unsigned long reserved2:2;	/* bits 28-29 */
		unsigned long cascade:1;	/* start when the paired counter overflows */
		unsigned long overflow:1;	/* the counter overflowed */
	} bits;
} pentium4_cccr_value_t;

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_PENTIUM4_H */
