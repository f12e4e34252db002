// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread and per-cpu virtual PMUs: register images loaded and
 * saved on a cpu (with the per-cpu control cache, perfctr's way: only the
 * control registers that differ are written), and targets attached and
 * detached. Children attached at fork are family.c's; the PMU set up at the
 * first open and put back at the last close is pmu_setup.c's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/hash.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>

#include "pfh.h"

DEFINE_PER_CPU(struct pfh_cpu, pfh_cpus);
/* Targets, openers, the first open and the last close (see pfh.h). */
DEFINE_MUTEX(pfh_mutex);
DEFINE_SPINLOCK(pfh_targets_lock);
LIST_HEAD(pfh_files);
atomic_t pfh_nr_threads = ATOMIC_INIT(0);
unsigned int pfh_nr_cpu_targets;

/* Attached threads by task_struct pointer; readers under RCU. */
static DEFINE_HASHTABLE(pfh_threads, 8);

struct pfh_target *pfh_find_thread(struct task_struct *task)
{
	struct pfh_target *t;

	hash_for_each_possible_rcu(pfh_threads, t, hnode, (unsigned long)task)
		if (t->task == task)
			return t;
	return NULL;
}

/* Under pfh_mutex: the target stays until the caller lets go of it. */
struct pfh_target *pfh_file_target(struct pfh_file *f, u32 kind, u32 id)
{
	struct pfh_target *t, *found = NULL;

	spin_lock(&pfh_targets_lock);
	list_for_each_entry(t, &f->targets, node) {
		if (t->kind == kind && t->id == id) {
			found = t;
			break;
		}
	}
	spin_unlock(&pfh_targets_lock);
	return found;
}

/* Stops the counters of this cpu's PMU and clears what was programmed. */
void pfh_cpu_quiesce(struct pfh_cpu *pc)
{
	unsigned int i;
	u64 status;

	pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, 0);
	for (i = 0; i < pfh_shape.nr_gp; i++)
		if (pc->evtsel[i])
			pfh_wrmsr_ctrl(pc, PFH_MSR_EVTSEL0 + i, 0);
	if (pfh_shape.nr_fixed && pc->fixed_ctrl)
		pfh_wrmsr_ctrl(pc, PFH_MSR_FIXED_CTRL, 0);
	if (!pfh_rdmsr(PFH_MSR_GLOBAL_STATUS, &status) &&
	    (status & pfh_shape.counter_bits))
		pfh_wrmsr(PFH_MSR_GLOBAL_OVF, status & pfh_shape.counter_bits);
}

/*
 * GLOBAL_CTRL of an image being loaded: 0 while frozen. An overflow NMI
 * while it is written freezes the image (see pfh_set_global()).
 */
static void pfh_load_global(struct pfh_cpu *pc, struct pfh_image *img)
{
	unsigned int seq = READ_ONCE(pc->nmi_seq);

	barrier();
	pfh_wrmsr(PFH_MSR_GLOBAL_CTRL,
		  READ_ONCE(img->frozen) ? 0 : img->global_ctrl);
	barrier();
	if (READ_ONCE(pc->nmi_seq) != seq) {
		pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, 0);
		WRITE_ONCE(img->frozen, true);
	}
}

/*
 * Loads a thread's image on this cpu (irqs off): the control registers that
 * differ from the cache, every counter, then GLOBAL_CTRL. `by_switch`:
 * sched_switch does it, and the stats count it.
 */
void pfh_image_load(struct pfh_cpu *pc, struct pfh_target *t, bool by_switch)
{
	struct pfh_image *img = &t->img;
	unsigned int i, ctrl = 0;

	raw_spin_lock(&img->lock);
	if (img->dead || img->cpu >= 0 || !pc->ready)
		goto out;
	if (WARN_ON_ONCE(pc->loaded))
		goto out;
	for (i = 0; i < pfh_shape.nr_gp; i++) {
		if (pc->evtsel[i] != img->evtsel[i]) {
			pfh_wrmsr_ctrl(pc, PFH_MSR_EVTSEL0 + i, img->evtsel[i]);
			ctrl++;
		}
	}
	if (pfh_shape.nr_fixed && pc->fixed_ctrl != img->fixed_ctrl) {
		pfh_wrmsr_ctrl(pc, PFH_MSR_FIXED_CTRL, img->fixed_ctrl);
		ctrl++;
	}
	for (i = 0; i < pfh_shape.nr_gp; i++)
		pfh_wrmsr(PFH_MSR_PMC0 + i, img->pmc[i]);
	for (i = 0; i < pfh_shape.nr_fixed; i++)
		pfh_wrmsr(PFH_MSR_FIXED_CTR0 + i, img->fixed[i]);

	/* Loaded before it counts: an overflow NMI must find its owner. */
	img->cpu = smp_processor_id();
	WRITE_ONCE(pc->loaded, img);
	if (!cpumask_test_cpu(img->cpu, t->owner->touched))
		cpumask_set_cpu(img->cpu, t->owner->touched);
	pfh_load_global(pc, img);
	if (by_switch) {
		atomic64_inc(&pfh_stats.switch_ins);
		atomic64_add(ctrl, &pfh_stats.ctrl_writes);
		atomic64_add(pfh_shape.nr_gp + pfh_shape.nr_fixed,
			     &pfh_stats.counter_writes);
		atomic64_inc(&pfh_stats.global_writes);
	}
out:
	raw_spin_unlock(&img->lock);
}

/*
 * Saves a thread's image if it is loaded on this cpu (irqs off): stops the
 * counters (GLOBAL_CTRL 0), reads them, and takes the overflows whose
 * interrupt had not arrived yet, as the NMI handler would have.
 */
void pfh_image_save(struct pfh_cpu *pc, struct pfh_target *t, bool by_switch)
{
	struct pfh_image *img = &t->img;
	u64 status = 0, intr;
	unsigned int i;

	raw_spin_lock(&img->lock);
	if (img->cpu != smp_processor_id())
		goto out;
	pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, 0);
	WRITE_ONCE(pc->ovf_busy, true);
	barrier();
	for (i = 0; i < pfh_shape.nr_gp; i++)
		pfh_rdmsr(PFH_MSR_PMC0 + i, &img->pmc[i]);
	for (i = 0; i < pfh_shape.nr_fixed; i++)
		pfh_rdmsr(PFH_MSR_FIXED_CTR0 + i, &img->fixed[i]);
	if (pfh_rdmsr(PFH_MSR_GLOBAL_STATUS, &status))
		status = 0;
	status &= pfh_shape.counter_bits;
	if (status) {
		pfh_wrmsr(PFH_MSR_GLOBAL_OVF, status);
		intr = status & pfh_int_bits(img->evtsel, img->fixed_ctrl);
		if (intr && by_switch && !img->dead) {
			WRITE_ONCE(img->frozen, true);
			atomic64_inc(&pfh_stats.pmis);
			pfh_record_overflow(t, intr, NULL);
			/* On hardware its PMI may be on the way. */
			if (!pfh_emulate)
				pc->swallow = 1;
		}
		img->status |= status & ~intr;
	}
	barrier();
	WRITE_ONCE(pc->ovf_busy, false);
	WRITE_ONCE(pc->loaded, NULL);
	img->cpu = -1;
	if (by_switch) {
		atomic64_inc(&pfh_stats.switch_outs);
		atomic64_inc(&pfh_stats.global_writes);
	}
out:
	raw_spin_unlock(&img->lock);
}

/* IPI of ATTACH: loads the thread's image if it runs here right now. */
static void pfh_attach_load_fn(void *arg)
{
	struct pfh_target *t = arg;

	if (current == t->task)
		pfh_image_load(this_cpu_ptr(&pfh_cpus), t, false);
}

/* IPI of a cpu ATTACH: every register 0, and the cpu's image loaded. */
static void pfh_cpu_attach_fn(void *arg)
{
	struct pfh_target *t = arg;
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);
	unsigned int i;

	raw_spin_lock(&t->img.lock);
	pfh_cpu_quiesce(pc);
	for (i = 0; i < pfh_shape.nr_gp; i++)
		pfh_wrmsr(PFH_MSR_PMC0 + i, 0);
	for (i = 0; i < pfh_shape.nr_fixed; i++)
		pfh_wrmsr(PFH_MSR_FIXED_CTR0 + i, 0);
	t->img.cpu = smp_processor_id();
	WRITE_ONCE(pc->loaded, &t->img);
	raw_spin_unlock(&t->img.lock);
}

/* IPI of DETACH: stops the target's counters here and unloads it. */
static void pfh_unload_fn(void *arg)
{
	struct pfh_target *t = arg;
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);

	if (t->kind == PFMFS_HELPER_TARGET_THREAD) {
		pfh_image_save(pc, t, false);
		return;
	}
	raw_spin_lock(&t->img.lock);
	if (t->img.cpu == smp_processor_id()) {
		pfh_cpu_quiesce(pc);
		WRITE_ONCE(pc->loaded, NULL);
		t->img.cpu = -1;
	}
	raw_spin_unlock(&t->img.lock);
}

static struct pfh_target *pfh_target_alloc(struct pfh_file *f, u32 kind, u32 id)
{
	struct pfh_target *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	raw_spin_lock_init(&t->img.lock);
	t->img.cpu = -1;
	t->owner = f;
	t->kind = kind;
	t->id = id;
	return t;
}

void pfh_target_free_rcu(struct rcu_head *head)
{
	struct pfh_target *t = container_of(head, struct pfh_target, rcu);

	if (t->task)
		put_task_struct(t->task);
	if (t->family && refcount_dec_and_test(&t->family->ref))
		kfree(t->family);
	kfree(t);
}

/* Under pfh_targets_lock. */
void pfh_link_thread(struct pfh_file *f, struct pfh_target *t)
{
	hash_add_rcu(pfh_threads, &t->hnode, (unsigned long)t->task);
	list_add_tail(&t->node, &f->targets);
	t->linked = true;
	atomic_inc(&pfh_nr_threads);
	atomic64_inc(&pfh_stats.attached);
}

/* Under pfh_targets_lock. */
void pfh_unlink(struct pfh_target *t)
{
	list_del(&t->node);
	t->linked = false;
	if (t->kind == PFMFS_HELPER_TARGET_THREAD) {
		hash_del_rcu(&t->hnode);
		atomic_dec(&pfh_nr_threads);
	}
	atomic64_dec(&pfh_stats.attached);
}

static int pfh_attach_thread(struct pfh_file *f, u32 tid, u32 flags)
{
	struct task_struct *task = NULL;
	struct pfh_target *t;
	unsigned int tries;
	struct pid *pid;
	int ret;

	if (tid && tid <= INT_MAX) {
		pid = find_get_pid(tid);
		task = get_pid_task(pid, PIDTYPE_PID);
		put_pid(pid);
	}
	if (!task) {
		pr_warn_ratelimited("pid %d: ATTACH: no thread %u\n",
				    task_pid_nr(current), tid);
		return -ESRCH;
	}
	if (task->flags & (PF_KTHREAD | PF_EXITING)) {
		ret = task->flags & PF_KTHREAD ? -EINVAL : -ESRCH;
		pr_warn_ratelimited("pid %d: ATTACH: thread %u is a kernel thread or exiting\n",
				    task_pid_nr(current), tid);
		put_task_struct(task);
		return ret;
	}
	/* Attached already: checked below, under the lock the fork probe takes. */
	if (pfh_nr_cpu_targets) {
		pr_warn_ratelimited("pid %d: ATTACH: thread %u: cpus are monitored\n",
				    task_pid_nr(current), tid);
		put_task_struct(task);
		return -EBUSY;
	}
	t = pfh_target_alloc(f, PFMFS_HELPER_TARGET_THREAD, tid);
	if (t && (flags & PFMFS_HELPER_ATTACH_INHERIT)) {
		t->family = kzalloc(sizeof(*t->family), GFP_KERNEL);
		if (t->family) {
			refcount_set(&t->family->ref, 1);
			raw_spin_lock_init(&t->family->lock);
			raw_spin_lock_init(&t->family->template.lock);
			t->family->template.cpu = -1;
		}
	}
	if (!t || ((flags & PFMFS_HELPER_ATTACH_INHERIT) && !t->family)) {
		kfree(t);
		put_task_struct(task);
		return -ENOMEM;
	}
	t->task = task;
	t->pid = task_tgid_nr_ns(task, f->pid_ns);
	spin_lock(&pfh_targets_lock);
	/* A child of an inheriting thread may have been attached meanwhile. */
	if (pfh_find_thread(task)) {
		spin_unlock(&pfh_targets_lock);
		pr_warn_ratelimited("pid %d: ATTACH: thread %u: attached already\n",
				    task_pid_nr(current), tid);
		kfree(t->family);
		kfree(t);
		put_task_struct(task);
		return -EBUSY;
	}
	pfh_link_thread(f, t);
	spin_unlock(&pfh_targets_lock);

	/*
	 * Exit sets PF_EXITING before its tracepoint; a thread that exits
	 * now either shows PF_EXITING here or finds itself in the hash there.
	 */
	smp_mb();
	if (task->flags & PF_EXITING) {
		pfh_detach(t);
		return -ESRCH;
	}
	/*
	 * Running right now: load it where it runs (sched_switch loads it
	 * from its next switch-in on).
	 */
	for (tries = 0; tries < 100; tries++) {
		if (!READ_ONCE(task->on_cpu) || READ_ONCE(t->img.cpu) >= 0)
			break;
		smp_call_function_single(task_cpu(task), pfh_attach_load_fn, t, 1);
	}
	return 0;
}

static int pfh_attach_cpu(struct pfh_file *f, u32 cpu)
{
	struct pfh_cpu *pc;
	struct pfh_target *t;
	int ret = 0;

	cpus_read_lock();
	if (cpu >= nr_cpu_ids || !cpu_online(cpu)) {
		pr_warn_ratelimited("pid %d: ATTACH: no online cpu %u\n",
				    task_pid_nr(current), cpu);
		ret = -EINVAL;
		goto out;
	}
	pc = per_cpu_ptr(&pfh_cpus, cpu);
	if (atomic_read(&pfh_nr_threads) || pc->cpu_target) {
		pr_warn_ratelimited("pid %d: ATTACH: cpu %u: %s\n",
				    task_pid_nr(current), cpu,
				    pc->cpu_target ? "attached already" :
				    "threads are monitored");
		ret = -EBUSY;
		goto out;
	}
	t = pfh_target_alloc(f, PFMFS_HELPER_TARGET_CPU, cpu);
	if (!t) {
		ret = -ENOMEM;
		goto out;
	}
	pc->cpu_target = t;
	pfh_nr_cpu_targets++;
	spin_lock(&pfh_targets_lock);
	list_add_tail(&t->node, &f->targets);
	t->linked = true;
	atomic64_inc(&pfh_stats.attached);
	spin_unlock(&pfh_targets_lock);
	cpumask_set_cpu(cpu, f->touched);
	smp_call_function_single(cpu, pfh_cpu_attach_fn, t, 1);
out:
	cpus_read_unlock();
	return ret;
}

/* ATTACH, under pfh_mutex. */
int pfh_attach(struct pfh_file *f, u32 kind, u32 id, u32 flags)
{
	int ret;

	if (kind == PFMFS_HELPER_TARGET_THREAD)
		ret = pfh_attach_thread(f, id, flags);
	else
		ret = pfh_attach_cpu(f, id);
	if (!ret)
		pfh_arm_lvtpc();
	return ret;
}

/*
 * Forgets a target, under pfh_mutex: no cpu loads it again (dead), the cpu
 * that holds it stops its counters and unloads it, and only then does it
 * leave the hash (sched_switch must find it to save it until it is
 * unloaded); a hold is released, and it is freed once no probe or NMI
 * handler can see it.
 */
void pfh_detach(struct pfh_target *t)
{
	struct pfh_image *img = &t->img;
	unsigned long flags;
	int cpu;

	raw_spin_lock_irqsave(&img->lock, flags);
	img->dead = true;
	cpu = img->cpu;
	raw_spin_unlock_irqrestore(&img->lock, flags);
	if (cpu >= 0 && smp_call_function_single(cpu, pfh_unload_fn, t, 1)) {
		/* The cpu went offline: its PMU holds nothing for anyone. */
		WRITE_ONCE(per_cpu(pfh_cpus, cpu).loaded, NULL);
	}
	spin_lock(&pfh_targets_lock);
	pfh_unlink(t);
	spin_unlock(&pfh_targets_lock);
	if (t->kind == PFMFS_HELPER_TARGET_THREAD) {
		pfh_release(t);
	} else {
		per_cpu(pfh_cpus, t->id).cpu_target = NULL;
		pfh_nr_cpu_targets--;
	}
	call_rcu(&t->rcu, pfh_target_free_rcu);
}

/* IPI at a closing opener's cpus: clears what it left, if no image is loaded. */
static void pfh_clean_cpu_fn(void *arg)
{
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);

	if (pc->ready && !READ_ONCE(pc->loaded))
		pfh_cpu_quiesce(pc);
}

/* The close of an opener, under pfh_mutex: nothing keeps counting for it. */
void pfh_file_cleanup(struct pfh_file *f)
{
	struct pfh_target *t, *next;

	/* From now on no fork adds a child to it: the list only shrinks. */
	spin_lock(&pfh_targets_lock);
	f->closing = true;
	spin_unlock(&pfh_targets_lock);
	list_for_each_entry_safe(t, next, &f->targets, node)
		pfh_detach(t);
	cpus_read_lock();
	on_each_cpu_mask(f->touched, pfh_clean_cpu_fn, NULL, 1);
	cpus_read_unlock();
}
