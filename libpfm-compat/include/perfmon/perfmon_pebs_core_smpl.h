/*
 * <perfmon/perfmon_pebs_core_smpl.h>: perfmon2's "pebs_core" sampling format
 * (precise event-based sampling on Intel Core), as libpfm 3.10 declared it:
 * the format's argument, the head of its buffer (with the processor's DS
 * save area) and its records. Names, types and layouts are libpfm 3.10's.
 *
 * pfmfs serves the "default" format alone (<perfmon/perfmon_dfl_smpl.h>):
 * pfm_create_context() with this format's name fails with EINVAL
 * (docs/libpfm-compat.md, "Sampling"). The declarations let programs that
 * offer the format build, and find out at run time.
 *
 * pfm_pebs_core_smpl_entry_t is declared by <perfmon/perfmon_pebs_smpl.h>
 * too, with the same layout and member types: whichever of the two headers
 * comes first declares it, so that they can be included together (libpfm
 * 3.10's could not).
 */
#ifndef PFMFS_PERFMON_PERFMON_PEBS_CORE_SMPL_H
#define PFMFS_PERFMON_PERFMON_PEBS_CORE_SMPL_H
#define __PERFMON_PEBS_CORE_SMPL_H__ 1	/* libpfm 3.10's guard, which programs may test */

#include "perfmon.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PFM_PEBS_CORE_SMPL_NAME	"pebs_core"

/* format argument at context creation */
typedef struct {
	uint64_t	cnt_reset;	/* value the counter restarts from after a record */
	uint64_t	buf_size;	/* bytes of the buffer */
	uint64_t	intr_thres;	/* record index at which to notify */
	uint64_t	reserved[6];	/* unused */
} pfm_pebs_core_smpl_arg_t;

/* the processor's debug store (DS) save area */
typedef struct {
	uint64_t	bts_buf_base;	/* branch trace store: buffer start */
	uint64_t	bts_index;	/* next record */
	uint64_t	bts_abs_max;	/* buffer end */
	uint64_t	bts_intr_thres;	/* interrupt threshold */
	uint64_t	pebs_buf_base;	/* PEBS: buffer start */
	uint64_t	pebs_index;	/* next record */
	uint64_t	pebs_abs_max;	/* buffer end */
	uint64_t	pebs_intr_thres;	/* interrupt threshold */
	uint64_t	pebs_cnt_reset;	/* counter value after a record */
} pfm_ds_area_core_t;

/*
 * Head of the sampling buffer. The records do not start right after it
 * (PEBS has alignment constraints) but start_offs bytes further:
 * (char *)(hdr + 1) + hdr->start_offs.
 */
typedef struct {
	uint64_t		overflows;	/* times the buffer filled up */
	size_t			buf_size;	/* bytes of the buffer */
	size_t			start_offs;	/* from the end of this header to the records */
	uint32_t		version;	/* PFM_PEBS_CORE_SMPL_VERSION */
	uint32_t		reserved1;	/* unused */
	uint64_t		reserved2[5];	/* unused */
	pfm_ds_area_core_t	ds;		/* the DS save area */
} pfm_pebs_core_smpl_hdr_t;

#ifndef PFMFS_PERFMON_PEBS_CORE_SMPL_ENTRY
#define PFMFS_PERFMON_PEBS_CORE_SMPL_ENTRY
/* one PEBS record, the same in 32-bit and 64-bit mode */
typedef struct {
	uint64_t eflags;
	uint64_t ip;
	uint64_t eax;
	uint64_t ebx;
	uint64_t ecx;
	uint64_t edx;
	uint64_t esi;
	uint64_t edi;
	uint64_t ebp;
	uint64_t esp;
	uint64_t r8;	/* r8-r15: 0 in 32-bit mode */
	uint64_t r9;
	uint64_t r10;
	uint64_t r11;
	uint64_t r12;
	uint64_t r13;
	uint64_t r14;
	uint64_t r15;
} pfm_pebs_core_smpl_entry_t;
#endif

#define PFM_PEBS_CORE_SMPL_VERSION_MAJ 1U
#define PFM_PEBS_CORE_SMPL_VERSION_MIN 0U
#define PFM_PEBS_CORE_SMPL_VERSION \
	(((PFM_PEBS_CORE_SMPL_VERSION_MAJ & 0xffff) << 16) | (PFM_PEBS_CORE_SMPL_VERSION_MIN & 0xffff))

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_PEBS_CORE_SMPL_H */
