/*
 * <perfmon/pfmlib.h>: the event-encoding half of the libpfm 3.10 API, served
 * by libpfm-compat from the pfmfs mount's pmu/ description (events, registers,
 * counter constraints) instead of tables compiled into the library.
 *
 * The declarations keep libpfm 3.10's names, types, values and signatures so
 * that perfmon2 programs build unchanged; the behaviour of each call on pfmfs
 * is documented next to its definition (libpfm-compat/src/pfmlib/).
 * Valid C99, C11 and C++.
 */
#ifndef PFMFS_PERFMON_PFMLIB_H
#define PFMFS_PERFMON_PFMLIB_H
#define __PFMLIB_H__	/* libpfm 3.10's guard, which programs may test */

/* libpfm 3.10's header made these available to its users; programs rely on it. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>

/*
 * As libpfm 3.10's: <perfmon/perfmon.h> with pfm_self_start() and
 * pfm_self_stop() (unless __PFMLIB_OS_COMPILE is defined), and
 * pfmlib_popcnt().
 */
#include "pfmlib_os.h"
#include "pfmlib_comp.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFMLIB_VERSION		(3 << 16 | 10)		/* major << 16 | minor */
#define PFMLIB_MAJ_VERSION(v)	((v) >> 16)
#define PFMLIB_MIN_VERSION(v)	((v) & 0xffff)

/* Capacity of the library's register masks and parameter vectors. */
#define PFMLIB_MAX_PMCS		512
#define PFMLIB_MAX_PMDS		512

/*
 * Privilege-level mask of an event. On x86, PLM3 is user level and PLM0
 * kernel level; PLM1 and PLM2 select nothing. <perfmon/perfmon.h> may define
 * the same values, hence the guards.
 */
#ifndef PFM_PLM0
#define PFM_PLM0	0x1	/* most privileged level (kernel) */
#endif
#ifndef PFM_PLM1
#define PFM_PLM1	0x2	/* privilege level 1 */
#endif
#ifndef PFM_PLM2
#define PFM_PLM2	0x4	/* privilege level 2 */
#endif
#ifndef PFM_PLM3
#define PFM_PLM3	0x8	/* least privileged level (user) */
#endif

/* One word of a register mask. */
typedef unsigned long pfmlib_regmask_bits_t;

#if PFMLIB_MAX_PMCS > PFMLIB_MAX_PMDS
#define PFMLIB_REG_MAX	PFMLIB_MAX_PMCS
#else
#define PFMLIB_REG_MAX	PFMLIB_MAX_PMDS
#endif

#define __PFMLIB_REG_BV_BITS	(sizeof(pfmlib_regmask_bits_t) << 3)	/* bits per word */
#define PFMLIB_BVSIZE(x)	(((x) + (__PFMLIB_REG_BV_BITS) - 1) / __PFMLIB_REG_BV_BITS)
#define PFMLIB_REG_BV		PFMLIB_BVSIZE(PFMLIB_REG_MAX)		/* words per mask */

/* A set of PMC or PMD indices, bit i of the whole array = register i. */
typedef struct {
	pfmlib_regmask_bits_t bits[PFMLIB_REG_BV];	/* register i is bit i % word bits of word i / word bits */
} pfmlib_regmask_t;

#define PFMLIB_MAX_MASKS_PER_EVENT	48	/* room for unit masks in pfmlib_event_t */

/* One event to place on a counter, as pfm_dispatch_events() takes it. */
typedef struct {
	unsigned int	event;		/* event index, from pfm_find_event() and friends */
	unsigned int	plm;		/* PFM_PLM* mask; 0 = the pfp_dfl_plm of the input */
	unsigned long	flags;		/* per-event flags (none used on pfmfs) */
	unsigned int	unit_masks[PFMLIB_MAX_MASKS_PER_EVENT];	/* unit-mask indices */
	unsigned int	num_masks;	/* used entries of unit_masks (pfmfs events have none) */
	unsigned long	reserved[2];	/* unused */
} pfmlib_event_t;

/* One register of the encoding pfm_dispatch_events() produces. */
typedef struct {
	unsigned long long	reg_value;	/* value to write (PMCs); 0 for PMDs */
	unsigned long long	reg_addr;	/* hardware address from pmu/desc (an MSR on x86) */
	unsigned int		reg_num;	/* perfmon2 register index: pmcN / pmdN */
	unsigned int		reg_reserved1;	/* unused */
	unsigned long		reg_alt_addr;	/* alternate address (unused on pfmfs) */
} pfmlib_reg_t;

/* What to encode: the events, in the order their counters are wanted. */
typedef struct {
	unsigned int	 pfp_event_count;	/* used entries of pfp_events */
	unsigned int	 pfp_dfl_plm;		/* privilege levels of an event whose plm is 0 */
	unsigned int	 pfp_flags;		/* PFMLIB_PFP_* flags for every event */
	unsigned int	 reserved1;		/* unused */
	pfmlib_event_t	 pfp_events[PFMLIB_MAX_PMCS];	/* the events */
	pfmlib_regmask_t pfp_unavail_pmcs;	/* PMCs the encoding must not use */
	unsigned long	 reserved[6];		/* unused */
} pfmlib_input_param_t;

#define PFMLIB_PFP_SYSTEMWIDE	0x1	/* the registers are for a system-wide session */

/* The encoding: PMCs to write and the PMD that counts each event. */
typedef struct {
	unsigned int	 pfp_pmc_count;			/* used entries of pfp_pmcs */
	unsigned int	 pfp_pmd_count;			/* used entries of pfp_pmds */
	pfmlib_reg_t	 pfp_pmcs[PFMLIB_MAX_PMCS];	/* PMC index and value to write */
	pfmlib_reg_t	 pfp_pmds[PFMLIB_MAX_PMDS];	/* entry i: the counter of event i */
	unsigned long	 reserved[7];			/* unused */
} pfmlib_output_param_t;

/* Library options for pfm_set_options(). */
typedef struct {
	unsigned int	pfm_debug:1;	/* trace what the library reads and decides, on stderr */
	unsigned int	pfm_verbose:1;	/* say on stderr why an encoding failed */
	unsigned int	pfm_reserved:30;	/* unused */
} pfmlib_options_t;

/* Every call returns PFMLIB_SUCCESS or a PFMLIB_ERR_* code; plain int works too. */
typedef int pfm_err_t;

extern pfm_err_t pfm_set_options(pfmlib_options_t *opt);
extern pfm_err_t pfm_initialize(void);

extern pfm_err_t pfm_list_supported_pmus(int (*pf)(const char *fmt, ...));
extern pfm_err_t pfm_get_pmu_name(char *name, int maxlen);
extern pfm_err_t pfm_get_pmu_type(int *type);
extern pfm_err_t pfm_get_pmu_name_bytype(int type, char *name, size_t maxlen);
extern pfm_err_t pfm_is_pmu_supported(int type);
extern pfm_err_t pfm_force_pmu(int type);

extern pfm_err_t pfm_find_event(const char *str, unsigned int *idx);
extern pfm_err_t pfm_find_event_byname(const char *name, unsigned int *idx);
extern pfm_err_t pfm_find_event_bycode(int code, unsigned int *idx);
extern pfm_err_t pfm_find_event_bycode_next(int code, unsigned int start, unsigned int *next);
extern pfm_err_t pfm_find_event_mask(unsigned int event_idx, const char *str, unsigned int *mask_idx);
extern pfm_err_t pfm_find_full_event(const char *str, pfmlib_event_t *e);

extern pfm_err_t pfm_get_max_event_name_len(size_t *len);

extern pfm_err_t pfm_get_num_events(unsigned int *count);
extern pfm_err_t pfm_get_num_event_masks(unsigned int event_idx, unsigned int *count);
extern pfm_err_t pfm_get_event_name(unsigned int idx, char *name, size_t maxlen);
extern pfm_err_t pfm_get_full_event_name(pfmlib_event_t *e, char *name, size_t maxlen);
extern pfm_err_t pfm_get_event_code(unsigned int idx, int *code);
extern pfm_err_t pfm_get_event_mask_code(unsigned int idx, unsigned int mask_idx, unsigned int *code);
extern pfm_err_t pfm_get_event_counters(unsigned int idx, pfmlib_regmask_t *counters);
extern pfm_err_t pfm_get_event_description(unsigned int idx, char **str);
extern pfm_err_t pfm_get_event_code_counter(unsigned int idx, unsigned int cnt, int *code);
extern pfm_err_t pfm_get_event_mask_name(unsigned int event_idx, unsigned int mask_idx, char *name,
					 size_t maxlen);
extern pfm_err_t pfm_get_event_mask_description(unsigned int event_idx, unsigned int mask_idx, char **desc);

extern pfm_err_t pfm_dispatch_events(pfmlib_input_param_t *p, void *model_in, pfmlib_output_param_t *q,
				     void *model_out);

extern pfm_err_t pfm_get_impl_pmcs(pfmlib_regmask_t *impl_pmcs);
extern pfm_err_t pfm_get_impl_pmds(pfmlib_regmask_t *impl_pmds);
extern pfm_err_t pfm_get_impl_counters(pfmlib_regmask_t *impl_counters);
extern pfm_err_t pfm_get_num_pmds(unsigned int *num);
extern pfm_err_t pfm_get_num_pmcs(unsigned int *num);
extern pfm_err_t pfm_get_num_counters(unsigned int *num);

extern pfm_err_t pfm_get_hw_counter_width(unsigned int *width);
extern pfm_err_t pfm_get_version(unsigned int *version);
extern char *pfm_strerror(int code);
extern pfm_err_t pfm_get_cycle_event(pfmlib_event_t *e);
extern pfm_err_t pfm_get_inst_retired_event(pfmlib_event_t *e);

/*
 * PMU families, the values of pfm_get_pmu_type(). pfmfs reports
 * PFMLIB_GEN_IA32_PMU for an x86 model (intel-arch-*, perf-x86) and
 * PFMLIB_UNKNOWN_PMU for any other (perf-sw); the rest are listed so that
 * programs comparing against them still build.
 */
#define PFMLIB_NO_PMU			-1	/* no PMU */
#define PFMLIB_UNKNOWN_PMU		0	/* family not known */
#define PFMLIB_GEN_IA64_PMU		1	/* IA-64 architected PMU */
#define PFMLIB_ITANIUM_PMU		2	/* Itanium */
#define PFMLIB_ITANIUM2_PMU		3	/* Itanium 2 */
#define PFMLIB_MONTECITO_PMU		4	/* dual-core Itanium 2 */
#define PFMLIB_AMD64_PMU		16	/* AMD64 */
#define PFMLIB_GEN_IA32_PMU		63	/* Intel architectural perfmon */
#define PFMLIB_I386_P6_PMU		32	/* P6 core (Pentium III) */
#define PFMLIB_PENTIUM4_PMU		33	/* NetBurst (Pentium 4, Xeon) */
#define PFMLIB_COREDUO_PMU		34	/* Core Duo, Core Solo */
#define PFMLIB_I386_PM_PMU		35	/* Pentium M */
#define PFMLIB_CORE_PMU			36	/* old name of PFMLIB_INTEL_CORE_PMU */
#define PFMLIB_INTEL_CORE_PMU		36	/* Core microarchitecture */
#define PFMLIB_INTEL_PPRO_PMU		37	/* Pentium Pro */
#define PFMLIB_INTEL_PII_PMU		38	/* Pentium II */
#define PFMLIB_INTEL_ATOM_PMU		39	/* Atom */
#define PFMLIB_INTEL_NHM_PMU		40	/* Nehalem */
#define PFMLIB_INTEL_WSM_PMU		41	/* Westmere */
#define PFMLIB_MIPS_20KC_PMU		64	/* MIPS 20KC */
#define PFMLIB_MIPS_24K_PMU		65	/* MIPS 24K */
#define PFMLIB_MIPS_25KF_PMU		66	/* MIPS 25KF */
#define PFMLIB_MIPS_34K_PMU		67	/* MIPS 34K */
#define PFMLIB_MIPS_5KC_PMU		68	/* MIPS 5KC */
#define PFMLIB_MIPS_74K_PMU		69	/* MIPS 74K */
#define PFMLIB_MIPS_R10000_PMU		70	/* MIPS R10000 */
#define PFMLIB_MIPS_R12000_PMU		71	/* MIPS R12000 */
#define PFMLIB_MIPS_RM7000_PMU		72	/* MIPS RM7000 */
#define PFMLIB_MIPS_RM9000_PMU		73	/* MIPS RM9000 */
#define PFMLIB_MIPS_SB1_PMU		74	/* MIPS SB1 */
#define PFMLIB_MIPS_VR5432_PMU		75	/* MIPS VR5432 */
#define PFMLIB_MIPS_VR5500_PMU		76	/* MIPS VR5500 */
#define PFMLIB_MIPS_ICE9A_PMU		77	/* SiCortex ICE9A */
#define PFMLIB_MIPS_ICE9B_PMU		78	/* SiCortex ICE9B */
#define PFMLIB_POWERPC_PMU		90	/* POWER family */
#define PFMLIB_CRAYX2_PMU		96	/* Cray X2 */
#define PFMLIB_CELL_PMU			100	/* Cell */
#define PFMLIB_PPC970_PMU		110	/* PowerPC 970, 970FX, 970GX */
#define PFMLIB_PPC970MP_PMU		111	/* PowerPC 970MP */
#define PFMLIB_POWER3_PMU		112	/* POWER3 */
#define PFMLIB_POWER4_PMU		113	/* POWER4 */
#define PFMLIB_POWER5_PMU		114	/* POWER5 */
#define PFMLIB_POWER5p_PMU		115	/* POWER5+ */
#define PFMLIB_POWER6_PMU		116	/* POWER6 */
#define PFMLIB_POWER7_PMU		117	/* POWER7 */
#define PFMLIB_SPARC_ULTRA12_PMU	130	/* UltraSPARC I and II */
#define PFMLIB_SPARC_ULTRA3_PMU		131	/* UltraSPARC III */
#define PFMLIB_SPARC_ULTRA3I_PMU	132	/* UltraSPARC IIIi */
#define PFMLIB_SPARC_ULTRA3PLUS_PMU	133	/* UltraSPARC III+ and IV */
#define PFMLIB_SPARC_ULTRA4PLUS_PMU	134	/* UltraSPARC IV+ */
#define PFMLIB_SPARC_NIAGARA1_PMU	135	/* Niagara 1 */
#define PFMLIB_SPARC_NIAGARA2_PMU	136	/* Niagara 2 */

/* Return codes: 0 or negative; pfm_strerror() has a message for each. */
#define PFMLIB_SUCCESS		  0	/* done */
#define PFMLIB_ERR_NOTSUPP	 -1	/* not available here (no mount, no such event kind) */
#define PFMLIB_ERR_INVAL	 -2	/* a bad argument */
#define PFMLIB_ERR_NOINIT	 -3	/* pfm_initialize() has not succeeded */
#define PFMLIB_ERR_NOTFOUND	 -4	/* no such event */
#define PFMLIB_ERR_NOASSIGN	 -5	/* the events do not fit the usable counters */
#define PFMLIB_ERR_FULL		 -6	/* the caller's buffer is too small */
#define PFMLIB_ERR_EVTMANY	 -7	/* an event given more than once */
#define PFMLIB_ERR_MAGIC	 -8	/* bad model-specific magic number */
#define PFMLIB_ERR_FEATCOMB	 -9	/* model-specific features that do not combine */
#define PFMLIB_ERR_EVTSET	-10	/* event sets that do not go together */
#define PFMLIB_ERR_EVTINCOMP	-11	/* events that do not go together */
#define PFMLIB_ERR_TOOMANY	-12	/* more events (or unit masks) than counters */
#define PFMLIB_ERR_IRRTOOBIG	-13	/* code range too large */
#define PFMLIB_ERR_IRREMPTY	-14	/* code range empty */
#define PFMLIB_ERR_IRRINVAL	-15	/* code range invalid */
#define PFMLIB_ERR_IRRTOOMANY	-16	/* too many code ranges */
#define PFMLIB_ERR_DRRINVAL	-17	/* data range invalid */
#define PFMLIB_ERR_DRRTOOMANY	-18	/* too many data ranges */
#define PFMLIB_ERR_BADHOST	-19	/* the host CPU lacks it */
#define PFMLIB_ERR_IRRALIGN	-20	/* code range misaligned */
#define PFMLIB_ERR_IRRFLAGS	-21	/* code range lacks flags */
#define PFMLIB_ERR_UMASK	-22	/* unit mask unknown or missing */
#define PFMLIB_ERR_NOMEM	-23	/* out of memory */

/* Word and bit of register b in a pfmlib_regmask_t. */
#define __PFMLIB_REGMASK_EL(b)		((b) / __PFMLIB_REG_BV_BITS)
#define __PFMLIB_REGMASK_MASK(b)	(1UL << ((b) % __PFMLIB_REG_BV_BITS))

/* A bit count as unsigned, cast in each language's own way so that strict
 * warnings (-Wsign-conversion, -Wold-style-cast) stay quiet in programs. */
#ifdef __cplusplus
#define __PFMLIB_POPCOUNT(w)	static_cast<unsigned int>(__builtin_popcountl(w))
#else
#define __PFMLIB_POPCOUNT(w)	((unsigned int)__builtin_popcountl(w))
#endif

/* 1 when register b is in the mask, else 0 (also for b out of range). */
static inline int
pfm_regmask_isset(pfmlib_regmask_t *h, unsigned int b)
{
	if (b >= PFMLIB_REG_MAX)
		return 0;
	return (h->bits[__PFMLIB_REGMASK_EL(b)] & __PFMLIB_REGMASK_MASK(b)) != 0;
}

static inline int
pfm_regmask_set(pfmlib_regmask_t *h, unsigned int b)
{
	if (b >= PFMLIB_REG_MAX)
		return PFMLIB_ERR_INVAL;
	h->bits[__PFMLIB_REGMASK_EL(b)] |= __PFMLIB_REGMASK_MASK(b);
	return PFMLIB_SUCCESS;
}

static inline int
pfm_regmask_clr(pfmlib_regmask_t *h, unsigned int b)
{
	if (h == NULL || b >= PFMLIB_REG_MAX)
		return PFMLIB_ERR_INVAL;
	h->bits[__PFMLIB_REGMASK_EL(b)] &= ~__PFMLIB_REGMASK_MASK(b);
	return PFMLIB_SUCCESS;
}

/* *w = number of registers in the mask. */
static inline int
pfm_regmask_weight(pfmlib_regmask_t *h, unsigned int *w)
{
	unsigned int i, n = 0;

	if (h == NULL || w == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		n += __PFMLIB_POPCOUNT(h->bits[i]);
	*w = n;
	return PFMLIB_SUCCESS;
}

/* 1 when both masks hold the same registers, else 0. */
static inline int
pfm_regmask_eq(pfmlib_regmask_t *h1, pfmlib_regmask_t *h2)
{
	unsigned int i;

	if (h1 == NULL || h2 == NULL)
		return 0;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		if (h1->bits[i] != h2->bits[i])
			return 0;
	return 1;
}

static inline int
pfm_regmask_and(pfmlib_regmask_t *dst, pfmlib_regmask_t *h1, pfmlib_regmask_t *h2)
{
	unsigned int i;

	if (dst == NULL || h1 == NULL || h2 == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		dst->bits[i] = h1->bits[i] & h2->bits[i];
	return PFMLIB_SUCCESS;
}

/* dst = h1 without the registers of h2. */
static inline int
pfm_regmask_andnot(pfmlib_regmask_t *dst, pfmlib_regmask_t *h1, pfmlib_regmask_t *h2)
{
	unsigned int i;

	if (dst == NULL || h1 == NULL || h2 == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		dst->bits[i] = h1->bits[i] & ~h2->bits[i];
	return PFMLIB_SUCCESS;
}

static inline int
pfm_regmask_or(pfmlib_regmask_t *dst, pfmlib_regmask_t *h1, pfmlib_regmask_t *h2)
{
	unsigned int i;

	if (dst == NULL || h1 == NULL || h2 == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		dst->bits[i] = h1->bits[i] | h2->bits[i];
	return PFMLIB_SUCCESS;
}

static inline int
pfm_regmask_copy(pfmlib_regmask_t *dst, pfmlib_regmask_t *src)
{
	unsigned int i;

	if (dst == NULL || src == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		dst->bits[i] = src->bits[i];
	return PFMLIB_SUCCESS;
}

/* Complement in place: every register not in the mask, up to PFMLIB_REG_MAX. */
static inline int
pfm_regmask_not(pfmlib_regmask_t *dst)
{
	unsigned int i;

	if (dst == NULL)
		return PFMLIB_ERR_INVAL;
	for (i = 0; i < PFMLIB_REG_BV; i++)
		dst->bits[i] = ~dst->bits[i];
	return PFMLIB_SUCCESS;
}

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PFMLIB_H */
