/*
 * sets_ovfl.c: switching sets on overflows. Set 0 (PFM_SETFL_OVFL_SWITCH)
 * counts instructions on PMD0 from -P with a short reset of -P and a switch
 * count of 2: it hands over to set 1 after two periods. Set 1 counts cycles
 * for a fixed time and hands back. Each step of the manual clock is one
 * period, so every overflow and switch falls on a step's last nanosecond;
 * after each step runs, durations, counts and the switch count left are exact.
 *
 * Sim only: it checks every overflow and switch landing on a step's last
 * nanosecond of the manual clock (exact durations and counts per set); on
 * x86 the switches follow real NMIs at moments of CPU time the program does
 * not control to the nanosecond.
 */
#include "check.h"

#define P 100000ULL				/* overflow period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS)		/* 50000 ns: one period */
#define SET1_NS STEP_NS				/* set 1's time slice */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define FIXED1_USR 0x20ULL			/* FIXED_CTR_CTRL: core cycles, user level */

/*
 * Set 0 runs two periods (switching at the second overflow), set 1 one slice:
 * set 0 (0,100] us, set 1 (100,150], set 0 (150,250], set 1 (250,300], set 0
 * (300,400]... A switch that lands on a step's end is done by that step.
 */
static const struct {
	uint64_t runs0, runs1;		/* set_runs */
	uint64_t us0, us1;		/* set_act_duration, in us */
	uint64_t left;			/* set 0's PMD0 overflows left before a switch */
	uint64_t active;		/* the active set */
} expect[] = {
	/* after step 1 (50 us)  */ { 1, 0, 50, 0, 1, 0 },
	/* 100 us: 2nd overflow  */ { 1, 1, 100, 0, 0, 1 },
	/* 150 us: set 1's time  */ { 2, 1, 100, 50, 2, 0 },
	/* 200 us                */ { 2, 1, 150, 50, 1, 0 },
	/* 250 us                */ { 2, 2, 200, 50, 0, 1 },
	/* 300 us                */ { 3, 2, 200, 100, 2, 0 },
	/* 350 us                */ { 3, 2, 250, 100, 1, 0 },
};

int main(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_setdesc_t sd[2] = {
		{ .set_id = 0, .set_flags = PFM_SETFL_OVFL_SWITCH },
		{ .set_id = 1, .set_flags = PFM_SETFL_TIME_SWITCH, .set_timeout = SET1_NS },
	};
	pfarg_pmc_t pc[3] = {
		{ .reg_num = 0, .reg_set = 0, .reg_value = 0xc0 | SIM_PMC_USR | PMC_EN },  /* instructions */
		{ .reg_num = 16, .reg_set = 0, .reg_value = FIXED1_USR },		   /* cycles */
		{ .reg_num = 0, .reg_set = 1, .reg_value = 0x3c | SIM_PMC_USR | PMC_EN },  /* cycles */
	};
	pfarg_pmd_t pd[3] = {
		{ .reg_num = 0, .reg_set = 0, .reg_value = -P, .reg_short_reset = -P,
		  .reg_ovfl_switch_cnt = 2 },
		{ .reg_num = 17, .reg_set = 0 },
		{ .reg_num = 0, .reg_set = 1 },
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	pfarg_setinfo_t si[2];
	char state[256];
	int fd;

	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_create_evtsets(fd, sd, 2));
	CHECK_EQ_U64(sd[1].set_timeout, SET1_NS);
	CHECK_OK(pfm_write_pmcs(fd, pc, 3));
	CHECK_OK(pfm_write_pmds(fd, pd, 3));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));

	for (size_t k = 0; k < sizeof(expect) / sizeof(expect[0]); k++) {
		sim_advance(STEP_NS);
		printf("after %zu us\n", 50 * (k + 1));

		memset(si, 0, sizeof(si));
		si[1].set_id = 1;
		CHECK_OK(pfm_getinfo_evtsets(fd, si, 2));
		CHECK_EQ_U64(si[0].set_runs, expect[k].runs0);
		CHECK_EQ_U64(si[1].set_runs, expect[k].runs1);
		CHECK_EQ_U64(si[0].set_act_duration, expect[k].us0 * 1000);
		CHECK_EQ_U64(si[1].set_act_duration, expect[k].us1 * 1000);
		CHECK_EQ_U64(si[0].set_flags, PFM_SETFL_OVFL_SWITCH);
		CHECK_EQ_U64(si[0].set_ovfl_pmds[0], 0x1);
		CHECK_EQ_U64(si[1].set_ovfl_pmds[0], 0);
		session_text(fd, "state", state, sizeof(state));
		CHECK_EQ_U64(kv_u64(state, "set"), expect[k].active);

		/* Each step ends on an overflow: PMD0 has just taken its short reset. */
		CHECK_OK(pfm_read_pmds(fd, pd, 3));
		CHECK_EQ_U64(pd[0].reg_value, -P);
		CHECK_EQ_U64(pd[0].reg_last_reset_val, -P);
		CHECK_EQ_U64(pd[0].reg_ovfl_switch_cnt, expect[k].left);
		/* Each set counted exactly while it was active: the switches were on time. */
		CHECK_EQ_U64(pd[1].reg_value, SIM_CYCLES_PER_NS * expect[k].us0 * 1000);
		CHECK_EQ_U64(pd[2].reg_value, SIM_CYCLES_PER_NS * expect[k].us1 * 1000);
	}

	/* Half a period more in set 0: no overflow, half the period counted. */
	sim_advance(STEP_NS / 2);
	CHECK_OK(pfm_read_pmds(fd, pd, 1));
	CHECK_EQ_U64(pd[0].reg_value, -(P / 2));
	CHECK_EQ_U64(pd[0].reg_ovfl_switch_cnt, 1);

	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}
