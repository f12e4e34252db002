// SPDX-License-Identifier: GPL-2.0
/*
 * The test PMU (emulate=1): an Intel architectural perfmon v2 PMU
 * per cpu, in software, behind the module's rdmsr/wrmsr accessors and its
 * CPUID leaf 0xA. Everything else in the module runs unchanged on it.
 *
 * Counters count in time (ktime_get_mono_fast_ns(), NMI-safe) at fixed
 * rational rates: a counter that counts from t0 to t has counted
 * floor(rate * t) - floor(rate * t0) events, with t in ns since boot, so
 * that reads never drift. They wrap at their width and set their
 * GLOBAL_STATUS bit; a wrap of a counter with its INT (PMI) bit raises a
 * PMI skid events later, as a real NMI sent by this cpu to itself from a
 * per-cpu hrtimer armed for that instant, if the LVTPC asks for NMIs and
 * is not masked (and the LVTPC is masked as the CPU does when it delivers).
 *
 * The model is per cpu and only its own cpu enters it, with irqs off (IPIs,
 * sched_switch, the hrtimer) or from the NMI handler. An NMI that finds the
 * model busy (it interrupted a model update) is refused its accesses
 * (-EBUSY): our own NMIs are sent only outside updates, and are waited for.
 * An NMI never arms the timer: it leaves that to the next entry.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/overflow.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/timekeeping.h>
#include <asm/apic.h>
#include <asm/irq_vectors.h>

#include "pfh.h"

#define PFH_EMU_CTRS	(PFH_MAX_GP + PFH_MAX_FIXED)	/* GP counters, then fixed ones */
#define PFH_EMU_NEVER	U64_MAX

/* Events per ns: num/den. */
struct pfh_emu_rate {
	u32 code;	/* PERFEVTSEL bits 15:0: event | umask << 8 */
	u32 num;
	u32 den;
};

/* The sim's rates (pfmfs(5), "The sim PMU"), by architectural event. */
static const struct pfh_emu_rate pfh_emu_rates[] = {
	{ 0x003c, 3, 1 },	/* UNHALTED_CORE_CYCLES */
	{ 0x00c0, 2, 1 },	/* INSTRUCTION_RETIRED */
	{ 0x013c, 5, 2 },	/* UNHALTED_REFERENCE_CYCLES */
	{ 0x4f2e, 1, 20 },	/* LLC_REFERENCES */
	{ 0x412e, 1, 100 },	/* LLC_MISSES */
	{ 0x00c4, 2, 5 },	/* BRANCH_INSTRUCTIONS_RETIRED */
	{ 0x00c5, 1, 250 },	/* BRANCH_MISSES_RETIRED */
};

/* Fixed counters 0, 1, 2: instructions, core cycles, reference cycles. */
static const struct pfh_emu_rate pfh_emu_fixed_rates[PFH_MAX_FIXED] = {
	{ 0x00c0, 2, 1 },
	{ 0x003c, 3, 1 },
	{ 0x013c, 5, 2 },
};

struct pfh_emu_ctr {
	u64 value;	/* its bits as of pfh_emu.t */
	u32 num;	/* its rate while it counts; 0: it does not */
	u32 den;
	bool intr;	/* its wrap raises a PMI */
	u64 due;	/* while its PMI is pending: when it is raised (ns) */
};

struct pfh_emu {
	struct hrtimer timer;		/* raises the next PMI */
	u64 armed;			/* the timer's expiry, or PFH_EMU_NEVER */
	unsigned int busy;		/* inside an update: NMIs keep out */
	bool rearm;			/* an NMI changed the model: arm at the next entry */
	u64 t;				/* the counters' values are as of t (ns) */
	u64 evtsel[PFH_MAX_GP];		/* PERFEVTSELx */
	u64 fixed_ctrl;			/* FIXED_CTR_CTRL */
	u64 global_ctrl;		/* PERF_GLOBAL_CTRL */
	u64 status;			/* PERF_GLOBAL_STATUS */
	u64 pmi_pending;		/* status bits whose PMI is still to be raised */
	struct pfh_emu_ctr ctr[PFH_EMU_CTRS];
};

static DEFINE_PER_CPU(struct pfh_emu, pfh_emu);

void pfh_emul_cpuid_0xa(u32 *eax, u32 *ebx, u32 *ecx, u32 *edx)
{
	*eax = 2 | pfh_emulate_counters << 8 | pfh_emulate_width << 16 |
	       7 << 24;	/* version 2; 7 architectural events */
	*ebx = 0;		/* every one of them available */
	*ecx = 0;
	*edx = PFH_MAX_FIXED | pfh_emulate_width << 5;
}

static bool pfh_emu_served(unsigned int i)
{
	return i < PFH_MAX_GP ? i < pfh_shape.nr_gp :
	       i - PFH_MAX_GP < pfh_shape.nr_fixed;
}

static u64 pfh_emu_bit(unsigned int i)
{
	return i < PFH_MAX_GP ? BIT_ULL(i) :
	       BIT_ULL(PFH_FIXED_SHIFT + i - PFH_MAX_GP);
}

static u64 pfh_emu_mask(unsigned int i)
{
	return i < PFH_MAX_GP ? pfh_shape.gp_mask : pfh_shape.fixed_mask;
}

/* floor(num * t / den), without overflow. */
static u64 pfh_emu_events(u32 num, u32 den, u64 t)
{
	u32 rem;
	u64 q = div_u64_rem(t, den, &rem);

	return q * num + (u64)rem * num / den;
}

/* The first t at which floor(num * t / den) >= k: ceil(k * den / num). */
static u64 pfh_emu_time_of(u32 num, u32 den, u64 k)
{
	u32 rem;
	u64 q = div_u64_rem(k, num, &rem);

	if (q > (PFH_EMU_NEVER >> 1) / den)
		return PFH_EMU_NEVER;
	return q * den + DIV_ROUND_UP((u64)rem * den, num);
}

/*
 * When the PMI of a counter is due that wraps at its (room + 1)-th event
 * after t (f0 = its events at t): skid events after the wrap.
 */
static u64 pfh_emu_due(const struct pfh_emu_ctr *c, u64 f0, u64 room)
{
	u64 k;

	if (check_add_overflow(f0, room, &k) ||
	    check_add_overflow(k, (u64)pfh_skid + 1, &k))
		return PFH_EMU_NEVER;
	return pfh_emu_time_of(c->num, c->den, k);
}

/* Brings every counting counter to time `now`. */
static void pfh_emu_advance(struct pfh_emu *e, u64 now)
{
	unsigned int i;

	if (now <= e->t)
		return;
	for (i = 0; i < PFH_EMU_CTRS; i++) {
		struct pfh_emu_ctr *c = &e->ctr[i];
		u64 mask, f0, n, room, bit;

		if (!c->num)
			continue;
		mask = pfh_emu_mask(i);
		f0 = pfh_emu_events(c->num, c->den, e->t);
		n = pfh_emu_events(c->num, c->den, now) - f0;
		room = mask - c->value;
		if (n > room) {
			bit = pfh_emu_bit(i);
			e->status |= bit;
			if (c->intr && !(e->pmi_pending & bit)) {
				c->due = pfh_emu_due(c, f0, room);
				e->pmi_pending |= bit;
			}
		}
		c->value = (c->value + n) & mask;
	}
	e->t = now;
}

/* Which counters count, at what rate, after a control register changed. */
static void pfh_emu_config(struct pfh_emu *e)
{
	unsigned int i, j;

	for (i = 0; i < pfh_shape.nr_gp; i++) {
		struct pfh_emu_ctr *c = &e->ctr[i];
		u64 sel = e->evtsel[i];

		c->num = 0;
		c->intr = sel & PFH_EVTSEL_INT;
		if (!(e->global_ctrl & BIT_ULL(i)) || !(sel & PFH_EVTSEL_EN) ||
		    !(sel & (PFH_EVTSEL_USR | PFH_EVTSEL_OS)))
			continue;
		for (j = 0; j < ARRAY_SIZE(pfh_emu_rates); j++) {
			if (pfh_emu_rates[j].code == (sel & PFH_EVTSEL_CODE)) {
				c->num = pfh_emu_rates[j].num;
				c->den = pfh_emu_rates[j].den;
			}
		}
	}
	for (i = 0; i < pfh_shape.nr_fixed; i++) {
		struct pfh_emu_ctr *c = &e->ctr[PFH_MAX_GP + i];
		u64 field = PFH_FIXED_FIELD(e->fixed_ctrl, i);

		c->num = 0;
		c->intr = field & PFH_FIXED_PMI;
		if (!(e->global_ctrl & BIT_ULL(PFH_FIXED_SHIFT + i)) ||
		    !(field & (PFH_FIXED_OS | PFH_FIXED_USR)))
			continue;
		c->num = pfh_emu_fixed_rates[i].num;
		c->den = pfh_emu_fixed_rates[i].den;
	}
}

/* The next instant a PMI is due, or PFH_EMU_NEVER. */
static u64 pfh_emu_next(struct pfh_emu *e)
{
	u64 next = PFH_EMU_NEVER;
	unsigned int i;

	for (i = 0; i < PFH_EMU_CTRS; i++) {
		struct pfh_emu_ctr *c = &e->ctr[i];

		if (!pfh_emu_served(i))
			continue;
		if (e->pmi_pending & pfh_emu_bit(i))
			next = min(next, c->due);
		else if (c->num && c->intr)
			next = min(next,
				   pfh_emu_due(c, pfh_emu_events(c->num, c->den, e->t),
					       pfh_emu_mask(i) - c->value));
	}
	return next;
}

static void pfh_emu_arm(struct pfh_emu *e, u64 next)
{
	if (next == e->armed)
		return;
	e->armed = next;
	if (next == PFH_EMU_NEVER)
		hrtimer_try_to_cancel(&e->timer);
	else
		hrtimer_start(&e->timer, ns_to_ktime(min_t(u64, next, KTIME_MAX)),
			      HRTIMER_MODE_ABS_PINNED_HARD);
}

/* This cpu's model, or NULL for an NMI that interrupted an update. */
static struct pfh_emu *pfh_emu_enter(void)
{
	struct pfh_emu *e = this_cpu_ptr(&pfh_emu);

	if (in_nmi()) {
		if (e->busy)
			return NULL;
	} else {
		WARN_ON_ONCE(!irqs_disabled());
	}
	e->busy++;
	barrier();
	return e;
}

static void pfh_emu_leave(struct pfh_emu *e, bool changed)
{
	u64 next = PFH_EMU_NEVER;
	bool arm = false;

	if (in_nmi()) {
		e->rearm |= changed;
	} else if (changed || e->rearm) {
		e->rearm = false;
		next = pfh_emu_next(e);
		arm = true;
	}
	barrier();
	e->busy--;
	if (arm)
		pfh_emu_arm(e, next);
}

int pfh_emul_rdmsr(u32 msr, u64 *value)
{
	enum pfh_msr_kind kind;
	struct pfh_emu *e;
	unsigned int n;
	int ret = 0;

	kind = pfh_msr_classify(msr, &n);
	if (kind == PFH_K_NONE)
		return -EIO;
	e = pfh_emu_enter();
	if (!e)
		return -EBUSY;
	switch (kind) {
	case PFH_K_EVTSEL:
		*value = e->evtsel[n];
		break;
	case PFH_K_PMC:
		pfh_emu_advance(e, ktime_get_mono_fast_ns());
		*value = e->ctr[n].value;
		break;
	case PFH_K_FIXED:
		pfh_emu_advance(e, ktime_get_mono_fast_ns());
		*value = e->ctr[PFH_MAX_GP + n].value;
		break;
	case PFH_K_FIXED_CTRL:
		*value = e->fixed_ctrl;
		break;
	case PFH_K_STATUS:
		pfh_emu_advance(e, ktime_get_mono_fast_ns());
		*value = e->status;
		break;
	case PFH_K_GLOBAL_CTRL:
		*value = e->global_ctrl;
		break;
	case PFH_K_OVF_CTRL:
		*value = 0;
		break;
	default:
		ret = -EIO;
	}
	/* A read finds only wraps whose PMI the timer already waits for. */
	pfh_emu_leave(e, false);
	return ret;
}

int pfh_emul_wrmsr(u32 msr, u64 value)
{
	enum pfh_msr_kind kind;
	struct pfh_emu *e;
	unsigned int n;

	kind = pfh_msr_classify(msr, &n);
	if (kind == PFH_K_NONE || pfh_msr_check_write(kind, value))
		return -EIO;	/* a #GP */
	e = pfh_emu_enter();
	if (!e)
		return -EBUSY;
	pfh_emu_advance(e, ktime_get_mono_fast_ns());
	switch (kind) {
	case PFH_K_EVTSEL:
		e->evtsel[n] = value;
		pfh_emu_config(e);
		break;
	case PFH_K_PMC:
		/* The full width, as IA32_A_PMCx takes it. */
		e->ctr[n].value = value & pfh_shape.gp_mask;
		break;
	case PFH_K_FIXED:
		e->ctr[PFH_MAX_GP + n].value = value & pfh_shape.fixed_mask;
		break;
	case PFH_K_FIXED_CTRL:
		e->fixed_ctrl = value;
		pfh_emu_config(e);
		break;
	case PFH_K_GLOBAL_CTRL:
		e->global_ctrl = value;
		pfh_emu_config(e);
		break;
	case PFH_K_OVF_CTRL:
		e->status &= ~value;
		e->pmi_pending &= ~value;
		break;
	default:
		break;
	}
	pfh_emu_leave(e, true);
	return 0;
}

/* Raises the PMIs that are due, and waits for the NMI to be taken. */
static enum hrtimer_restart pfh_emu_timer_fn(struct hrtimer *timer)
{
	struct pfh_emu *e = container_of(timer, struct pfh_emu, timer);
	struct pfh_cpu *pc = this_cpu_ptr(&pfh_cpus);
	unsigned int i, seq, spins;
	u64 now, due = 0, next;
	bool raise = false;
	u32 lvt = 0;

	/* Hotplug moves the timers of a cpu going down to another one. */
	if (e != this_cpu_ptr(&pfh_emu))
		return HRTIMER_NORESTART;
	e->armed = PFH_EMU_NEVER;
	e->busy++;
	barrier();
	now = ktime_get_mono_fast_ns();
	pfh_emu_advance(e, now);
	for (i = 0; i < PFH_EMU_CTRS; i++)
		if ((e->pmi_pending & pfh_emu_bit(i)) && e->ctr[i].due <= now)
			due |= pfh_emu_bit(i);
	if (due) {
		/* Raised now, or lost to an LVTPC that does not deliver NMIs. */
		e->pmi_pending &= ~due;
		lvt = apic_read(APIC_LVTPC);
		raise = GET_APIC_DELIVERY_MODE(lvt) == APIC_MODE_NMI &&
			!(lvt & APIC_LVT_MASKED);
	}
	e->rearm = false;
	next = pfh_emu_next(e);
	barrier();
	e->busy--;
	pfh_emu_arm(e, next);

	if (raise) {
		apic_write(APIC_LVTPC, lvt | APIC_LVT_MASKED);
		seq = READ_ONCE(pc->nmis);
		apic->send_IPI(smp_processor_id(), NMI_VECTOR);
		for (spins = 0; spins < 1000 && READ_ONCE(pc->nmis) == seq; spins++)
			udelay(1);
		if (READ_ONCE(pc->nmis) == seq)
			pr_warn_once("the test PMU's NMI did not arrive within 1 ms\n");
	}
	return HRTIMER_NORESTART;
}

int pfh_emul_init(void)
{
	int cpu;

	if (!pfh_emulate)
		return 0;
	for_each_possible_cpu(cpu) {
		struct pfh_emu *e = per_cpu_ptr(&pfh_emu, cpu);

		memset(e, 0, sizeof(*e));
		hrtimer_init(&e->timer, CLOCK_MONOTONIC,
			     HRTIMER_MODE_ABS_PINNED_HARD);
		e->timer.function = pfh_emu_timer_fn;
		e->armed = PFH_EMU_NEVER;
		e->t = ktime_get_mono_fast_ns();
	}
	return 0;
}

void pfh_emul_exit(void)
{
	int cpu;

	if (!pfh_emulate)
		return;
	for_each_possible_cpu(cpu)
		hrtimer_cancel(&per_cpu_ptr(&pfh_emu, cpu)->timer);
}
