// SPDX-License-Identifier: GPL-2.0
/*
 * The PMU set up at the first open and put back at the last close: every
 * cpu's control cache, the overflow status a previous user left, the LVTPC
 * for NMIs (armed when an opener first programs the PMU), and CPU_STATE,
 * which reads them back for the tests.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/smp.h>
#include <asm/apic.h>

#include "pfh.h"

static bool pfh_lvtpc_armed;	/* since the first ATTACH or cpu write */

/*
 * IPI of the first open: the control cache filled, and overflows left in
 * GLOBAL_STATUS by a previous user acknowledged (an NMI would take them for
 * ours).
 */
static void pfh_cpu_up_fn(void *arg)
{
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);
	unsigned int i;
	u64 status;

	for (i = 0; i < pfh_shape.nr_gp; i++)
		if (pfh_rdmsr(PFH_MSR_EVTSEL0 + i, &pc->evtsel[i]))
			pc->evtsel[i] = PFH_CACHE_UNKNOWN;
	pc->fixed_ctrl = 0;
	if (pfh_shape.nr_fixed && pfh_rdmsr(PFH_MSR_FIXED_CTRL, &pc->fixed_ctrl))
		pc->fixed_ctrl = PFH_CACHE_UNKNOWN;
	if (!pfh_rdmsr(PFH_MSR_GLOBAL_STATUS, &status) &&
	    (status & pfh_shape.counter_bits))
		pfh_wrmsr(PFH_MSR_GLOBAL_OVF, status & pfh_shape.counter_bits);
	pc->loaded = NULL;
	pc->swallow = 0;
	pc->lvtpc_armed = false;
	WRITE_ONCE(pc->ready, true);
}

/* IPI of the last close: counters stopped, controls 0, LVTPC put back. */
static void pfh_cpu_down_fn(void *arg)
{
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);

	if (!pc->ready)
		return;
	pfh_cpu_quiesce(pc);
	WRITE_ONCE(pc->ready, false);
	if (pc->lvtpc_armed)
		pfh_lvtpc_restore(pc);
	pc->lvtpc_armed = false;
}

static void pfh_lvtpc_arm_fn(void *arg)
{
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);

	if (pc->ready && !pc->lvtpc_armed) {
		pfh_lvtpc_arm(pc);
		pc->lvtpc_armed = true;
	}
}

/*
 * LVTPC for NMIs on every cpu, when an opener first programs the PMU (its
 * first ATTACH or cpu MSR write) rather than at the first open: an opener
 * that only looks (CPU_STATE, STATS) leaves the APIC as it was. Put back
 * at the last close. Under pfh_mutex.
 */
void pfh_arm_lvtpc(void)
{
	if (pfh_lvtpc_armed)
		return;
	cpus_read_lock();
	on_each_cpu(pfh_lvtpc_arm_fn, NULL, 1);
	cpus_read_unlock();
	pfh_lvtpc_armed = true;
}

/* The first open, under pfh_mutex: the counters reserved, the cache filled. */
int pfh_activate(void)
{
	int ret = pfh_reserve();

	if (ret)
		return ret;
	cpus_read_lock();
	on_each_cpu(pfh_cpu_up_fn, NULL, 1);
	cpus_read_unlock();
	return 0;
}

/* The last close, under pfh_mutex; every target is detached. */
void pfh_deactivate(void)
{
	int cpu;

	cpus_read_lock();
	on_each_cpu(pfh_cpu_down_fn, NULL, 1);
	cpus_read_unlock();
	/* cpus that went offline meanwhile */
	for_each_possible_cpu(cpu)
		WRITE_ONCE(per_cpu(pfh_cpus, cpu).ready, false);
	pfh_lvtpc_armed = false;
	pfh_unreserve();
}

struct pfh_cpu_state_req {
	struct pfmfs_helper_cpu_state *st;
	int ret;
};

static void pfh_cpu_state_fn(void *arg)
{
	struct pfh_cpu_state_req *req = arg;
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);
	struct pfh_image *img = READ_ONCE(pc->loaded);
	struct pfh_target *t;

	req->st->lvtpc = apic_read(APIC_LVTPC);
	req->st->lvtpc_found = pc->lvtpc_found;
	req->st->owner_tid = 0;
	if (img) {
		t = pfh_img_target(img);
		if (t->kind == PFMFS_HELPER_TARGET_THREAD)
			req->st->owner_tid = t->id;
	}
	req->ret = pfh_rdmsr(PFH_MSR_GLOBAL_CTRL, &req->st->global_ctrl);
}

/* CPU_STATE, under pfh_mutex (the loaded target cannot be freed). */
int pfh_cpu_state(struct pfmfs_helper_cpu_state *st)
{
	struct pfh_cpu_state_req req = { .st = st };

	if (smp_call_function_single(st->cpu, pfh_cpu_state_fn, &req, 1))
		return -EINVAL;
	return req.ret;
}
