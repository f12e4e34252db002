/*
 * t_inherit_family.c - what the tests of PFMFS_HELPER_ATTACH_INHERIT share
 * (declared in t_inherit.h): the agents, forked processes and their threads
 * that obey commands over pipes and make the family the tests watch, and
 * the device's records and images read and checked.
 */
#include "t_inherit.h"
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the agents */

struct cmd {
	char op;
	int arg;
};

/* Agent side: commands in, replies out; main side: the other ends. */
static int cmd_r[NCHAN], cmd_w[NCHAN], reply_w[NCHAN];
int reply_r[NCHAN];
pid_t fam_root;

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
void fam_start(int cpu)
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
void fam_stop(void)
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

void send_cmd(int ch, char op, int arg)
{
	struct cmd c = { .op = op, .arg = arg };

	CHECK(write(cmd_w[ch], &c, sizeof(c)) == sizeof(c), "command to agent %d: %m", ch);
}

uint64_t reply_of(int ch)
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

uint64_t ask(int ch, char op, int arg)
{
	send_cmd(ch, op, arg);
	return reply_of(ch);
}

/* ---- the device */

const char *rec_type(uint32_t type)
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
struct pfmfs_helper_record expect_fork(int fd, pid_t pid, pid_t tid, pid_t cpid, pid_t ctid,
				       int attached, uint64_t tag)
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

struct pfmfs_helper_record expect_exit(int fd, pid_t pid, pid_t tid)
{
	struct pfmfs_helper_record rec;

	CHECK(kt_read_record(fd, &rec, 5000), "no EXIT record for %d", tid);
	CHECK(rec.type == PFMFS_HELPER_REC_EXIT && rec.pid == (uint32_t)pid &&
	      rec.tid == (uint32_t)tid && rec.flags == 0 && rec.reserved == 0,
	      "%s record %u/%u flags 0x%x, expected EXIT %d/%d", rec_type(rec.type), rec.pid,
	      rec.tid, rec.flags, pid, tid);
	return rec;
}

void expect_no_record(int fd, int ms)
{
	struct pfmfs_helper_record rec;

	CHECK(!kt_read_record(fd, &rec, ms), "unexpected %s record %u/%u -> %u/%u",
	      rec_type(rec.type), rec.pid, rec.tid, rec.child_pid, rec.child_tid);
}

struct image read_image(int fd, pid_t tid)
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

int image_is_zero(const struct image *im)
{
	static const struct image zero;

	return !memcmp(im, &zero, sizeof(zero));
}

int fam_open(uint32_t flags, uint64_t *base)
{
	int fd;

	kt_pin(0);
	fam_start(1);
	fd = kt_open();
	*base = attached_now(fd);
	CHECK_OK(attach(fd, fam_root, flags));
	return fd;
}
