/*
 * <perfmon/perfmon_pebs_smpl.h>: perfmon2's "pebs" sampling format (precise
 * event-based sampling, one format for 32-bit and 64-bit programs), as
 * libpfm 3.10 declared it: the format's argument, the head of its buffer,
 * and the PEBS records of Core, Nehalem and Pentium 4 processors. Names,
 * types and layouts are libpfm 3.10's.
 *
 * pfmfs serves the "default" format alone (<perfmon/perfmon_dfl_smpl.h>):
 * pfm_create_context() with this format's name fails with EINVAL
 * (docs/libpfm-compat.md, "Sampling"). The declarations let programs that
 * offer the format build, and find out at run time.
 *
 * libpfm 3.10's header included nothing (its user had to bring uint64_t);
 * this one includes <stdint.h>. It also declared pfm_pebs_core_smpl_entry_t
 * and pfm_pebs_p4_smpl_entry_t again, so that it could not be included with
 * <perfmon/perfmon_pebs_core_smpl.h> or <perfmon/perfmon_pebs_p4_smpl.h>.
 * Here whichever header comes first declares each of the two, with the
 * same layout on x86-64 and 32-bit x86 either way: they can be included
 * together.
 */
#ifndef PFMFS_PERFMON_PERFMON_PEBS_SMPL_H
#define PFMFS_PERFMON_PERFMON_PEBS_SMPL_H
#define __PERFMON_PEBS_SMPL_H__ 1	/* libpfm 3.10's guard, which programs may test */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PFM_PEBS_SMPL_NAME	"pebs"

#define PFM_PEBS_NUM_CNT_RESET	8	/* entries of cnt_reset below */

/*
 * format argument at context creation. The PMU interrupt comes some records
 * before the end of the buffer.
 */
typedef struct {
	uint64_t buf_size;				/* bytes of the PEBS buffer */
	uint64_t cnt_reset[PFM_PEBS_NUM_CNT_RESET];	/* value each counter restarts from */
	uint64_t reserved2[23];				/* unused */
} pfm_pebs_smpl_arg_t;

/*
 * Head of the sampling buffer. The records do not necessarily start right
 * after it (PEBS has alignment constraints).
 */
typedef struct {
	uint64_t overflows;	/* times the buffer filled up */
	uint64_t count;		/* valid records */
	uint64_t buf_size;	/* bytes of the whole buffer */
	uint64_t pebs_size;	/* bytes of the PEBS part */
	uint32_t version;	/* PFM_PEBS_SMPL_VERSION */
	uint32_t entry_size;	/* bytes of a record */
	uint64_t reserved2[11];	/* unused */
} pfm_pebs_smpl_hdr_t;

#ifndef PFMFS_PERFMON_PEBS_CORE_SMPL_ENTRY
#define PFMFS_PERFMON_PEBS_CORE_SMPL_ENTRY
/* a Core PEBS record, the same in 32-bit and 64-bit mode */
typedef struct {
	uint64_t	eflags;
	uint64_t	ip;
	uint64_t	eax;
	uint64_t	ebx;
	uint64_t	ecx;
	uint64_t	edx;
	uint64_t	esi;
	uint64_t	edi;
	uint64_t	ebp;
	uint64_t	esp;
	uint64_t	r8;	/* r8-r15: 0 in 32-bit mode */
	uint64_t	r9;
	uint64_t	r10;
	uint64_t	r11;
	uint64_t	r12;
	uint64_t	r13;
	uint64_t	r14;
	uint64_t	r15;
} pfm_pebs_core_smpl_entry_t;
#endif

/* a Nehalem PEBS record: the Core one, then four more words */
typedef struct {
	uint64_t	eflags;
	uint64_t	ip;
	uint64_t	eax;
	uint64_t	ebx;
	uint64_t	ecx;
	uint64_t	edx;
	uint64_t	esi;
	uint64_t	edi;
	uint64_t	ebp;
	uint64_t	esp;
	uint64_t	r8;	/* r8-r15: 0 in 32-bit mode */
	uint64_t	r9;
	uint64_t	r10;
	uint64_t	r11;
	uint64_t	r12;
	uint64_t	r13;
	uint64_t	r14;
	uint64_t	r15;
	uint64_t	ia32_perf_global_status;	/* the counters that overflowed */
	uint64_t	daddr;				/* load latency: data address */
	uint64_t	dsrc_enc;			/* load latency: data source */
	uint64_t	latency;			/* load latency: cycles */
} pfm_pebs_nhm_smpl_entry_t;

#ifndef PFMFS_PERFMON_PEBS_P4_SMPL_ENTRY
#define PFMFS_PERFMON_PEBS_P4_SMPL_ENTRY
/*
 * a Pentium 4 PEBS record: the registers of the mode the program runs in.
 * The format only uses its size (room for one record).
 */
#ifdef __i386__
typedef struct {
	uint32_t	eflags;
	uint32_t	ip;
	uint32_t	eax;
	uint32_t	ebx;
	uint32_t	ecx;
	uint32_t	edx;
	uint32_t	esi;
	uint32_t	edi;
	uint32_t	ebp;
	uint32_t	esp;
} pfm_pebs_p4_smpl_entry_t;
#else
typedef struct {
	uint64_t	eflags;
	uint64_t	ip;
	uint64_t	eax;
	uint64_t	ebx;
	uint64_t	ecx;
	uint64_t	edx;
	uint64_t	esi;
	uint64_t	edi;
	uint64_t	ebp;
	uint64_t	esp;
	uint64_t	r8;
	uint64_t	r9;
	uint64_t	r10;
	uint64_t	r11;
	uint64_t	r12;
	uint64_t	r13;
	uint64_t	r14;
	uint64_t	r15;
} pfm_pebs_p4_smpl_entry_t;
#endif
#endif

#define PFM_PEBS_SMPL_VERSION_MAJ 1U
#define PFM_PEBS_SMPL_VERSION_MIN 0U
#define PFM_PEBS_SMPL_VERSION \
	(((PFM_PEBS_SMPL_VERSION_MAJ & 0xffff) << 16) | (PFM_PEBS_SMPL_VERSION_MIN & 0xffff))

#ifdef __cplusplus
}
#endif

#endif /* PFMFS_PERFMON_PERFMON_PEBS_SMPL_H */
