/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of pfmfs_helper.ko share: the PMU's shape, register
 * images, targets, openers, the per-cpu state and the statistics.
 *
 * Locks, outermost first: pfh_mutex (targets, openers, activation), then
 * pfh_targets_lock (the thread hash and the openers' target lists, which the
 * fork probe changes too), then an image's raw spinlock (taken with irqs
 * off, on any cpu). A family's raw spinlock (its template) is taken alone.
 * The NMI handler takes no lock: it reads pfh_cpu.loaded and writes only
 * NMI-safe fields.
 */
#ifndef PFH_H
#define PFH_H

#include <linux/atomic.h>
#include <linux/cpumask.h>
#include <linux/hashtable.h>
#include <linux/irq_work.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>

#include "uapi/pfmfs_helper.h"

#define PFH_MAX_GP	8	/* general-purpose counters served at most */
#define PFH_MAX_FIXED	3	/* fixed counters served at most */
#define PFH_FIXED_SHIFT	32	/* fixed counter n is bit 32+n of GLOBAL_CTRL/STATUS */

/* The architectural MSRs (Intel SDM vol. 4, table 2-2). */
#define PFH_MSR_PMC0		0x0c1	/* IA32_PMCx: 0xc1 + n */
#define PFH_MSR_EVTSEL0		0x186	/* IA32_PERFEVTSELx: 0x186 + n */
#define PFH_MSR_FIXED_CTR0	0x309	/* IA32_FIXED_CTRx: 0x309 + n */
#define PFH_MSR_PERF_CAPS	0x345	/* IA32_PERF_CAPABILITIES */
#define PFH_MSR_FIXED_CTRL	0x38d	/* IA32_FIXED_CTR_CTRL */
#define PFH_MSR_GLOBAL_STATUS	0x38e	/* IA32_PERF_GLOBAL_STATUS */
#define PFH_MSR_GLOBAL_CTRL	0x38f	/* IA32_PERF_GLOBAL_CTRL */
#define PFH_MSR_GLOBAL_OVF	0x390	/* IA32_PERF_GLOBAL_OVF_CTRL */
#define PFH_MSR_A_PMC0		0x4c1	/* IA32_A_PMCx: full-width writes of PMCx */

/* PERFEVTSELx fields */
#define PFH_EVTSEL_CODE		0xffffULL	/* event | umask << 8 */
#define PFH_EVTSEL_USR		BIT_ULL(16)
#define PFH_EVTSEL_OS		BIT_ULL(17)
#define PFH_EVTSEL_INT		BIT_ULL(20)
#define PFH_EVTSEL_ANY		BIT_ULL(21)	/* AnyThread: version 3 and later */
#define PFH_EVTSEL_EN		BIT_ULL(22)

/* FIXED_CTR_CTRL: 4 bits per fixed counter */
#define PFH_FIXED_FIELD(ctrl, n)	(((ctrl) >> (4 * (n))) & 0xf)
#define PFH_FIXED_OS		0x1
#define PFH_FIXED_USR		0x2
#define PFH_FIXED_ANY		0x4	/* version 3 and later */
#define PFH_FIXED_PMI		0x8

#define PFH_PERF_CAP_FW_WRITE	BIT_ULL(13)	/* IA32_A_PMCx exist */
#define PFH_OVF_EXTRA		(BIT_ULL(62) | BIT_ULL(63))	/* OvfBuffer, CondChgd */

/* The control cache's "unknown": differs from any value a register takes. */
#define PFH_CACHE_UNKNOWN	(~0ULL)

/* The PMU the module serves: CPUID leaf 0xA's, or the test PMU's. */
struct pfh_shape {
	u32 version;		/* architectural perfmon version */
	u32 nr_gp;		/* general-purpose counters served */
	u32 gp_width;		/* their width in bits */
	u32 nr_fixed;		/* fixed counters served */
	u32 fixed_width;	/* their width in bits */
	bool fw_write;		/* counters are restored through IA32_A_PMCx */
	u64 gp_mask;		/* the bits a general-purpose counter holds */
	u64 fixed_mask;		/* the bits a fixed counter holds */
	u64 counter_bits;	/* GLOBAL_CTRL/STATUS bits of the served counters */
	u64 evtsel_valid;	/* PERFEVTSELx bits that may be set */
	u64 fixed_ctrl_valid;	/* FIXED_CTR_CTRL bits that may be set */
};

extern struct pfh_shape pfh_shape;

/* Module parameters (main.c) */
extern bool pfh_emulate;
extern unsigned int pfh_emulate_counters;
extern unsigned int pfh_emulate_width;
extern unsigned int pfh_skid;
extern unsigned int pfh_ring_records;

/* The module's statistics: struct pfmfs_helper_stats, as atomics. */
struct pfh_stats {
	atomic64_t switch_ins;
	atomic64_t switch_outs;
	atomic64_t ctrl_writes;
	atomic64_t global_writes;
	atomic64_t counter_writes;
	atomic64_t pmis;
	atomic64_t records;
	atomic64_t lost;
	atomic64_t refused;
	atomic64_t held;
	atomic64_t attached;
};

extern struct pfh_stats pfh_stats;

/*
 * A register image: a thread's virtual PMU, or an attached cpu's. While
 * `cpu` >= 0 the registers live in that cpu's PMU (only the control values
 * and `status` below are kept up to date); otherwise they live here.
 */
struct pfh_image {
	raw_spinlock_t lock;		/* everything below; irqs off */
	int cpu;			/* where it is loaded, or -1 */
	bool frozen;			/* an overflow stopped it: GLOBAL_CTRL 0 until written */
	bool dead;			/* detached: never loaded again */
	u64 evtsel[PFH_MAX_GP];		/* PERFEVTSELx */
	u64 pmc[PFH_MAX_GP];		/* PMCx, while not loaded */
	u64 fixed_ctrl;			/* FIXED_CTR_CTRL */
	u64 fixed[PFH_MAX_FIXED];	/* FIXED_CTRx, while not loaded */
	u64 global_ctrl;		/* PERF_GLOBAL_CTRL as last written */
	u64 status;			/* overflows saved at switch-out until OVF_CTRL */
};

struct pfh_file;
struct pfh_hold;

/*
 * The threads that PFMFS_HELPER_ATTACH_INHERIT follows: one thread attached
 * with the flag and every child attached at its creation, and theirs. They
 * share the template their children start with; each holds a reference.
 */
struct pfh_family {
	refcount_t ref;
	raw_spinlock_t lock;		/* template and tag; taken in the fork probe */
	struct pfh_image template;	/* only the registers, never loaded */
	u64 tag;			/* the caller's name of the template */
};

/* target flags */
#define PFH_T_EXITED	0	/* the thread was switched out dead: EXIT queued */

/* An attached thread or cpu. */
struct pfh_target {
	struct pfh_image img;		/* pfh_cpu.loaded points here */
	struct pfh_file *owner;		/* the opener that attached it */
	u32 kind;			/* PFMFS_HELPER_TARGET_* */
	u32 id;				/* tid or cpu, as the opener named it */
	u32 pid;			/* threads: its process, in the opener's pid namespace */
	struct task_struct *task;	/* threads: a reference */
	struct hlist_node hnode;	/* threads: in pfh_threads, by task */
	struct list_head node;		/* in owner->targets */
	struct pfh_hold *hold;		/* threads: the hold queued, or NULL */
	struct pfh_family *family;	/* threads that follow their children, or NULL */
	bool linked;			/* in pfh_threads and owner->targets (pfh_targets_lock) */
	unsigned long flags;		/* PFH_T_* */
	struct rcu_head rcu;
};

static inline struct pfh_target *pfh_img_target(struct pfh_image *img)
{
	return container_of(img, struct pfh_target, img);
}

/* A ring of records, NMI-safe: many producers (cmpxchg), one consumer. */
struct pfh_ring_slot {
	unsigned long seq;		/* position + 1 when the record is ready */
	struct pfmfs_helper_record rec;
};

struct pfh_ring {
	struct pfh_ring_slot *slots;
	unsigned long mask;		/* records - 1, a power of two minus one */
	unsigned long head;		/* next position a producer reserves */
	unsigned long tail;		/* next position the consumer reads */
	atomic64_t lost;		/* records dropped since the last LOST record */
};

/* One open file of /dev/pfmfs_helper. */
struct pfh_file {
	struct list_head node;		/* in pfh_files */
	struct list_head targets;	/* its pfh_target's (pfh_targets_lock to change) */
	bool closing;			/* no child is attached to it any more (pfh_targets_lock) */
	struct pfh_ring ring;
	wait_queue_head_t wq;		/* readers and pollers */
	struct irq_work wake;		/* wakes them from any context */
	struct mutex read_mutex;	/* one consumer at a time */
	struct pid_namespace *pid_ns;	/* the opener's: record pids are in it */
	cpumask_var_t touched;		/* cpus whose PMU it programmed */
	bool hello;			/* HELLO done */
};

/* Per cpu. */
struct pfh_cpu {
	struct pfh_image *loaded;	/* the image this cpu's PMU holds, or NULL */
	struct pfh_target *cpu_target;	/* the cpu target attached here, or NULL */
	u64 evtsel[PFH_MAX_GP];		/* control cache: what PERFEVTSELx hold */
	u64 fixed_ctrl;			/* and FIXED_CTR_CTRL */
	bool ready;			/* LVTPC and cache set up: first open to last close */
	bool ovf_busy;			/* a switch-out is taking the overflows itself */
	bool lvtpc_armed;		/* LVTPC set for NMIs by us (lvtpc_saved is valid) */
	u32 lvtpc_found;		/* LVTPC when the module was loaded */
	u32 lvtpc_saved;		/* LVTPC before we armed it, put back at the last close */
	unsigned int swallow;		/* PMIs a switch-out took before they arrived */
	unsigned int nmi_seq;		/* overflows the NMI handler took */
	unsigned int nmis;		/* NMIs the handler saw */
};

DECLARE_PER_CPU(struct pfh_cpu, pfh_cpus);

extern struct mutex pfh_mutex;
/*
 * pfh_threads and every opener's targets list change under this lock as
 * well as pfh_mutex: the fork probe, which cannot sleep, adds children.
 */
extern spinlock_t pfh_targets_lock;
extern struct list_head pfh_files;
extern atomic_t pfh_nr_threads;
extern unsigned int pfh_nr_cpu_targets;

/* msr.c: the allowlist and the accessors of this cpu's PMU */
enum pfh_msr_kind {
	PFH_K_NONE = 0,
	PFH_K_EVTSEL,
	PFH_K_PMC,
	PFH_K_FIXED,
	PFH_K_FIXED_CTRL,
	PFH_K_STATUS,
	PFH_K_GLOBAL_CTRL,
	PFH_K_OVF_CTRL,
};

void pfh_msr_init(void);
enum pfh_msr_kind pfh_msr_classify(u32 msr, unsigned int *index);
int pfh_msr_check_write(enum pfh_msr_kind kind, u64 value);
u64 pfh_counter_mask(enum pfh_msr_kind kind);
int pfh_rdmsr(u32 msr, u64 *value);
int pfh_wrmsr(u32 msr, u64 value);
int pfh_wrmsr_ctrl(struct pfh_cpu *pc, u32 msr, u64 value);
void pfh_set_global(struct pfh_cpu *pc, struct pfh_image *img, u64 value);
u64 pfh_int_bits(const u64 *evtsel, u64 fixed_ctrl);
int pfh_image_op(struct pfh_image *img, struct pfmfs_helper_msr *op, bool write);
int pfh_batch_cpu(struct pfh_file *f, u32 cpu, struct pfmfs_helper_msr *ops,
		  u32 count, bool write);
int pfh_batch_thread(struct pfh_target *t, struct pfmfs_helper_msr *ops,
		     u32 count, bool write);

/* vpmu.c: images, targets attached and detached */
void pfh_cpu_quiesce(struct pfh_cpu *pc);
void pfh_link_thread(struct pfh_file *f, struct pfh_target *t);
void pfh_unlink(struct pfh_target *t);
void pfh_target_free_rcu(struct rcu_head *head);
void pfh_image_load(struct pfh_cpu *pc, struct pfh_target *t, bool by_switch);
void pfh_image_save(struct pfh_cpu *pc, struct pfh_target *t, bool by_switch);
struct pfh_target *pfh_find_thread(struct task_struct *task);
struct pfh_target *pfh_file_target(struct pfh_file *f, u32 kind, u32 id);
int pfh_attach(struct pfh_file *f, u32 kind, u32 id, u32 flags);
void pfh_detach(struct pfh_target *t);
void pfh_file_cleanup(struct pfh_file *f);

/* family.c: children attached at fork with the family's template */
void pfh_attach_child(struct pfh_target *parent, struct task_struct *child,
		      struct pfmfs_helper_record *rec);
int pfh_set_template(struct pfh_target *t, struct pfmfs_helper_msr *ops,
		     u32 count, u64 tag);

/* pmu_setup.c: the first open, the last close, the LVTPC, CPU_STATE */
int pfh_activate(void);
void pfh_arm_lvtpc(void);
void pfh_deactivate(void);
int pfh_cpu_state(struct pfmfs_helper_cpu_state *st);

/* sched.c: the tracepoint probes */
int pfh_sched_init(void);
void pfh_sched_exit(void);

/* hold.c */
int pfh_hold(struct pfh_target *t);
void pfh_release(struct pfh_target *t);
void pfh_hold_exit(void);

/* nmi.c */
int pfh_nmi_init(void);
void pfh_nmi_exit(void);
int pfh_reserve(void);
void pfh_unreserve(void);
void pfh_lvtpc_arm(struct pfh_cpu *pc);
void pfh_lvtpc_restore(struct pfh_cpu *pc);
void pfh_record_overflow(struct pfh_target *t, u64 status, struct pt_regs *regs);

/* ring.c */
int pfh_ring_init(struct pfh_ring *r, unsigned int records);
void pfh_ring_free(struct pfh_ring *r);
bool pfh_queue_record(struct pfh_file *f, struct pfmfs_helper_record *rec);
ssize_t pfh_ring_read(struct pfh_file *f, char __user *buf, size_t len,
		      bool nonblock);
bool pfh_ring_readable(struct pfh_file *f);
void pfh_ring_wake(struct irq_work *work);

/* emul.c: the test PMU */
int pfh_emul_init(void);
void pfh_emul_exit(void);
void pfh_emul_cpuid_0xa(u32 *eax, u32 *ebx, u32 *ecx, u32 *edx);
int pfh_emul_rdmsr(u32 msr, u64 *value);
int pfh_emul_wrmsr(u32 msr, u64 value);

/* dev.c */
int pfh_dev_init(void);
void pfh_dev_exit(void);

#endif /* PFH_H */
