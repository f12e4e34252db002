/*
 * <perfmon/perfmon_v2.h>: the perfmon2 structures and calls of libpfm 3.10
 * (pfm_create_context and friends), served by pfmfs. Normally pulled in by
 * <perfmon/perfmon.h>; including it alone includes perfmon.h first, which
 * brings this file back at its place, after the shared types it needs.
 */
#ifndef PFMFS_PERFMON_PERFMON_H
#include "perfmon.h"
#elif !defined(PFMFS_PERFMON_PERFMON_V2_H)
#define PFMFS_PERFMON_PERFMON_V2_H
#define __PERFMON_V2_H__	/* libpfm 3.10's guard, which programs may test */

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The hardware registers of a kind perfmon2 allows (the virtual ones of
 * PFM_MAX_PMDS aside), and the u64 words of a bitvector of them. libpfm 3.10
 * declared these for the v2.2-v2.4 interface alone (PFMLIB_OLD_PFMV2); they
 * are declared here whatever the program defines, since pfmfs serves only
 * the v2.82 layouts below.
 */
#define PFM_MAX_HW_PMDS	256
#define PFM_HW_PMD_BV	PFM_BVSIZE(PFM_MAX_HW_PMDS)

/* pfm_create_context() argument */
typedef struct {
	uint32_t ctx_flags;		/* PFM_FL_* */
	uint32_t ctx_reserved1;		/* unused, zero */
	uint64_t ctx_reserved3[7];	/* unused, zero */
} pfarg_ctx_t;

/* pfm_write_pmcs() element */
typedef struct {
	uint16_t reg_num;		/* PMC index */
	uint16_t reg_set;		/* event set */
	uint32_t reg_flags;		/* PFM_REGFL_NO_EMUL64 or 0 */
	uint64_t reg_value;		/* PMC value */
	uint64_t reg_reserved2[4];	/* unused, zero */
} pfarg_pmc_t;

/* pfm_write_pmds() / pfm_read_pmds() element */
typedef struct {
	uint16_t reg_num;			/* PMD index */
	uint16_t reg_set;			/* event set */
	uint32_t reg_flags;			/* PFM_REGFL_OVFL_NOTIFY, PFM_REGFL_RANDOM */
	uint64_t reg_value;			/* 64-bit value */
	uint64_t reg_long_reset;		/* reset value at restart after a notification */
	uint64_t reg_short_reset;		/* reset value after an unnotified overflow */
	uint64_t reg_last_reset_val;		/* read: the last reset value */
	uint64_t reg_ovfl_switch_cnt;		/* write: overflows before a set switch; read: left */
	uint64_t reg_reset_pmds[PFM_PMD_BV];	/* PMDs reset with this one */
	uint64_t reg_smpl_pmds[PFM_PMD_BV];	/* PMDs recorded with a sample */
	uint64_t reg_smpl_eventid;		/* opaque event id */
	uint64_t reg_random_mask;		/* mask of the random part of a reset */
	uint32_t reg_random_seed;		/* ignored (deprecated in perfmon2 too) */
	uint32_t reg_reserved2[7];		/* unused, zero */
} pfarg_pmd_t;

/* pfm_start() argument; pfm_start(fd, NULL) restarts in the last active set */
typedef struct {
	uint16_t start_set;		/* set to start in */
	uint16_t start_reserved1;	/* unused, zero */
	uint32_t start_reserved2;	/* unused, zero */
	uint64_t reserved3[3];		/* unused, zero */
} pfarg_start_t;

/* pfm_load_context() argument */
typedef struct {
	uint32_t load_pid;		/* thread id, or cpu for a system-wide context */
	uint16_t load_set;		/* first active set */
	uint16_t load_reserved1;	/* unused, zero */
	uint64_t load_reserved2[3];	/* unused, zero */
} pfarg_load_t;

/* pfm_create_evtsets() / pfm_delete_evtsets() element */
typedef struct {
	uint16_t set_id;		/* set number */
	uint16_t set_reserved1;		/* unused, zero */
	uint32_t set_flags;		/* PFM_SETFL_* */
	uint64_t set_timeout;		/* in: switch timeout (ns); out: effective timeout */
	uint64_t reserved[6];		/* unused, zero */
} pfarg_setdesc_t;

/* pfm_getinfo_evtsets() element */
typedef struct {
	uint16_t set_id;			/* in: set number */
	uint16_t set_reserved1;			/* unused */
	uint32_t set_flags;			/* out: PFM_SETFL_* */
	uint64_t set_ovfl_pmds[PFM_PMD_BV];	/* out: PMDs of the last overflow */
	uint64_t set_runs;			/* out: activations of the set */
	uint64_t set_timeout;			/* out: timeout left (ns) */
	uint64_t set_act_duration;		/* out: time the set was active (ns) */
	uint64_t set_avail_pmcs[PFM_PMC_BV];	/* out: PMCs the set may use */
	uint64_t set_avail_pmds[PFM_PMD_BV];	/* out: PMDs the set may use */
	uint64_t set_reserved3[6];		/* unused */
} pfarg_setinfo_t;

/*
 * The calls. Each returns -1 with errno set on failure; pfm_create_context()
 * returns the session's descriptor (read() gives pfarg_msg_t records, poll
 * works, close() or the process's death destroys the session).
 * - No pfmfs mount found: ENODEV.
 * - A sampling format: smpl_name "default" with a pfm_dfl_smpl_arg_t and
 *   its size (<perfmon/perfmon_dfl_smpl.h>); another name, a size that is
 *   not sizeof(pfm_dfl_smpl_arg_t), or an argument without a name: EINVAL.
 * - A descriptor that is not a context (or no longer is): EBADF.
 * - A vector with count < 0, or NULL with count > 0: EINVAL; count 0 succeeds.
 * - A NULL ctx or load argument: EFAULT, as the kernel's copy of it failed.
 * - Signals: F_SETOWN / F_SETOWN_EX on the descriptor (with F_SETSIG if
 *   wanted) turns them on, one per notification, exactly as the kernel sends
 *   them for any file (F_SETSIG: si_code POLL_IN, si_fd, si_band). FUSE
 *   files cannot keep O_ASYNC (F_GETFL never shows it), so the owner is the
 *   switch: F_SETOWN 0 turns them off. They come while the descriptor
 *   returned here stays open.
 */
extern os_err_t pfm_create_context(pfarg_ctx_t *ctx, char *smpl_name,
				   void *smpl_arg, size_t smpl_size);
extern os_err_t pfm_write_pmcs(int fd, pfarg_pmc_t *pmcs, int count);
extern os_err_t pfm_write_pmds(int fd, pfarg_pmd_t *pmds, int count);
extern os_err_t pfm_read_pmds(int fd, pfarg_pmd_t *pmds, int count);
extern os_err_t pfm_load_context(int fd, pfarg_load_t *load);
extern os_err_t pfm_start(int fd, pfarg_start_t *start);
extern os_err_t pfm_stop(int fd);
extern os_err_t pfm_restart(int fd);
extern os_err_t pfm_create_evtsets(int fd, pfarg_setdesc_t *setd, int count);
extern os_err_t pfm_getinfo_evtsets(int fd, pfarg_setinfo_t *info, int count);
extern os_err_t pfm_delete_evtsets(int fd, pfarg_setdesc_t *setd, int count);
extern os_err_t pfm_unload_context(int fd);

/*
 * Start and stop the context that monitors the calling thread (not a
 * system-wide one): pfm_start(fd, NULL) and pfm_stop(fd). libpfm 3.10
 * defined them in <perfmon/pfmlib_os_x86_64.h>, which <perfmon/pfmlib.h>
 * includes and which now includes this file: defined here, they are there
 * for a program that includes only <perfmon/perfmon.h> too, and are defined
 * once whatever the headers and their order. As there, a source file that
 * defines __PFMLIB_OS_COMPILE does not get them (and may define its own).
 */
#ifndef __PFMLIB_OS_COMPILE
static inline int pfm_self_start(int fd)
{
	return pfm_start(fd, NULL);
}

static inline int pfm_self_stop(int fd)
{
	return pfm_stop(fd);
}
#endif

PFM_STATIC_ASSERT_SIZE(pfarg_ctx_t, 64);
PFM_STATIC_ASSERT_SIZE(pfarg_pmc_t, 48);
PFM_STATIC_ASSERT_SIZE(pfarg_pmd_t, 176);
PFM_STATIC_ASSERT_SIZE(pfarg_start_t, 32);
PFM_STATIC_ASSERT_SIZE(pfarg_load_t, 32);
PFM_STATIC_ASSERT_SIZE(pfarg_setdesc_t, 64);
PFM_STATIC_ASSERT_SIZE(pfarg_setinfo_t, 200);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_V2_H */
