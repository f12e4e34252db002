// SPDX-License-Identifier: GPL-2.0
/*
 * The scheduler's tracepoints: sched_switch saves and loads the
 * images of monitored threads and reports an attached thread's exit at
 * its last switch-out, sched_process_fork reports its children and
 * attaches them where the parent follows its children, and
 * sched_process_exec ends the monitoring of a thread that execs a set-id
 * program.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/string.h>
#include <linux/timekeeping.h>
#include <linux/tracepoint.h>

#include "pfh.h"

struct linux_binprm;

/*
 * An attached thread's exit: an EXIT record, queued at its last switch-out
 * (sched_switch with prev_state TASK_DEAD), after that switch-out saved
 * its final counts in its image, and with its CPU time as the scheduler
 * has just brought it up to date there. Queued at sched_process_exit
 * instead, the time would be as of the last tick (up to 4 ms short) and
 * would miss the exit work that follows (exit_files, exit_notify, ...),
 * which the counters count: a count that ran past its time.
 *
 * The thread stays attached until its opener detaches it: its image
 * keeps its final counts (perfmon2 kept them past the thread), where the
 * daemon reads them, and the task reference keeps the hash key unique.
 */
static void pfh_queue_exit(struct pfh_target *t, struct task_struct *p)
{
	struct pfmfs_helper_record rec = { .type = PFMFS_HELPER_REC_EXIT };

	if (test_and_set_bit(PFH_T_EXITED, &t->flags))
		return;
	rec.cpu = raw_smp_processor_id();
	rec.pid = t->pid;
	rec.tid = t->id;
	rec.value = READ_ONCE(p->se.sum_exec_runtime);
	rec.time_ns = ktime_get_mono_fast_ns();
	/* irq_work wakes the reader: safe under the runqueue lock held here. */
	pfh_queue_record(t->owner, &rec);
}

static void pfh_probe_switch(void *data, bool preempt,
			     struct task_struct *prev,
			     struct task_struct *next,
			     unsigned int prev_state)
{
	struct pfh_target *tprev, *tnext;
	struct pfh_cpu *pc;

	if (!atomic_read(&pfh_nr_threads))
		return;
	rcu_read_lock();
	tprev = pfh_find_thread(prev);
	tnext = pfh_find_thread(next);
	if (tprev || tnext) {
		pc = this_cpu_ptr(&pfh_cpus);
		if (tprev) {
			pfh_image_save(pc, tprev, true);
			if (prev_state & TASK_DEAD)
				pfh_queue_exit(tprev, prev);
		}
		if (tnext)
			pfh_image_load(pc, tnext, true);
	}
	rcu_read_unlock();
}

/*
 * Called before the child is first woken. A parent that follows its
 * children gets the child attached (pfh_attach_child queues the record).
 */
static void pfh_probe_fork(void *data, struct task_struct *parent,
			   struct task_struct *child)
{
	struct pfmfs_helper_record rec = { .type = PFMFS_HELPER_REC_FORK };
	struct pfh_target *t;

	if (!atomic_read(&pfh_nr_threads))
		return;
	rcu_read_lock();
	t = pfh_find_thread(parent);
	if (t) {
		rec.cpu = raw_smp_processor_id();
		rec.pid = t->pid;
		rec.tid = t->id;
		rec.child_pid = task_tgid_nr_ns(child, t->owner->pid_ns);
		rec.child_tid = task_pid_nr_ns(child, t->owner->pid_ns);
		rec.time_ns = ktime_get_mono_fast_ns();
		if (t->family)
			pfh_attach_child(t, child, &rec);
		else
			pfh_queue_record(t->owner, &rec);
	}
	rcu_read_unlock();
}

/*
 * An exec that leaves the thread's memory undumpable for its own user (a
 * set-uid or set-gid program, or one it may not read) ends its monitoring,
 * as the kernel ends perf's events there (begin_new_exec): the daemon
 * checked the opener's rights against the thread's old credentials, which
 * no longer hold. The image is saved, never loaded again (dead), and an
 * EXIT record tells the opener, who keeps the counts as of the exec. The
 * new credentials were committed before this tracepoint; in between the
 * thread ran only the kernel's exec work, which user-level counters do not
 * count.
 */
static void pfh_probe_exec(void *data, struct task_struct *p, pid_t old_pid,
			   struct linux_binprm *bprm)
{
	struct pfh_target *t;
	unsigned long flags;

	if (!atomic_read(&pfh_nr_threads) || !p->mm ||
	    get_dumpable(p->mm) == SUID_DUMP_USER)
		return;
	rcu_read_lock();
	t = pfh_find_thread(p);
	if (t) {
		local_irq_save(flags);
		pfh_image_save(this_cpu_ptr(&pfh_cpus), t, true);
		raw_spin_lock(&t->img.lock);
		t->img.dead = true;
		raw_spin_unlock(&t->img.lock);
		pfh_queue_exit(t, p);
		local_irq_restore(flags);
	}
	rcu_read_unlock();
}

static struct pfh_tracepoint {
	const char *name;		/* the tracepoint */
	void *probe;			/* our probe, of its prototype */
	struct tracepoint *tp;		/* found by for_each_kernel_tracepoint() */
	bool registered;
} pfh_tps[] = {
	{ "sched_switch", pfh_probe_switch },
	{ "sched_process_fork", pfh_probe_fork },
	{ "sched_process_exec", pfh_probe_exec },
};

static void pfh_find_tp(struct tracepoint *tp, void *priv)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pfh_tps); i++)
		if (!strcmp(tp->name, pfh_tps[i].name))
			pfh_tps[i].tp = tp;
}

void pfh_sched_exit(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pfh_tps); i++) {
		if (pfh_tps[i].registered)
			tracepoint_probe_unregister(pfh_tps[i].tp,
						    pfh_tps[i].probe, NULL);
		pfh_tps[i].registered = false;
	}
	/* No probe runs any more, nor will. */
	tracepoint_synchronize_unregister();
}

int pfh_sched_init(void)
{
	unsigned int i;
	int ret;

	for_each_kernel_tracepoint(pfh_find_tp, NULL);
	for (i = 0; i < ARRAY_SIZE(pfh_tps); i++) {
		if (!pfh_tps[i].tp) {
			pr_err("no tracepoint %s in this kernel\n",
			       pfh_tps[i].name);
			ret = -ENOENT;
			goto err;
		}
		ret = tracepoint_probe_register(pfh_tps[i].tp,
						pfh_tps[i].probe, NULL);
		if (ret) {
			pr_err("cannot attach to tracepoint %s: %d\n",
			       pfh_tps[i].name, ret);
			goto err;
		}
		pfh_tps[i].registered = true;
	}
	return 0;
err:
	pfh_sched_exit();
	return ret;
}
