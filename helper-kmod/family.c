// SPDX-License-Identifier: GPL-2.0
/*
 * A target's family (inherit): the children its thread creates, attached
 * at fork, before they first run, with the register image the engine gave
 * beforehand (TEMPLATE), so that they count from their first instruction.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "pfh.h"

/*
 * The fork probe, for a parent whose family follows its children: the child
 * is attached, before it first runs, with the family's template, if its
 * FORK record `rec` can be queued (else nobody would know it is counted).
 * The record is queued here either way. Preemption is off, under RCU; the
 * child has not been woken, so no cpu loads it before it is linked.
 */
void pfh_attach_child(struct pfh_target *parent, struct task_struct *child,
		      struct pfmfs_helper_record *rec)
{
	struct pfh_family *fam = parent->family;
	struct pfh_file *f = parent->owner;
	struct pfh_target *t = NULL;
	unsigned long flags;
	bool queued, free_now, dead;

	/*
	 * A parent whose monitoring a set-id exec ended (pfh_probe_exec) has
	 * no children to follow: the opener's rights were checked against
	 * credentials it no longer has, and perf's inherited events end in
	 * that exec too. Its FORK record still tells the opener.
	 */
	raw_spin_lock_irqsave(&parent->img.lock, flags);
	dead = parent->img.dead;
	raw_spin_unlock_irqrestore(&parent->img.lock, flags);
	if (rec->child_pid && rec->child_tid && !dead)
		t = kzalloc(sizeof(*t), GFP_NOWAIT | __GFP_NOWARN);
	if (t) {
		raw_spin_lock_init(&t->img.lock);
		t->img.cpu = -1;
		t->owner = f;
		t->kind = PFMFS_HELPER_TARGET_THREAD;
		t->id = rec->child_tid;
		t->pid = rec->child_pid;
		raw_spin_lock_irqsave(&fam->lock, flags);
		memcpy(t->img.evtsel, fam->template.evtsel, sizeof(t->img.evtsel));
		memcpy(t->img.pmc, fam->template.pmc, sizeof(t->img.pmc));
		memcpy(t->img.fixed, fam->template.fixed, sizeof(t->img.fixed));
		t->img.fixed_ctrl = fam->template.fixed_ctrl;
		t->img.global_ctrl = fam->template.global_ctrl;
		rec->value = fam->tag;
		raw_spin_unlock_irqrestore(&fam->lock, flags);
		refcount_inc(&fam->ref);
		t->family = fam;
		get_task_struct(child);
		t->task = child;
	}

	spin_lock(&pfh_targets_lock);
	/*
	 * Its pid exists since copy_process(): an ATTACH by another opener
	 * may have taken it already (pfh_attach_thread() checks again under
	 * this lock, so one of the two wins).
	 */
	if (t && parent->linked && !f->closing && !pfh_find_thread(child)) {
		pfh_link_thread(f, t);
		rec->flags |= PFMFS_HELPER_FORK_ATTACHED;
	} else {
		rec->value = 0;
	}
	queued = pfh_queue_record(f, rec);
	if (t && t->linked && !queued)
		pfh_unlink(t);
	/*
	 * Decided under the lock: once it is linked and the lock dropped, it
	 * is the opener's, and a DETACH or close may free it at once.
	 */
	free_now = t && !t->linked;
	spin_unlock(&pfh_targets_lock);
	/* Not linked, or seen in the hash for a moment: freed after RCU readers. */
	if (free_now)
		call_rcu(&t->rcu, pfh_target_free_rcu);
}

/* TEMPLATE, under pfh_mutex: rebuilt whole, all or nothing. */
int pfh_set_template(struct pfh_target *t, struct pfmfs_helper_msr *ops,
		     u32 count, u64 tag)
{
	struct pfh_family *fam = t->family;
	struct pfh_image img;
	unsigned long flags;
	unsigned int n;
	u32 i;

	if (!fam)
		return -ENOENT;
	memset(&img, 0, sizeof(img));
	for (i = 0; i < count; i++) {
		switch (pfh_msr_classify(ops[i].msr, &n)) {
		case PFH_K_EVTSEL:
		case PFH_K_PMC:
		case PFH_K_FIXED:
		case PFH_K_FIXED_CTRL:
		case PFH_K_GLOBAL_CTRL:
			break;
		default:
			return -EINVAL;
		}
		if (pfh_image_op(&img, &ops[i], true))
			return -EINVAL;
	}
	raw_spin_lock_irqsave(&fam->lock, flags);
	memcpy(fam->template.evtsel, img.evtsel, sizeof(img.evtsel));
	memcpy(fam->template.pmc, img.pmc, sizeof(img.pmc));
	memcpy(fam->template.fixed, img.fixed, sizeof(img.fixed));
	fam->template.fixed_ctrl = img.fixed_ctrl;
	fam->template.global_ctrl = img.global_ctrl;
	fam->tag = tag;
	raw_spin_unlock_irqrestore(&fam->lock, flags);
	return 0;
}
