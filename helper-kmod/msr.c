// SPDX-License-Identifier: GPL-2.0
/*
 * The MSR allowlist (data built from the PMU's shape), the accessors
 * of this cpu's PMU (hardware or the test PMU), and MSR batches run on a cpu
 * or on a thread's image: one IPI per batch.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/smp.h>
#include <asm/msr.h>

#include "pfh.h"

/* One run of allowed MSRs. */
struct pfh_msr_range {
	u32 base;		/* first MSR */
	u32 count;		/* how many (0: the PMU lacks them) */
	enum pfh_msr_kind kind;	/* what they are */
};

static struct pfh_msr_range pfh_allow[7] __read_mostly;

void pfh_msr_init(void)
{
	const struct pfh_shape *s = &pfh_shape;
	struct pfh_msr_range table[] = {
		{ PFH_MSR_EVTSEL0, s->nr_gp, PFH_K_EVTSEL },
		{ PFH_MSR_PMC0, s->nr_gp, PFH_K_PMC },
		{ PFH_MSR_FIXED_CTR0, s->nr_fixed, PFH_K_FIXED },
		{ PFH_MSR_FIXED_CTRL, s->nr_fixed ? 1 : 0, PFH_K_FIXED_CTRL },
		{ PFH_MSR_GLOBAL_STATUS, 1, PFH_K_STATUS },
		{ PFH_MSR_GLOBAL_CTRL, 1, PFH_K_GLOBAL_CTRL },
		{ PFH_MSR_GLOBAL_OVF, 1, PFH_K_OVF_CTRL },
	};

	BUILD_BUG_ON(ARRAY_SIZE(table) != ARRAY_SIZE(pfh_allow));
	memcpy(pfh_allow, table, sizeof(table));
}

/* The kind of an allowed MSR and its counter number, or PFH_K_NONE. */
enum pfh_msr_kind pfh_msr_classify(u32 msr, unsigned int *index)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(pfh_allow); i++) {
		const struct pfh_msr_range *r = &pfh_allow[i];

		if (msr >= r->base && msr - r->base < r->count) {
			*index = msr - r->base;
			return r->kind;
		}
	}
	return PFH_K_NONE;
}

/* 0, or -EIO for a value the hardware would refuse with a #GP. */
int pfh_msr_check_write(enum pfh_msr_kind kind, u64 value)
{
	const struct pfh_shape *s = &pfh_shape;

	switch (kind) {
	case PFH_K_EVTSEL:
		return value & ~s->evtsel_valid ? -EIO : 0;
	case PFH_K_FIXED_CTRL:
		return value & ~s->fixed_ctrl_valid ? -EIO : 0;
	case PFH_K_GLOBAL_CTRL:
		return value & ~s->counter_bits ? -EIO : 0;
	case PFH_K_OVF_CTRL:
		return value & ~(s->counter_bits | PFH_OVF_EXTRA) ? -EIO : 0;
	case PFH_K_STATUS:
		return -EIO;	/* read-only */
	case PFH_K_PMC:
	case PFH_K_FIXED:
		return 0;	/* kept to the counter's width */
	default:
		return -EIO;
	}
}

u64 pfh_counter_mask(enum pfh_msr_kind kind)
{
	return kind == PFH_K_FIXED ? pfh_shape.fixed_mask : pfh_shape.gp_mask;
}

/*
 * This cpu's PMU: the hardware's MSRs through the *_safe accessors (a #GP is
 * -EIO), or the test PMU. Irqs off or NMI context.
 */
int pfh_rdmsr(u32 msr, u64 *value)
{
	if (pfh_emulate)
		return pfh_emul_rdmsr(msr, value);
	return rdmsrl_safe(msr, value) ? -EIO : 0;
}

int pfh_wrmsr(u32 msr, u64 value)
{
	if (msr - PFH_MSR_PMC0 < pfh_shape.nr_gp) {
		value &= pfh_shape.gp_mask;
		/*
		 * A write to IA32_PMCx keeps only bits 31:0, sign-extended;
		 * IA32_A_PMCx takes the whole width.
		 */
		if (pfh_shape.fw_write && !pfh_emulate)
			msr = PFH_MSR_A_PMC0 + (msr - PFH_MSR_PMC0);
	} else if (msr - PFH_MSR_FIXED_CTR0 < pfh_shape.nr_fixed) {
		value &= pfh_shape.fixed_mask;
	}
	if (pfh_emulate)
		return pfh_emul_wrmsr(msr, value);
	return wrmsrl_safe(msr, value) ? -EIO : 0;
}

/* A write of PERFEVTSELx or FIXED_CTR_CTRL, keeping the control cache. */
int pfh_wrmsr_ctrl(struct pfh_cpu *pc, u32 msr, u64 value)
{
	int ret = pfh_wrmsr(msr, value);
	u64 cached = ret ? PFH_CACHE_UNKNOWN : value;

	if (msr == PFH_MSR_FIXED_CTRL)
		pc->fixed_ctrl = cached;
	else if (msr - PFH_MSR_EVTSEL0 < PFH_MAX_GP)
		pc->evtsel[msr - PFH_MSR_EVTSEL0] = cached;
	return ret;
}

/*
 * Writes GLOBAL_CTRL of this cpu for `img` (or for no image). An overflow
 * NMI between the first line and the last froze the image: then the
 * counters stay stopped, as the NMI left them.
 */
void pfh_set_global(struct pfh_cpu *pc, struct pfh_image *img, u64 value)
{
	unsigned int seq = READ_ONCE(pc->nmi_seq);

	barrier();
	if (img) {
		img->global_ctrl = value;
		WRITE_ONCE(img->frozen, false);
	}
	pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, value);
	barrier();
	if (img && READ_ONCE(pc->nmi_seq) != seq) {
		pfh_wrmsr(PFH_MSR_GLOBAL_CTRL, 0);
		WRITE_ONCE(img->frozen, true);
	}
}

/* The GLOBAL_STATUS bits of the counters whose overflow interrupts. */
u64 pfh_int_bits(const u64 *evtsel, u64 fixed_ctrl)
{
	u64 bits = 0;
	unsigned int i;

	for (i = 0; i < pfh_shape.nr_gp; i++)
		if (evtsel[i] != PFH_CACHE_UNKNOWN && (evtsel[i] & PFH_EVTSEL_INT))
			bits |= BIT_ULL(i);
	if (fixed_ctrl == PFH_CACHE_UNKNOWN)
		return bits;
	for (i = 0; i < pfh_shape.nr_fixed; i++)
		if (PFH_FIXED_FIELD(fixed_ctrl, i) & PFH_FIXED_PMI)
			bits |= BIT_ULL(PFH_FIXED_SHIFT + i);
	return bits;
}

/* One access on this cpu's PMU, for `img` loaded here (or no image). */
static int pfh_hw_op(struct pfh_cpu *pc, struct pfh_image *img,
		     struct pfmfs_helper_msr *op, bool write)
{
	unsigned int n;
	enum pfh_msr_kind kind = pfh_msr_classify(op->msr, &n);
	int ret;

	if (!write) {
		ret = pfh_rdmsr(op->msr, &op->value);
		if (!ret && img && kind == PFH_K_STATUS)
			op->value |= img->status;
		return ret;
	}
	ret = pfh_msr_check_write(kind, op->value);
	if (ret)
		return ret;
	switch (kind) {
	case PFH_K_EVTSEL:
		ret = pfh_wrmsr_ctrl(pc, op->msr, op->value);
		if (!ret && img)
			img->evtsel[n] = op->value;
		return ret;
	case PFH_K_FIXED_CTRL:
		ret = pfh_wrmsr_ctrl(pc, op->msr, op->value);
		if (!ret && img)
			img->fixed_ctrl = op->value;
		return ret;
	case PFH_K_GLOBAL_CTRL:
		pfh_set_global(pc, img, op->value);
		return 0;
	case PFH_K_OVF_CTRL:
		if (img)
			img->status &= ~op->value;
		return pfh_wrmsr(op->msr, op->value);
	default:
		return pfh_wrmsr(op->msr, op->value);
	}
}

/* One access on an image that is not loaded anywhere (or a template). */
int pfh_image_op(struct pfh_image *img, struct pfmfs_helper_msr *op,
			bool write)
{
	unsigned int n;
	enum pfh_msr_kind kind = pfh_msr_classify(op->msr, &n);
	u64 *reg;
	int ret;

	switch (kind) {
	case PFH_K_EVTSEL:
		reg = &img->evtsel[n];
		break;
	case PFH_K_PMC:
		reg = &img->pmc[n];
		break;
	case PFH_K_FIXED:
		reg = &img->fixed[n];
		break;
	case PFH_K_FIXED_CTRL:
		reg = &img->fixed_ctrl;
		break;
	case PFH_K_STATUS:
		reg = &img->status;
		break;
	case PFH_K_GLOBAL_CTRL:
		if (!write) {
			op->value = READ_ONCE(img->frozen) ? 0 : img->global_ctrl;
			return 0;
		}
		reg = &img->global_ctrl;
		break;
	case PFH_K_OVF_CTRL:
		if (!write) {
			op->value = 0;
			return 0;
		}
		ret = pfh_msr_check_write(kind, op->value);
		if (!ret)
			img->status &= ~op->value;
		return ret;
	default:
		return -EIO;
	}
	if (!write) {
		op->value = *reg;
		return 0;
	}
	ret = pfh_msr_check_write(kind, op->value);
	if (ret)
		return ret;
	if (kind == PFH_K_PMC || kind == PFH_K_FIXED)
		*reg = op->value & pfh_counter_mask(kind);
	else
		*reg = op->value;
	if (kind == PFH_K_GLOBAL_CTRL)
		WRITE_ONCE(img->frozen, false);
	return 0;
}

struct pfh_batch {
	struct pfmfs_helper_msr *ops;
	u32 count;
	bool write;
	struct pfh_image *img;	/* the thread's or the attached cpu's, or NULL */
	int ret;		/* 0, -EIO, or -EAGAIN: loaded elsewhere, retry */
};

static int pfh_hw_ops(struct pfh_cpu *pc, struct pfh_batch *b)
{
	u32 i;
	int ret;

	for (i = 0; i < b->count; i++) {
		ret = pfh_hw_op(pc, b->img, &b->ops[i], b->write);
		if (ret)
			return ret;
	}
	return 0;
}

/* IPI: a batch on this cpu's PMU. */
static void pfh_cpu_batch_fn(void *arg)
{
	struct pfh_batch *b = arg;

	if (b->img) {
		raw_spin_lock(&b->img->lock);
		b->ret = pfh_hw_ops(this_cpu_ptr(&pfh_cpus), b);
		raw_spin_unlock(&b->img->lock);
	} else {
		b->ret = pfh_hw_ops(this_cpu_ptr(&pfh_cpus), b);
	}
}

/* IPI: a batch on a thread's image, loaded on this cpu or nowhere. */
static void pfh_thread_batch_fn(void *arg)
{
	struct pfh_batch *b = arg;
	struct pfh_image *img = b->img;
	u32 i;

	raw_spin_lock(&img->lock);
	if (img->cpu == smp_processor_id()) {
		b->ret = pfh_hw_ops(this_cpu_ptr(&pfh_cpus), b);
	} else if (img->cpu < 0) {
		b->ret = 0;
		for (i = 0; i < b->count && !b->ret; i++)
			b->ret = pfh_image_op(img, &b->ops[i], b->write);
	} else {
		b->ret = -EAGAIN;
	}
	raw_spin_unlock(&img->lock);
}

/*
 * A batch on cpu `cpu` (online, checked by the caller). Writes are refused
 * while thread targets exist or another opener attached the cpu: they would
 * change a PMU that someone else's images are loaded in. Under pfh_mutex.
 */
int pfh_batch_cpu(struct pfh_file *f, u32 cpu, struct pfmfs_helper_msr *ops,
		  u32 count, bool write)
{
	struct pfh_target *owner = per_cpu(pfh_cpus, cpu).cpu_target;
	struct pfh_batch b = { .ops = ops, .count = count, .write = write };
	int ret;

	if (owner && owner->owner == f)
		b.img = &owner->img;
	if (write) {
		if (owner && owner->owner != f) {
			pr_warn_ratelimited("pid %d: MSR write on cpu %u: attached by another opener\n",
					    task_pid_nr(current), cpu);
			return -EBUSY;
		}
		if (atomic_read(&pfh_nr_threads)) {
			pr_warn_ratelimited("pid %d: MSR write on cpu %u: threads are monitored\n",
					    task_pid_nr(current), cpu);
			return -EBUSY;
		}
		cpumask_set_cpu(cpu, f->touched);
		pfh_arm_lvtpc();
	}
	ret = smp_call_function_single(cpu, pfh_cpu_batch_fn, &b, 1);
	if (ret)
		return -EINVAL;	/* went offline */
	return b.ret;
}

/*
 * A batch on an attached thread: on the cpu where its image is loaded, else
 * on the image. The IPI function checks, under the image's lock, that the
 * image is still where it was: never an IPI while holding that lock.
 */
int pfh_batch_thread(struct pfh_target *t, struct pfmfs_helper_msr *ops,
		     u32 count, bool write)
{
	struct pfh_batch b = {
		.ops = ops, .count = count, .write = write, .img = &t->img,
	};
	unsigned int tries;
	int cpu;

	for (tries = 0; tries < 1000; tries++) {
		cpu = READ_ONCE(t->img.cpu);
		if (cpu < 0)
			cpu = raw_smp_processor_id();
		if (smp_call_function_single(cpu, pfh_thread_batch_fn, &b, 1))
			continue;
		if (b.ret != -EAGAIN)
			return b.ret;
		cond_resched();
	}
	return -EBUSY;	/* it moved between cpus 1000 times in a row */
}
