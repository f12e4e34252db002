// SPDX-License-Identifier: GPL-2.0
/*
 * Holds, perfmon2's notify_block: a held thread does not return to user
 * space until it is released. A task_work runs as it returns and sleeps
 * (killable) until RELEASE, DETACH or the opener's close.
 *
 * The callback is code of this module, queued on a task that may only run
 * it much later (a thread asleep in a system call runs it when the call
 * returns). Each queued callback holds a module reference, so rmmod waits
 * for none of them: it is refused while one is queued. A callback drops
 * the reference as its last act; pfh_hold_exit() then waits with
 * synchronize_rcu_tasks() for the few instructions left after it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/task_work.h>
#include <linux/wait.h>

#include "pfh.h"

/*
 * Killable, and freezable where the kernel can (6.1's freezer): a held
 * thread holds no lock, so a suspend need not wait for its release.
 */
#ifdef TASK_FREEZABLE
#define PFH_HOLD_STATE	(TASK_KILLABLE | TASK_FREEZABLE)
#else
#define PFH_HOLD_STATE	TASK_KILLABLE
#endif

struct pfh_hold {
	struct callback_head work;	/* queued on the held thread */
	wait_queue_head_t wq;		/* the held thread sleeps here */
	refcount_t ref;			/* the target's and the callback's */
	bool released;			/* RELEASE, DETACH or close */
};

/* A hold was queued since the module was loaded. */
static bool pfh_hold_used;

static void pfh_hold_put(struct pfh_hold *h)
{
	if (refcount_dec_and_test(&h->ref))
		kfree(h);
}

static void pfh_hold_fn(struct callback_head *work)
{
	struct pfh_hold *h = container_of(work, struct pfh_hold, work);

	/* An exiting thread runs its task_work too: it does not wait. */
	if (!(current->flags & PF_EXITING) && !READ_ONCE(h->released)) {
		atomic64_inc(&pfh_stats.held);
		wait_event_state(h->wq, READ_ONCE(h->released), PFH_HOLD_STATE);
	}
	pfh_hold_put(h);
	module_put(THIS_MODULE);
}

/* HOLD, under pfh_mutex. */
int pfh_hold(struct pfh_target *t)
{
	struct pfh_hold *h;

	if (t->hold)
		return 0;
	h = kzalloc(sizeof(*h), GFP_KERNEL);
	if (!h)
		return -ENOMEM;
	init_waitqueue_head(&h->wq);
	refcount_set(&h->ref, 2);
	init_task_work(&h->work, pfh_hold_fn);
	__module_get(THIS_MODULE);
	pfh_hold_used = true;
	if (task_work_add(t->task, &h->work, TWA_RESUME)) {
		/* It is past exit_task_work(): exiting. */
		module_put(THIS_MODULE);
		kfree(h);
		return -ESRCH;
	}
	/* Running in user space on another cpu: make it pass the kernel. */
	kick_process(t->task);
	t->hold = h;
	return 0;
}

/* RELEASE, DETACH, close: under pfh_mutex. */
void pfh_release(struct pfh_target *t)
{
	struct pfh_hold *h = t->hold;

	if (!h)
		return;
	t->hold = NULL;
	WRITE_ONCE(h->released, true);
	wake_up(&h->wq);
	pfh_hold_put(h);
}

/* Unload: every callback dropped its reference; let them leave our text. */
void pfh_hold_exit(void)
{
	/* An RCU-tasks grace period takes a second or so: only when needed. */
	if (pfh_hold_used)
		synchronize_rcu_tasks();
}
