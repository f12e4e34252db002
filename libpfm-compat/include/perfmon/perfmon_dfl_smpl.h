/*
 * <perfmon/perfmon_dfl_smpl.h>: perfmon2's default sampling format, as
 * libpfm 3.10 declares it. pfm_create_context(ctx, PFM_DFL_SMPL_NAME, &arg,
 * sizeof(arg)) (or pfm_create with PFM_FL_SMPL_FMT) makes a session that
 * writes one entry per counter overflow into a buffer of arg.buf_size bytes
 * (pfmfs(5), SAMPLING); mmap(NULL, arg.buf_size, PROT_READ, MAP_PRIVATE, fd,
 * 0) of the descriptor maps it read-only, updated in place as samples
 * arrive. The notification comes when the buffer is full; pfm_restart()
 * empties it. The mapping stays readable after close(), until munmap(). See
 * libpfm-compat(3), "Sampling".
 */
#ifndef PFMFS_PERFMON_PERFMON_DFL_SMPL_H
#define PFMFS_PERFMON_PERFMON_DFL_SMPL_H
#define __PERFMON_DFL_SMPL_H__ 1	/* libpfm 3.10's guard, which programs may test */

#include "perfmon.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFM_DFL_SMPL_NAME	"default"

/*
 * The format's 16-byte identifier in perfmon v2.2-v2.4, which named formats
 * by UUID (libpfm 3.10 declared it with PFMLIB_OLD_PFMV2 only). v2.82 and
 * pfmfs name them: pass PFM_DFL_SMPL_NAME.
 */
#define PFM_DFL_SMPL_UUID { \
	0xd1, 0x39, 0xb2, 0x9e, 0x62, 0xe8, 0x40, 0xe4, \
	0xb4, 0x02, 0x73, 0x07, 0x87, 0x92, 0xe9, 0x37 }

/* format argument at context creation */
typedef struct {
	uint64_t buf_size;	/* bytes of the sampling buffer */
	uint32_t buf_flags;	/* format flags */
	uint32_t res1;		/* unused, zero */
	uint64_t reserved[6];	/* unused, zero */
} pfm_dfl_smpl_arg_t;

/* head of the sampling buffer, followed by the entries */
typedef struct {
	uint64_t hdr_count;		/* valid entries */
	uint64_t hdr_cur_offs;		/* offset of the next entry from the buffer start */
	uint64_t hdr_overflows;		/* times the buffer filled up */
	uint64_t hdr_buf_size;		/* bytes of the buffer */
	uint64_t hdr_min_buf_space;	/* room the largest entry needs: 40 + 8 x the PMU's PMDs */
	uint32_t hdr_version;		/* PFM_DFL_SMPL_VERSION: read with PFM_VERSION_MAJOR/MINOR */
	uint32_t hdr_buf_flags;		/* buf_flags at creation */
	uint64_t hdr_reserved[10];	/* unused */
} pfm_dfl_smpl_hdr_t;

/* one sample: this header, then the sampled PMDs' values in index order */
typedef struct {
	uint32_t pid;			/* thread id (perfmon2's name) */
	uint16_t ovfl_pmd;		/* PMD that overflowed */
	uint16_t reserved;		/* unused */
	uint64_t last_reset_val;	/* value the PMD was reset to before */
	uint64_t ip;			/* instruction pointer at the overflow */
	uint64_t tstamp;		/* time stamp of the overflow */
	uint16_t cpu;			/* cpu of the overflow */
	uint16_t set;			/* active set */
	uint32_t tgid;			/* process id */
} pfm_dfl_smpl_entry_t;

#define PFM_DFL_SMPL_VERSION_MAJ	1U
#define PFM_DFL_SMPL_VERSION_MIN	0U
#define PFM_DFL_SMPL_VERSION \
	(((PFM_DFL_SMPL_VERSION_MAJ & 0xffff) << 16) | (PFM_DFL_SMPL_VERSION_MIN & 0xffff))

PFM_STATIC_ASSERT_SIZE(pfm_dfl_smpl_arg_t, 64);
PFM_STATIC_ASSERT_SIZE(pfm_dfl_smpl_hdr_t, 128);
PFM_STATIC_ASSERT_SIZE(pfm_dfl_smpl_entry_t, 40);

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_DFL_SMPL_H */
