// pfmfs-test: backends=sim,perf,x86 timeout=60
/*
 * churn.c: whole perfmon2 sessions, one after another: create, write the
 * registers, load on itself, start, read, stop, close. test_libpfm.py kills
 * it (SIGKILL) at random moments and at chosen steps, and checks that no
 * session outlives it. Run plainly it does PFMFS_CHURN_ITER loops (default
 * 50; 0: forever) and exits 0. Environment:
 *   PFMFS_CHURN_SEED=N   random choices (also: sometimes _exit mid-way,
 *                        leaving everything open, as a crashing program does)
 *   PFMFS_CHURN_STOP=S   raise(SIGSTOP) at step S of the first loop, for the
 *                        driver to kill it there: after_create, after_write,
 *                        after_load, after_start, after_read, after_stop;
 *                        after_mkdir (the library's first step done by hand:
 *                        mkdir sessions/NAME mode 01700, no msg opened);
 *                        thread_mkdir (a second thread does that and exits;
 *                        its session must go while this process lives on).
 *   PFMFS_CHURN_PROGRESS=N print "done I" after every N sessions, I the
 *                        sessions done so far: the driver's measure of
 *                        progress on a slow machine.
 * Prints "ready" once the library is initialized.
 */
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

static const char *stop_at;
static int random_exits;
static unsigned int seed;

/* Stops here if the driver asked for this step. */
static void step(const char *name)
{
	if (stop_at && strcmp(stop_at, name) == 0)
		raise(SIGSTOP);
	/* A program may die anywhere: now and then leave without cleaning up. */
	if (random_exits && rand_r(&seed) % 1024 == 0)
		_exit(0);
}

/* What the library does first, by hand: a session bound to this thread. */
static void *raw_mkdir(void *arg)
{
	const char *name = arg;

	CHECK(mkdir(mount_file("sessions/%s", name), 01700) == 0, "mkdir %s: %s", name, strerror(errno));
	return NULL;
}

static void by_hand(void)
{
	char name[64];
	pthread_t t;

	snprintf(name, sizeof(name), "churn-%d", (int)getpid());
	if (strcmp(stop_at, "after_mkdir") == 0) {
		raw_mkdir(name);
		raise(SIGSTOP);
		exit(0);
	}
	/* thread_mkdir: the thread that made it ends; the process lives. */
	CHECK(pthread_create(&t, NULL, raw_mkdir, name) == 0, "pthread_create");
	CHECK(pthread_join(t, NULL) == 0, "pthread_join");
	raise(SIGSTOP);
	exit(0);
}

/* One whole session on the first event the PMU offers. */
static void one_session(const pfmlib_output_param_t *outp, int on_sim)
{
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd;
	pfarg_ctx_t ctx;
	pfarg_load_t load;
	unsigned int i;
	int fd;

	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	step("after_create");

	memset(pc, 0, sizeof(pc));
	for (i = 0; i < outp->pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp->pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp->pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp->pfp_pmc_count));
	memset(&pd, 0, sizeof(pd));
	pd.reg_num = (uint16_t)outp->pfp_pmds[0].reg_num;
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
	step("after_write");

	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	step("after_load");

	CHECK_OK(pfm_start(fd, NULL));
	step("after_start");
	if (on_sim && rand_r(&seed) % 2)
		sim_advance(1000);
	CHECK_OK(pfm_read_pmds(fd, &pd, 1));
	step("after_read");
	CHECK_OK(pfm_stop(fd));
	step("after_stop");
	CHECK_OK(close(fd));
}

int main(void)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */
	static pfmlib_output_param_t outp;
	const char *env;
	long iterations = 50, progress = 0, i;
	int on_sim = strcmp(backend_name(), "sim") == 0;

	stop_at = getenv("PFMFS_CHURN_STOP");
	if ((env = getenv("PFMFS_CHURN_ITER")) != NULL)
		iterations = strtol(env, NULL, 10);
	if ((env = getenv("PFMFS_CHURN_PROGRESS")) != NULL)
		progress = strtol(env, NULL, 10);
	if ((env = getenv("PFMFS_CHURN_SEED")) != NULL) {
		seed = (unsigned int)strtoul(env, NULL, 10);
		random_exits = 1;
	}

	CHECK_PFM(pfm_initialize());
	inp.pfp_event_count = 1;	/* event 0: the first line of pmu/events */
	inp.pfp_dfl_plm = PFM_PLM3;
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));
	printf("ready\n");
	fflush(stdout);

	if (stop_at && (strcmp(stop_at, "after_mkdir") == 0 || strcmp(stop_at, "thread_mkdir") == 0))
		by_hand();
	for (i = 0; iterations == 0 || i < iterations; i++) {
		one_session(&outp, on_sim);
		stop_at = NULL;	/* stops are for the first loop only */
		if (progress > 0 && (i + 1) % progress == 0) {
			printf("done %ld\n", i + 1);
			fflush(stdout);
		}
	}
	/* Its own sessions only (pfm.PID.N): ChurnTest runs others beside it. */
	CHECK_EQ_U64(wait_sessions_named(own_sessions(), 0), 0);
	return 0;
}
