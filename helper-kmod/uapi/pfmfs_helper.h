/* SPDX-License-Identifier: GPL-2.0-or-later WITH Linux-syscall-note */
/*
 * pfmfs_helper.h - the interface of /dev/pfmfs_helper (helper-kmod/).
 *
 * pfmfsd's x86 backend (pmu/x86/) and the module's tests talk to
 * pfmfs_helper.ko through these ioctls and records, and nothing else.
 * Fields are __u32/__u64 only, so the layout is the same for every
 * compiler and for 32-bit callers; addresses of user buffers travel as __u64.
 * Every reserved field must be 0 (else -EINVAL), so it can get a meaning later.
 */
#ifndef _UAPI_PFMFS_HELPER_H
#define _UAPI_PFMFS_HELPER_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define PFMFS_HELPER_ABI_VERSION 2
#define PFMFS_HELPER_DEVICE "/dev/pfmfs_helper"

/* Most MSR operations in one batch. */
#define PFMFS_HELPER_MAX_BATCH 64

/*
 * PFMFS_HELPER_IOC_HELLO: the handshake, the first ioctl of every opener;
 * every other ioctl before a successful HELLO is -EINVAL. A caller whose
 * abi_version or size differs from the module's gets -EPROTO, with the
 * module's abi_version and size written back (those two fields keep their
 * place in every version).
 */
struct pfmfs_helper_hello {
	__u32 abi_version;	/* in: the caller's PFMFS_HELPER_ABI_VERSION; out: the module's */
	__u32 size;		/* in: the caller's sizeof(struct pfmfs_helper_hello); out: the module's */
	__u32 arch_version;	/* out: architectural perfmon version (CPUID.0AH:EAX[7:0]) */
	__u32 gp_counters;	/* out: general-purpose counters the module serves (CPUID.0AH:EAX[15:8]) */
	__u32 gp_width;		/* out: their width in bits (CPUID.0AH:EAX[23:16]) */
	__u32 fixed_counters;	/* out: fixed counters the module serves (CPUID.0AH:EDX[4:0], at most 3) */
	__u32 fixed_width;	/* out: their width in bits (CPUID.0AH:EDX[12:5]) */
	__u32 flags;		/* out: PFMFS_HELPER_F_* */
	__u32 nr_cpu_ids;	/* out: every cpu number is below this */
	__u32 ring_records;	/* out: how many records this opener's ring holds */
	__u32 record_size;	/* out: sizeof(struct pfmfs_helper_record) */
	__u32 skid;		/* out: the test PMU's skid in events (0 on hardware) */
};

/* hello.flags */
#define PFMFS_HELPER_F_EMULATED	0x1	/* the test PMU (emulate=1) stands in for the MSRs */

/* Targets: a thread's virtual PMU, or one cpu's PMU. */
#define PFMFS_HELPER_TARGET_THREAD	0	/* id is a thread id (tid) */
#define PFMFS_HELPER_TARGET_CPU		1	/* id is a cpu number */

/* One MSR access of a batch. */
struct pfmfs_helper_msr {
	__u32 msr;		/* the MSR address; must be on the allowlist */
	__u32 reserved;		/* 0 */
	__u64 value;		/* MSR_WRITE: the value written; MSR_READ: the value read */
};

/*
 * PFMFS_HELPER_IOC_MSR_READ / _MSR_WRITE: `count` accesses, in order.
 * target CPU: the PMU registers of cpu `id` itself, attached or not.
 * target THREAD: the register image of thread `id`, which this opener has
 * attached; while the thread runs the accesses reach the cpu it runs on,
 * otherwise its saved image. A batch naming any MSR off the allowlist is
 * refused whole (-EPERM, logged) before anything is done; an MSR that
 * faults stops the batch with -EIO (the accesses before it are done).
 */
struct pfmfs_helper_batch {
	__u64 ops;		/* user address of struct pfmfs_helper_msr[count] */
	__u32 count;		/* 1..PFMFS_HELPER_MAX_BATCH */
	__u32 target;		/* PFMFS_HELPER_TARGET_* */
	__u32 id;		/* tid or cpu number */
	__u32 reserved;		/* 0 */
};

/*
 * PFMFS_HELPER_IOC_ATTACH / _DETACH / _HOLD / _RELEASE.
 * ATTACH: a thread gets a register image (every register 0: nothing
 * counts) that the module loads on whatever cpu the thread runs and saves
 * when it is switched out; its exit and forks are reported as records.
 * A thread that exits stays attached, its image holding its final counts,
 * until DETACH or the opener's close. A cpu keeps its image loaded. -ESRCH: no such thread; -EINVAL: no such
 * online cpu; -EBUSY: the target is attached already (by any opener), or
 * thread and cpu targets would share a PMU (perfmon2's rule: system-wide
 * and per-thread monitoring exclude each other).
 * DETACH: stops the target's counters and forgets it (releases a hold).
 * HOLD (threads only): the thread does not return to user space until
 * RELEASE, DETACH or the opener's close; a fatal signal still ends it.
 *
 * ATTACH of a thread with PFMFS_HELPER_ATTACH_INHERIT: every thread and
 * process it creates from then on, and theirs, is attached to the same
 * opener at its creation, before it first runs, with the family's template
 * (PFMFS_HELPER_IOC_TEMPLATE) as its register image: it counts from its
 * first instruction. Its FORK record says so (PFMFS_HELPER_FORK_ATTACHED)
 * and carries the template's tag. A child is attached only if its FORK
 * record was queued (a full ring: not attached, counted as lost), memory
 * allowed it, and its ids exist in the opener's pid namespace. It is an
 * attached thread like any other: DETACH lets it go.
 */
struct pfmfs_helper_target {
	__u32 target;		/* PFMFS_HELPER_TARGET_* */
	__u32 id;		/* tid or cpu number */
	__u32 flags;		/* ATTACH of a thread: PFMFS_HELPER_ATTACH_*; otherwise 0 */
	__u32 reserved;		/* 0 */
};

#define PFMFS_HELPER_ATTACH_INHERIT	0x1	/* attach its children at their creation */

/*
 * PFMFS_HELPER_IOC_TEMPLATE: the register image that children created from
 * now on start with, for the family of thread `tid` (attached by this opener
 * with PFMFS_HELPER_ATTACH_INHERIT, or a child attached that way: they share
 * one template). The image is rebuilt whole: every register `ops` does not
 * name is 0, so that an empty template (count 0) counts nothing, which is
 * the template at ATTACH (tag 0). Only PERFEVTSELx, PMCx, FIXED_CTRx,
 * FIXED_CTR_CTRL and PERF_GLOBAL_CTRL may be named; a value the register
 * cannot take, or any other MSR, refuses the whole call (-EINVAL, -EPERM off
 * the allowlist) and leaves the template as it was. `tag` is the caller's
 * name for it: FORK records of children that got it carry it in `value`.
 */
struct pfmfs_helper_template {
	__u64 ops;		/* user address of struct pfmfs_helper_msr[count] (writes) */
	__u32 count;		/* 0..PFMFS_HELPER_MAX_BATCH */
	__u32 tid;		/* a thread of the family */
	__u64 tag;		/* the caller's */
	__u64 reserved;		/* 0 */
};

/*
 * Records, read() from the device (whole records only: a buffer smaller than
 * one is -EINVAL; an empty ring blocks, or -EAGAIN under O_NONBLOCK; poll()
 * reports POLLIN while one is queued). Each opener has its own ring; when it
 * is full new records are dropped and counted, and the next read returns a
 * LOST record first.
 */
struct pfmfs_helper_record {
	__u32 type;		/* PFMFS_HELPER_REC_* */
	__u32 cpu;		/* the cpu where it happened */
	__u32 pid;		/* process (tgid) of the thread concerned */
	__u32 tid;		/* the thread concerned: interrupted, exited, or the parent of a fork */
	__u64 value;		/* OVERFLOW: PERF_GLOBAL_STATUS bits that overflowed; LOST: records
				 * dropped; EXIT: the thread's CPU time in ns; FORK of an attached
				 * child: the tag of the template it started with */
	__u64 ip;		/* OVERFLOW: instruction pointer (user-level when the interrupt hit the kernel) */
	__u32 child_pid;	/* FORK: the child's process id */
	__u32 child_tid;	/* FORK: the child's thread id */
	__u64 time_ns;		/* CLOCK_MONOTONIC when it happened */
	__u32 flags;		/* FORK: PFMFS_HELPER_FORK_* */
	__u32 reserved;		/* 0 */
};

#define PFMFS_HELPER_REC_OVERFLOW	1	/* a PMI: counters frozen (GLOBAL_CTRL 0) and status acknowledged */
#define PFMFS_HELPER_REC_EXIT		2	/* an attached thread exited; its image keeps its final counts until DETACH */
#define PFMFS_HELPER_REC_FORK		3	/* an attached thread created a thread or process */
#define PFMFS_HELPER_REC_LOST		4	/* `value` records did not fit in the ring */

/* FORK record flags */
#define PFMFS_HELPER_FORK_ATTACHED	0x1	/* the child is attached (PFMFS_HELPER_ATTACH_INHERIT) */

/*
 * PFMFS_HELPER_IOC_STATS: the module's counters since it was loaded, over
 * every opener; what the tests measure.
 */
struct pfmfs_helper_stats {
	__u64 switch_ins;	/* monitored threads loaded on a cpu by sched_switch */
	__u64 switch_outs;	/* monitored threads saved by sched_switch */
	__u64 ctrl_writes;	/* PERFEVTSELx and FIXED_CTR_CTRL writes made by sched_switch */
	__u64 global_writes;	/* PERF_GLOBAL_CTRL writes made by sched_switch */
	__u64 counter_writes;	/* counter (PMCx, FIXED_CTRx) writes made by sched_switch */
	__u64 pmis;		/* overflow interrupts taken */
	__u64 records;		/* records queued, all openers */
	__u64 lost;		/* records dropped because a ring was full */
	__u64 refused;		/* batches refused by the allowlist */
	__u64 held;		/* threads that entered a hold */
	__u64 attached;		/* targets attached now */
	__u64 reserved[5];	/* 0 */
};

/*
 * PFMFS_HELPER_IOC_CPU_STATE: what one cpu's PMU holds now, to check that
 * nothing was left counting: PERF_GLOBAL_CTRL and the LVTPC now and as the
 * module found it when loaded.
 */
struct pfmfs_helper_cpu_state {
	__u32 cpu;		/* in: the cpu */
	__u32 lvtpc;		/* out: APIC LVTPC now */
	__u32 lvtpc_found;	/* out: APIC LVTPC when the module was loaded */
	__u32 owner_tid;	/* out: tid of the attached thread loaded there, 0 if none */
	__u64 global_ctrl;	/* out: PERF_GLOBAL_CTRL */
	__u64 reserved;		/* 0 */
};

#define PFMFS_HELPER_IOC_MAGIC	0xc4

#define PFMFS_HELPER_IOC_HELLO		_IOWR(PFMFS_HELPER_IOC_MAGIC, 0, struct pfmfs_helper_hello)
#define PFMFS_HELPER_IOC_MSR_READ	_IOW(PFMFS_HELPER_IOC_MAGIC, 1, struct pfmfs_helper_batch)
#define PFMFS_HELPER_IOC_MSR_WRITE	_IOW(PFMFS_HELPER_IOC_MAGIC, 2, struct pfmfs_helper_batch)
#define PFMFS_HELPER_IOC_ATTACH		_IOW(PFMFS_HELPER_IOC_MAGIC, 3, struct pfmfs_helper_target)
#define PFMFS_HELPER_IOC_DETACH		_IOW(PFMFS_HELPER_IOC_MAGIC, 4, struct pfmfs_helper_target)
#define PFMFS_HELPER_IOC_HOLD		_IOW(PFMFS_HELPER_IOC_MAGIC, 5, struct pfmfs_helper_target)
#define PFMFS_HELPER_IOC_RELEASE	_IOW(PFMFS_HELPER_IOC_MAGIC, 6, struct pfmfs_helper_target)
#define PFMFS_HELPER_IOC_STATS		_IOR(PFMFS_HELPER_IOC_MAGIC, 7, struct pfmfs_helper_stats)
#define PFMFS_HELPER_IOC_CPU_STATE	_IOWR(PFMFS_HELPER_IOC_MAGIC, 8, struct pfmfs_helper_cpu_state)
#define PFMFS_HELPER_IOC_TEMPLATE	_IOW(PFMFS_HELPER_IOC_MAGIC, 9, struct pfmfs_helper_template)

#endif /* _UAPI_PFMFS_HELPER_H */
