/*
 * sets_time.c: multiplexing three event sets on time, as perfmon2 programs
 * do it: pfm_create_evtsets() with PFM_SETFL_TIME_SWITCH, one event per set on
 * the same general counter (PMD0) plus fixed core cycles (PMD17) in every set,
 * and pfm_getinfo_evtsets() to scale each count by the time its set ran.
 * Under the manual clock runs, durations, counts and estimates are exact,
 * whether the 9 ms pass in one advance or in many.
 *
 * Sim only: it needs the manual clock, set switches that land on exact
 * nanoseconds and exact durations and estimates; on x86 a set's time is CPU
 * time measured around FUSE calls, and a switch's moment is not the
 * program's to choose.
 */
#include "check.h"

#define NSETS 3
#define TIMEOUT_NS 1000000ULL			/* 1 ms per set */
#define TOTAL_NS (9 * TIMEOUT_NS)		/* three rounds */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define FIXED1_USR 0x20ULL			/* FIXED_CTR_CTRL: core cycles, user level */

/* What PMD0 counts in each set, and its sim rate in events per 2 ns (so that
 * 2.5/ns stays an integer). */
static const struct {
	const char *name;
	uint64_t code;
	uint64_t per_2ns;
} events[NSETS] = {
	{ "UNHALTED_CORE_CYCLES", 0x3c, 2 * SIM_CYCLES_PER_NS },
	{ "INSTRUCTION_RETIRED", 0xc0, 2 * SIM_INST_PER_NS },
	{ "UNHALTED_REFERENCE_CYCLES", 0x13c, SIM_REF_CYCLES_X2_PER_NS },
};

/* One session, advanced to TOTAL_NS in steps of step_ns. */
static void run(uint64_t step_ns)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_setdesc_t sd[NSETS];
	pfarg_setinfo_t si[NSETS];
	pfarg_pmc_t pc[2 * NSETS];
	pfarg_pmd_t pd[2 * NSETS];
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd;

	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));

	/* Set 0 exists already: perfmon2 lets create_evtsets change its flags. */
	memset(sd, 0, sizeof(sd));
	for (int s = 0; s < NSETS; s++) {
		sd[s].set_id = (uint16_t)s;
		sd[s].set_flags = PFM_SETFL_TIME_SWITCH;
		sd[s].set_timeout = TIMEOUT_NS;
	}
	CHECK_OK(pfm_create_evtsets(fd, sd, NSETS));
	for (int s = 0; s < NSETS; s++)	/* the effective timeout comes back */
		CHECK_EQ_U64(sd[s].set_timeout, TIMEOUT_NS);

	memset(pc, 0, sizeof(pc));
	memset(pd, 0, sizeof(pd));
	for (int s = 0; s < NSETS; s++) {
		pc[2 * s] = (pfarg_pmc_t){ .reg_num = 0, .reg_set = (uint16_t)s,
					   .reg_value = events[s].code | SIM_PMC_USR | PMC_EN };
		pc[2 * s + 1] = (pfarg_pmc_t){ .reg_num = 16, .reg_set = (uint16_t)s,
					       .reg_value = FIXED1_USR };
		pd[2 * s] = (pfarg_pmd_t){ .reg_num = 0, .reg_set = (uint16_t)s };
		pd[2 * s + 1] = (pfarg_pmd_t){ .reg_num = 17, .reg_set = (uint16_t)s };
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, 2 * NSETS));
	CHECK_OK(pfm_write_pmds(fd, pd, 2 * NSETS));

	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	for (uint64_t t = 0; t < TOTAL_NS; t += step_ns)
		sim_advance(TOTAL_NS - t < step_ns ? TOTAL_NS - t : step_ns);

	memset(si, 0, sizeof(si));
	for (int s = 0; s < NSETS; s++)
		si[s].set_id = (uint16_t)s;
	CHECK_OK(pfm_getinfo_evtsets(fd, si, NSETS));
	CHECK_OK(pfm_read_pmds(fd, pd, 2 * NSETS));

	for (int s = 0; s < NSETS; s++) {
		/* Set s ran (3k+s, 3k+s+1] ms for k = 0, 1, 2. The switch back to set 0
		 * falls on the last nanosecond of the 9 ms, which the advance includes:
		 * set 0 has just begun its fourth run, for 0 ns so far. */
		CHECK_EQ_U64(si[s].set_runs, s == 0 ? 4 : 3);
		CHECK_EQ_U64(si[s].set_act_duration, 3 * TIMEOUT_NS);
		CHECK_EQ_U64(si[s].set_flags, PFM_SETFL_TIME_SWITCH);
		CHECK_EQ_U64(si[s].set_timeout, TIMEOUT_NS);	/* set 0: all of it left */
		CHECK_EQ_U64(si[s].set_ovfl_pmds[0], 0);
		CHECK_EQ_U64(si[s].set_avail_pmcs[0], SIM_AVAIL_PMCS);
		CHECK_EQ_U64(si[s].set_avail_pmds[0], SIM_AVAIL_PMDS);

		CHECK_EQ_U64(pd[2 * s].reg_set, s);
		CHECK_EQ_U64(pd[2 * s].reg_value, events[s].per_2ns * 3 * TIMEOUT_NS / 2);
		CHECK_EQ_U64(pd[2 * s + 1].reg_value, SIM_CYCLES_PER_NS * 3 * TIMEOUT_NS);

		/* The usual estimate of the whole run's count is exact here. */
		CHECK_EQ_U64(pd[2 * s].reg_value * TOTAL_NS / si[s].set_act_duration,
			     events[s].per_2ns * TOTAL_NS / 2);
		printf("set %d %-26s %10" PRIu64 " in %" PRIu64 " ns, estimate %" PRIu64 "\n", s,
		       events[s].name, (uint64_t)pd[2 * s].reg_value, (uint64_t)si[s].set_act_duration,
		       (uint64_t)(pd[2 * s].reg_value * TOTAL_NS / si[s].set_act_duration));
	}

	/* A quarter into set 0's fourth run: set_timeout is what is left of it. */
	sim_advance(TIMEOUT_NS / 4);
	CHECK_OK(pfm_getinfo_evtsets(fd, si, 1));
	CHECK_EQ_U64(si[0].set_runs, 4);
	CHECK_EQ_U64(si[0].set_act_duration, 3 * TIMEOUT_NS + TIMEOUT_NS / 4);
	CHECK_EQ_U64(si[0].set_timeout, TIMEOUT_NS - TIMEOUT_NS / 4);

	CHECK_OK(pfm_unload_context(fd));
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

int main(void)
{
	run(TOTAL_NS);			/* one advance */
	run(TIMEOUT_NS);		/* one per set */
	run(TIMEOUT_NS / 2);		/* two per set */
	run(700000);			/* switches inside advances, a short last one */
	return 0;
}
