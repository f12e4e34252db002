// SPDX-License-Identifier: GPL-2.0
/*
 * Overflow interrupts: the counters' reservation against perf and
 * the NMI watchdog, the LVTPC programmed for NMIs, and the NMI handler that
 * freezes the counters and records the overflow for the target's opener.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/kernel.h>
#include <linux/pid_namespace.h>
#include <linux/ptrace.h>
#include <linux/sched/task_stack.h>
#include <linux/smp.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/nmi.h>

#include "pfh.h"

/* The module's name: two builds under other names can be loaded side by side. */
#define PFH_NMI_NAME	KBUILD_MODNAME

static void pfh_release_counters(unsigned int n)
{
	while (n--) {
		release_evntsel_nmi(PFH_MSR_EVTSEL0 + n);
		release_perfctr_nmi(PFH_MSR_PMC0 + n);
	}
}

/*
 * Reserves every general-purpose counter in the kernel's perfctr bitmap,
 * which perf's x86 PMU honours: while we hold them perf cannot create
 * hardware events, and while perf (or the NMI watchdog, a perf event) holds
 * them we cannot have them.
 */
int pfh_reserve(void)
{
	unsigned int i;

	for (i = 0; i < pfh_shape.nr_gp; i++) {
		if (!reserve_perfctr_nmi(PFH_MSR_PMC0 + i))
			goto busy;
		if (!reserve_evntsel_nmi(PFH_MSR_EVTSEL0 + i)) {
			release_perfctr_nmi(PFH_MSR_PMC0 + i);
			goto busy;
		}
	}
	return 0;
busy:
	pfh_release_counters(i);
	pr_err("counter %u is in use by perf events or the NMI watchdog: stop them first (echo 0 > /proc/sys/kernel/nmi_watchdog; end perf users: perf, profilers, other PMU drivers)\n",
	       i);
	return -EBUSY;
}

void pfh_unreserve(void)
{
	pfh_release_counters(pfh_shape.nr_gp);
}

/* This cpu's LVTPC: saved, then NMI delivery. Irqs off. */
void pfh_lvtpc_arm(struct pfh_cpu *pc)
{
	pc->lvtpc_saved = apic_read(APIC_LVTPC);
	apic_write(APIC_LVTPC, APIC_DM_NMI);
}

void pfh_lvtpc_restore(struct pfh_cpu *pc)
{
	apic_write(APIC_LVTPC, pc->lvtpc_saved);
}

/*
 * The instruction pointer of an overflow: where the interrupt hit, if it
 * hit user space; else, for a user thread, where it last entered the kernel
 * (task_pt_regs(): the interrupt or system call it is in); else (a kernel
 * thread) the kernel address.
 */
static u64 pfh_overflow_ip(struct task_struct *task, struct pt_regs *regs)
{
	if (task == current && regs && user_mode(regs))
		return instruction_pointer(regs);
	if (task->mm && !(task->flags & PF_KTHREAD))
		return instruction_pointer(task_pt_regs(task));
	return regs ? instruction_pointer(regs) : 0;
}

/* Queues an OVERFLOW record for the target's opener. NMI-safe. */
void pfh_record_overflow(struct pfh_target *t, u64 status, struct pt_regs *regs)
{
	struct pfmfs_helper_record rec = {
		.type = PFMFS_HELPER_REC_OVERFLOW,
		.cpu = raw_smp_processor_id(),
		.value = status,
	};
	struct task_struct *task;

	if (t->kind == PFMFS_HELPER_TARGET_THREAD) {
		task = t->task;
		rec.pid = t->pid;
		rec.tid = t->id;
	} else {
		task = current;
		rec.pid = task_tgid_nr_ns(task, t->owner->pid_ns);
		rec.tid = task_pid_nr_ns(task, t->owner->pid_ns);
	}
	rec.ip = pfh_overflow_ip(task, regs);
	rec.time_ns = ktime_get_mono_fast_ns();
	pfh_queue_record(t->owner, &rec);
}

/*
 * An NMI: ours if GLOBAL_STATUS shows an overflow of a counter that asks for
 * an interrupt. Then the counters are frozen (GLOBAL_CTRL 0, and the image
 * loaded here marked so that it stays frozen), the status acknowledged, the
 * LVTPC unmasked (the CPU masks it when it delivers a PMI) and the overflow
 * recorded; readers are woken through irq_work.
 */
static int pfh_nmi_handler(unsigned int cmd, struct pt_regs *regs)
{
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);
	struct pfh_image *img;
	u64 status;

	WRITE_ONCE(pc->nmis, pc->nmis + 1);
	if (!READ_ONCE(pc->ready))
		return NMI_DONE;
	if (pfh_rdmsr(PFH_MSR_GLOBAL_STATUS, &status))
		return NMI_DONE;
	status &= pfh_int_bits(pc->evtsel, pc->fixed_ctrl);
	if (!status) {
		if (pc->swallow) {
			pc->swallow = 0;
			return NMI_HANDLED;
		}
		return NMI_DONE;
	}
	/* A switch-out is at it: it records these itself. */
	if (READ_ONCE(pc->ovf_busy))
		return NMI_HANDLED;

	pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, 0);
	img = READ_ONCE(pc->loaded);
	if (img)
		WRITE_ONCE(img->frozen, true);
	WRITE_ONCE(pc->nmi_seq, pc->nmi_seq + 1);
	pfh_wrmsr(PFH_MSR_GLOBAL_OVF, status);
	apic_write(APIC_LVTPC, APIC_DM_NMI);
	pc->swallow = 0;
	atomic64_inc(&pfh_stats.pmis);
	if (img)
		pfh_record_overflow(pfh_img_target(img), status, regs);
	return NMI_HANDLED;
}

static void pfh_lvtpc_note_fn(void *arg)
{
	this_cpu_ptr(&pfh_cpus)->lvtpc_found = apic_read(APIC_LVTPC);
}

int pfh_nmi_init(void)
{
	int ret;

	/* Refuse to load rather than fail every open. */
	ret = pfh_reserve();
	if (ret)
		return ret;
	pfh_unreserve();

	cpus_read_lock();
	on_each_cpu(pfh_lvtpc_note_fn, NULL, 1);
	cpus_read_unlock();

	ret = register_nmi_handler(NMI_LOCAL, pfh_nmi_handler, 0, PFH_NMI_NAME);
	if (ret)
		pr_err("cannot register the NMI handler: %d\n", ret);
	return ret;
}

void pfh_nmi_exit(void)
{
	/* Waits for a handler that runs on another cpu. */
	unregister_nmi_handler(NMI_LOCAL, PFH_NMI_NAME);
}
