/*
 * <perfmon/perfmon.h>: the perfmon2/perfmon3 user interface of libpfm 3.10,
 * served by pfmfs (libpfm.so.3 talks to a pfmfs mount instead of the kernel).
 * Names, layouts and constants are libpfm 3.10's on x86-64, so programs written
 * for it build unchanged; each structure's size is checked at compile time.
 * The perfmon2 calls and structures are in <perfmon/perfmon_v2.h>, included
 * below; event encoding is in <perfmon/pfmlib.h>.
 */
#ifndef PFMFS_PERFMON_PERFMON_H
#define PFMFS_PERFMON_PERFMON_H
#define __PERFMON_H__	/* libpfm 3.10's guard, which programs may test */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * PFM_ARCH_MAX_PMCS/PMDS. pfmfs serves the x86-64 interface on every
 * architecture it builds on; 32-bit x86 declares the same limits.
 */
#if defined(__i386__)
#include "perfmon_i386.h"
#else
#include "perfmon_x86_64.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Compile-time size checks that read the same in C11 and C++11 onwards. In
 * C99 (no _Static_assert) a negative array size makes the same check.
 */
#if defined(__cplusplus)
#define PFM_STATIC_ASSERT_SIZE(type, size) \
	static_assert(sizeof(type) == (size), "size of " #type " differs from libpfm 3.10")
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define PFM_STATIC_ASSERT_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), "size of " #type " differs from libpfm 3.10")
#else
#define PFM_STATIC_ASSERT_CAT2(a, b) a##b
#define PFM_STATIC_ASSERT_CAT(a, b) PFM_STATIC_ASSERT_CAT2(a, b)
#define PFM_STATIC_ASSERT_SIZE(type, size) \
	typedef char PFM_STATIC_ASSERT_CAT(pfm_size_check_, __LINE__)[sizeof(type) == (size) ? 1 : -1]
#endif

/*
 * Register counts as perfmon3 on x86-64 declares them (256 architected plus
 * 64 virtual registers, 320): every bitvector below is 5 u64 words whatever
 * the PMU behind the mount has.
 */
#define PFM_MAX_PMCS	PFM_ARCH_MAX_PMCS
#define PFM_MAX_PMDS	PFM_ARCH_MAX_PMDS

#define PFM_BPL		(sizeof(uint64_t) << 3)			/* bits per bitvector word */
#define PFM_BVSIZE(x)	(((x) + PFM_BPL - 1) / PFM_BPL)		/* words for x bits */
#define PFM_PMD_BV	PFM_BVSIZE(PFM_MAX_PMDS)
#define PFM_PMC_BV	PFM_BVSIZE(PFM_MAX_PMCS)

/* The return type of every call: -1 with errno set on failure. */
typedef int os_err_t;

/*
 * pfm_create(): on return, the registers the session may use (set 0's
 * avail_pmcs/avail_pmds on the mount).
 */
typedef struct {
	uint64_t sif_avail_pmcs[PFM_PMC_BV];	/* out: usable PMCs */
	uint64_t sif_avail_pmds[PFM_PMD_BV];	/* out: usable PMDs */
	uint64_t sif_reserved[4];		/* unused, zero */
} pfarg_sinfo_t;

/*
 * pfm_create(flags, sif) or, with PFM_FL_SMPL_FMT, pfm_create(flags, sif,
 * char *fmt_name, void *fmt_arg, size_t fmt_arg_size): the session records
 * samples in that format's buffer (<perfmon/perfmon_dfl_smpl.h>), which
 * mmap() of the descriptor maps. pfmfs has the "default" format; another
 * name is EINVAL.
 */
extern os_err_t pfm_create(int flags, pfarg_sinfo_t *sif, ...);

/* pfm_create() and pfm_create_context() flags */
#define PFM_FL_NOTIFY_BLOCK	0x01	/* hold the monitored thread until restart */
#define PFM_FL_SYSTEM_WIDE	0x02	/* monitor a CPU, not a thread */
#define PFM_FL_SMPL_FMT		0x04	/* a sampling format follows (pfm_create) */
#define PFM_FL_OVFL_NO_MSG	0x80	/* mask on notification, queue no message */

/* pfm_write()/pfm_read() register with its value only */
typedef struct {
	uint16_t reg_num;	/* register index */
	uint16_t reg_set;	/* event set */
	uint32_t reg_flags;	/* PFM_REGFL_* */
	uint64_t reg_value;	/* 64-bit value */
} pfarg_pmr_t;

/* reg_flags */
#define PFM_REGFL_OVFL_NOTIFY	0x1	/* PMD: notify on overflow */
#define PFM_REGFL_RANDOM	0x2	/* PMD: randomize the reset value */
#define PFM_REGFL_NO_EMUL64	0x4	/* PMC: hardware overflow is the user's overflow */

/* pfm_write()/pfm_read() PMD with every attribute (PFM_RW_PMD_ATTR) */
typedef struct {
	uint16_t reg_num;			/* register index */
	uint16_t reg_set;			/* event set */
	uint32_t reg_flags;			/* PFM_REGFL_* */
	uint64_t reg_value;			/* 64-bit value */
	uint64_t reg_long_reset;		/* write: reset value at restart after a notification */
	uint64_t reg_short_reset;		/* write: reset value after an unnotified overflow */
	uint64_t reg_random_mask;		/* write: mask of the random part of a reset */
	uint64_t reg_smpl_pmds[PFM_PMD_BV];	/* write: PMDs recorded with a sample */
	uint64_t reg_reset_pmds[PFM_PMD_BV];	/* write: PMDs reset with this one */
	uint64_t reg_ovfl_swcnt;		/* write: overflows before a set switch; read: left */
	uint64_t reg_smpl_eventid;		/* write: opaque event id */
	uint64_t reg_last_value;		/* read: the last reset value */
	uint64_t reg_reserved[8];		/* unused, zero */
} pfarg_pmd_attr_t;

/* pfm_write()/pfm_read() type */
#define PFM_RW_PMD	1	/* pfarg_pmr_t PMDs: a write sets the value, keeps the attributes */
#define PFM_RW_PMC	2	/* pfarg_pmr_t PMCs */
#define PFM_RW_PMD_ATTR	3	/* pfarg_pmd_attr_t PMDs */

/* pfm_attach() target meaning "detach" */
#define PFM_NO_TARGET	(-1)

/* pfm_set_state() state */
#define PFM_ST_START	0x1	/* start counting */
#define PFM_ST_STOP	0x2	/* stop counting */
#define PFM_ST_RESTART	0x3	/* resume after a notification */

/* pfm_create_sets() element */
typedef struct {
	uint16_t set_id;		/* set number */
	uint16_t set_reserved1;		/* unused, zero */
	uint32_t set_flags;		/* PFM_SETFL_* */
	uint64_t set_timeout;		/* in: switch timeout (ns); out: effective timeout */
	uint64_t reserved[6];		/* unused, zero */
} pfarg_set_desc_t;

/* pfm_getinfo_sets() element */
typedef struct {
	uint16_t set_id;			/* in: set number */
	uint16_t set_reserved1;			/* unused */
	uint32_t set_reserved2;			/* unused */
	uint64_t set_ovfl_pmds[PFM_PMD_BV];	/* out: PMDs of the last overflow */
	uint64_t set_runs;			/* out: activations of the set */
	uint64_t set_timeout;			/* out: timeout left (ns) */
	uint64_t set_duration;			/* out: time the set was active (ns) */
	uint64_t set_reserved3[4];		/* unused */
} pfarg_set_info_t;

/* set_flags */
#define PFM_SETFL_OVFL_SWITCH	0x01	/* switch when a PMD's switch count runs out */
#define PFM_SETFL_TIME_SWITCH	0x02	/* switch after set_timeout */

/* the overflow message, as read() on the descriptor returns it */
typedef struct {
	uint32_t msg_type;			/* PFM_MSG_OVFL */
	uint32_t msg_ovfl_pid;			/* monitored thread id (perfmon2's naming) */
	uint16_t msg_active_set;		/* set active at the overflow */
	uint16_t msg_ovfl_cpu;			/* cpu of the overflow */
	uint32_t msg_ovfl_tid;			/* monitored process id (perfmon2's naming) */
	uint64_t msg_ovfl_ip;			/* instruction pointer at the overflow */
	uint64_t msg_ovfl_pmds[PFM_PMD_BV];	/* PMDs that overflowed */
} pfarg_ovfl_msg_t;

/* perfmon3-style calls; sizes are in bytes, flags must be 0 */
extern os_err_t pfm_write(int fd, int flags, int type, void *reg, size_t n);
extern os_err_t pfm_read(int fd, int flags, int type, void *reg, size_t n);
extern os_err_t pfm_set_state(int fd, int flags, int state);
extern os_err_t pfm_create_sets(int fd, int flags, pfarg_set_desc_t *s, size_t sz);
extern os_err_t pfm_getinfo_sets(int fd, int flags, pfarg_set_info_t *s, size_t sz);
extern os_err_t pfm_attach(int fd, int flags, int target);

#ifdef __cplusplus
}
#endif

/* the perfmon2 structures and calls */
#include "perfmon_v2.h"

#ifdef __cplusplus
extern "C" {
#endif

/* what read() on the descriptor returns, 64 bytes per message */
typedef union {
	uint32_t type;				/* PFM_MSG_OVFL or PFM_MSG_END */
	pfarg_ovfl_msg_t pfm_ovfl_msg;		/* the overflow message */
} pfarg_msg_t;

#define PFM_MSG_OVFL	1	/* a PMD overflowed */
#define PFM_MSG_END	2	/* the monitored thread exited */

#define PFM_VERSION_MAJOR(x)	(((x) >> 16) & 0xffff)
#define PFM_VERSION_MINOR(x)	((x) & 0xffff)

/*
 * The perfmon2 interface version served: v2.82, the last perfmon2 kernel
 * interface, which libpfm 3.10 was written for. perfmon2's kernel header
 * defined these; /sys/kernel/perfmon/version says "2.82" (see
 * docs/libpfm-compat.md), which is what PAPI compares with PFM_VERSION.
 */
#ifndef PFM_VERSION
#define PFM_VERSION_MAJ		2U
#define PFM_VERSION_MIN		82U
#define PFM_VERSION		(((PFM_VERSION_MAJ & 0xffff) << 16) | (PFM_VERSION_MIN & 0xffff))
#endif

PFM_STATIC_ASSERT_SIZE(pfarg_sinfo_t, 112);
PFM_STATIC_ASSERT_SIZE(pfarg_pmr_t, 16);
PFM_STATIC_ASSERT_SIZE(pfarg_pmd_attr_t, 208);
PFM_STATIC_ASSERT_SIZE(pfarg_set_desc_t, 64);
PFM_STATIC_ASSERT_SIZE(pfarg_set_info_t, 104);
PFM_STATIC_ASSERT_SIZE(pfarg_ovfl_msg_t, 64);
PFM_STATIC_ASSERT_SIZE(pfarg_msg_t, 64);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_H */
