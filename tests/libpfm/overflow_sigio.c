// pfmfs-test: backends=sim,x86
/*
 * overflow_sigio.c: the classic perfmon2 self-sampling loop. A counter
 * notifies every P instructions; O_ASYNC + F_SETOWN make the descriptor
 * raise SIGIO; the handler reads the pfarg_msg_t and calls pfm_restart(),
 * which reloads the long reset value. Under the manual clock the number of
 * notifications and the final count are exact.
 * On x86 (main_x86) the period is X86_INST_PERIOD (check.h) and the program
 * spins to each overflow: real NMIs, real signals. The number of signals is
 * exact there too (nothing but the program's spinning counts, and it stops
 * spinning at each one), as are the message's fields but its ip (a user-level
 * address of the program); each overflow came no sooner than a period of
 * time after the restart that preceded it, and the count after a restart
 * is the long reset plus what ran since (check.h's bracket).
 */
#include "check.h"

#include <poll.h>
#include <signal.h>

#define P 100000ULL				/* sampling period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS)		/* 50000 ns: exactly one period */
#define PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define INST_RETIRED 0xc0ULL

static int ctx_fd;
static volatile sig_atomic_t notifications;
static pfarg_msg_t last_msg;
static struct cpu_window restarted;	/* x86: the handler's last pfm_restart */

/* The handler cannot print: it records its first failed check for main. */
static volatile sig_atomic_t handler_bad_line, handler_bad_errno;
#define HANDLER_CHECK(cond)                                      \
	do {                                                     \
		if (!(cond) && handler_bad_line == 0) {          \
			handler_bad_errno = errno;               \
			handler_bad_line = __LINE__;             \
		}                                                \
	} while (0)

static void on_sigio(int sig)
{
	int saved_errno = errno;
	struct pollfd pfd = { .fd = ctx_fd, .events = POLLIN };
	pfarg_msg_t msg;

	HANDLER_CHECK(sig == SIGIO);
	/* A signal with nothing queued would block the read below forever. */
	HANDLER_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	if (pfd.revents & POLLIN) {
		HANDLER_CHECK(read(ctx_fd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
		last_msg = msg;
		/* perfmon2 programs restart from the handler: it must be safe here. */
		window_mark(&restarted);
		HANDLER_CHECK(pfm_restart(ctx_fd) == 0);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* restarted, then the count */
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

/* The made-up but stable ip the sim reports for an overflow at target time
 * t (pmu/sim): it shows the record's ip field arrives intact. */
static uint64_t sim_ip(uint64_t t_ns)
{
	return 0x401000 + ((t_ns / 64) % 0x1000) * 4;
}

static uint64_t read_pmd0(void)
{
	pfarg_pmd_t pd = { .reg_num = 0 };

	CHECK_OK(pfm_read_pmds(ctx_fd, &pd, 1));
	return pd.reg_value;
}

/* x86: the messages of overflow n. */
static void check_msg_x86(void)
{
	CHECK_EQ_U64(last_msg.type, PFM_MSG_OVFL);
	CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 0x1);
	for (int w = 1; w < (int)PFM_PMD_BV; w++)
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pmds[w], 0);
	CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_active_set, 0);
	CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pid, tid_self());
	CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_tid, getpid());
	CHECK(last_msg.pfm_ovfl_msg.msg_ovfl_ip != 0 && last_msg.pfm_ovfl_msg.msg_ovfl_ip < (1ULL << 47),
	      "ip 0x%" PRIx64 " is not a user-level address", (uint64_t)last_msg.pfm_ovfl_msg.msg_ovfl_ip);
}

/* x86: pmd0 is -period plus what ran since the handler's restart (check.h's
 * CHECK_SINCE: no more than the thread's CPU time since, but for the slack). */
static void check_after_reset_x86(uint64_t period)
{
	struct cpu_window mark;
	uint64_t since_restart;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* the handler ran: its mark is there */
	mark = restarted;
	since_restart = read_pmd0() + period;
	CHECK_SINCE(since_restart, X86_INST_PER_2NS, mark);
}

static int main_x86(void)
{
	const uint64_t period = X86_INST_PERIOD;
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = {
		.reg_num = 0,
		.reg_flags = PFM_REGFL_OVFL_NOTIFY,
		.reg_value = -period,
		.reg_long_reset = -period,
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	struct cpu_window w;
	uint64_t seen, prev, reset, v0, v1;

	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(ctx_fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(ctx_fd, &pd, 1));

	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	signals_ready();
	CHECK_OK(fcntl(ctx_fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC));

	CHECK_OK(pfm_load_context(ctx_fd, &load));
	reset = monotonic_ns();
	prev = thread_cpu_ns();
	CHECK_OK(pfm_start(ctx_fd, NULL));
	CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);	/* nothing to restart yet */

	/* Every overflow: one signal, its message, the long reset reloaded by
	 * the handler's restart, a period of time after the last. */
	for (int n = 1; n <= 5; n++) {
		seen = spin_until(&notifications, n);
		CHECK_NOT_EARLY(n, monotonic_ns() - reset, X86_PERIOD_NS);
		CHECK(handler_bad_line == 0, "check at line %d in the SIGIO handler failed (errno %d)",
		      (int)handler_bad_line, (int)handler_bad_errno);
		CHECK_EQ_U64(notifications, n);
		check_msg_x86();
		check_after_reset_x86(period);
		CHECK_STATE(ctx_fd, "active");
		printf("overflow %d after %" PRIu64 " ns of CPU time\n", n, seen - prev);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* the handler's mark of its restart */
		reset = restarted.m0;
		prev = thread_cpu_ns();
	}

	/* No late or duplicate signal; sleeping counts (nearly) nothing. */
	quiet_window();
	wait_notifications(5);

	/* Half a period: no overflow, and it counted the CPU time it took. */
	window_open(&w);
	v0 = read_pmd0();
	window_burn(&w, X86_PERIOD_NS / 2);
	v1 = read_pmd0();
	window_close(&w);
	CHECK_WINDOW(v1 - v0, X86_INST_PER_2NS, &w);
	CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);
	CHECK_EQ_U64(notifications, 5);

	CHECK_OK(close(ctx_fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}

int main(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = {
		.reg_num = 0,
		.reg_flags = PFM_REGFL_OVFL_NOTIFY,
		.reg_value = -P,
		.reg_long_reset = -P,
	};
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	int n = 0;

	if (on_backend("x86"))
		return main_x86();
	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(ctx_fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(ctx_fd, &pd, 1));

	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	signals_ready();
	CHECK_OK(fcntl(ctx_fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC));

	CHECK_OK(pfm_load_context(ctx_fd, &load));
	CHECK_OK(pfm_start(ctx_fd, NULL));
	CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);	/* nothing to restart yet */

	/* Whole periods: every step ends on an overflow, one signal each. */
	for (int step = 1; step <= 5; step++) {
		sim_advance(STEP_NS);
		wait_notifications(++n);
		CHECK_EQ_U64(last_msg.type, PFM_MSG_OVFL);
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 0x1);
		for (int w = 1; w < (int)PFM_PMD_BV; w++)
			CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pmds[w], 0);
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_active_set, 0);
		/* perfmon2's naming: msg_ovfl_pid is the thread, msg_ovfl_tid the process. */
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pid, tid_self());
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_tid, getpid());
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_ip, sim_ip(n * STEP_NS));
		CHECK_EQ_U64(read_pmd0(), -P);	/* the restart reloaded the long reset */
		CHECK_STATE(ctx_fd, "active");
	}

	/* Half periods: only every second step crosses an overflow. */
	for (int step = 1; step <= 6; step++) {
		sim_advance(STEP_NS / 2);
		if (step % 2 == 0)
			n++;
		wait_notifications(n);
		/* Every overflow so far came one period after the last: the nth at n periods. */
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_ip, sim_ip(n * STEP_NS));
		CHECK_EQ_U64(read_pmd0(), step % 2 ? -(P / 2) : -P);
	}

	/* No late or duplicate signal: the count stays exact. */
	quiet_window();
	wait_notifications(8);

	sim_advance(10000);	/* 20000 instructions: no overflow */
	CHECK_EQ_U64(read_pmd0(), -P + 20000);
	CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);
	CHECK_EQ_U64(notifications, 8);

	CHECK_OK(close(ctx_fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}
