// pfmfs-test: backends=sim
/*
 * stop_after_overflow.c: on perfmon2 an overflow's signal came from the
 * interrupt in the monitored thread itself, so a program that called
 * pfm_stop had had every signal of the overflows before it: it could tear
 * down its handler's state right after (PAPI does). Here the signal comes
 * from the library's own threads, a moment after the daemon queued the
 * message; pfm_stop and pfm_unload_context must still return only once
 * that signal is delivered. Under the manual clock the advance queues the
 * overflow's message before it returns; pfm_stop follows at once, each
 * time on a fresh context, 50 times; the handler's count is checked right
 * after, with no wait.
 */
#include "check.h"

#include <signal.h>

#define P 100000ULL				/* instructions to the overflow */
#define STEP_NS (P / SIM_INST_PER_NS)		/* 50000 ns: exactly one period */
#define PMC_INT (1ULL << 20)
#define PMC_EN (1ULL << 22)
#define INST_RETIRED 0xc0ULL

static volatile sig_atomic_t notifications;

static void on_sigio(int sig)
{
	(void)sig;
	notifications++;
}

/* A context loaded on this thread, notifying at its first overflow. */
static int armed_context(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = { .reg_num = 0, .reg_flags = PFM_REGFL_OVFL_NOTIFY, .reg_value = -P };
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));

	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
	CHECK_OK(fcntl(fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	return fd;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	int fd;

	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	signals_ready();
	for (int n = 1; n <= 50; n++) {
		fd = armed_context();
		sim_advance(STEP_NS);	/* the overflow: its message is queued */
		if (n % 2) {
			CHECK_OK(pfm_stop(fd));
			CHECK(notifications == n, "pfm_stop returned before the signal of overflow %d (%d signals)", n,
			      (int)notifications);
		} else {
			CHECK_OK(pfm_unload_context(fd));
			CHECK(notifications == n, "pfm_unload_context returned before the signal of overflow %d (%d signals)",
			      n, (int)notifications);
		}
		CHECK_OK(close(fd));
	}
	/* And none comes late. */
	quiet_window();
	CHECK_EQ_U64(notifications, 50);
	CHECK(wait_sessions(0) == 0, "a session outlived its close()");
	printf("50 overflows, each signalled before pfm_stop or pfm_unload_context returned\n");
	return 0;
}
