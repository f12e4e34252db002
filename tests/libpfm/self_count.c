// pfmfs-test: backends=sim,perf,x86
/*
 * self_count.c: the classic perfmon2 self-monitoring program. pfmlib picks
 * the events and their counters (pfm_dispatch_events), the program programs
 * them, loads the context on its own thread, and counts.
 * On the sim (manual clock) instructions and cycles are exact: 2 and 3 per
 * ns of advance. On perf the program counts its own user-level page faults:
 * touching N fresh pages counts at least N, and nothing counts while stopped.
 * On x86 (the module's test PMU) instructions and cycles are 2 and 3 per ns
 * of the thread's CPU time: each counting window burns X86_RUN_NS of it and
 * its counts are checked against the thread's CPU time (check.h's
 * CHECK_WINDOW); while stopped or unloaded nothing counts, exactly.
 */
#include "check.h"

#include <sys/mman.h>

static int on_sim, on_x86;
static struct cpu_window win;	/* x86: the last counting window */

/* The events of this run, placed by pfmlib: two on the sim, one on perf. */
struct programmed {
	unsigned int count;		/* events */
	pfarg_pmd_t pd[2];		/* their PMDs, in event order */
	pfmlib_output_param_t outp;	/* pfmlib's encoding */
};

static void encode(struct programmed *p)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */
	unsigned int i;

	memset(&inp, 0, sizeof(inp));
	if (on_sim || on_x86) {
		CHECK_PFM(pfm_get_inst_retired_event(&inp.pfp_events[0]));
		CHECK_PFM(pfm_get_cycle_event(&inp.pfp_events[1]));
		inp.pfp_event_count = 2;
	} else {
		CHECK_PFM(pfm_find_event("PAGE_FAULTS", &inp.pfp_events[0].event));
		inp.pfp_event_count = 1;
	}
	inp.pfp_dfl_plm = PFM_PLM3;
	memset(p, 0, sizeof(*p));
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &p->outp, NULL));
	p->count = inp.pfp_event_count;
	CHECK_EQ_U64(p->outp.pfp_pmd_count, p->count);
	CHECK(p->outp.pfp_pmc_count >= 1, "no PMC to write");
	for (i = 0; i < p->count; i++)
		p->pd[i].reg_num = (uint16_t)p->outp.pfp_pmds[i].reg_num;
}

static void program(int fd, struct programmed *p)
{
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	unsigned int i;

	memset(pc, 0, sizeof(pc));
	for (i = 0; i < p->outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)p->outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = p->outp.pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)p->outp.pfp_pmc_count));
	CHECK_OK(pfm_write_pmds(fd, p->pd, (int)p->count));
}

/* perf: n page faults at user level, no more (no huge pages, fresh pages). */
static void touch_pages(unsigned int n)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *m;
	unsigned int i;

	m = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	madvise((void *)m, (size_t)page * n, MADV_NOHUGEPAGE);
	for (i = 0; i < n; i++)
		m[(size_t)page * i] = 1;
	munmap((void *)m, (size_t)page * n);
}

/* Makes the target count: ns of virtual time on the sim, pages on perf,
 * X86_RUN_NS of CPU time on x86 (into win, whose outer times the caller
 * takes around its start and stop). */
static void work(uint64_t ns, unsigned int pages)
{
	if (on_sim)
		sim_advance(ns);
	else if (on_x86)
		window_burn(&win, X86_RUN_NS);
	else
		touch_pages(pages);
}

/* x86: pmd0 counted inst and pmd1 cycles in the last window. */
static void check_x86(uint64_t inst, uint64_t cycles)
{
	CHECK_WINDOW(inst, X86_INST_PER_2NS, &win);
	CHECK_WINDOW(cycles, X86_CYCLES_PER_2NS, &win);
}

static void read_pmds(int fd, struct programmed *p)
{
	CHECK_OK(pfm_read_pmds(fd, p->pd, (int)p->count));
}

int main(void)
{
	struct programmed p;
	pfarg_ctx_t ctx;
	pfarg_load_t load;
	char session[PATH_MAX];
	uint64_t before, before1;
	int fd;

	on_sim = on_backend("sim");
	on_x86 = on_backend("x86");
	CHECK_PFM(pfm_initialize());
	encode(&p);

	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_EQ_U64(count_sessions(), 1);
	snprintf(session, sizeof(session), "%s", fd_session_dir(fd));
	CHECK_STATE(fd, "unloaded");
	program(fd, &p);

	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_STATE(fd, "loaded");

	window_open(&win);
	CHECK_OK(pfm_start(fd, NULL));
	CHECK_STATE(fd, "active");
	work(1000000, 64);
	CHECK_OK(pfm_stop(fd));
	window_close(&win);
	CHECK_STATE(fd, "loaded");
	read_pmds(fd, &p);
	if (on_sim) {
		CHECK_EQ_U64(p.pd[0].reg_value, 1000000 * SIM_INST_PER_NS);
		CHECK_EQ_U64(p.pd[1].reg_value, 1000000 * SIM_CYCLES_PER_NS);
	} else if (on_x86) {
		check_x86(p.pd[0].reg_value, p.pd[1].reg_value);
	} else {
		CHECK(p.pd[0].reg_value >= 64, "64 fresh pages touched, %" PRIu64 " page faults counted",
		      p.pd[0].reg_value);
	}

	/* Stopped: time passes (pages are touched) and nothing counts. */
	before = p.pd[0].reg_value;
	before1 = p.count > 1 ? p.pd[1].reg_value : 0;
	work(500000, 64);
	read_pmds(fd, &p);
	CHECK_EQ_U64(p.pd[0].reg_value, before);
	if (on_x86)
		CHECK_EQ_U64(p.pd[1].reg_value, before1);

	/* The self-monitoring shortcuts start and stop the same context. */
	window_open(&win);
	CHECK_OK(pfm_self_start(fd));
	CHECK_STATE(fd, "active");
	work(1000, 16);
	CHECK_OK(pfm_self_stop(fd));
	window_close(&win);
	read_pmds(fd, &p);
	if (on_sim) {
		CHECK_EQ_U64(p.pd[0].reg_value, 1001000 * SIM_INST_PER_NS);
		CHECK_EQ_U64(p.pd[1].reg_value, 1001000 * SIM_CYCLES_PER_NS);
	} else if (on_x86) {
		check_x86(p.pd[0].reg_value - before, p.pd[1].reg_value - before1);
	} else {
		CHECK(p.pd[0].reg_value >= before + 16, "%" PRIu64 " after 16 more pages from %" PRIu64,
		      p.pd[0].reg_value, before);
	}

	/* A PMD written to 1000 counts on from 1000; the other keeps its count. */
	before = p.count > 1 ? p.pd[1].reg_value : 0;
	p.pd[0].reg_value = 1000;
	CHECK_OK(pfm_write_pmds(fd, p.pd, 1));
	read_pmds(fd, &p);
	CHECK_EQ_U64(p.pd[0].reg_value, 1000);
	if (on_x86)
		CHECK_EQ_U64(p.pd[1].reg_value, before);
	window_open(&win);
	CHECK_OK(pfm_start(fd, NULL));
	work(10, 8);
	CHECK_OK(pfm_stop(fd));
	window_close(&win);
	read_pmds(fd, &p);
	if (on_sim) {
		CHECK_EQ_U64(p.pd[0].reg_value, 1000 + 10 * SIM_INST_PER_NS);
		CHECK_EQ_U64(p.pd[1].reg_value, before + 10 * SIM_CYCLES_PER_NS);
	} else if (on_x86) {
		check_x86(p.pd[0].reg_value - 1000, p.pd[1].reg_value - before);
	} else {
		CHECK(p.pd[0].reg_value >= 1000 + 8, "%" PRIu64 " after 8 pages from 1000", p.pd[0].reg_value);
	}

	/* Unloading keeps the counts readable; close destroys the session. */
	before = p.pd[0].reg_value;
	before1 = p.count > 1 ? p.pd[1].reg_value : 0;
	CHECK_OK(pfm_unload_context(fd));
	CHECK_STATE(fd, "unloaded");
	work(1000, 8);
	read_pmds(fd, &p);
	CHECK_EQ_U64(p.pd[0].reg_value, before);
	if (on_x86)
		CHECK_EQ_U64(p.pd[1].reg_value, before1);
	CHECK_OK(close(fd));
	CHECK_EQ_U64(wait_sessions(0), 0);
	/* The daemon drops the name from the kernel's cache just after the
	 * session has left the listing: a lookup in between still finds it. */
	for (uint64_t t0 = monotonic_ns(); access(session, F_OK) == 0 &&
	     monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL;)
		nap_ms(1);
	CHECK(access(session, F_OK) != 0 && errno == ENOENT, "%s still exists after close", session);
	printf("self_count: ok on %s\n", backend_name());
	return 0;
}
