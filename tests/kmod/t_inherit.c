/*
 * t_inherit.c - PFMFS_HELPER_ATTACH_INHERIT and PFMFS_HELPER_IOC_TEMPLATE:
 * children, grandchildren and threads of a thread attached with INHERIT are
 * attached at their creation with the family's template and count from
 * their first instruction; their FORK records say so and carry the
 * template's tag; EXIT records carry the thread's CPU time; TEMPLATE is all
 * or nothing; a full ring attaches nobody; a close detaches the whole
 * family, even with children being created while it closes.
 *
 * The monitored threads are "agents": processes and threads of a family
 * forked from this program before the device is opened (so that none of
 * them holds the opener's file), each obeying commands read from a channel
 * of its own (a pair of pipes made up front, inherited by the whole family).
 */
#include "kt.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INHERIT		PFMFS_HELPER_ATTACH_INHERIT
#define ATTACHED	PFMFS_HELPER_FORK_ATTACHED
#define NCHAN		12
#define MS		1000000ULL

#define ULL(x) ((unsigned long long)(x))

/* ---- the agents */

struct cmd {
	char op;
	int arg;
};

/* Agent side: commands in, replies out; main side: the other ends. */
static int cmd_r[NCHAN], cmd_w[NCHAN], reply_r[NCHAN], reply_w[NCHAN];
static pid_t fam_root;

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Spins for `ns` of the calling thread's CPU time; its CPU time after. */
static uint64_t spin_cpu(uint64_t ns)
{
	uint64_t end = thread_ns() + ns;
	volatile unsigned long x = 1;
	int i;

	while (thread_ns() < end)
		for (i = 0; i < 10000; i++)
			x = x * 3 + 1;
	return thread_ns();
}

static void agent_reply(int ch, uint64_t v)
{
	if (write(reply_w[ch], &v, sizeof(v)) != sizeof(v))
		_exit(3);
}

static void agent(int ch, int is_thread);

struct agent_start {
	int ch;
	pid_t tid;
};

static void *agent_thread(void *arg)
{
	struct agent_start *s = arg;
	int ch = s->ch;

	__atomic_store_n(&s->tid, kt_gettid(), __ATOMIC_RELEASE);
	agent(ch, 1);
	return NULL;
}

/* A thread of the race: `n` short-lived children, 4 at a time. */
static void *race_forker(void *arg)
{
	int n = *(int *)arg, i, inflight = 0;

	for (i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == 0) {
			pid_t g;

			spin_cpu(500000);
			g = fork();
			if (g == 0)
				_exit(0);
			if (g > 0)
				waitpid(g, NULL, 0);
			_exit(0);
		}
		if (p > 0)
			inflight++;
		if (inflight == 4 && wait(NULL) > 0)
			inflight--;
	}
	while (inflight > 0 && wait(NULL) > 0)
		inflight--;
	return NULL;
}

/*
 * Obeys one command at a time (all but x answer with one value):
 *   s MS  spin MS ms of CPU time; answers its CPU time (ns)
 *   f CH  fork a process that becomes agent CH; answers its pid
 *   t CH  create a thread that becomes agent CH; answers its tid
 *   F N   fork N processes that exit at once, one after the other, each
 *         waited for; answers N
 *   R N   two threads fork N/2 processes each, 4 at a time, each spinning
 *         0.5 ms and forking a process that exits at once; answers N
 *   w PID waitpid(PID); answers its status
 *   x     exit (the thread, or the process)
 * The end of its channel (the test exited) ends it.
 */
static void agent(int ch, int is_thread)
{
	struct agent_start s;
	pthread_t th[2];
	struct cmd c;
	int i, st;
	pid_t p;

	for (;;) {
		if (read(cmd_r[ch], &c, sizeof(c)) != sizeof(c))
			_exit(0);
		switch (c.op) {
		case 's':
			agent_reply(ch, spin_cpu((uint64_t)c.arg * MS));
			break;
		case 'f':
			p = fork();
			if (p == 0)
				agent(c.arg, 0);
			agent_reply(ch, p);
			break;
		case 't':
			s.ch = c.arg;
			s.tid = 0;
			if (pthread_create(&th[0], NULL, agent_thread, &s))
				_exit(4);
			pthread_detach(th[0]);
			while (!__atomic_load_n(&s.tid, __ATOMIC_ACQUIRE))
				sched_yield();
			agent_reply(ch, s.tid);
			break;
		case 'F':
			for (i = 0; i < c.arg; i++) {
				p = fork();
				if (p == 0)
					_exit(0);
				if (p < 0 || waitpid(p, NULL, 0) != p)
					_exit(5);
			}
			agent_reply(ch, c.arg);
			break;
		case 'R':
			st = c.arg / 2;
			for (i = 0; i < 2; i++)
				if (pthread_create(&th[i], NULL, race_forker, &st))
					_exit(4);
			for (i = 0; i < 2; i++)
				pthread_join(th[i], NULL);
			agent_reply(ch, 2 * st);
			break;
		case 'w':
			st = -1;
			waitpid(c.arg, &st, 0);
			agent_reply(ch, (uint32_t)st);
			break;
		case 'x':
			if (is_thread)
				return;
			_exit(0);
		default:
			_exit(6);
		}
	}
}

/*
 * The family's root: agent 0, a process of its own (process group too),
 * pinned to `cpu` (or not, -1). Its descendants are reaped by this program
 * if their parent dies (subreaper), and die with it (their channels end).
 */
static void fam_start(int cpu)
{
	int c[2], r[2], i;
	pid_t p;

	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER: %m");
	for (i = 0; i < NCHAN; i++) {
		CHECK(pipe(c) == 0 && pipe(r) == 0, "pipe: %m");
		cmd_r[i] = c[0];
		cmd_w[i] = c[1];
		reply_r[i] = r[0];
		reply_w[i] = r[1];
	}
	p = fork();
	CHECK(p >= 0, "fork: %m");
	if (p == 0) {
		for (i = 0; i < NCHAN; i++) {
			close(cmd_w[i]);
			close(reply_r[i]);
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setpgid(0, 0);
		if (cpu >= 0)
			kt_pin(cpu);
		agent(0, 0);
		_exit(0);
	}
	setpgid(p, p);
	for (i = 0; i < NCHAN; i++) {
		close(cmd_r[i]);
		close(reply_w[i]);
	}
	fam_root = p;
}

/* Kills the whole family and reaps it. */
static void fam_stop(void)
{
	int i;

	kill(-fam_root, SIGKILL);
	for (i = 0; i < NCHAN; i++) {
		close(cmd_w[i]);
		close(reply_r[i]);
	}
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

static void send_cmd(int ch, char op, int arg)
{
	struct cmd c = { .op = op, .arg = arg };

	CHECK(write(cmd_w[ch], &c, sizeof(c)) == sizeof(c), "command to agent %d: %m", ch);
}

static uint64_t reply_of(int ch)
{
	struct pollfd p = { .fd = reply_r[ch], .events = POLLIN };
	uint64_t v;
	int r;

	do
		r = poll(&p, 1, 60000);
	while (r < 0 && errno == EINTR);
	CHECK(r == 1, "agent %d did not answer within 60 s", ch);
	CHECK(read(reply_r[ch], &v, sizeof(v)) == sizeof(v), "agent %d died", ch);
	return v;
}

static uint64_t ask(int ch, char op, int arg)
{
	send_cmd(ch, op, arg);
	return reply_of(ch);
}

/* ---- the device */

static int attach(int fd, pid_t tid, uint32_t flags)
{
	struct pfmfs_helper_target t = { .target = THREAD, .id = tid, .flags = flags };

	return kt_ioctl(fd, PFMFS_HELPER_IOC_ATTACH, &t);
}

static int set_template(int fd, pid_t tid, const struct pfmfs_helper_msr *ops,
			uint32_t count, uint64_t tag)
{
	struct pfmfs_helper_template t = {
		.ops = (uintptr_t)ops, .count = count, .tid = tid, .tag = tag,
	};

	return kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &t);
}

static const char *rec_type(uint32_t type)
{
	switch (type) {
	case PFMFS_HELPER_REC_OVERFLOW: return "OVERFLOW";
	case PFMFS_HELPER_REC_EXIT: return "EXIT";
	case PFMFS_HELPER_REC_FORK: return "FORK";
	case PFMFS_HELPER_REC_LOST: return "LOST";
	default: return "?";
	}
}

/* The next record must be the FORK of child cpid/ctid by pid/tid. */
static struct pfmfs_helper_record expect_fork(int fd, pid_t pid, pid_t tid, pid_t cpid,
					      pid_t ctid, int attached, uint64_t tag)
{
	struct pfmfs_helper_record rec;

	CHECK(kt_read_record(fd, &rec, 5000), "no FORK record for %d/%d", cpid, ctid);
	CHECK(rec.type == PFMFS_HELPER_REC_FORK && rec.pid == (uint32_t)pid &&
	      rec.tid == (uint32_t)tid && rec.child_pid == (uint32_t)cpid &&
	      rec.child_tid == (uint32_t)ctid,
	      "%s record %u/%u -> %u/%u, expected FORK %d/%d -> %d/%d", rec_type(rec.type),
	      rec.pid, rec.tid, rec.child_pid, rec.child_tid, pid, tid, cpid, ctid);
	CHECK(rec.flags == (attached ? ATTACHED : 0u) && rec.value == (attached ? tag : 0) &&
	      rec.reserved == 0,
	      "FORK of %d: flags 0x%x value %llu reserved %u, expected flags 0x%x value %llu",
	      ctid, rec.flags, ULL(rec.value), rec.reserved, attached ? ATTACHED : 0u,
	      ULL(attached ? tag : 0));
	CHECK(rec.cpu < (uint32_t)kt_ncpus() && rec.time_ns <= kt_now(), "cpu %u time %llu",
	      rec.cpu, ULL(rec.time_ns));
	return rec;
}

static struct pfmfs_helper_record expect_exit(int fd, pid_t pid, pid_t tid)
{
	struct pfmfs_helper_record rec;

	CHECK(kt_read_record(fd, &rec, 5000), "no EXIT record for %d", tid);
	CHECK(rec.type == PFMFS_HELPER_REC_EXIT && rec.pid == (uint32_t)pid &&
	      rec.tid == (uint32_t)tid && rec.flags == 0 && rec.reserved == 0,
	      "%s record %u/%u flags 0x%x, expected EXIT %d/%d", rec_type(rec.type), rec.pid,
	      rec.tid, rec.flags, pid, tid);
	return rec;
}

static void expect_no_record(int fd, int ms)
{
	struct pfmfs_helper_record rec;

	CHECK(!kt_read_record(fd, &rec, ms), "unexpected %s record %u/%u -> %u/%u",
	      rec_type(rec.type), rec.pid, rec.tid, rec.child_pid, rec.child_tid);
}

/* The whole image of a thread. */
struct image {
	uint64_t evtsel[4], pmc[4], fixed_ctrl, fixed[3], global_ctrl;
};

static struct image read_image(int fd, pid_t tid)
{
	struct pfmfs_helper_msr ops[13];
	struct image im;
	int i, n = 0;

	for (i = 0; i < 4; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + i };
	for (i = 0; i < 4; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + i };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTRL };
	for (i = 0; i < 3; i++)
		ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + i };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, THREAD, tid, ops, n));
	n = 0;
	for (i = 0; i < 4; i++)
		im.evtsel[i] = ops[n++].value;
	for (i = 0; i < 4; i++)
		im.pmc[i] = ops[n++].value;
	im.fixed_ctrl = ops[n++].value;
	for (i = 0; i < 3; i++)
		im.fixed[i] = ops[n++].value;
	im.global_ctrl = ops[n++].value;
	return im;
}

static int image_is_zero(const struct image *im)
{
	static const struct image zero;

	return !memcmp(im, &zero, sizeof(zero));
}

/* Waits for a thread to block (state S), and for its switch-out. */
static void wait_blocked(pid_t tid)
{
	int i;

	for (i = 0; i < 600 && kt_state(tid) != 'S'; i++)
		kt_sleep_ms(5);
	CHECK(kt_state(tid) == 'S', "thread %d does not block (state %c)", tid, kt_state(tid));
	kt_sleep_ms(10);
}

/* A thread's CPU time, exact while it does not run (any thread's). */
static uint64_t runtime_of(pid_t tid)
{
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %m", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0, "%s: %m", path);
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

static long switches(pid_t tid)
{
	return kt_ctxt(tid, 1) + kt_ctxt(tid, 0);
}

/*
 * A count of `ns` ns (cycles / 3) against a thread's CPU time `cpu`, both
 * from its first instruction: the slack of t_count.c's check_share (20 ms,
 * and 250 us per switch, of which it had `sw`).
 */
static void check_counted(const char *who, uint64_t ns, uint64_t cpu, long sw)
{
	uint64_t slack = 20 * MS + 250000ULL * sw;

	kt_log("%s: counted %llu ns, ran %llu ns, %ld switches", who, ULL(ns), ULL(cpu), sw);
	CHECK(ns + slack >= cpu && ns <= cpu + slack,
	      "%s: counted %llu ns, ran %llu ns (slack %llu)", who, ULL(ns), ULL(cpu),
	      ULL(slack));
}

/* A template: cycles on PMC0 from pmc0, the fixed counters 0 and 1 from 0 and fixed1. */
static void cycles_template(struct pfmfs_helper_msr *ops, uint32_t *n, uint64_t pmc0,
			    uint64_t fixed1)
{
	*n = 0;
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = pmc0 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTRL, .value = 0x33 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + 1, .value = fixed1 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL,
						 .value = 1 | FIXED_BIT(0) | FIXED_BIT(1) };
}

#define CYCLES_GLOBAL	(1 | FIXED_BIT(0) | FIXED_BIT(1))

/*
 * An image of cycles_template(pmc0, fixed1) that counted: its controls, the
 * registers the template did not name 0, and three counters that moved
 * together from their start. Returns the ns counted.
 */
static uint64_t check_cycles_image(const char *who, const struct image *im, uint64_t pmc0,
				   uint64_t fixed1)
{
	uint64_t cyc = im->pmc[0] - pmc0;

	CHECK(im->evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im->fixed_ctrl == 0x33 &&
	      im->global_ctrl == CYCLES_GLOBAL,
	      "%s: EVTSEL0 0x%llx FIXED_CTR_CTRL 0x%llx GLOBAL_CTRL 0x%llx: not the template's",
	      who, ULL(im->evtsel[0]), ULL(im->fixed_ctrl), ULL(im->global_ctrl));
	CHECK(!im->evtsel[1] && !im->evtsel[2] && !im->evtsel[3] && !im->pmc[1] &&
	      !im->pmc[2] && !im->pmc[3] && !im->fixed[2],
	      "%s: a register the template did not name is not 0", who);
	/* From the template's start: 1000 is 1 mod 3, cycles come in threes. */
	CHECK(im->pmc[0] >= pmc0 && cyc % 3 == 0,
	      "%s: PMC0 %llu: did not count cycles from %llu", who, ULL(im->pmc[0]), ULL(pmc0));
	CHECK(im->fixed[1] - fixed1 == cyc, "%s: FIXED_CTR1 %llu: %llu cycles from %llu, PMC0 %llu",
	      who, ULL(im->fixed[1]), ULL(im->fixed[1] - fixed1), ULL(fixed1), ULL(cyc));
	CHECK(3 * im->fixed[0] == 2 * cyc, "%s: %llu instructions for %llu cycles", who,
	      ULL(im->fixed[0]), ULL(cyc));
	return cyc / 3;
}

static uint64_t attached_now(int fd)
{
	return kt_stats(fd).attached;
}

/* ---- the tests */

/*
 * A child of a thread attached with INHERIT: attached at its creation with
 * the template, counting from the template's values, readable and writable
 * by its tid; its EXIT record with its CPU time; its image kept until DETACH.
 */
void t_inherit_fork(void)
{
	struct pfmfs_helper_msr ops[8];
	struct pfmfs_helper_record rec;
	struct image im, im2;
	uint64_t base, t0, ns, cpu, cpu_exit, ns_exit;
	uint32_t n;
	pid_t P, C;
	long sw, switches_exit;
	int fd;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, INHERIT));
	CHECK(attached_now(fd) == base + 1, "attached %llu", ULL(attached_now(fd)));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 7));
	/* The template is not the root's image: that stays all 0. */
	im = read_image(fd, P);
	CHECK(image_is_zero(&im), "TEMPLATE changed the root's image");

	t0 = kt_now();
	C = ask(0, 'f', 1);
	rec = expect_fork(fd, P, P, C, C, 1, 7);
	CHECK(rec.time_ns >= t0, "FORK time %llu before the fork %llu", ULL(rec.time_ns), ULL(t0));
	CHECK(attached_now(fd) == base + 2, "the child is not counted as attached: %llu",
	      ULL(attached_now(fd)));
	CHECK_ERR(attach(fd, C, 0), EBUSY);

	/* 300 ms of CPU, counted from the template's start. */
	ask(1, 's', 300);
	wait_blocked(C);
	cpu = kt_cputime(C);
	sw = switches(C);
	im = read_image(fd, C);
	ns = check_cycles_image("child", &im, 1000, 5000);
	check_counted("child", ns, cpu, sw);
	CHECK(ns > 200 * MS, "the child counted %llu ns of its 300 ms", ULL(ns));
	/* Not running: the image stays. */
	kt_sleep_ms(50);
	im2 = read_image(fd, C);
	CHECK(!memcmp(&im, &im2, sizeof(im)), "a blocked child's counters moved");
	/* The root did not count: its image is its own. */
	im = read_image(fd, P);
	CHECK(image_is_zero(&im), "the root's image changed");

	/* A thread target like any other: MSR_WRITE by its tid. */
	kt_wr_ok(fd, THREAD, C, MSR_PMC0 + 2, 42);
	CHECK(kt_rd_ok(fd, THREAD, C, MSR_PMC0 + 2) == 42, "PMC2 of the child");
	kt_wr_ok(fd, THREAD, C, MSR_PMC0 + 2, 0);

	/* Its exit: EXIT with its CPU time; the image keeps its final counts. */
	switches_exit = switches(C) + 1;
	send_cmd(1, 'x', 0);
	rec = expect_exit(fd, C, C);
	cpu_exit = rec.value;
	kt_log("EXIT: %llu ns of CPU time, %llu ns before the exit command", ULL(cpu_exit),
	       ULL(cpu));
	CHECK(cpu_exit > 0 && cpu_exit >= cpu && cpu_exit <= cpu + 50 * MS,
	      "EXIT CPU time %llu ns, %llu ns on cpu before", ULL(cpu_exit), ULL(cpu));
	CHECK(ask(0, 'w', C) == 0, "the child's exit status");
	im = read_image(fd, C);
	ns_exit = check_cycles_image("exited child", &im, 1000, 5000);
	CHECK(ns_exit >= ns, "the exited child's count went back: %llu < %llu", ULL(ns_exit),
	      ULL(ns));
	/* Counted to its last switch-out; EXIT's CPU time is as of its last tick. */
	check_counted("exited child, against EXIT's CPU time", ns_exit, cpu_exit, switches_exit);
	kt_sleep_ms(50);
	im2 = read_image(fd, C);
	CHECK(!memcmp(&im, &im2, sizeof(im)), "the exited child's counters moved");
	CHECK(attached_now(fd) == base + 2, "the exited child is no longer attached");
	expect_no_record(fd, 200);

	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C));
	CHECK(attached_now(fd) == base + 1, "attached %llu after DETACH", ULL(attached_now(fd)));
	CHECK_ERR(kt_rd(fd, THREAD, C, MSR_PMC0, &ns), EINVAL);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C), EINVAL);
	fam_stop();
	expect_exit(fd, P, P);
	close(fd);
}

/*
 * Grandchildren and threads: the whole tree below the root is attached, each
 * FORK naming its parent; every member counts its own CPU time; a TEMPLATE
 * through any member changes the family's; DETACH of the root lets only the
 * root go.
 */
void t_inherit_tree(void)
{
	struct pfmfs_helper_msr ops[8];
	struct image im;
	uint64_t base;
	uint32_t n;
	pid_t P, C, G, T, TG, TT, C2, C3, C4;
	int fd, i;
	struct {
		const char *who;
		pid_t tid;
		int ch;
		int ms;
	} m[5];

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, INHERIT));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 11));

	C = ask(0, 'f', 1);
	expect_fork(fd, P, P, C, C, 1, 11);
	G = ask(1, 'f', 2);		/* a grandchild */
	expect_fork(fd, C, C, G, G, 1, 11);
	T = ask(1, 't', 3);		/* a thread of the child */
	expect_fork(fd, C, C, C, T, 1, 11);
	TG = ask(2, 't', 4);		/* a thread of the grandchild */
	expect_fork(fd, G, G, G, TG, 1, 11);
	TT = ask(3, 't', 5);		/* a thread created by a thread */
	expect_fork(fd, C, T, C, TT, 1, 11);
	CHECK(attached_now(fd) == base + 6, "attached %llu, expected %llu",
	      ULL(attached_now(fd)), ULL(base + 6));

	/* Each counts its own CPU time, from the template's start. */
	m[0].who = "child"; m[0].tid = C; m[0].ch = 1; m[0].ms = 0;
	m[1].who = "grandchild"; m[1].tid = G; m[1].ch = 2; m[1].ms = 200;
	m[2].who = "thread"; m[2].tid = T; m[2].ch = 3; m[2].ms = 100;
	m[3].who = "grandchild's thread"; m[3].tid = TG; m[3].ch = 4; m[3].ms = 150;
	m[4].who = "thread's thread"; m[4].tid = TT; m[4].ch = 5; m[4].ms = 50;
	for (i = 0; i < 5; i++)
		if (m[i].ms)
			ask(m[i].ch, 's', m[i].ms);
	for (i = 0; i < 5; i++) {
		uint64_t ns;

		wait_blocked(m[i].tid);
		im = read_image(fd, m[i].tid);
		ns = check_cycles_image(m[i].who, &im, 1000, 5000);
		check_counted(m[i].who, ns, runtime_of(m[i].tid), switches(m[i].tid));
		CHECK(ns + 20 * MS >= (uint64_t)m[i].ms * MS, "%s: counted %llu ns of its %d ms",
		      m[i].who, ULL(ns), m[i].ms);
	}

	/* One template for the family: set through the grandchild. */
	CHECK_OK(set_template(fd, G, ops, 2, 12));	/* EVTSEL0, PMC0 only */
	C2 = ask(0, 'f', 6);
	im = read_image(fd, C2);
	expect_fork(fd, P, P, C2, C2, 1, 12);
	CHECK(im.evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im.pmc[0] == 1000 &&
	      im.global_ctrl == 0 && im.fixed_ctrl == 0 && im.fixed[1] == 0,
	      "the root's new child does not have the template set through the grandchild");

	/* A thread's exit: EXIT with the process and the thread. */
	send_cmd(5, 'x', 0);
	expect_exit(fd, C, TT);

	/* DETACH of the root: its new children are not attached; the others' are. */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, P));
	C3 = ask(0, 'f', 7);
	expect_no_record(fd, 200);
	CHECK_ERR(kt_rd(fd, THREAD, C3, MSR_PMC0, &base), EINVAL);
	C4 = ask(2, 'f', 8);
	expect_fork(fd, G, G, C4, C4, 1, 12);
	CHECK_OK(set_template(fd, C, ops, 0, 13));
	CHECK_ERR(set_template(fd, P, ops, 0, 13), EINVAL);
	fam_stop();
	close(fd);
}

/*
 * TEMPLATE: rebuilt whole, each later child with the new registers and tag,
 * earlier children keeping theirs; the empty template (at ATTACH, or count 0)
 * attaches children that count nothing.
 */
void t_inherit_template(void)
{
	struct pfmfs_helper_msr ops[8];
	struct image im;
	uint64_t ns, inst, base;
	uint32_t n;
	pid_t P, C0, C1, C2, C3, C4;
	int fd;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, INHERIT));

	/* No TEMPLATE yet: tag 0, nothing counts. */
	C0 = ask(0, 'f', 1);
	expect_fork(fd, P, P, C0, C0, 1, 0);
	ask(1, 's', 100);
	wait_blocked(C0);
	im = read_image(fd, C0);
	CHECK(image_is_zero(&im), "a child of the ATTACH's empty template counted");

	/* Cycles from 1000: tag 21. */
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 21));
	C1 = ask(0, 'f', 2);
	expect_fork(fd, P, P, C1, C1, 1, 21);
	ask(2, 's', 100);
	wait_blocked(C1);
	im = read_image(fd, C1);
	ns = check_cycles_image("first template's child", &im, 1000, 5000);
	check_counted("first template's child", ns, kt_cputime(C1), switches(C1));

	/* Instructions on PMC1 from 7, nothing else: tag 22. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1, .value = EVTSEL_COUNT | EV_INSTR };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + 1, .value = 7 };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 2 };
	CHECK_OK(set_template(fd, P, ops, n, 22));
	C2 = ask(0, 'f', 3);
	expect_fork(fd, P, P, C2, C2, 1, 22);
	ask(3, 's', 100);
	wait_blocked(C2);
	im = read_image(fd, C2);
	CHECK(im.evtsel[0] == 0 && im.pmc[0] == 0 && im.fixed_ctrl == 0 && !im.fixed[0] &&
	      !im.fixed[1] && im.evtsel[1] == (EVTSEL_COUNT | EV_INSTR) && im.global_ctrl == 2,
	      "second template's child: EVTSEL0 0x%llx PMC0 %llu FIXED_CTR_CTRL 0x%llx EVTSEL1 0x%llx GLOBAL_CTRL 0x%llx",
	      ULL(im.evtsel[0]), ULL(im.pmc[0]), ULL(im.fixed_ctrl), ULL(im.evtsel[1]),
	      ULL(im.global_ctrl));
	inst = im.pmc[1] - 7;
	CHECK(im.pmc[1] >= 7 && inst % 2 == 0, "PMC1 %llu: not instructions from 7",
	      ULL(im.pmc[1]));
	check_counted("second template's child", inst / 2, kt_cputime(C2), switches(C2));
	/* The first child keeps the image it started with. */
	im = read_image(fd, C1);
	check_cycles_image("first template's child, later", &im, 1000, 5000);

	/* Values kept to the counters' width, as MSR_WRITE keeps them. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + 3, .value = ~0ULL };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + 2, .value = WIDTH48 + 5 };
	CHECK_OK(set_template(fd, P, ops, n, 23));
	C3 = ask(0, 'f', 4);
	expect_fork(fd, P, P, C3, C3, 1, 23);
	im = read_image(fd, C3);
	CHECK(im.pmc[3] == WIDTH48 - 1 && im.fixed[2] == 5 && im.global_ctrl == 0,
	      "PMC3 0x%llx FIXED_CTR2 0x%llx", ULL(im.pmc[3]), ULL(im.fixed[2]));

	/* The empty template (count 0, no ops): attached, counting nothing. */
	CHECK_OK(set_template(fd, P, NULL, 0, 24));
	C4 = ask(0, 'f', 5);
	expect_fork(fd, P, P, C4, C4, 1, 24);
	ask(5, 's', 100);
	wait_blocked(C4);
	im = read_image(fd, C4);
	CHECK(image_is_zero(&im), "a child of an empty template counted");
	CHECK(attached_now(fd) == base + 6, "attached %llu", ULL(attached_now(fd)));
	fam_stop();
	close(fd);
}

/* Without INHERIT: FORK records as before, nobody attached. */
void t_inherit_off(void)
{
	struct pfmfs_helper_msr ops[8];
	uint64_t v, base;
	uint32_t n;
	pid_t P, C, T;
	int fd;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, 0));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_ERR(set_template(fd, P, ops, n, 7), EINVAL);
	C = ask(0, 'f', 1);
	expect_fork(fd, P, P, C, C, 0, 0);
	T = ask(0, 't', 2);
	expect_fork(fd, P, P, P, T, 0, 0);
	CHECK_ERR(kt_rd(fd, THREAD, C, MSR_PMC0, &v), EINVAL);
	CHECK_ERR(kt_rd(fd, THREAD, T, MSR_PMC0, &v), EINVAL);
	CHECK(attached_now(fd) == base + 1, "attached %llu", ULL(attached_now(fd)));
	/* Their own forks and exits: nothing. */
	ask(1, 'f', 3);
	send_cmd(2, 'x', 0);
	expect_no_record(fd, 300);
	/* Free to be attached: by ATTACH, from an image of 0. */
	CHECK_OK(attach(fd, C, 0));
	CHECK(kt_rd_ok(fd, THREAD, C, MSR_EVTSEL0) == 0, "EVTSEL0 of an ATTACH");
	fam_stop();
	close(fd);
}

/* A template set and proven: PMC0 counting cycles from 1234, tag 5. */
static void good_template(int fd, pid_t tid)
{
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = 1234 },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
	};

	CHECK_OK(set_template(fd, tid, ops, 3, 5));
}

/*
 * The template is still good_template's: a new child of the root (agent 0)
 * on channel `ch` shows tag 5 and its registers; then it exits and is
 * detached.
 */
static void check_template_kept(int fd, pid_t P, int ch, const char *after)
{
	struct image im;
	pid_t C;

	C = ask(0, 'f', ch);
	{
		struct pfmfs_helper_record rec;

		CHECK(kt_read_record(fd, &rec, 5000), "%s: no FORK record", after);
		CHECK(rec.type == PFMFS_HELPER_REC_FORK && rec.tid == (uint32_t)P &&
		      rec.child_tid == (uint32_t)C && rec.flags == ATTACHED && rec.value == 5,
		      "%s: the template changed: %s record child %u flags 0x%x tag %llu", after,
		      rec_type(rec.type), rec.child_tid, rec.flags, ULL(rec.value));
	}
	im = read_image(fd, C);
	CHECK(im.evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im.global_ctrl == 1 &&
	      im.pmc[0] >= 1234 && (im.pmc[0] - 1234) % 3 == 0 && !im.evtsel[1] &&
	      !im.fixed_ctrl && !im.pmc[1],
	      "%s: the template's registers changed: EVTSEL0 0x%llx PMC0 %llu GLOBAL_CTRL 0x%llx",
	      after, ULL(im.evtsel[0]), ULL(im.pmc[0]), ULL(im.global_ctrl));
	send_cmd(ch, 'x', 0);
	expect_exit(fd, C, C);
	CHECK(ask(0, 'w', C) == 0, "exit status");
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C));
}

/* TEMPLATE's refusals: each one leaves the template as it was. */
void t_inherit_refuse(void)
{
	struct pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH + 1];
	struct pfmfs_helper_template tpl;
	struct pfmfs_helper_stats s0;
	struct pfmfs_helper_hello h;
	pid_t P, Q, R;
	int fd, fd2, raw, i;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	fd2 = kt_open();
	CHECK_OK(attach(fd, P, INHERIT));
	/* Before a TEMPLATE: the empty one. Then the good one. */
	good_template(fd, P);
	check_template_kept(fd, P, 1, "the good template");
	Q = ask(0, 'f', 2);
	expect_fork(fd, P, P, Q, Q, 1, 5);
	R = ask(0, 'f', 3);
	expect_fork(fd, P, P, R, R, 1, 5);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, Q));
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, R));

	/* A thread attached without INHERIT has no template. */
	CHECK_OK(attach(fd, Q, 0));
	ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_INSTR };
	CHECK_ERR(set_template(fd, Q, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, Q, NULL, 0, 99), EINVAL);
	/* Threads not attached by this opener: none, ours, another opener's family. */
	CHECK_ERR(set_template(fd, 0, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, kt_gettid(), ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, 0xffffffff, ops, 1, 99), EINVAL);
	CHECK_OK(attach(fd2, R, INHERIT));
	CHECK_ERR(set_template(fd, R, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd2, P, ops, 1, 99), EINVAL);
	CHECK_OK(set_template(fd2, R, ops, 1, 98));	/* its own: fine */
	check_template_kept(fd, P, 4, "TEMPLATE of threads without a template");

	/* MSRs on the allowlist that a template may not name; bad values. */
	{
		static const struct {
			uint32_t msr;
			uint64_t value;
			const char *what;
		} bad[] = {
			{ MSR_GLOBAL_STATUS, 0, "GLOBAL_STATUS" },
			{ MSR_GLOBAL_OVF, 0, "GLOBAL_OVF_CTRL" },
			{ MSR_GLOBAL_OVF, 1, "GLOBAL_OVF_CTRL 1" },
			{ MSR_EVTSEL0, EVTSEL_COUNT | EV_CYCLES | (1ULL << 21), "EVTSEL0 AnyThread (v3)" },
			{ MSR_EVTSEL0 + 3, 1ULL << 32, "EVTSEL3 bit 32" },
			{ MSR_FIXED_CTRL, 0x1000, "FIXED_CTR_CTRL 0x1000" },
			{ MSR_FIXED_CTRL, 0x4, "FIXED_CTR_CTRL AnyThread (v3)" },
			{ MSR_GLOBAL_CTRL, 1ULL << 4, "GLOBAL_CTRL bit 4" },
			{ MSR_GLOBAL_CTRL, 1ULL << 35, "GLOBAL_CTRL bit 35" },
		};
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			/* Good ops before and after it: all or nothing. */
			ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1,
							    .value = EVTSEL_COUNT | EV_INSTR };
			ops[1] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 3 };
			ops[2] = (struct pfmfs_helper_msr){ .msr = bad[k].msr, .value = bad[k].value };
			ops[3] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = 99 };
			i = set_template(fd, P, ops, 4, 100 + k);
			CHECK(i == -EINVAL, "TEMPLATE with %s: %s, expected -EINVAL", bad[k].what,
			      kt_errname(i));
			i = set_template(fd, P, &ops[2], 1, 100 + k);
			CHECK(i == -EINVAL, "TEMPLATE of %s alone: %s, expected -EINVAL",
			      bad[k].what, kt_errname(i));
		}
	}
	check_template_kept(fd, P, 5, "refused MSRs and values");

	/* Off the allowlist: EPERM, counted as refused. */
	{
		static const uint32_t off[] = { 0x10, 0x4c1, 0x345, 0x18a, 0xc5, 0x30c, 0x391,
						0xc0000080 };
		size_t k;

		for (k = 0; k < sizeof(off) / sizeof(off[0]); k++) {
			s0 = kt_stats(fd);
			ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = 0 };
			ops[1] = (struct pfmfs_helper_msr){ .msr = off[k], .value = 0 };
			CHECK_ERR(set_template(fd, P, ops, 2, 200), EPERM);
			CHECK(kt_stats(fd).refused == s0.refused + 1, "MSR 0x%x: refused %llu -> %llu",
			      off[k], ULL(s0.refused), ULL(kt_stats(fd).refused));
		}
	}
	check_template_kept(fd, P, 6, "off-allowlist MSRs");

	/* The struct's and the ops' checks. */
	for (i = 0; i <= PFMFS_HELPER_MAX_BATCH; i++)
		ops[i] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = i };
	tpl = (struct pfmfs_helper_template){ .ops = (uintptr_t)ops, .count = 65, .tid = P, .tag = 300 };
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.count = 0xffffffff;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.count = 1;
	tpl.reserved = 1;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.reserved = 1ULL << 63;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.reserved = 0;
	ops[0].reserved = 1;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	ops[0].reserved = 0;
	tpl.ops = 0;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EFAULT);
	tpl.ops = 0xffff800000000000ULL;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EFAULT);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, NULL), EFAULT);
	/* Another size, another direction: unknown ioctls. */
	CHECK_ERR(kt_ioctl(fd, _IOW(PFMFS_HELPER_IOC_MAGIC, 9, char[24]), &tpl), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC, 9, struct pfmfs_helper_template), &tpl),
		  ENOTTY);
	/* Before HELLO. */
	raw = kt_open_raw(0);
	CHECK(raw >= 0, "open");
	tpl = (struct pfmfs_helper_template){ .ops = (uintptr_t)ops, .count = 1, .tid = P };
	CHECK_ERR(kt_ioctl(raw, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	CHECK_OK(kt_hello(raw, &h));
	CHECK_ERR(kt_ioctl(raw, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);	/* not its thread */
	close(raw);
	check_template_kept(fd, P, 7, "bad arguments");

	/* The largest template: 64 ops, the last write of a register wins. */
	for (i = 0; i < PFMFS_HELPER_MAX_BATCH; i++)
		ops[i] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + i % 4, .value = i };
	CHECK_OK(set_template(fd, P, ops, PFMFS_HELPER_MAX_BATCH, 400));
	{
		pid_t C = ask(0, 'f', 8);
		struct image im;

		expect_fork(fd, P, P, C, C, 1, 400);
		im = read_image(fd, C);
		CHECK(im.pmc[0] == 60 && im.pmc[1] == 61 && im.pmc[2] == 62 && im.pmc[3] == 63 &&
		      im.global_ctrl == 0 && im.evtsel[0] == 0,
		      "64 ops: PMC0..3 %llu %llu %llu %llu", ULL(im.pmc[0]), ULL(im.pmc[1]),
		      ULL(im.pmc[2]), ULL(im.pmc[3]));
	}
	/* DETACH: the tid names no template any more. */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, P));
	CHECK_ERR(set_template(fd, P, ops, 1, 500), EINVAL);
	fam_stop();
	close(fd2);
	close(fd);
}

/* Every cpu: nothing counting, nothing loaded. */
static void check_cpus_idle(int fd, const char *when)
{
	int cpu;

	for (cpu = 0; cpu < kt_ncpus(); cpu++) {
		struct pfmfs_helper_cpu_state st = kt_cpu_state(fd, cpu);

		CHECK(st.global_ctrl == 0 && !st.owner_tid,
		      "%s: cpu %d: GLOBAL_CTRL 0x%llx owner %u", when, cpu, ULL(st.global_ctrl),
		      st.owner_tid);
	}
}

/*
 * The opener's close with a family attached (one child spinning, loaded;
 * one held): every member detached, the held one released, nothing left
 * counting, and each free for a new opener.
 */
void t_inherit_close(void)
{
	struct pfmfs_helper_msr ops[8];
	struct pfmfs_helper_cpu_state st;
	struct image im;
	uint64_t base, held;
	uint32_t n;
	pid_t P, C, G, T;
	int fd, fd2, i;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, INHERIT));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 31));
	C = ask(0, 'f', 1);
	expect_fork(fd, P, P, C, C, 1, 31);
	G = ask(1, 'f', 2);
	expect_fork(fd, C, C, G, G, 1, 31);
	T = ask(1, 't', 3);
	expect_fork(fd, C, C, C, T, 1, 31);
	CHECK(attached_now(fd) == base + 4, "attached %llu", ULL(attached_now(fd)));

	/* T held: HOLD works on a child. */
	held = kt_stats(fd).held;
	send_cmd(3, 's', 2000);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, T));
	for (i = 0; i < 600 && kt_state(T) != 'D'; i++)
		kt_sleep_ms(5);
	CHECK(kt_state(T) == 'D', "the held child thread is in state %c", kt_state(T));
	CHECK(kt_stats(fd).held == held + 1, "held");

	/* G spinning on cpu 1, its image loaded there. */
	send_cmd(2, 's', 1000);
	for (i = 0; i < 200; i++) {
		st = kt_cpu_state(fd, 1);
		if (st.owner_tid == (uint32_t)G)
			break;
		kt_sleep_ms(5);
	}
	CHECK(st.owner_tid == (uint32_t)G && st.global_ctrl == CYCLES_GLOBAL,
	      "the spinning grandchild is not loaded on cpu 1: owner %u GLOBAL_CTRL 0x%llx",
	      st.owner_tid, ULL(st.global_ctrl));
	close(fd);

	fd2 = kt_open();
	CHECK(attached_now(fd2) == base, "attached %llu after the close, %llu before the family",
	      ULL(attached_now(fd2)), ULL(base));
	/* G still spins: nothing loaded, nothing counting. */
	CHECK(kt_state(G) == 'R', "the grandchild stopped spinning (state %c)", kt_state(G));
	check_cpus_idle(fd2, "after the close");
	/* T released: it spins its 2 s and answers. */
	reply_of(2);
	reply_of(3);
	/* Free for a new opener, with images of 0. */
	CHECK_OK(attach(fd2, P, 0));
	CHECK_OK(attach(fd2, C, 0));
	CHECK_OK(attach(fd2, G, 0));
	CHECK_OK(attach(fd2, T, 0));
	im = read_image(fd2, G);
	CHECK(image_is_zero(&im), "a new opener's image of the grandchild is not 0");
	/* No INHERIT now: children are reported, not attached. */
	{
		pid_t C2 = ask(1, 'f', 4);

		expect_fork(fd2, C, C, C2, C2, 0, 0);
	}
	CHECK(attached_now(fd2) == base + 4, "attached %llu", ULL(attached_now(fd2)));
	close(fd2);
	fam_stop();
}

/* Run with ring_records=16: a child whose FORK record was dropped is not attached. */
void t_inherit_lost(void)
{
	struct pfmfs_helper_record recs[64];
	struct pfmfs_helper_stats s0, s1;
	struct pfmfs_helper_msr ops[8];
	struct pfmfs_helper_hello h;
	uint64_t v, base;
	pid_t P, C, C2, T;
	uint32_t n;
	ssize_t len;
	int fd, fd2, i;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open_raw(0);
	CHECK(fd >= 0, "open");
	CHECK_OK(kt_hello(fd, &h));
	CHECK(h.ring_records == 16, "ring_records %u (load with ring_records=16)", h.ring_records);
	base = attached_now(fd);
	CHECK_OK(attach(fd, P, INHERIT));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 9));

	/* 8 children that exit at once: 8 FORK and 8 EXIT records fill the ring. */
	s0 = kt_stats(fd);
	CHECK(ask(0, 'F', 8) == 8, "F");
	s1 = kt_stats(fd);
	CHECK(s1.records - s0.records == 16 && s1.lost == s0.lost,
	      "records %llu lost %llu", ULL(s1.records - s0.records), ULL(s1.lost - s0.lost));
	CHECK(s1.attached == base + 9, "attached %llu: the root and 8 exited children",
	      ULL(s1.attached));

	/* The next child: its FORK dropped, so not attached. */
	C = ask(0, 'f', 1);
	s1 = kt_stats(fd);
	CHECK(s1.lost == s0.lost + 1 && s1.records == s0.records + 16,
	      "lost %llu records %llu", ULL(s1.lost - s0.lost), ULL(s1.records - s0.records));
	CHECK(s1.attached == base + 9, "attached %llu: the child was attached",
	      ULL(s1.attached));
	CHECK_ERR(kt_rd(fd, THREAD, C, MSR_PMC0, &v), EINVAL);
	CHECK_ERR(set_template(fd, C, ops, n, 10), EINVAL);
	/* Nor are its own children (nothing more lost). */
	T = ask(1, 't', 2);
	CHECK_ERR(kt_rd(fd, THREAD, T, MSR_PMC0, &v), EINVAL);
	CHECK(kt_stats(fd).lost == s0.lost + 1, "more records lost: the child's thread");

	/* LOST first, then the 16, in order: FORK, EXIT of each child. */
	len = read(fd, recs, sizeof(recs));
	CHECK(len == 17 * (ssize_t)sizeof(recs[0]), "read %zd bytes", len);
	CHECK(recs[0].type == PFMFS_HELPER_REC_LOST && recs[0].value == 1,
	      "first record: %s value %llu", rec_type(recs[0].type), ULL(recs[0].value));
	for (i = 0; i < 8; i++) {
		struct pfmfs_helper_record *f = &recs[1 + 2 * i], *e = &recs[2 + 2 * i];

		CHECK(f->type == PFMFS_HELPER_REC_FORK && f->pid == (uint32_t)P &&
		      f->tid == (uint32_t)P && f->flags == ATTACHED && f->value == 9 &&
		      f->child_pid == f->child_tid && f->child_tid != (uint32_t)C,
		      "record %d: %s flags 0x%x value %llu child %u", 1 + 2 * i, rec_type(f->type),
		      f->flags, ULL(f->value), f->child_tid);
		CHECK(e->type == PFMFS_HELPER_REC_EXIT && e->pid == f->child_pid &&
		      e->tid == f->child_tid,
		      "record %d: %s %u/%u, expected the EXIT of %u", 2 + 2 * i, rec_type(e->type),
		      e->pid, e->tid, f->child_tid);
		/* Exited at once: their CPU time is what the last tick saw, maybe 0. */
		kt_log("child %u: EXIT CPU time %llu ns", e->tid, ULL(e->value));
		CHECK(e->value < 100 * MS, "an instant child's EXIT CPU time %llu ns", ULL(e->value));
		/* Attached until DETACH: its final counts. */
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, f->child_tid));
	}
	expect_no_record(fd, 100);
	CHECK(attached_now(fd) == base + 1, "attached %llu", ULL(attached_now(fd)));

	/* The dropped child is free: another opener may attach it. */
	fd2 = kt_open();
	CHECK_OK(attach(fd2, C, 0));
	close(fd2);
	/* Room again: the next child is attached. */
	C2 = ask(0, 'f', 3);
	expect_fork(fd, P, P, C2, C2, 1, 9);
	(void)kt_rd_ok(fd, THREAD, C2, MSR_PMC0);
	fam_stop();
	close(fd);
}

/*
 * A race: a family making children (200, from two threads, each child
 * forking a grandchild, each overflowing a counter after 100 us) while its
 * opener closes, at a different point in each round. Every record names a
 * member; afterwards nothing is attached, nothing counts, the kernel logs
 * nothing (run.sh).
 */
#define RACE_KIDS	200
#define MAX_KNOWN	4096

void t_inherit_race(void)
{
	static const int close_after[] = { 5, 60, 250 };	/* FORK records seen */
	static pid_t known[MAX_KNOWN];
	struct pfmfs_helper_record recs[64];
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = WIDTH48 - 300000 },
		{ .msr = MSR_FIXED_CTRL, .value = 0x3 },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 | FIXED_BIT(0) },
	};
	uint64_t base;
	int round, fd, nknown, i, j, k;
	unsigned long forks, exits, ovfs, lost;

	kt_pin(0);
	fam_start(-1);
	fd = kt_open();
	base = attached_now(fd);
	close(fd);
	for (round = 0; round < 3; round++) {
		uint64_t end;
		ssize_t len;

		fd = kt_open();
		CHECK_OK(attach(fd, fam_root, INHERIT));
		CHECK_OK(set_template(fd, fam_root, ops, 4, 1000 + round));
		nknown = 0;
		known[nknown++] = fam_root;
		forks = exits = ovfs = lost = 0;
		send_cmd(0, 'R', RACE_KIDS);
		end = kt_now() + 60000 * MS;
		while (forks < (unsigned long)close_after[round] && kt_now() < end) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 100) <= 0) {
				struct pollfd q = { .fd = reply_r[0], .events = POLLIN };

				if (poll(&q, 1, 0) == 1)
					break;	/* it is done already */
				continue;
			}
			len = read(fd, recs, sizeof(recs));
			CHECK(len > 0 && len % sizeof(recs[0]) == 0, "read %zd", len);
			for (j = 0; j < len / (ssize_t)sizeof(recs[0]); j++) {
				struct pfmfs_helper_record *r = &recs[j];

				if (r->type == PFMFS_HELPER_REC_LOST) {
					lost += r->value;
					continue;
				}
				for (k = 0; k < nknown; k++)
					if (known[k] == (pid_t)r->tid)
						break;
				CHECK(k < nknown, "%s record of %u/%u: not a member", rec_type(r->type),
				      r->pid, r->tid);
				switch (r->type) {
				case PFMFS_HELPER_REC_FORK:
					forks++;
					CHECK(r->flags == ATTACHED && r->value == 1000ULL + round,
					      "FORK flags 0x%x tag %llu", r->flags, ULL(r->value));
					CHECK(nknown < MAX_KNOWN, "too many");
					known[nknown++] = r->child_tid;
					break;
				case PFMFS_HELPER_REC_EXIT:
					exits++;
					break;
				case PFMFS_HELPER_REC_OVERFLOW:
					ovfs++;
					CHECK(r->value == 1, "overflow bits 0x%llx", ULL(r->value));
					break;
				default:
					CHECK(0, "record type %u", r->type);
				}
			}
		}
		kt_log("round %d: closing after %lu FORK, %lu EXIT, %lu OVERFLOW records, %lu lost, %llu attached",
		       round, forks, exits, ovfs, lost, ULL(attached_now(fd)));
		close(fd);
		CHECK(reply_of(0) == RACE_KIDS, "R");
		fd = kt_open();
		CHECK(attached_now(fd) == base, "round %d: %llu attached after the close, %llu before",
		      round, ULL(attached_now(fd)), ULL(base));
		check_cpus_idle(fd, "after the race");
		for (i = 0; i < kt_ncpus(); i++) {
			struct pfmfs_helper_cpu_state st = kt_cpu_state(fd, i);

			CHECK(st.lvtpc == st.lvtpc_found, "cpu %d: LVTPC 0x%x, found 0x%x", i,
			      st.lvtpc, st.lvtpc_found);
		}
		close(fd);
	}
	fam_stop();
}

/*
 * A race between ATTACH and a child's creation: a second opener attaches,
 * by guessing its pid, a child that a family following its children is
 * creating, between the moment its pid exists and the fork tracepoint.
 * Only one of the two may get it: the FORK record says ATTACHED, or the
 * other opener's ATTACH succeeded, never both.
 */
#define DUP_KIDS	300

struct dup_race {
	int fd;
	volatile pid_t first;	/* 0 until the family is ready */
	volatile int stop;
	pid_t got[DUP_KIDS + 64];
	int ngot;
	unsigned long tries;
};

static void *dup_attacher(void *arg)
{
	struct dup_race *d = arg;
	pid_t cand;
	int r, k;

	kt_pin(0);
	while (!d->first)
		kt_sleep_ms(1);
	cand = d->first;
	/*
	 * The next pid, or the one after (the next one may have come and gone
	 * unseen): an ATTACH that finds it moves on past it.
	 */
	while (!d->stop && d->ngot < DUP_KIDS + 64) {
		for (k = 0; k < 3; k++) {
			r = attach(d->fd, cand + k, 0);
			d->tries++;
			if (r == -ESRCH)
				continue;
			if (r == 0)
				d->got[d->ngot++] = cand + k;
			cand += k + 1;
			break;
		}
	}
	return NULL;
}

void t_inherit_dup(void)
{
	static struct dup_race d;
	struct pfmfs_helper_record rec;
	struct pfmfs_helper_msr ops[8];
	unsigned long attached = 0, both = 0, forks = 0;
	pthread_t th;
	pid_t P, probe;
	uint32_t n;
	int fd, i;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	d.fd = kt_open();
	CHECK_OK(attach(fd, P, INHERIT));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 77));
	CHECK(pthread_create(&th, NULL, dup_attacher, &d) == 0, "pthread_create");
	/* The pid the next child gets (pids are handed out in turn). */
	probe = ask(0, 'f', 1);
	expect_fork(fd, P, P, probe, probe, 1, 77);
	d.first = probe + 1;
	CHECK(ask(0, 'F', DUP_KIDS) == DUP_KIDS, "F");
	d.stop = 1;
	pthread_join(th, NULL);
	while (kt_read_record(fd, &rec, 200)) {
		if (rec.type != PFMFS_HELPER_REC_FORK)
			continue;
		forks++;
		if (!(rec.flags & ATTACHED))
			continue;
		attached++;
		for (i = 0; i < d.ngot; i++)
			if (d.got[i] == (pid_t)rec.child_tid)
				both++;
	}
	kt_log("%lu FORK records, %lu children attached by the family, %d by the other opener (%lu tries), %lu by both",
	       forks, attached, d.ngot, d.tries, both);
	CHECK(forks == DUP_KIDS, "%lu FORK records", forks);
	CHECK(both == 0, "%lu children attached by two openers at once", both);
	close(d.fd);
	close(fd);
	fam_stop();
}
