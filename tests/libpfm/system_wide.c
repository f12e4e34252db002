// pfmfs-test: backends=sim,x86
/*
 * system_wide.c: a system-wide context (pfmon --system-wide): created with
 * PFM_FL_SYSTEM_WIDE, loaded on CPU 0 (load_pid is the CPU), counting every
 * loaded target's time on that CPU. On the sim's manual clock a CPU's time is
 * what is advanced: exact counts. Also the rules that only system-wide
 * contexts have: no notify_block, one context per CPU, a CPU that exists.
 * On x86 the test PMU counts a CPU's counters for every ns they are enabled
 * on it, busy or idle: the counts are rate x CLOCK_MONOTONIC time between
 * start and stop, within check.h's bracket (the outer times around the
 * start and stop calls, the inner ones inside, 20 ms of slack for the host
 * descheduling the VM; no context switches to allow for: the image stays on
 * the CPU). And x86's own rule: while CPU 0 has its system-wide context, no
 * thread takes a per-thread one (EBUSY).
 */
#include "check.h"

#define RUN_NS 250000
#define X86_SYS_RUN_NS 200000000ULL	/* x86: 200 ms of CPU 0's time per window */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0, "clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* x86: a window of CPU 0's time (CLOCK_MONOTONIC), from before pfm_start to
 * after pfm_stop, X86_SYS_RUN_NS inside; *w as check.h's CHECK_WINDOW takes it. */
static void run_x86(int fd, struct cpu_window *w)
{
	struct timespec pause = { 0, 1000000 };

	memset(w, 0, sizeof(*w));
	w->o0 = mono_ns();
	CHECK_OK(pfm_start(fd, NULL));
	w->i0 = mono_ns();
	while (mono_ns() - w->i0 < X86_SYS_RUN_NS)
		nanosleep(&pause, NULL);
	w->i1 = mono_ns();
	CHECK_OK(pfm_stop(fd));
	w->o1 = mono_ns();
	w->m0 = w->o0;	/* the window is of the monotonic clock already */
	w->m1 = w->o1;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

static int create(uint32_t flags)
{
	pfarg_ctx_t ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = flags;
	return pfm_create_context(&ctx, NULL, NULL, 0);
}

static int load_cpu(int fd, uint32_t cpu)
{
	pfarg_load_t load;

	memset(&load, 0, sizeof(load));
	load.load_pid = cpu;
	return pfm_load_context(fd, &load);
}

int main(void)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */
	static pfmlib_output_param_t outp;
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd[2];
	char state[256];
	unsigned int i;
	int fd, other;
	int on_x86 = on_backend("x86");
	struct cpu_window w;
	uint64_t inst, cycles;

	CHECK_PFM(pfm_initialize());
	CHECK_PFM(pfm_get_inst_retired_event(&inp.pfp_events[0]));
	CHECK_PFM(pfm_get_cycle_event(&inp.pfp_events[1]));
	inp.pfp_event_count = 2;
	inp.pfp_dfl_plm = PFM_PLM3;
	inp.pfp_flags = PFMLIB_PFP_SYSTEMWIDE;
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));

	/* Nobody can be held in a system-wide context: refused, nothing left. */
	CHECK_ERRNO(create(PFM_FL_SYSTEM_WIDE | PFM_FL_NOTIFY_BLOCK), EINVAL);
	CHECK_EQ_U64(count_sessions(), 0);

	fd = (int)CHECK_OK(create(PFM_FL_SYSTEM_WIDE));
	memset(pc, 0, sizeof(pc));
	for (i = 0; i < outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_num = (uint16_t)outp.pfp_pmds[0].reg_num;
	pd[1].reg_num = (uint16_t)outp.pfp_pmds[1].reg_num;
	CHECK_OK(pfm_write_pmds(fd, pd, 2));

	/* A CPU that does not exist, then CPU 0. */
	CHECK_ERRNO(load_cpu(fd, 4096), EINVAL);
	CHECK_STATE(fd, "unloaded");
	CHECK_OK(load_cpu(fd, 0));
	session_text(fd, "state", state, sizeof(state));
	CHECK(strstr(state, " mode=system target=0 ") != NULL, "state: %s", state);

	/* CPU 0 has its system-wide context: a second one is refused. */
	other = (int)CHECK_OK(create(PFM_FL_SYSTEM_WIDE));
	CHECK_ERRNO(load_cpu(other, 0), EBUSY);
	CHECK_STATE(other, "unloaded");
	CHECK_OK(close(other));

	if (on_x86) {
		/* CPU 0 is system-wide now: no thread takes a per-thread context. */
		pfarg_load_t self = { .load_pid = (uint32_t)tid_self() };

		other = (int)CHECK_OK(create(0));
		CHECK_ERRNO(pfm_load_context(other, &self), EBUSY);
		CHECK_STATE(other, "unloaded");
		CHECK_OK(close(other));

		run_x86(fd, &w);
		CHECK_STATE(fd, "loaded");
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		CHECK_WINDOW(pd[0].reg_value, X86_INST_PER_2NS, &w);
		CHECK_WINDOW(pd[1].reg_value, X86_CYCLES_PER_2NS, &w);
		inst = pd[0].reg_value;
		cycles = pd[1].reg_value;

		/* Stopped, the CPU's time passes uncounted (exactly); started
		 * again, it counts on. */
		sleep_ms(100);
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		CHECK_EQ_U64(pd[0].reg_value, inst);
		CHECK_EQ_U64(pd[1].reg_value, cycles);
		run_x86(fd, &w);
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		CHECK_WINDOW(pd[0].reg_value - inst, X86_INST_PER_2NS, &w);
		CHECK_WINDOW(pd[1].reg_value - cycles, X86_CYCLES_PER_2NS, &w);
	} else {
		CHECK_OK(pfm_start(fd, NULL));
		CHECK_STATE(fd, "active");
		sim_advance(RUN_NS);
		CHECK_OK(pfm_stop(fd));
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		CHECK_EQ_U64(pd[0].reg_value, (uint64_t)RUN_NS * SIM_INST_PER_NS);
		CHECK_EQ_U64(pd[1].reg_value, (uint64_t)RUN_NS * SIM_CYCLES_PER_NS);

		/* Stopped, the CPU's time passes uncounted; started again, it counts on. */
		sim_advance(RUN_NS);
		CHECK_OK(pfm_start(fd, NULL));
		sim_advance(RUN_NS);
		CHECK_OK(pfm_stop(fd));
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		CHECK_EQ_U64(pd[0].reg_value, (uint64_t)2 * RUN_NS * SIM_INST_PER_NS);
		CHECK_EQ_U64(pd[1].reg_value, (uint64_t)2 * RUN_NS * SIM_CYCLES_PER_NS);
	}

	CHECK_OK(pfm_unload_context(fd));
	CHECK_STATE(fd, "unloaded");
	if (on_x86) {
		/* Unloaded, CPU 0 is free: a thread context loads again. */
		pfarg_load_t self = { .load_pid = (uint32_t)tid_self() };

		other = (int)CHECK_OK(create(0));
		CHECK_OK(pfm_load_context(other, &self));
		CHECK_OK(close(other));
	}
	CHECK_OK(close(fd));
	CHECK_EQ_U64(wait_sessions(0), 0);
	printf("system_wide: ok\n");
	return 0;
}
