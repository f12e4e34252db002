/*
 * t_count.c - counting on the test PMU: a cpu's counters exactly at the
 * model's rates, threads counting their own CPU time only, and the control
 * registers sched_switch writes (only those that differ).
 */
#include "kt.h"

#include <sched.h>
#include <unistd.h>

/* |a - b| <= tol */
#define NEAR(a, b, tol) ((a) >= (b) ? (a) - (b) <= (tol) : (b) - (a) <= (tol))

void t_cpu_count(void)
{
	struct pfmfs_helper_msr ops[16];
	uint64_t t0, t1, t2, t3, d, c[7];
	int fd = kt_open(), i, n;
	const uint32_t cpu = 1;

	kt_pin(0);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, cpu));
	CHECK(kt_cpu_state(fd, cpu).lvtpc == APIC_DM_NMI, "LVTPC not armed by ATTACH");
	/* A new cpu target: every register 0. */
	for (i = 0; i < 4; i++) {
		CHECK(kt_rd_ok(fd, CPU, cpu, MSR_EVTSEL0 + i) == 0, "EVTSEL%d", i);
		CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0 + i) == 0, "PMC%d", i);
	}
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1, .value = EVTSEL_COUNT | EV_INSTR };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 2, .value = EVTSEL_COUNT | EV_REF_CYCLES };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 3, .value = EVTSEL_COUNT | EV_LLC_REF };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTRL, .value = 0x333 };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, cpu, ops, n));
	/* All seven start in one write, and stop in one. */
	t0 = kt_now();
	kt_wr_ok(fd, CPU, cpu, MSR_GLOBAL_CTRL, 0xf | FIXED_BIT(0) | FIXED_BIT(1) | FIXED_BIT(2));
	t1 = kt_now();
	kt_sleep_ms(300);
	t2 = kt_now();
	kt_wr_ok(fd, CPU, cpu, MSR_GLOBAL_CTRL, 0);
	t3 = kt_now();
	n = 0;
	for (i = 0; i < 4; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + i };
	for (i = 0; i < 3; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + i };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, CPU, cpu, ops, n));
	for (i = 0; i < 7; i++)
		c[i] = ops[i].value;
	kt_log("cycles %llu instr %llu ref %llu llc %llu fixed %llu %llu %llu",
	       (unsigned long long)c[0], (unsigned long long)c[1],
	       (unsigned long long)c[2], (unsigned long long)c[3],
	       (unsigned long long)c[4], (unsigned long long)c[5],
	       (unsigned long long)c[6]);
	/*
	 * Exact: integer rates give 3d and 2d for d ns of counting; the
	 * others are within one event of rate * d.
	 */
	CHECK(c[0] % 3 == 0, "cycles %llu not a multiple of 3", (unsigned long long)c[0]);
	d = c[0] / 3;
	CHECK(c[1] == 2 * d, "instructions %llu, expected %llu", (unsigned long long)c[1],
	      (unsigned long long)(2 * d));
	CHECK(NEAR(2 * c[2], 5 * d, 2), "ref cycles %llu for %llu ns", (unsigned long long)c[2],
	      (unsigned long long)d);
	CHECK(c[3] == d / 20 || c[3] == d / 20 + 1, "LLC references %llu for %llu ns",
	      (unsigned long long)c[3], (unsigned long long)d);
	CHECK(c[4] == c[1] && c[5] == c[0] && c[6] == c[2], "fixed counters differ");
	/* d lies between the two ioctls' ends. */
	CHECK(d >= t2 - t1 && d <= t3 - t0, "counted %llu ns, between %llu and %llu",
	      (unsigned long long)d, (unsigned long long)(t2 - t1),
	      (unsigned long long)(t3 - t0));

	/* Stopped counters stay; reads do not drift. */
	kt_sleep_ms(20);
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0) == c[0], "stopped counter moved");

	/* What does not count: unknown events, EN off, neither USR nor OS. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | 0x1234 };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1, .value = EVTSEL_USR | EVTSEL_OS | EV_INSTR };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 2, .value = EVTSEL_EN | EV_CYCLES };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 3, .value = EVTSEL_EN | EVTSEL_USR | EV_BR_MISSES };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTRL, .value = 0x300 };
	for (i = 0; i < 4; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + i };
	for (i = 0; i < 3; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + i };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 0xe | FIXED_BIT(0) | FIXED_BIT(2) };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, cpu, ops, n));
	kt_sleep_ms(100);
	kt_wr_ok(fd, CPU, cpu, MSR_GLOBAL_CTRL, 0);
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0) == 0, "unknown event counted");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0 + 1) == 0, "EN off counted");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0 + 2) == 0, "no USR/OS counted");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0 + 3) > 0, "branch misses did not count");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_FIXED_CTR0) == 0, "fixed 0 off counted");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_FIXED_CTR0 + 1) == 0, "fixed 1 off counted");
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_FIXED_CTR0 + 2) > 0, "fixed 2 did not count");

	/* A wrap without INT: the status bit, no record; OVF_CTRL clears it. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = WIDTH48 - 300 };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 1 };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, cpu, ops, n));
	kt_sleep_ms(5);
	kt_wr_ok(fd, CPU, cpu, MSR_GLOBAL_CTRL, 0);
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_GLOBAL_STATUS) == 1, "status after a wrap");
	/* Below where it started: it wrapped, however long the sleep took. */
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_PMC0) < WIDTH48 - 300, "PMC0 did not wrap");
	kt_wr_ok(fd, CPU, cpu, MSR_GLOBAL_OVF, 1);
	CHECK(kt_rd_ok(fd, CPU, cpu, MSR_GLOBAL_STATUS) == 0, "status not cleared");
	CHECK(kt_stats(fd).records == 0 && kt_stats(fd).pmis == 0, "a PMI without INT");
	close(fd);
}

/* Counts cycles of a thread from now on. */
static void count_cycles(int fd, pid_t tid)
{
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = 0 },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
	};

	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, tid, ops, 3));
}

static uint64_t stop_cycles(int fd, pid_t tid)
{
	kt_wr_ok(fd, THREAD, tid, MSR_GLOBAL_CTRL, 0);
	return kt_rd_ok(fd, THREAD, tid, MSR_PMC0);
}

/*
 * A thread's CPU time around a counting window: `outer` from before the
 * ioctl that starts the counter to after the one that stops it, `inner`
 * from after the first to before the second.
 */
struct share {
	uint64_t o0, i0, i1, o1;	/* CPU times */
	long sw0, sw1;			/* its context switches */
};

static long switches(pid_t tid)
{
	return kt_ctxt(tid, 1) + kt_ctxt(tid, 0);
}

/*
 * The model counts while a thread's image is loaded, from the sched_switch
 * that loads it to the one that saves it: its CPU time as the scheduler
 * accounts it, but for the switch itself. The scheduler stops a thread's
 * clock a little before the tracepoint and starts the next one's a little
 * before too, and the probe's own work (about 110 us per switch-in and
 * -out under TCG, where every emulated MSR access is slow) is not counted:
 * 250 us per switch allowed, and 20 ms for the host descheduling the VM in
 * the middle of a probe. So the count lies between the inner and the outer
 * CPU time, each widened by that; both are exact clocks, so TCG's noise and
 * the host's load (which stretch the ioctls) only widen the bracket. Above,
 * the interrupts the thread took while loaded count too (KT_IRQ_SHARE).
 */
/* What a switch may cost uncounted on an idle host (see above). */
#define SWITCH_NS 250000ULL

static uint64_t switch_slack(const struct share *s, uint64_t per_switch)
{
	return 20000000ULL + per_switch * (uint64_t)(s->sw1 - s->sw0);
}

static void check_upper(const char *who, uint64_t count, const struct share *s)
{
	uint64_t inner = s->i1 - s->i0, outer = s->o1 - s->o0;
	uint64_t slack = switch_slack(s, SWITCH_NS);

	kt_log("%s: %llu cycles: %llu ns counted, %llu ns to %llu ns on cpu, %ld switches",
	       who, (unsigned long long)count, (unsigned long long)count / 3,
	       (unsigned long long)inner, (unsigned long long)outer,
	       s->sw1 - s->sw0);
	CHECK(count % 3 == 0, "%s: %llu cycles, not a multiple of 3", who,
	      (unsigned long long)count);
	CHECK(count / 3 <= outer + KT_IRQ_SHARE(outer) + slack,
	      "%s: counted %llu ns, ran at most %llu ns (slack %llu)", who,
	      (unsigned long long)(count / 3), (unsigned long long)outer,
	      (unsigned long long)slack);
}

/* per_switch: what a switch costs uncounted, at least SWITCH_NS. */
static void check_share(const char *who, uint64_t count, const struct share *s, uint64_t per_switch)
{
	uint64_t inner = s->i1 - s->i0, slack = switch_slack(s, per_switch);

	check_upper(who, count, s);
	CHECK(count / 3 + slack >= inner, "%s: counted %llu ns, ran at least %llu ns (slack %llu)", who,
	      (unsigned long long)(count / 3), (unsigned long long)inner, (unsigned long long)slack);
}

/* Whether `count` falls short of check_share's lower bound. */
static int counted_short(uint64_t count, const struct share *s, uint64_t per_switch)
{
	return count / 3 + switch_slack(s, per_switch) < s->i1 - s->i0;
}

/*
 * A window in which a spinner's count falls short of its CPU time (the lower
 * bound of check_share) is measured again, WINDOWS windows at most, each
 * retry logged. A host that deschedules the VM in the middle of a switch's
 * probe for longer than the slack allows (53 ms over 55 switches was seen
 * while the host compiled on both its cores, with the sleeper beside it
 * losing nothing) does so now and then, not three windows in a row; a
 * module that misses switch-ins falls short in every window. Counting more
 * than the thread ran fails at once.
 */
#define WINDOWS 3

static int measure_again(const char *test, int window, int is_short)
{
	if (!is_short || window >= WINDOWS)
		return 0;
	kt_log("%s: a count fell short of its thread's CPU time in window %d of %d: measuring again",
	       test, window, WINDOWS);
	return 1;
}

/* What each switch of a thread that runs almost only its switches cost
 * uncounted: its CPU time less its count, per switch; at least SWITCH_NS. */
static uint64_t switch_cost(const struct share *s, uint64_t count)
{
	uint64_t inner = s->i1 - s->i0, counted = count / 3;
	long n = s->sw1 - s->sw0;
	uint64_t each = n > 0 && inner > counted ? (inner - counted) / (uint64_t)n : 0;

	return each > SWITCH_NS ? each : SWITCH_NS;
}

/* Counting a thread's cycles over a window, with its CPU time around. */
static void window_open(int fd, pid_t tid, struct share *s)
{
	s->sw0 = switches(tid);
	s->o0 = kt_cputime(tid);
	count_cycles(fd, tid);
	s->i0 = kt_cputime(tid);
}

static uint64_t window_close(int fd, pid_t tid, struct share *s)
{
	uint64_t n;

	s->i1 = kt_cputime(tid);
	n = stop_cycles(fd, tid);
	s->o1 = kt_cputime(tid);
	s->sw1 = switches(tid);
	return n;
}

/*
 * A sleeper on `cpu`, counted over the same window as the spinners beside
 * it: what it loses per switch is what a switch costs uncounted there, under
 * the host's load of the moment (t_busy_sleep says why). Its own checks:
 * never more than it ran, and something.
 */
struct gauge {
	struct kt_thread t;
	struct share s;
	uint64_t count;
};

static void gauge_start(int fd, struct gauge *g, int cpu)
{
	kt_thread_start(&g->t, KT_SLEEP, cpu);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, g->t.tid));
	window_open(fd, g->t.tid, &g->s);
}

static uint64_t gauge_stop(int fd, struct gauge *g, const char *who)
{
	g->count = window_close(fd, g->t.tid, &g->s);
	check_upper(who, g->count, &g->s);
	CHECK(g->count > 0, "%s ran %ld times and counted nothing", who, g->s.sw1 - g->s.sw0);
	kt_thread_stop(&g->t);
	return switch_cost(&g->s, g->count);
}

void t_busy_sleep(void)
{
	struct kt_thread busy;
	struct gauge sleeper;
	struct share sb;
	uint64_t cb, cost;
	int fd = kt_open();

	int window = 1;

	kt_pin(0);
	kt_thread_start(&busy, KT_SPIN, 1);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, busy.tid));
again:
	gauge_start(fd, &sleeper, 1);
	window_open(fd, busy.tid, &sb);
	kt_sleep_ms(1500);
	cb = window_close(fd, busy.tid, &sb);
	/* The sleeper wakes every 20 ms, and its time on the CPU is mostly its
	 * switch paths, whose part around the probe is on its clock but not
	 * counted. When the host deschedules the VM there, the guest's clock
	 * runs on uncounted: with the host busy, the sleeper
	 * was seen 200.6 ms on CPU over 59 switches with 24.8 ms counted (an
	 * idle host: 11.2 and 7.2 ms), the busy thread 36.7 ms short over 60
	 * switches, and a spinner sharing its CPU 107 ms short over about 46.
	 * So a lower bound on the sleeper's count would measure the host's
	 * load; instead what it lost per switch, in this same window, is what
	 * a thread beside it may lose per switch (never less than SWITCH_NS). */
	cost = gauge_stop(fd, &sleeper, "sleeper");
	check_upper("busy", cb, &sb);
	if (measure_again("busy_sleep", window, counted_short(cb, &sb, cost))) {
		window++;
		goto again;
	}
	check_share("busy", cb, &sb, cost);
	CHECK(cb > 3ULL * 500000000, "busy counted %llu: under half its 1.5 s",
	      (unsigned long long)cb);
	/* The sleeper shares the busy thread's CPU and counted its own time,
	 * not the busy thread's: gauge_stop's bound, on its own CPU time. (How
	 * little that is depends on the host: 92.7 ms was seen under load.) */
	CHECK(kt_stats(fd).switch_ins > 0, "no switch-in");
	kt_thread_stop(&busy);
	close(fd);
}

void t_two_cpus(void)
{
	struct kt_thread t[2];
	struct gauge g[2];
	struct share s[2];
	uint64_t n[2], cost[2];
	int fd = kt_open(), i, window = 1;

	for (i = 0; i < 2; i++) {
		kt_thread_start(&t[i], KT_SPIN, i);
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, t[i].tid));
	}
again:
	for (i = 0; i < 2; i++)
		gauge_start(fd, &g[i], i);
	for (i = 0; i < 2; i++)
		window_open(fd, t[i].tid, &s[i]);
	kt_sleep_ms(1500);
	for (i = 0; i < 2; i++)
		n[i] = window_close(fd, t[i].tid, &s[i]);
	cost[0] = gauge_stop(fd, &g[0], "cpu 0 sleeper");
	cost[1] = gauge_stop(fd, &g[1], "cpu 1 sleeper");
	check_upper("cpu 0 spinner", n[0], &s[0]);
	check_upper("cpu 1 spinner", n[1], &s[1]);
	if (measure_again("two_cpus", window,
			  counted_short(n[0], &s[0], cost[0]) || counted_short(n[1], &s[1], cost[1]))) {
		window++;
		goto again;
	}
	check_share("cpu 0 spinner", n[0], &s[0], cost[0]);
	check_share("cpu 1 spinner", n[1], &s[1], cost[1]);
	for (i = 0; i < 2; i++)
		CHECK(n[i] > 3ULL * 300000000, "spinner %d counted %llu", i,
		      (unsigned long long)n[i]);
	for (i = 0; i < 2; i++)
		kt_thread_stop(&t[i]);
	close(fd);
}

/*
 * Two spinners pinned to one cpu: the scheduler shares it between them, and
 * each counts its own share, not the other's: its count follows its own CPU
 * time (about half the window each), and the two add up to no more than the
 * cpu's time.
 */
void t_shared_cpu(void)
{
	struct kt_thread t[2];
	struct gauge g;
	struct share s[2];
	uint64_t n[2], w0, w1, cost;
	int fd = kt_open(), i, window = 1;

	kt_pin(0);
	for (i = 0; i < 2; i++) {
		kt_thread_start(&t[i], KT_SPIN, 1);
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, t[i].tid));
	}
again:
	gauge_start(fd, &g, 1);
	w0 = kt_now();
	for (i = 0; i < 2; i++)
		window_open(fd, t[i].tid, &s[i]);
	kt_sleep_ms(1500);
	for (i = 0; i < 2; i++)
		n[i] = window_close(fd, t[i].tid, &s[i]);
	w1 = kt_now();
	cost = gauge_stop(fd, &g, "sleeper on cpu 1");
	check_upper("first spinner on cpu 1", n[0], &s[0]);
	check_upper("second spinner on cpu 1", n[1], &s[1]);
	if (measure_again("shared_cpu", window,
			  counted_short(n[0], &s[0], cost) || counted_short(n[1], &s[1], cost))) {
		window++;
		goto again;
	}
	check_share("first spinner on cpu 1", n[0], &s[0], cost);
	check_share("second spinner on cpu 1", n[1], &s[1], cost);
	/* CFS gives each about half of the 1.5 s: a quarter at least. */
	for (i = 0; i < 2; i++)
		CHECK(n[i] > 3ULL * 375000000, "spinner %d counted %llu: under a quarter of the window",
		      i, (unsigned long long)n[i]);
	CHECK((n[0] + n[1]) / 3 <= w1 - w0 + 20000000ULL,
	      "the two counted %llu ns together in a window of %llu ns on one cpu",
	      (unsigned long long)((n[0] + n[1]) / 3), (unsigned long long)(w1 - w0));
	for (i = 0; i < 2; i++)
		kt_thread_stop(&t[i]);
	close(fd);
}

/* Two threads on cpu 1 that pass a byte back and forth. */
struct pingpong {
	int to_a[2], to_b[2], done[2];
	int rounds;
	struct kt_thread a, b;
	int fifo;
};

static void pp_setup(struct kt_thread *t)
{
	struct sched_param sp = { .sched_priority = 10 };

	kt_pin(1);
	t->tid = kt_gettid();
	/*
	 * SCHED_FIFO: a woken peer does not preempt the writer, and no CFS
	 * task preempts either; every switch-out is a block on the pipe.
	 */
	CHECK(sched_setscheduler(0, SCHED_FIFO, &sp) == 0, "SCHED_FIFO: %m");
}

static void *pp_a(void *arg)
{
	struct pingpong *p = arg;
	char c;
	int i, rounds;

	pp_setup(&p->a);
	for (;;) {
		CHECK(read(p->to_a[0], &rounds, sizeof(rounds)) == sizeof(rounds), "a");
		if (rounds < 0)
			return NULL;
		for (i = 0; i < rounds; i++) {
			CHECK(write(p->to_b[1], "x", 1) == 1, "a write");
			CHECK(read(p->to_a[0], &c, 1) == 1, "a read");
		}
		c = 0;
		CHECK(write(p->to_b[1], &c, 1) == 1, "a end");
	}
}

static void *pp_b(void *arg)
{
	struct pingpong *p = arg;
	char c;

	pp_setup(&p->b);
	for (;;) {
		CHECK(read(p->to_b[0], &c, 1) == 1, "b read");
		if (c == 'q')
			return NULL;
		if (c == 0) {
			CHECK(write(p->done[1], "d", 1) == 1, "b done");
			continue;
		}
		CHECK(write(p->to_a[1], "y", 1) == 1, "b write");
	}
}

static void pp_start(struct pingpong *p)
{
	memset(p, 0, sizeof(*p));
	CHECK(pipe(p->to_a) == 0 && pipe(p->to_b) == 0 && pipe(p->done) == 0, "pipe");
	p->a.tid = p->b.tid = 0;
	CHECK(pthread_create(&p->a.th, NULL, pp_a, p) == 0, "pthread_create");
	CHECK(pthread_create(&p->b.th, NULL, pp_b, p) == 0, "pthread_create");
	while (!__atomic_load_n(&p->a.tid, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&p->b.tid, __ATOMIC_ACQUIRE))
		kt_sleep_ms(1);
}

/* `rounds` round trips; returns when both are blocked again. */
static void pp_run(struct pingpong *p, int rounds)
{
	char c;

	CHECK(write(p->to_a[1], &rounds, sizeof(rounds)) == sizeof(rounds), "go");
	CHECK(read(p->done[0], &c, 1) == 1, "done");
	/* b wrote "done" and goes back to read(): both block, and switch out. */
	kt_wait_off_cpu(p->b.tid);
	kt_wait_off_cpu(p->a.tid);
}

static void pp_stop(struct pingpong *p)
{
	int q = -1;

	CHECK(write(p->to_b[1], "q", 1) == 1, "quit");
	CHECK(write(p->to_a[1], &q, sizeof(q)) == sizeof(q), "quit");
	pthread_join(p->a.th, NULL);
	pthread_join(p->b.th, NULL);
}

static void program(int fd, pid_t tid, uint64_t sel1, uint64_t fixed_ctrl)
{
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_INSTR },
		{ .msr = MSR_EVTSEL0 + 1, .value = sel1 },
		{ .msr = MSR_FIXED_CTRL, .value = fixed_ctrl },
		{ .msr = MSR_GLOBAL_CTRL, .value = 3 | FIXED_BIT(0) },
	};

	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, tid, ops, 4));
}

#define D(x) ((unsigned long long)(s1.x - s0.x))

void t_ctrl_writes(void)
{
	struct pfmfs_helper_stats s0, s1;
	struct pingpong p, q;
	long nv0, nv1;
	const int rounds = 200;
	int fd = kt_open();

	kt_pin(0);
	pp_start(&p);
	pp_start(&q);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, p.a.tid));
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, p.b.tid));
	/* Two registers differ: EVTSEL1 and FIXED_CTR_CTRL. */
	program(fd, p.a.tid, EVTSEL_COUNT | EV_CYCLES, 0x3);
	program(fd, p.b.tid, EVTSEL_COUNT | EV_BRANCHES, 0x33);
	pp_run(&p, 5);	/* warm: the last image loaded on cpu 1 is b's */

	nv0 = kt_ctxt(p.a.tid, 0) + kt_ctxt(p.b.tid, 0);
	s0 = kt_stats(fd);
	pp_run(&p, rounds);
	s1 = kt_stats(fd);
	nv1 = kt_ctxt(p.a.tid, 0) + kt_ctxt(p.b.tid, 0);
	kt_log("%d round trips: %llu switch-ins, %llu outs, %llu ctrl, %llu global, %llu counter writes; %ld preemptions",
	       rounds, D(switch_ins), D(switch_outs), D(ctrl_writes),
	       D(global_writes), D(counter_writes), nv1 - nv0);
	/*
	 * a runs rounds + 1 times (woken by us, then by each of b's
	 * replies), b rounds + 1 times (each of a's bytes and its end
	 * byte). They load alternately, each after the other: 2 control
	 * writes each. A preemption (none expected under SCHED_FIFO)
	 * reloads the same image: one more switch-in, no control write.
	 */
	CHECK(D(switch_ins) == 2ULL * (rounds + 1) + (nv1 - nv0), "switch-ins %llu",
	      D(switch_ins));
	CHECK(D(switch_outs) == D(switch_ins), "switch-outs %llu", D(switch_outs));
	CHECK(D(ctrl_writes) == 2ULL * 2 * (rounds + 1), "ctrl writes %llu, expected %d",
	      D(ctrl_writes), 4 * (rounds + 1));
	CHECK(D(global_writes) == D(switch_ins) + D(switch_outs), "global writes %llu",
	      D(global_writes));
	CHECK(D(counter_writes) == 7 * D(switch_ins), "counter writes %llu",
	      D(counter_writes));

	/* Neither thread monitored: nothing at all. */
	s0 = kt_stats(fd);
	pp_run(&q, rounds);
	s1 = kt_stats(fd);
	CHECK(D(switch_ins) == 0 && D(switch_outs) == 0 && D(ctrl_writes) == 0 &&
	      D(global_writes) == 0 && D(counter_writes) == 0,
	      "unmonitored switches: %llu in, %llu ctrl writes", D(switch_ins),
	      D(ctrl_writes));

	/* The same controls in both images: loads write no control register. */
	program(fd, p.b.tid, EVTSEL_COUNT | EV_CYCLES, 0x3);
	pp_run(&p, 2);
	s0 = kt_stats(fd);
	pp_run(&p, rounds);
	s1 = kt_stats(fd);
	CHECK(D(switch_ins) >= 2ULL * rounds, "switch-ins %llu", D(switch_ins));
	CHECK(D(ctrl_writes) == 0, "equal images: %llu ctrl writes", D(ctrl_writes));

	/* One differs by three (EVTSEL0, EVTSEL1, FIXED_CTR_CTRL). */
	{
		struct pfmfs_helper_msr ops[] = {
			{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_LLC_MISS },
			{ .msr = MSR_EVTSEL0 + 1, .value = 0 },
			{ .msr = MSR_FIXED_CTRL, .value = 0x300 },
		};

		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, p.b.tid, ops, 3));
	}
	pp_run(&p, 2);
	nv0 = kt_ctxt(p.a.tid, 0) + kt_ctxt(p.b.tid, 0);
	s0 = kt_stats(fd);
	pp_run(&p, rounds);
	s1 = kt_stats(fd);
	nv1 = kt_ctxt(p.a.tid, 0) + kt_ctxt(p.b.tid, 0);
	CHECK(D(ctrl_writes) == 3ULL * 2 * (rounds + 1),
	      "ctrl writes %llu, expected %d (%ld preemptions)", D(ctrl_writes),
	      6 * (rounds + 1), nv1 - nv0);

	pp_stop(&p);
	pp_stop(&q);
	close(fd);
}
