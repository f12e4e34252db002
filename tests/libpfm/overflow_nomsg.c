// pfmfs-test: backends=sim,x86
/*
 * overflow_nomsg.c: PFM_FL_OVFL_NO_MSG. A notification queues no message but
 * still masks the session and still raises the descriptor's signal; the
 * program finds nothing to read (EAGAIN under O_NONBLOCK), sees the mask as
 * POLLPRI, and resumes with pfm_restart(). Under the manual clock the number
 * of signals and every count are exact.
 * On x86 (main_x86) the program spins to each overflow (X86_INST_PERIOD,
 * check.h): the number of signals is exact, the masked counter stands past
 * the wrap by no more than the time that passed beyond the period (the NMI
 * freezes it there; check.h's bound by CLOCK_MONOTONIC) and
 * exactly still however long the program runs masked, and after the restart
 * it is the long reset plus what ran since.
 */
#include "check.h"

#include <poll.h>
#include <signal.h>

#define P 100000ULL				/* sampling period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS)		/* 50000 ns: exactly one period */
#define STEPS 5
#define PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define INST_RETIRED 0xc0ULL

static int ctx_fd;
static volatile sig_atomic_t notifications;

/* The handler cannot print: it records its first failed check for main. */
static volatile sig_atomic_t handler_bad_line, handler_bad_errno;
#define HANDLER_CHECK(cond)                                      \
	do {                                                     \
		if (!(cond) && handler_bad_line == 0) {          \
			handler_bad_errno = errno;               \
			handler_bad_line = __LINE__;             \
		}                                                \
	} while (0)

/* Only counts, and checks that no message came with the signal: main looks at
 * the masked session before it restarts it. */
static void on_sigio(int sig)
{
	int saved_errno = errno;
	pfarg_msg_t msg;
	ssize_t n;

	HANDLER_CHECK(sig == SIGIO);
	n = read(ctx_fd, &msg, sizeof(msg));
	HANDLER_CHECK(n == -1 && errno == EAGAIN);
	notifications++;
	errno = saved_errno;
}

/* The library's own thread sends the signal a moment after the advance has
 * returned (later on a loaded machine): wait for the handler to have run
 * `want` times, and not once more. */
static void wait_notifications(int want)
{
	wait_count(&notifications, want);
	CHECK(handler_bad_line == 0, "check at line %d in the SIGIO handler failed (errno %d)",
	      (int)handler_bad_line, (int)handler_bad_errno);
	CHECK(notifications == want, "%d notifications, expected %d", (int)notifications, want);
}

static uint64_t read_pmd0(void)
{
	pfarg_pmd_t pd = { .reg_num = 0 };

	CHECK_OK(pfm_read_pmds(ctx_fd, &pd, 1));
	return pd.reg_value;
}

/* poll()'s revents for the descriptor, without waiting. */
static short poll_now(void)
{
	struct pollfd pfd = { .fd = ctx_fd, .events = POLLIN | POLLPRI };

	CHECK_OK(poll(&pfd, 1, 0));
	return pfd.revents;
}

static int main_x86(void)
{
	const uint64_t period = X86_INST_PERIOD;
	pfarg_ctx_t ctx = { .ctx_flags = PFM_FL_OVFL_NO_MSG };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = {
		.reg_num = 0,
		.reg_flags = PFM_REGFL_OVFL_NOTIFY,
		.reg_value = -period,
		.reg_long_reset = -period,
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	pfarg_msg_t msg;
	struct cpu_window mark;
	uint64_t masked, prev, reset, seen, since, v;

	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(ctx_fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(ctx_fd, &pd, 1));

	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	signals_ready();
	CHECK_OK(fcntl(ctx_fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC | O_NONBLOCK));

	CHECK_OK(pfm_load_context(ctx_fd, &load));
	reset = monotonic_ns();
	prev = thread_cpu_ns();
	CHECK_OK(pfm_start(ctx_fd, NULL));
	CHECK_EQ_U64(poll_now(), 0);

	for (int step = 1; step <= STEPS; step++) {
		seen = spin_until(&notifications, step);
		since = monotonic_ns() - reset;
		wait_notifications(step);
		printf("overflow %d after %" PRIu64 " ns of CPU time\n", step, seen - prev);
		CHECK_NOT_EARLY(step, since, X86_PERIOD_NS);
		CHECK_STATE(ctx_fd, "masked");
		CHECK_EQ_U64(poll_now(), POLLPRI);	/* masked, and no message */
		CHECK_ERRNO(read(ctx_fd, &msg, sizeof(msg)), EAGAIN);
		/* Past the wrap: what ran after the period, no more than the
		 * time from the restart until the signal was seen (check.h's
		 * bound above). */
		masked = read_pmd0();
		CHECK(X86_PERIOD_NS + masked * 2 / X86_INST_PER_2NS <= since + X86_MONO_SLACK_NS,
		      "pmd0 is %" PRIu64 " when masked: more than ran past the period (%" PRIu64 " ns "
		      "since the restart)", masked, since);

		/* Masked: CPU time passes, nothing counts, no second signal. */
		burn_cpu_ns(X86_PERIOD_NS);
		CHECK_EQ_U64(read_pmd0(), masked);
		CHECK_EQ_U64(notifications, step);

		window_mark(&mark);
		CHECK_OK(pfm_restart(ctx_fd));
		reset = mark.m0;
		prev = thread_cpu_ns();
		CHECK_STATE(ctx_fd, "active");
		v = read_pmd0() + period;		/* since the long reset */
		CHECK_SINCE(v, X86_INST_PER_2NS, mark);
		CHECK_EQ_U64(poll_now(), 0);
		CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);
		CHECK_EQ_U64(notifications, step);
	}

	/* No late signal. */
	quiet_window();
	wait_notifications(STEPS);

	CHECK_OK(close(ctx_fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}

int main(void)
{
	pfarg_ctx_t ctx = { .ctx_flags = PFM_FL_OVFL_NO_MSG };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = {
		.reg_num = 0,
		.reg_flags = PFM_REGFL_OVFL_NOTIFY,
		.reg_value = -P,
		.reg_long_reset = -P,
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	pfarg_msg_t msg;

	if (on_backend("x86"))
		return main_x86();
	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(ctx_fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(ctx_fd, &pd, 1));

	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	signals_ready();
	CHECK_OK(fcntl(ctx_fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC | O_NONBLOCK));

	CHECK_OK(pfm_load_context(ctx_fd, &load));
	CHECK_OK(pfm_start(ctx_fd, NULL));
	CHECK_EQ_U64(poll_now(), 0);

	for (int step = 1; step <= STEPS; step++) {
		sim_advance(STEP_NS);	/* ends on the overflow of this period */
		wait_notifications(step);
		CHECK_STATE(ctx_fd, "masked");
		CHECK_EQ_U64(poll_now(), POLLPRI);	/* masked, and no message */
		CHECK_ERRNO(read(ctx_fd, &msg, sizeof(msg)), EAGAIN);
		CHECK_EQ_U64(read_pmd0(), 0);		/* wrapped at the overflow */

		/* Masked: time passes, nothing counts, no second signal. */
		sim_advance(STEP_NS);
		CHECK_EQ_U64(read_pmd0(), 0);

		CHECK_OK(pfm_restart(ctx_fd));
		CHECK_STATE(ctx_fd, "active");
		CHECK_EQ_U64(read_pmd0(), -P);		/* the long reset */
		CHECK_EQ_U64(poll_now(), 0);
		CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);
		wait_notifications(step);
	}

	/* No late signal; the count after the last restart is exact. */
	quiet_window();
	wait_notifications(STEPS);
	sim_advance(STEP_NS / 2);
	CHECK_EQ_U64(read_pmd0(), -(P / 2));

	CHECK_OK(close(ctx_fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}
