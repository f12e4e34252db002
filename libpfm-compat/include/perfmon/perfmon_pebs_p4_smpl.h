/*
 * <perfmon/perfmon_pebs_p4_smpl.h>: perfmon2's PEBS sampling format for the
 * Pentium 4 ("pebs64_p4" on x86-64, "pebs32_p4" on 32-bit x86), as libpfm
 * 3.10 declared it: the format's argument, the head of its buffer (with the
 * processor's DS save area) and its records. Names, types and layouts are
 * libpfm 3.10's: several fields are unsigned long or size_t, 8 bytes on
 * x86-64 and 4 on 32-bit x86.
 *
 * pfmfs serves the "default" format alone (<perfmon/perfmon_dfl_smpl.h>):
 * pfm_create_context() with this format's name fails with EINVAL
 * (docs/libpfm-compat.md, "Sampling"). The declarations let programs that
 * offer the format build, and find out at run time.
 *
 * pfm_pebs_p4_smpl_entry_t is declared by <perfmon/perfmon_pebs_smpl.h> too,
 * with the same layout on x86-64 and 32-bit x86 (there with uint64_t and
 * uint32_t members, the same types as unsigned long on x86-64): whichever of
 * the two headers comes first declares it, so that they can be included
 * together (libpfm 3.10's could not).
 */
#ifndef PFMFS_PERFMON_PERFMON_PEBS_P4_SMPL_H
#define PFMFS_PERFMON_PERFMON_PEBS_P4_SMPL_H
#define __PERFMON_PEBS_P4_SMPL_H__ 1	/* libpfm 3.10's guard, which programs may test */

#include "perfmon.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __i386__
#define PFM_PEBS_P4_SMPL_NAME	"pebs32_p4"
#else
#define PFM_PEBS_P4_SMPL_NAME	"pebs64_p4"
#endif

/* format argument at context creation */
typedef struct {
	uint64_t	cnt_reset;	/* value the counter restarts from after a record */
	size_t		buf_size;	/* bytes of the buffer */
	size_t		intr_thres;	/* record index at which to notify */
	uint64_t	reserved[6];	/* unused */
} pfm_pebs_p4_smpl_arg_t;

/* the processor's debug store (DS) save area, pointer-sized fields */
typedef struct {
	unsigned long	bts_buf_base;		/* branch trace store: buffer start */
	unsigned long	bts_index;		/* next record */
	unsigned long	bts_abs_max;		/* buffer end */
	unsigned long	bts_intr_thres;		/* interrupt threshold */
	unsigned long	pebs_buf_base;		/* PEBS: buffer start */
	unsigned long	pebs_index;		/* next record */
	unsigned long	pebs_abs_max;		/* buffer end */
	unsigned long	pebs_intr_thres;	/* interrupt threshold */
	uint64_t	pebs_cnt_reset;		/* counter value after a record */
} pfm_ds_area_p4_t;

/*
 * Head of the sampling buffer. The records do not start right after it
 * (PEBS has alignment constraints) but start_offs bytes further:
 * (char *)(hdr + 1) + hdr->start_offs.
 */
typedef struct {
	uint64_t		overflows;	/* times the buffer filled up */
	size_t			buf_size;	/* bytes of the buffer */
	size_t			start_offs;	/* from the end of this header to the records */
	uint32_t		version;	/* PFM_PEBS_P4_SMPL_VERSION */
	uint32_t		reserved1;	/* unused */
	uint64_t		reserved2[5];	/* unused */
	pfm_ds_area_p4_t	ds;		/* the DS save area */
} pfm_pebs_p4_smpl_hdr_t;

#ifndef PFMFS_PERFMON_PEBS_P4_SMPL_ENTRY
#define PFMFS_PERFMON_PEBS_P4_SMPL_ENTRY
/* one PEBS record: the registers of the mode the program runs in */
typedef struct {
	unsigned long eflags;
	unsigned long ip;
	unsigned long eax;
	unsigned long ebx;
	unsigned long ecx;
	unsigned long edx;
	unsigned long esi;
	unsigned long edi;
	unsigned long ebp;
	unsigned long esp;
#ifdef __x86_64__
	unsigned long r8;
	unsigned long r9;
	unsigned long r10;
	unsigned long r11;
	unsigned long r12;
	unsigned long r13;
	unsigned long r14;
	unsigned long r15;
#endif
} pfm_pebs_p4_smpl_entry_t;
#endif

#define PFM_PEBS_P4_SMPL_VERSION_MAJ 1U
#define PFM_PEBS_P4_SMPL_VERSION_MIN 0U
#define PFM_PEBS_P4_SMPL_VERSION \
	(((PFM_PEBS_P4_SMPL_VERSION_MAJ & 0xffff) << 16) | (PFM_PEBS_P4_SMPL_VERSION_MIN & 0xffff))

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_PEBS_P4_SMPL_H */
