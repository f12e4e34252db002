// pfmfs-test: backends=sim,x86
/*
 * overflow_setsig.c: overflow notifications as a queued real-time signal
 * aimed at one thread. F_SETSIG picks SIGRTMIN+1 and makes the siginfo carry
 * the descriptor (si_fd) and POLL_IN; F_SETOWN_EX F_OWNER_TID sends it to the
 * monitoring thread, not the process. The monitored thread is a second thread,
 * so thread id and process id differ in the message and in the signal's aim.
 * On x86 the monitored thread spins to each overflow (X86_INST_PERIOD,
 * check.h) instead of advancing the clock: the same signals, exactly as
 * many, with the same message fields; each a period of time or more after
 * the restart before it, and after the last restart the count is the long
 * reset plus what ran since (check.h's bracket).
 */
#include "check.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>

#define P 100000ULL				/* sampling period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS)		/* 50000 ns: exactly one period */
#define STEPS 6
#define PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define INST_RETIRED 0xc0ULL

static int ctx_fd;
static pid_t monitor_tid;
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

static void on_notify(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct pollfd pfd = { .fd = ctx_fd, .events = POLLIN };
	pfarg_msg_t msg;

	(void)uc;
	HANDLER_CHECK(sig == SIGRTMIN + 1);
	HANDLER_CHECK(si->si_signo == SIGRTMIN + 1);
	HANDLER_CHECK(si->si_code == POLL_IN);
	HANDLER_CHECK(si->si_fd == ctx_fd);
	HANDLER_CHECK(si->si_band & POLLIN);
	HANDLER_CHECK(tid_self() == monitor_tid);	/* F_OWNER_TID: this thread only */
	/* The message is there when the signal arrives. */
	HANDLER_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	if (pfd.revents & POLLIN) {
		HANDLER_CHECK(read(ctx_fd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
		last_msg = msg;
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
	CHECK(handler_bad_line == 0, "check at line %d in the signal handler failed (errno %d)",
	      (int)handler_bad_line, (int)handler_bad_errno);
	CHECK(notifications == want, "%d notifications, expected %d", (int)notifications, want);
}

static void *monitor(void *arg)
{
	int on_x86 = on_backend("x86");
	/* x86: a period long enough to spin to (check.h) */
	uint64_t period = on_x86 ? X86_INST_PERIOD : P, prev = 0, reset = 0;
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_pmd_t pd = {
		.reg_num = 0,
		.reg_flags = PFM_REGFL_OVFL_NOTIFY,
		.reg_value = -period,
		.reg_long_reset = -period,
	};
	pfarg_load_t load;
	struct f_owner_ex owner;

	(void)arg;
	monitor_tid = tid_self();
	CHECK(monitor_tid != getpid(), "the monitor should not be the main thread");
	load = (pfarg_load_t){ .load_pid = (uint32_t)monitor_tid };
	owner = (struct f_owner_ex){ .type = F_OWNER_TID, .pid = monitor_tid };

	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(ctx_fd, &pc, 1));
	CHECK_OK(pfm_write_pmds(ctx_fd, &pd, 1));

	signals_ready();
	CHECK_OK(fcntl(ctx_fd, F_SETSIG, SIGRTMIN + 1));
	CHECK_OK(fcntl(ctx_fd, F_SETOWN_EX, &owner));
	CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC));
	CHECK_EQ_U64(fcntl(ctx_fd, F_GETSIG), SIGRTMIN + 1);

	CHECK_OK(pfm_load_context(ctx_fd, &load));
	if (on_x86) {
		reset = monotonic_ns();
		prev = thread_cpu_ns();
	}
	CHECK_OK(pfm_start(ctx_fd, NULL));

	for (int step = 1; step <= STEPS; step++) {
		if (on_x86) {
			uint64_t seen = spin_until(&notifications, step);

			CHECK_NOT_EARLY(step, monotonic_ns() - reset, X86_PERIOD_NS);
			printf("overflow %d after %" PRIu64 " ns of CPU time\n", step, seen - prev);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* the handler's mark of its restart */
			reset = restarted.m0;
			prev = thread_cpu_ns();
		} else {
			sim_advance(STEP_NS);	/* ends on the overflow of this period */
		}
		wait_notifications(step);
		CHECK_EQ_U64(last_msg.type, PFM_MSG_OVFL);
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 0x1);
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_active_set, 0);
		/* perfmon2's naming: msg_ovfl_pid is the thread, msg_ovfl_tid the process. */
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_pid, monitor_tid);
		CHECK_EQ_U64(last_msg.pfm_ovfl_msg.msg_ovfl_tid, getpid());
		CHECK_STATE(ctx_fd, "active");
	}

	/* No late or duplicate signal; the count after the last restart is exact. */
	quiet_window();
	wait_notifications(STEPS);
	pd = (pfarg_pmd_t){ .reg_num = 0 };
	if (on_x86) {
		/* The long reset plus what ran since the last restart: the
		 * checks above (check.h's CHECK_SINCE). */
		struct cpu_window mark;

		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		mark = restarted;
		CHECK_OK(pfm_read_pmds(ctx_fd, &pd, 1));
		CHECK_SINCE(pd.reg_value + period, X86_INST_PER_2NS, mark);
	} else {
		sim_advance(STEP_NS / 2);
		CHECK_OK(pfm_read_pmds(ctx_fd, &pd, 1));
		CHECK_EQ_U64(pd.reg_value, -(P / 2));
	}
	CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);

	CHECK_OK(close(ctx_fd));
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_notify, .sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t t;
	int err;

	/* The main thread leaves the signal unblocked: a signal aimed at the
	 * process instead of the thread could land here and fail the tid check. */
	CHECK_OK(sigaction(SIGRTMIN + 1, &sa, NULL));
	err = pthread_create(&t, NULL, monitor, NULL);
	CHECK(err == 0, "pthread_create: %s", strerror(err));
	err = pthread_join(t, NULL);
	CHECK(err == 0, "pthread_join: %s", strerror(err));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	return 0;
}
