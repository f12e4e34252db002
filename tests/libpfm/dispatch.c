/*
 * dispatch.c: pfmlib's event encoding on the sim's PMU, read from the mount's
 * pmu/ description: the PMU's shape, every event of pmu/events found by name
 * and by code, the lookup errors, pfm_dispatch_events() placing events on the
 * counters that can count them, and pfm_strerror(). Last, the dispatched
 * registers go into a context: the counts prove the encoding counts what it
 * says it counts.
 *
 * Sim only: the last part proves each encoding by its exact count under the
 * manual clock (and pmu/events lists the sim's SIM_PHASE_* events); on x86
 * counts are rate x CPU time within a slack that cannot tell the rates of
 * neighbouring events apart exactly.
 */
#include "check.h"

#include <ctype.h>
#include <sys/wait.h>

#define PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define FIXED_OS(i) (0x1ULL << (4 * (i)))	/* FIXED_CTR_CTRL field i: kernel level */
#define FIXED_USR(i) (0x2ULL << (4 * (i)))	/* FIXED_CTR_CTRL field i: user level */
#define FIXED_PMI(i) (0x8ULL << (4 * (i)))	/* FIXED_CTR_CTRL field i: interrupt */
#define FIXED_CTRL_PMC 16

/* Too big for the stack; dispatch() resets them. */
static pfmlib_input_param_t inp;
static pfmlib_output_param_t outp;

static unsigned find(const char *name)
{
	unsigned idx = ~0u;

	CHECK_PFM(pfm_find_event(name, &idx));
	return idx;
}

/* The event names of pmu/events, in its order. */
static char names[64][64];
static uint64_t codes[64];
static unsigned nnames;

static void read_event_table(void)
{
	static char text[16384];
	char *line, *save = NULL;

	CHECK(read_text(mount_file("pmu/events"), text, sizeof(text)) > 0, "read pmu/events: %s",
	      strerror(errno));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		CHECK(nnames < 64, "too many events");
		CHECK(sscanf(line, "name=%63s", names[nnames]) == 1, "bad line %s", line);
		codes[nnames] = kv_u64(line, "code");
		nnames++;
	}
}

/* Calls made before pfm_initialize() fail with NOINIT: in a child forked
 * before this process initializes, so the parent's state cannot hide it. */
static void check_before_initialize(void)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		unsigned n, idx;
		char name[64];
		pfmlib_event_t e;

		CHECK_EQ_U64(pfm_get_num_counters(&n), PFMLIB_ERR_NOINIT);
		CHECK_EQ_U64(pfm_get_num_events(&n), PFMLIB_ERR_NOINIT);
		CHECK_EQ_U64(pfm_get_pmu_name(name, sizeof(name)), PFMLIB_ERR_NOINIT);
		CHECK_EQ_U64(pfm_find_event("INSTRUCTION_RETIRED", &idx), PFMLIB_ERR_NOINIT);
		CHECK_EQ_U64(pfm_get_cycle_event(&e), PFMLIB_ERR_NOINIT);
		memset(&inp, 0, sizeof(inp));
		inp.pfp_event_count = 1;
		inp.pfp_dfl_plm = PFM_PLM3;
		CHECK_EQ_U64(pfm_dispatch_events(&inp, NULL, &outp, NULL), PFMLIB_ERR_NOINIT);
		exit(0);
	}
	CHECK_OK(waitpid(pid, &status, 0));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the NOINIT child failed (status 0x%x)",
	      status);
}

static uint64_t regmask_bits(pfmlib_regmask_t *m)
{
	uint64_t bits = 0;

	for (unsigned i = 0; i < 64; i++)
		if (pfm_regmask_isset(m, i))
			bits |= 1ULL << i;
	for (unsigned i = 64; i < PFMLIB_REG_MAX; i++)
		CHECK(!pfm_regmask_isset(m, i), "register %u in the mask", i);
	return bits;
}

static void check_pmu_shape(void)
{
	pfmlib_regmask_t m;
	unsigned n;
	char name[64];

	CHECK_PFM(pfm_get_num_counters(&n));
	CHECK_EQ_U64(n, 7);	/* 4 general + 3 fixed */
	CHECK_PFM(pfm_get_num_pmcs(&n));
	CHECK_EQ_U64(n, 5);
	CHECK_PFM(pfm_get_num_pmds(&n));
	CHECK_EQ_U64(n, 7);
	CHECK_PFM(pfm_get_hw_counter_width(&n));
	CHECK_EQ_U64(n, 48);
	CHECK_PFM(pfm_get_impl_pmcs(&m));
	CHECK_EQ_U64(regmask_bits(&m), SIM_AVAIL_PMCS);
	CHECK_PFM(pfm_get_impl_pmds(&m));
	CHECK_EQ_U64(regmask_bits(&m), SIM_AVAIL_PMDS);
	CHECK_PFM(pfm_get_impl_counters(&m));
	CHECK_EQ_U64(regmask_bits(&m), SIM_AVAIL_PMDS);
	CHECK_PFM(pfm_regmask_weight(&m, &n));
	CHECK_EQ_U64(n, 7);
	/* The model's name: PAPI's preset table does not know it, so an
	 * unpatched PAPI starts (docs/libpfm-compat.md, "PAPI"). */
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, "intel-arch-v2") == 0, "pmu name \"%s\"", name);
	CHECK_PFM(pfm_get_pmu_name_bytype(PFMLIB_GEN_IA32_PMU, name, sizeof(name)));
	CHECK(strcmp(name, "Intel architectural PMU") == 0, "pmu name by type \"%s\"", name);
	CHECK_EQ_U64(pfm_get_pmu_name(name, 6), PFMLIB_ERR_FULL);
	CHECK(strcmp(name, "intel") == 0, "cut pmu name \"%s\"", name);
	/* PFMFS_PMU_NAME overrides it: libpfm 3.10's name, for a patched PAPI. */
	CHECK_OK(setenv("PFMFS_PMU_NAME", "Intel architectural PMU", 1));
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, "Intel architectural PMU") == 0, "overridden pmu name \"%s\"", name);
	CHECK_OK(setenv("PFMFS_PMU_NAME", "", 1));
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, "intel-arch-v2") == 0, "pmu name with an empty override \"%s\"", name);
	CHECK_OK(unsetenv("PFMFS_PMU_NAME"));
}

static void check_event_table(void)
{
	unsigned n, idx;
	size_t maxlen = 0, len;
	char name[64], lower[64], code[32];
	pfmlib_event_t e;
	int c;

	read_event_table();
	CHECK_PFM(pfm_get_num_events(&n));
	CHECK_EQ_U64(n, nnames);
	for (unsigned i = 0; i < nnames; i++) {
		idx = find(names[i]);
		CHECK_PFM(pfm_get_event_name(idx, name, sizeof(name)));
		CHECK(strcmp(name, names[i]) == 0, "event %u is \"%s\", not \"%s\"", idx, name,
		      names[i]);
		CHECK_PFM(pfm_get_event_code(idx, &c));
		CHECK_EQ_U64(c, codes[i]);

		/* Names are found whatever their case. */
		for (len = 0; names[i][len]; len++)
			lower[len] = (char)tolower((unsigned char)names[i][len]);
		lower[len] = '\0';
		CHECK_EQ_U64(find(lower), idx);
		maxlen = len > maxlen ? len : maxlen;

		/* A number is an event code (the first event with it). */
		snprintf(code, sizeof(code), "0x%" PRIx64, codes[i]);
		CHECK_EQ_U64(find(code), idx);
		CHECK_PFM(pfm_find_event_bycode((int)codes[i], &n));
		CHECK_EQ_U64(n, idx);

		memset(&e, 0, sizeof(e));
		CHECK_PFM(pfm_find_full_event(names[i], &e));
		CHECK_EQ_U64(e.event, idx);
		CHECK_EQ_U64(e.num_masks, 0);
		CHECK_PFM(pfm_get_full_event_name(&e, name, sizeof(name)));
		CHECK(strcmp(name, names[i]) == 0, "full name \"%s\", not \"%s\"", name, names[i]);
	}
	CHECK_PFM(pfm_get_max_event_name_len(&len));
	CHECK_EQ_U64(len, maxlen);

	CHECK_PFM(pfm_get_cycle_event(&e));
	CHECK_EQ_U64(e.event, find("UNHALTED_CORE_CYCLES"));
	CHECK_PFM(pfm_get_inst_retired_event(&e));
	CHECK_EQ_U64(e.event, find("INSTRUCTION_RETIRED"));

	/*
	 * libpfm 3.10's names of the architectural events (and PAPI's one other
	 * name for mispredicted branches) find the same events, whatever the
	 * case, in every lookup; the table still lists each event once.
	 */
	{
		static const char *const alias[][2] = {
			{ "INSTRUCTIONS_RETIRED", "INSTRUCTION_RETIRED" },
			{ "LAST_LEVEL_CACHE_REFERENCES", "LLC_REFERENCES" },
			{ "LAST_LEVEL_CACHE_MISSES", "LLC_MISSES" },
			{ "MISPREDICTED_BRANCH_RETIRED", "BRANCH_MISSES_RETIRED" },
			{ "RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS", "BRANCH_MISSES_RETIRED" },
			{ "last-level-cache-misses", "LLC_MISSES" },
		};
		for (unsigned i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
			CHECK_EQ_U64(find(alias[i][0]), find(alias[i][1]));
			CHECK_PFM(pfm_find_event_byname(alias[i][0], &idx));
			CHECK_EQ_U64(idx, find(alias[i][1]));
			memset(&e, 0, sizeof(e));
			CHECK_PFM(pfm_find_full_event(alias[i][0], &e));
			CHECK_EQ_U64(e.event, find(alias[i][1]));
			CHECK_PFM(pfm_get_event_name(e.event, name, sizeof(name)));
			CHECK(strcmp(name, alias[i][1]) == 0, "%s is listed as \"%s\"", alias[i][0], name);
		}
	}

	CHECK_EQ_U64(pfm_find_event("NO_SUCH_EVENT", &idx), PFMLIB_ERR_NOTFOUND);
	CHECK_EQ_U64(pfm_find_full_event("NO_SUCH_EVENT", &e), PFMLIB_ERR_NOTFOUND);
	CHECK_EQ_U64(pfm_find_event("0x77", &idx), PFMLIB_ERR_NOTFOUND);
	CHECK_EQ_U64(pfm_find_full_event("LLC_MISSES:NO_SUCH_UMASK", &e), PFMLIB_ERR_UMASK);
	CHECK_EQ_U64(pfm_get_event_name(nnames, name, sizeof(name)), PFMLIB_ERR_INVAL);
}

/* Dispatches the named events (plm: each event's, dfl_plm: the default),
 * with PMC unavail_pmc marked unavailable unless it is -1. */
static int dispatch(const char *const *events, unsigned n, unsigned plm, unsigned dfl_plm,
		    int unavail_pmc)
{
	memset(&inp, 0, sizeof(inp));
	memset(&outp, 0, sizeof(outp));
	for (unsigned i = 0; i < n; i++) {
		inp.pfp_events[i].event = find(events[i]);
		inp.pfp_events[i].plm = plm;
	}
	inp.pfp_event_count = n;
	inp.pfp_dfl_plm = dfl_plm;
	if (unavail_pmc >= 0)
		pfm_regmask_set(&inp.pfp_unavail_pmcs, (unsigned)unavail_pmc);
	return pfm_dispatch_events(&inp, NULL, &outp, NULL);
}

/* The value dispatched for PMC num; the test fails if there is none. */
static uint64_t pmc(unsigned num)
{
	for (unsigned i = 0; i < outp.pfp_pmc_count; i++)
		if (outp.pfp_pmcs[i].reg_num == num)
			return outp.pfp_pmcs[i].reg_value;
	check_fail_(__FILE__, __LINE__, "no PMC%u among the %u dispatched", num, outp.pfp_pmc_count);
}

/* The PMDs of the events, in event order. */
static void check_pmds(unsigned n, const unsigned *want)
{
	CHECK_EQ_U64(outp.pfp_pmd_count, n);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_U64(outp.pfp_pmds[i].reg_num, want[i]);
}

static const char *const three[] = { "INSTRUCTION_RETIRED", "UNHALTED_CORE_CYCLES", "LLC_MISSES" };

static void check_dispatch(void)
{
	static const char *const general5[] = { "LLC_MISSES", "LLC_REFERENCES", "BRANCH_MISSES_RETIRED",
						"BRANCH_INSTRUCTIONS_RETIRED", "SIM_PHASE_A" };
	static const char *const eight[] = { "INSTRUCTION_RETIRED", "UNHALTED_CORE_CYCLES",
					     "UNHALTED_REFERENCE_CYCLES", "LLC_MISSES", "LLC_REFERENCES",
					     "BRANCH_MISSES_RETIRED", "BRANCH_INSTRUCTIONS_RETIRED",
					     "SIM_PHASE_A" };
	const uint64_t llc_misses = 0x412e;

	/* Fixed counters for the fixed events, the first general one for the rest. */
	CHECK_PFM(dispatch(three, 3, 0, PFM_PLM3, -1));
	check_pmds(3, (const unsigned[]){ 16, 17, 0 });
	CHECK_EQ_U64(outp.pfp_pmc_count, 2);
	/* One shared control for both fixed counters; the third field stays 0. */
	CHECK_EQ_U64(pmc(FIXED_CTRL_PMC), FIXED_USR(0) | FIXED_PMI(0) | FIXED_USR(1) | FIXED_PMI(1));
	CHECK_EQ_U64(pmc(0), llc_misses | SIM_PMC_USR | PMC_INT | PMC_EN);
	/* Addresses as pfmfs(5)'s register map has them (pmu/desc). */
	CHECK_EQ_U64(outp.pfp_pmds[0].reg_addr, 0x309);	/* IA32_FIXED_CTR0 */
	CHECK_EQ_U64(outp.pfp_pmds[1].reg_addr, 0x30a);	/* IA32_FIXED_CTR1 */
	CHECK_EQ_U64(outp.pfp_pmds[2].reg_addr, 0xc1);	/* IA32_PMC0 */
	CHECK_EQ_U64(outp.pfp_pmcs[0].reg_num, FIXED_CTRL_PMC);	/* PMCs in event order */
	CHECK_EQ_U64(outp.pfp_pmcs[0].reg_addr, 0x38d);	/* IA32_FIXED_CTR_CTRL */
	CHECK_EQ_U64(outp.pfp_pmcs[1].reg_addr, 0x186);	/* IA32_PERFEVTSEL0 */

	/* Each event's plm wins over the default; PLM0 is the kernel bit. */
	CHECK_PFM(dispatch(three, 3, PFM_PLM0 | PFM_PLM3, PFM_PLM3, -1));
	check_pmds(3, (const unsigned[]){ 16, 17, 0 });
	CHECK_EQ_U64(pmc(FIXED_CTRL_PMC), FIXED_USR(0) | FIXED_OS(0) | FIXED_PMI(0) | FIXED_USR(1) |
						  FIXED_OS(1) | FIXED_PMI(1));
	CHECK_EQ_U64(pmc(0), llc_misses | SIM_PMC_USR | SIM_PMC_OS | PMC_INT | PMC_EN);
	CHECK_PFM(dispatch(three, 3, 0, PFM_PLM0, -1));
	CHECK_EQ_U64(pmc(0), llc_misses | SIM_PMC_OS | PMC_INT | PMC_EN);

	/* An unavailable PMC is skipped. */
	CHECK_PFM(dispatch(three, 3, 0, PFM_PLM3, 0));
	check_pmds(3, (const unsigned[]){ 16, 17, 1 });
	CHECK_EQ_U64(outp.pfp_pmc_count, 2);
	CHECK_EQ_U64(pmc(1), llc_misses | SIM_PMC_USR | PMC_INT | PMC_EN);

	/* Without the fixed counters' control, every event takes a general one. */
	CHECK_PFM(dispatch(three, 3, 0, PFM_PLM3, FIXED_CTRL_PMC));
	check_pmds(3, (const unsigned[]){ 0, 1, 2 });
	CHECK_EQ_U64(outp.pfp_pmc_count, 3);
	CHECK_EQ_U64(pmc(0), 0xc0 | SIM_PMC_USR | PMC_INT | PMC_EN);
	CHECK_EQ_U64(pmc(1), 0x3c | SIM_PMC_USR | PMC_INT | PMC_EN);
	CHECK_EQ_U64(pmc(2), llc_misses | SIM_PMC_USR | PMC_INT | PMC_EN);

	/* Seven counters, but only four can count general-only events. */
	CHECK_PFM(dispatch(general5, 4, 0, PFM_PLM3, -1));
	check_pmds(4, (const unsigned[]){ 0, 1, 2, 3 });
	CHECK_EQ_U64(dispatch(general5, 5, 0, PFM_PLM3, -1), PFMLIB_ERR_NOASSIGN);
	CHECK_PFM(dispatch(eight, 7, 0, PFM_PLM3, -1));
	check_pmds(7, (const unsigned[]){ 16, 17, 18, 0, 1, 2, 3 });
	CHECK_EQ_U64(dispatch(eight, 8, 0, PFM_PLM3, -1), PFMLIB_ERR_TOOMANY);

	/* No privilege level anywhere. */
	CHECK_EQ_U64(dispatch(three, 3, 0, 0, -1), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(pfm_dispatch_events(NULL, NULL, &outp, NULL), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(pfm_dispatch_events(&inp, NULL, NULL, NULL), PFMLIB_ERR_INVAL);
}

/* Programs what `three` dispatched to into a context on this thread, runs
 * 1 ms of sim time and reads the three counts in event order. */
static void count_dispatched(int unavail_pmc)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc[8];
	pfarg_pmd_t pd[8];
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	const uint64_t want[3] = { 2000000, 3000000, 10000 };	/* 2/ns, 3/ns, 0.01/ns */
	int fd;

	CHECK_PFM(dispatch(three, 3, 0, PFM_PLM3, unavail_pmc));
	memset(pc, 0, sizeof(pc));
	memset(pd, 0, sizeof(pd));
	for (unsigned i = 0; i < outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
	}
	for (unsigned i = 0; i < outp.pfp_pmd_count; i++)
		pd[i].reg_num = (uint16_t)outp.pfp_pmds[i].reg_num;

	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
	CHECK_OK(pfm_write_pmds(fd, pd, (int)outp.pfp_pmd_count));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	sim_advance(1000000);
	CHECK_OK(pfm_stop(fd));
	CHECK_OK(pfm_read_pmds(fd, pd, (int)outp.pfp_pmd_count));
	for (unsigned i = 0; i < 3; i++) {
		printf("%-22s pmd%-2u %" PRIu64 "\n", three[i], pd[i].reg_num, (uint64_t)pd[i].reg_value);
		CHECK_EQ_U64(pd[i].reg_value, want[i]);
	}
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

static void check_strerror(void)
{
	const char *msgs[-PFMLIB_ERR_NOMEM + 1];

	for (int code = 0; code >= PFMLIB_ERR_NOMEM; code--) {
		msgs[-code] = pfm_strerror(code);
		CHECK(msgs[-code] && *msgs[-code], "no message for %d", code);
		for (int other = 0; other > code; other--)
			CHECK(strcmp(msgs[-code], msgs[-other]) != 0, "%d and %d both say \"%s\"", code,
			      other, msgs[-code]);
	}
	CHECK(pfm_strerror(-1000) && *pfm_strerror(-1000), "no message for an unknown code");
}

int main(void)
{
	check_before_initialize();
	CHECK_PFM(pfm_initialize());
	CHECK_PFM(pfm_initialize());	/* a second call is harmless */
	check_pmu_shape();
	check_event_table();
	check_dispatch();
	check_strerror();
	count_dispatched(-1);			/* fixed counters + PMD0 */
	count_dispatched(FIXED_CTRL_PMC);	/* general counters only */
	return 0;
}
