// pfmfs-test: backends=sim,perf,x86
/*
 * dispatch_models.c: what libpfm 3.10 programs learn of the PMU model and
 * ask of it beyond pfmlib.h (docs/libpfm-compat.md, "PMU types" and "Model
 * parameters"):
 *  - the PMU type on every backend (pfmon and PAPI pick their module by it),
 *    the name, the types pfm_force_pmu() and LIBPFM_FORCE_PMU take;
 *  - pfm_dispatch_events() with the gen_ia32 and the Core model_in that
 *    pfmon always passes: zeroed, it dispatches exactly as NULL; with a
 *    counter mask, invert, edge or AnyThread, the exact PERFEVTSEL and
 *    FIXED_CTR_CTRL values where the PMU implements them (the sim:
 *    AnyThread; a hardware description: all), PFMLIB_ERR_INVAL where it
 *    does not, and libpfm 3.10's codes for what no PMU accepts;
 *  - the model-specific calls (pfm_core_is_pebs, ...).
 * On the sim a dispatch with AnyThread is also counted: exact counts.
 */
#include "check.h"

#include <perfmon/pfmlib_core.h>
#include <perfmon/pfmlib_gen_ia32.h>
#include <perfmon/pfmlib_intel_atom.h>
#include <perfmon/pfmlib_intel_nhm.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define PMC_INT (1ULL << 20)
#define PMC_ANY (1ULL << 21)
#define PMC_EN (1ULL << 22)
#define PMC_EDGE (1ULL << 18)
#define PMC_INV (1ULL << 23)
#define PMC_CMASK(n) ((uint64_t)(n) << 24)
#define FIXED_USR(i) (0x2ULL << (4 * (i)))
#define FIXED_ANY(i) (0x4ULL << (4 * (i)))
#define FIXED_PMI(i) (0x8ULL << (4 * (i)))
#define LLC_MISSES_CODE 0x412eULL

/* Too big for the stack (the gen_ia32 input is 8 KiB). */
static pfmlib_input_param_t inp;
static pfmlib_output_param_t outp, plain_outp;
static pfmlib_gen_ia32_input_param_t gen;
static pfmlib_gen_ia32_output_param_t gen_out;
static pfmlib_core_input_param_t core;

static unsigned find(const char *name)
{
	unsigned idx = ~0u;

	CHECK_PFM(pfm_find_event(name, &idx));
	return idx;
}

/* The events in inp, at user level; the model inputs zeroed. */
static void events(const char *const *names, unsigned n)
{
	memset(&inp, 0, sizeof(inp));
	memset(&outp, 0, sizeof(outp));
	memset(&gen, 0, sizeof(gen));
	memset(&core, 0, sizeof(core));
	for (unsigned i = 0; i < n; i++)
		inp.pfp_events[i].event = find(names[i]);
	inp.pfp_event_count = n;
	inp.pfp_dfl_plm = PFM_PLM3;
}

static uint64_t pmc(unsigned num)
{
	for (unsigned i = 0; i < outp.pfp_pmc_count; i++)
		if (outp.pfp_pmcs[i].reg_num == num)
			return outp.pfp_pmcs[i].reg_value;
	check_fail_(__FILE__, __LINE__, "no PMC%u among the %u dispatched", num, outp.pfp_pmc_count);
}

static int type_now(void)
{
	int type = -1;

	CHECK_PFM(pfm_get_pmu_type(&type));
	return type;
}

/* The backend's model: the sim and x86 are Intel architectural PMUs (which
 * may also be presented as Intel Core); perf here is perf-sw. */
static int architectural(void)
{
	return !on_backend("perf");
}

static void check_types(void)
{
	char name[64];

	/* Every model is libpfm's generic IA-32 PMU: its PMCs are PERFEVTSELs. */
	CHECK_EQ_U64(type_now(), PFMLIB_GEN_IA32_PMU);
	/* The name is the mount's model: PAPI's preset table does not know it,
	 * so an unpatched PAPI starts (docs/libpfm-compat.md, "PAPI"). */
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, architectural() ? "intel-arch-v2" : "perf-sw") == 0, "pmu name \"%s\"", name);
	CHECK_OK(setenv("PFMFS_PMU_NAME", "Intel architectural PMU", 1));
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, "Intel architectural PMU") == 0, "opt-in name \"%s\"", name);
	CHECK_OK(unsetenv("PFMFS_PMU_NAME"));

	CHECK_PFM(pfm_get_pmu_name_bytype(PFMLIB_GEN_IA32_PMU, name, sizeof(name)));
	CHECK(strcmp(name, "Intel architectural PMU") == 0, "name of type 63 \"%s\"", name);
	CHECK_PFM(pfm_get_pmu_name_bytype(PFMLIB_CORE_PMU, name, sizeof(name)));
	CHECK(strcmp(name, "Intel Core") == 0, "name of type 36 \"%s\"", name);
	CHECK_EQ_U64(pfm_get_pmu_name_bytype(PFMLIB_AMD64_PMU, name, sizeof(name)), PFMLIB_ERR_INVAL);

	CHECK_PFM(pfm_is_pmu_supported(PFMLIB_GEN_IA32_PMU));
	CHECK_EQ_U64(pfm_is_pmu_supported(PFMLIB_CORE_PMU), architectural() ? PFMLIB_SUCCESS : PFMLIB_ERR_NOTSUPP);
	CHECK_EQ_U64(pfm_is_pmu_supported(PFMLIB_AMD64_PMU), PFMLIB_ERR_NOTSUPP);
	CHECK_EQ_U64(pfm_is_pmu_supported(PFMLIB_UNKNOWN_PMU), PFMLIB_ERR_NOTSUPP);

	/* Forcing switches between the types the model can be, at any time. */
	CHECK_EQ_U64(pfm_force_pmu(PFMLIB_AMD64_PMU), PFMLIB_ERR_NOTSUPP);
	CHECK_EQ_U64(pfm_force_pmu(PFMLIB_UNKNOWN_PMU), PFMLIB_ERR_NOTSUPP);
	CHECK_EQ_U64(type_now(), PFMLIB_GEN_IA32_PMU);
	if (architectural()) {
		CHECK_PFM(pfm_force_pmu(PFMLIB_CORE_PMU));
		CHECK_EQ_U64(type_now(), PFMLIB_CORE_PMU);
		CHECK_PFM(pfm_force_pmu(PFMLIB_GEN_IA32_PMU));
	} else {
		CHECK_EQ_U64(pfm_force_pmu(PFMLIB_CORE_PMU), PFMLIB_ERR_NOTSUPP);
	}
	CHECK_EQ_U64(type_now(), PFMLIB_GEN_IA32_PMU);
}

/* LIBPFM_FORCE_PMU=value, read by pfm_initialize() in a fresh child:
 * returns pfm_initialize()'s code, or the type it gave. */
static int forced_by_env(const char *value, int *type)
{
	int pipefd[2], status, got[2] = { 0, -1 };
	pid_t pid;

	CHECK_OK(pipe(pipefd));
	fflush(NULL);
	pid = CHECK_OK(fork());
	if (pid == 0) {
		int out[2] = { 0, -1 };

		setenv("LIBPFM_FORCE_PMU", value, 1);
		out[0] = pfm_initialize();
		if (out[0] == PFMLIB_SUCCESS)
			pfm_get_pmu_type(&out[1]);
		if (write(pipefd[1], out, sizeof(out)) != sizeof(out))
			_exit(2);
		_exit(0);
	}
	CHECK_OK(close(pipefd[1]));
	CHECK_EQ_U64(read(pipefd[0], got, sizeof(got)), sizeof(got));
	CHECK_OK(close(pipefd[0]));
	CHECK_OK(waitpid(pid, &status, 0));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	*type = got[1];
	return got[0];
}

static void check_force_env(void)
{
	int type;

	CHECK_PFM(forced_by_env("63", &type));
	CHECK_EQ_U64(type, PFMLIB_GEN_IA32_PMU);
	if (architectural()) {
		CHECK_PFM(forced_by_env("36", &type));
		CHECK_EQ_U64(type, PFMLIB_CORE_PMU);
	} else {
		CHECK_EQ_U64(forced_by_env("36", &type), PFMLIB_ERR_NOTSUPP);
	}
	CHECK_EQ_U64(forced_by_env("16", &type), PFMLIB_ERR_NOTSUPP);	/* AMD64 */
	CHECK_EQ_U64(forced_by_env("core", &type), PFMLIB_ERR_NOTSUPP);	/* not a number */
}

static const char *const four[] = { "INSTRUCTION_RETIRED", "UNHALTED_CORE_CYCLES", "LLC_MISSES",
				     "BRANCH_INSTRUCTIONS_RETIRED" };
static const char *const sw_two[] = { "TASK_CLOCK", "PAGE_FAULTS" };

/* The events every backend has: the architectural ones, or perf-sw's. */
static const char *const *some(unsigned *n)
{
	*n = architectural() ? 4 : 2;
	return architectural() ? four : sw_two;
}

/* A zeroed model input changes nothing (pfmon always passes one), a model
 * output is accepted and left alone. */
static void check_zeroed_inputs(void)
{
	unsigned n;
	const char *const *names = some(&n);

	events(names, n);
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));
	plain_outp = outp;
	events(names, n);
	memset(&gen_out, 0x5a, sizeof(gen_out));
	CHECK_PFM(pfm_dispatch_events(&inp, &gen, &outp, &gen_out));
	CHECK(memcmp(&outp, &plain_outp, sizeof(outp)) == 0, "a zeroed gen_ia32 input changed the dispatch");
	for (unsigned i = 0; i < sizeof(gen_out.reserved) / sizeof(gen_out.reserved[0]); i++)
		CHECK_EQ_U64(gen_out.reserved[i], 0x5a5a5a5a5a5a5a5aULL);
	if (architectural()) {
		CHECK_PFM(pfm_force_pmu(PFMLIB_CORE_PMU));
		events(names, n);
		CHECK_PFM(pfm_dispatch_events(&inp, &core, &outp, NULL));
		CHECK(memcmp(&outp, &plain_outp, sizeof(outp)) == 0, "a zeroed Core input changed the dispatch");
		CHECK_PFM(pfm_force_pmu(PFMLIB_GEN_IA32_PMU));
	}
}

/* What no PMU accepts, with libpfm 3.10's codes, on every backend. */
static void check_refusals(void)
{
	static const char *const six[] = { "INSTRUCTION_RETIRED", "UNHALTED_CORE_CYCLES", "LLC_MISSES",
					   "LLC_REFERENCES", "BRANCH_INSTRUCTIONS_RETIRED",
					   "BRANCH_MISSES_RETIRED" };
	unsigned n;
	const char *const *names = some(&n);

	events(names, n);
	gen.pfp_gen_ia32_counters[1].flags = 0x8;	/* no such flag */
	CHECK_EQ_U64(pfm_dispatch_events(&inp, &gen, &outp, NULL), PFMLIB_ERR_INVAL);
	events(names, n);
	gen.pfp_gen_ia32_counters[1].cnt_mask = 256;	/* 8 bits */
	CHECK_EQ_U64(pfm_dispatch_events(&inp, &gen, &outp, NULL), PFMLIB_ERR_INVAL);
	if (!architectural())
		return;
	CHECK_PFM(pfm_force_pmu(PFMLIB_CORE_PMU));
	events(names, n);
	core.pfp_core_counters[0].flags = PFM_GEN_IA32_SEL_ANYTHR;	/* Core has no AnyThread */
	CHECK_EQ_U64(pfm_dispatch_events(&inp, &core, &outp, NULL), PFMLIB_ERR_INVAL);
	events(six, 6);		/* the Core input has options for 5 events */
	CHECK_EQ_U64(pfm_dispatch_events(&inp, &core, &outp, NULL), PFMLIB_ERR_TOOMANY);
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));	/* without it, 6 fit */
	events(names, n);
	core.pfp_core_pebs.pebs_used = 1;	/* no PEBS_ENABLE on pfmfs */
	CHECK_EQ_U64(pfm_dispatch_events(&inp, &core, &outp, NULL), PFMLIB_ERR_NOASSIGN);
	CHECK_PFM(pfm_force_pmu(PFMLIB_GEN_IA32_PMU));
}

/* LLC_MISSES with the options, alone; INSTRUCTION_RETIRED with them, beside
 * it. Returns the dispatch's code. */
static int dispatch_with(unsigned long cnt_mask, unsigned flags, int as_core)
{
	static const char *const two[] = { "LLC_MISSES", "INSTRUCTION_RETIRED" };

	events(two, 2);
	if (as_core) {
		core.pfp_core_counters[0].cnt_mask = core.pfp_core_counters[1].cnt_mask = cnt_mask;
		core.pfp_core_counters[0].flags = core.pfp_core_counters[1].flags = flags;
		return pfm_dispatch_events(&inp, &core, &outp, NULL);
	}
	gen.pfp_gen_ia32_counters[0].cnt_mask = gen.pfp_gen_ia32_counters[1].cnt_mask = cnt_mask;
	gen.pfp_gen_ia32_counters[0].flags = gen.pfp_gen_ia32_counters[1].flags = flags;
	return pfm_dispatch_events(&inp, &gen, &outp, NULL);
}

/* The options on the mount's PMU: the sim implements AnyThread and not the
 * filters (no cycles to compare against); perf-sw and x86's test PMU (a
 * version 2 PMU, emulated) none. */
static void check_options_here(void)
{
	const uint64_t base = LLC_MISSES_CODE | SIM_PMC_USR | PMC_INT | PMC_EN;

	if (!architectural()) {
		events(sw_two, 2);
		gen.pfp_gen_ia32_counters[0].flags = PFM_GEN_IA32_SEL_ANYTHR;
		CHECK_EQ_U64(pfm_dispatch_events(&inp, &gen, &outp, NULL), PFMLIB_ERR_INVAL);
		events(sw_two, 2);
		gen.pfp_gen_ia32_counters[1].cnt_mask = 1;
		CHECK_EQ_U64(pfm_dispatch_events(&inp, &gen, &outp, NULL), PFMLIB_ERR_INVAL);
		return;
	}
	CHECK_EQ_U64(dispatch_with(1, 0, 0), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(dispatch_with(0, PFM_GEN_IA32_SEL_INV, 0), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(dispatch_with(0, PFM_GEN_IA32_SEL_EDGE, 0), PFMLIB_ERR_INVAL);
	CHECK_PFM(pfm_force_pmu(PFMLIB_CORE_PMU));
	CHECK_EQ_U64(dispatch_with(2, PFM_CORE_SEL_INV, 1), PFMLIB_ERR_INVAL);
	CHECK_PFM(pfm_force_pmu(PFMLIB_GEN_IA32_PMU));
	if (on_backend("x86")) {
		CHECK_EQ_U64(dispatch_with(0, PFM_GEN_IA32_SEL_ANYTHR, 0), PFMLIB_ERR_INVAL);
		return;
	}
	/* The sim: AnyThread on PERFEVTSEL bit 21 and on the fixed field's bit 2. */
	CHECK_PFM(dispatch_with(0, PFM_GEN_IA32_SEL_ANYTHR, 0));
	CHECK_EQ_U64(outp.pfp_pmds[0].reg_num, 0);
	CHECK_EQ_U64(outp.pfp_pmds[1].reg_num, 16);
	CHECK_EQ_U64(pmc(0), base | PMC_ANY);
	CHECK_EQ_U64(pmc(16), FIXED_USR(0) | FIXED_ANY(0) | FIXED_PMI(0));
}

/* With no other hyperthread, AnyThread counts what the thread does: the
 * sim's exact counts for 1 ms (root may set AnyThread: pfmfs(5)). */
static void count_any_thread(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc[4];
	pfarg_pmd_t pd[4];
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd;

	CHECK_PFM(dispatch_with(0, PFM_GEN_IA32_SEL_ANYTHR, 0));
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
	CHECK_OK(pfm_read_pmds(fd, pd, 2));
	CHECK_EQ_U64(pd[0].reg_value, 10000);	/* LLC_MISSES, 0.01/ns */
	CHECK_EQ_U64(pd[1].reg_value, 2000000);	/* INSTRUCTION_RETIRED, 2/ns */
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
}

#include "dispatch_hw.h"

static void check_model_functions(void)
{
	pfmlib_event_t e;
	char *desc = NULL;

	memset(&e, 0, sizeof(e));
	e.event = find(architectural() ? "INSTRUCTION_RETIRED" : "TASK_CLOCK");
	/* No PEBS and no uncore on pfmfs's PMUs. */
	CHECK_EQ_U64(pfm_core_is_pebs(&e), 0);
	CHECK_EQ_U64(pfm_intel_atom_has_pebs(&e), 0);
	CHECK_EQ_U64(pfm_nhm_is_pebs(&e), 0);
	CHECK_EQ_U64(pfm_nhm_is_uncore(&e), 0);
	CHECK_EQ_U64(pfm_core_is_pebs(NULL), 0);
	CHECK_EQ_U64(pfm_nhm_is_pebs(NULL), (uint64_t)PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(pfm_nhm_is_uncore(NULL), (uint64_t)PFMLIB_ERR_INVAL);
	e.event = 100000;
	CHECK_EQ_U64(pfm_nhm_is_pebs(&e), (uint64_t)PFMLIB_ERR_INVAL);
	for (unsigned v = 0; v < 16; v++) {
		CHECK_PFM(pfm_nhm_data_src_desc(v, &desc));
		CHECK(desc && *desc, "no description of data source %u", v);
		free(desc);
	}
	CHECK_EQ_U64(pfm_nhm_data_src_desc(16, &desc), PFMLIB_ERR_INVAL);
	CHECK_EQ_U64(pfm_nhm_data_src_desc(0, NULL), PFMLIB_ERR_INVAL);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "hw") == 0) {
		check_hardware_values();	/* dispatch_hw.h's run on a copied description */
		return 0;
	}
	check_force_env();
	CHECK_PFM(pfm_initialize());
	check_types();
	check_zeroed_inputs();
	check_refusals();
	check_options_here();
	check_model_functions();
	if (on_backend("sim")) {
		count_any_thread();
		check_hardware_description();
	}
	return 0;
}
