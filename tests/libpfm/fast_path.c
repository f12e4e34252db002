// pfmfs-test: backends=sim
/*
 * fast_path.c: pfm_read_pmds of a self-monitoring context answers through
 * the fast path (the session's mapped page: docs/libpfm-compat.md) exactly
 * what the mount answers at the same moment. The sim's manual clock holds
 * everything still between the two reads, so after every step the values,
 * last resets and switch counts of pfm_read_pmds and of the session's
 * sets/N/pmds file must be equal: across set switches on overflow and on
 * time, overflows with short and long resets, PMD writes, stop and start,
 * masking and restart. Then proof that the answers came from the page: with
 * pfmfsd stopped (SIGSTOP) a read through the mount would hang, and the
 * fast path still answers, the same values. Last, what must not be read from
 * the page: a context loaded on another thread, one whose session was
 * destroyed (rmdir), one whose descriptor was closed.
 */
#include "check.h"

#include <pthread.h>

#define P 90000ULL				/* overflow period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS / 3)	/* a third of a period */
#define SET1_NS (2 * STEP_NS)			/* set 1's time slice */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define FIXED1_USR 0x20ULL			/* FIXED_CTR_CTRL: core cycles, user level */

static int steps;	/* comparisons made: printed at the end */

/* One PMD's line of sets/SET/pmds: false when the file has no such PMD. */
static int mount_pmd(int fd, unsigned set, unsigned pmd, pfarg_pmd_t *out)
{
	char path[32], text[16384], want[16];
	snprintf(path, sizeof(path), "sets/%u/pmds", set);
	session_text(fd, path, text, sizeof(text));
	snprintf(want, sizeof(want), "pmd=%u ", pmd);
	for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, want, strlen(want)) != 0)
			continue;
		char *end = strchr(line, '\n');
		if (end)
			*end = '\0';
		out->reg_value = kv_u64(line, "value");
		out->reg_last_reset_val = kv_u64(line, "last_reset");
		out->reg_ovfl_switch_cnt = kv_u64(line, "switch_left");
		return 1;
	}
	return 0;
}

/* pfm_read_pmds of every (set, pmd) of `regs` against the mount's files. */
static void compare(int fd, const pfarg_pmd_t *regs, int n, const char *when)
{
	pfarg_pmd_t got[8], want;
	memset(got, 0xa5, sizeof(got));
	for (int i = 0; i < n; i++) {
		got[i].reg_num = regs[i].reg_num;
		got[i].reg_set = regs[i].reg_set;
	}
	CHECK_OK(pfm_read_pmds(fd, got, n));
	for (int i = 0; i < n; i++) {
		CHECK(mount_pmd(fd, regs[i].reg_set, regs[i].reg_num, &want), "%s: set %u has no pmd%u", when,
		      regs[i].reg_set, regs[i].reg_num);
		CHECK(got[i].reg_value == want.reg_value && got[i].reg_last_reset_val == want.reg_last_reset_val &&
			      got[i].reg_ovfl_switch_cnt == want.reg_ovfl_switch_cnt,
		      "%s: set %u pmd%u: pfm_read_pmds says value=%" PRIu64 " last_reset=%" PRIu64
		      " switch_left=%" PRIu64 ", the mount value=%" PRIu64 " last_reset=%" PRIu64 " switch_left=%" PRIu64,
		      when, regs[i].reg_set, regs[i].reg_num, got[i].reg_value, got[i].reg_last_reset_val,
		      got[i].reg_ovfl_switch_cnt, want.reg_value, want.reg_last_reset_val, want.reg_ovfl_switch_cnt);
	}
	steps++;
}

/* Sets switching on overflow (0) and on time (1), short resets, a PMD write,
 * stop and start: compared after every step. */
static void switches_and_resets(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_setdesc_t sd[2] = {
		{ .set_id = 0, .set_flags = PFM_SETFL_OVFL_SWITCH },
		{ .set_id = 1, .set_flags = PFM_SETFL_TIME_SWITCH, .set_timeout = SET1_NS },
	};
	pfarg_pmc_t pc[3] = {
		{ .reg_num = 0, .reg_set = 0, .reg_value = 0xc0 | SIM_PMC_USR | PMC_EN | PMC_INT },
		{ .reg_num = 16, .reg_set = 0, .reg_value = FIXED1_USR },
		{ .reg_num = 0, .reg_set = 1, .reg_value = 0x3c | SIM_PMC_USR | PMC_EN },
	};
	pfarg_pmd_t pd[4] = {
		{ .reg_num = 0, .reg_set = 0, .reg_value = -P, .reg_short_reset = -P, .reg_ovfl_switch_cnt = 2 },
		{ .reg_num = 17, .reg_set = 0 },
		{ .reg_num = 0, .reg_set = 1 },
		{ .reg_num = 1, .reg_set = 1, .reg_value = 77 },  /* written, not counting */
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_create_evtsets(fd, sd, 2));
	CHECK_OK(pfm_write_pmcs(fd, pc, 3));
	CHECK_OK(pfm_write_pmds(fd, pd, 4));
	compare(fd, pd, 4, "unloaded");
	CHECK_OK(pfm_load_context(fd, &load));
	compare(fd, pd, 4, "loaded");
	CHECK_OK(pfm_start(fd, NULL));
	compare(fd, pd, 4, "started");
	char when[64];
	for (int k = 1; k <= 24; k++) {
		sim_advance(STEP_NS);
		snprintf(when, sizeof(when), "step %d", k);
		compare(fd, pd, 4, when);
		/* Each alone too: the active set's PMD, and each other. */
		for (int i = 0; i < 4; i++)
			compare(fd, &pd[i], 1, when);
		if (k == 7) {
			pfarg_pmd_t w = { .reg_num = 17, .reg_set = 0, .reg_value = 1000000 };
			CHECK_OK(pfm_write_pmds(fd, &w, 1));
			compare(fd, pd, 4, "after a PMD write");
		}
		if (k == 13) {
			CHECK_OK(pfm_stop(fd));
			compare(fd, pd, 4, "stopped");
			sim_advance(5 * STEP_NS);
			compare(fd, pd, 4, "stopped, time passed");
			CHECK_OK(pfm_start(fd, NULL));
			compare(fd, pd, 4, "started again");
		}
	}
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

/* An overflow that notifies masks the session until pfm_restart, which
 * applies the long reset. */
static void masking_and_restart(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = 0xc0 | SIM_PMC_USR | PMC_EN | PMC_INT };
	pfarg_pmd_t pd[2] = {
		{ .reg_num = 0, .reg_value = -P, .reg_flags = PFM_REGFL_OVFL_NOTIFY, .reg_short_reset = -P,
		  .reg_long_reset = -2 * P },
		{ .reg_num = 16 },
	};
	pfarg_pmc_t fixed = { .reg_num = 16, .reg_value = 0x2 };  /* FIXED_CTR0: instructions, user level */
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	CHECK_OK(pfm_write_pmcs(fd, &fixed, 1));
	CHECK_OK(pfm_write_pmds(fd, pd, 2));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	char when[64];
	for (int k = 1; k <= 10; k++) {
		sim_advance(STEP_NS);
		snprintf(when, sizeof(when), "masking step %d", k);
		compare(fd, pd, 2, when);
		char state[256];
		session_text(fd, "state", state, sizeof(state));
		if (strncmp(state, "state=masked", 12) == 0) {
			sim_advance(STEP_NS);  /* masked: nothing counts */
			compare(fd, pd, 2, "masked");
			CHECK_OK(pfm_restart(fd));
			compare(fd, pd, 2, "restarted (long reset)");
			pfarg_pmd_t r = { .reg_num = 0 };
			CHECK_OK(pfm_read_pmds(fd, &r, 1));
			CHECK_EQ_U64(r.reg_value, -2 * P);
		}
	}
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

/* With pfmfsd stopped, only the page can answer. */
static void answers_without_the_daemon(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = 0x3c | SIM_PMC_USR | PMC_EN };
	pfarg_pmd_t pd[2] = { { .reg_num = 0, .reg_value = 5 }, { .reg_num = 1, .reg_value = 6 } };
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(fd, pd, 2));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	sim_advance(1000);
	compare(fd, pd, 2, "before the daemon stops");  /* maps the page */

	daemon_stop(10);
	pfarg_pmd_t got[2] = { { .reg_num = 0 }, { .reg_num = 1 } };
	for (int i = 0; i < 1000; i++) {
		got[0].reg_value = got[1].reg_value = 0;
		CHECK_OK(pfm_read_pmds(fd, got, 2));
		CHECK_EQ_U64(got[0].reg_value, 5 + SIM_CYCLES_PER_NS * 1000);
		CHECK_EQ_U64(got[1].reg_value, 6);
	}
	daemon_continue();
	compare(fd, pd, 2, "after the daemon went on");
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

static int idle_stop;	/* __atomic: shared with idle_thread */
static pid_t idle_tid;

static void *idle_thread(void *arg)
{
	(void)arg;
	__atomic_store_n(&idle_tid, tid_self(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&idle_stop, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/* Not from the page: another thread's context, a destroyed session, a closed
 * descriptor. */
static void what_the_page_must_not_answer(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = 0x3c | SIM_PMC_USR | PMC_EN };
	pfarg_pmd_t pd = { .reg_num = 0 };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0, "pthread_create");
	while (!__atomic_load_n(&idle_tid, __ATOMIC_ACQUIRE))
		usleep(1000);

	/* Loaded on another thread: the mount answers, the same values. */
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
	pfarg_load_t load = { .load_pid = (uint32_t)__atomic_load_n(&idle_tid, __ATOMIC_ACQUIRE) };
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	sim_advance(2000);
	compare(fd, &pd, 1, "loaded on another thread");
	pfarg_pmd_t r = { .reg_num = 0 };
	CHECK_OK(pfm_read_pmds(fd, &r, 1));
	CHECK_EQ_U64(r.reg_value, SIM_CYCLES_PER_NS * 2000);

	/* Destroyed under the library (rmdir by its owner): no stale values. */
	char session[PATH_MAX];
	snprintf(session, sizeof(session), "%s", fd_session_dir(fd));
	CHECK_OK(pfm_unload_context(fd));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	sim_advance(1000);
	CHECK_OK(pfm_read_pmds(fd, &r, 1));  /* through the page, mapped now */
	CHECK_EQ_U64(r.reg_value, SIM_CYCLES_PER_NS * 3000);
	CHECK_OK(rmdir(session));
	r.reg_value = 0;
	CHECK(pfm_read_pmds(fd, &r, 1) == -1, "pfm_read_pmds of a destroyed session succeeded (value %" PRIu64 ")",
	      r.reg_value);
	CHECK_OK(close(fd));

	/* Closed: once the session is gone (the daemon hears of the close a
	 * moment after it returns; until then the mapping answers, as perfctr's
	 * did: docs/libpfm-compat.md), EBADF, as perfmon2 said. */
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	CHECK_OK(pfm_read_pmds(fd, &r, 1));
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	CHECK_ERRNO(pfm_read_pmds(fd, &r, 1), EBADF);

	__atomic_store_n(&idle_stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(wait_sessions(0) == 0, "a session outlived close()");
}

int main(void)
{
	switches_and_resets();
	masking_and_restart();
	answers_without_the_daemon();
	what_the_page_must_not_answer();
	printf("fast_path: %d comparisons of pfm_read_pmds with the mount, all equal\n", steps);
	return 0;
}
