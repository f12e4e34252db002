// pfmfs-test: backends=sim,perf
/*
 * pfmon_calls.c: pfmon 3.4's counting modes, each making the calls pfmon
 * makes, in its order, with its arguments (pfmon_calls.h): the prologue and
 * two event sets (sim: instructions and cycles on the fixed counters, LLC
 * misses and branches; perf-sw: task clock and page faults, context switches
 * and migrations), then
 *  1. pfmon -e E1,E2 CMD: the command (vfork, PTRACE_TRACEME, exec), counted
 *     from its exec, read after its exit with no stop nor unload;
 *  2. pfmon --switch-timeout -e E1,E2 -e E3,E4 CMD: both sets switched on
 *     time; both ran (runs, time active), their counts scale to the run;
 *  3. pfmon --attach-task PID: a grandchild, ptrace-attached and counted; at
 *     pfmon's SIGINT stopped (SIGSTOP) and read while the context is loaded
 *     and started, closed, detached: it runs on;
 *  4. pfmon --follow-all CMD: ptrace's fork, vfork and clone events, and a
 *     context for each new task (a fork, a vfork that execs, a thread), all
 *     open at once, each read at its task's exit;
 *  5. pfmon --system-wide: a pinned worker per CPU, a system-wide context
 *     loaded on its CPU, a barrier, start; stop before the read.
 * Sim: the manual clock makes every count exact (2 instructions, 3 cycles,
 * 0.01 LLC misses, 0.4 branches per ns advanced while loaded), set switches
 * too. Perf: a work order writes WORK_PAGES fresh pages and burns WORK_BURN_NS
 * of CPU time: a task's page faults are at least those and at most all of its
 * (rusage, /proc/PID/stat); its task clock, at least the burn and at most
 * the wall time from before its context to after its end (the task clock
 * is wall time on a CPU, and outgrows the CPU time the kernel accounts when
 * a hypervisor steals time); a CPU's, the wall time between the calls that
 * start and stop it.
 */
#include "check.h"
#include "pfmon_calls.h"

#define RUN_NS 500000ULL		/* sim: the command's time (1., 3., 4., 5.) */
#define SIM_SWITCH_NS 1000000ULL	/* 2.: pfmon --switch-timeout=1 */
#define SIM_SETS_NS 4500000ULL		/* 2.: set 0 2.5 ms in 3 runs, set 1 2 ms in 2 */
#define PERF_SWITCH_NS 10000000ULL	/* 2.: pfmon --switch-timeout=10 */
#define PERF_SYS_MS 50			/* 5.: the session */
#define SLACK_NS 2000000ULL		/* perf: a set's time and its task clock */

static const char *const sim_names[] = { "INSTRUCTIONS_RETIRED", "UNHALTED_CORE_CYCLES", "LLC_MISSES",
					 "BRANCH_INSTRUCTIONS_RETIRED" };
static const char *const perf_names[] = { "TASK_CLOCK", "PAGE_FAULTS", "CONTEXT_SWITCHES", "CPU_MIGRATIONS" };
static struct pfmon_set sets[MAX_SETS], sys_set;

/* sim: set 0 counted ns of the command's time, in one run. */
static void check_sim_run(const struct set_result *r, uint64_t ns, const char *what)
{
	printf("%s: %" PRIu64 " INSTRUCTION_RETIRED %" PRIu64 " UNHALTED_CORE_CYCLES, runs %" PRIu64 "\n", what,
	       r->v[0], r->v[1], (uint64_t)r->si.set_runs);
	CHECK_EQ_U64(r->v[0], ns * SIM_INST_PER_NS);
	CHECK_EQ_U64(r->v[1], ns * SIM_CYCLES_PER_NS);
	CHECK_EQ_U64(r->si.set_runs, 1);
	CHECK_EQ_U64(r->si.set_act_duration, ns);
	CHECK_EQ_U64(r->si.set_avail_pmcs[0], SIM_AVAIL_PMCS);
}

/* perf: set 0 (task clock, page faults) of a task that had a work order,
 * within the wall time from before its context to after its end (wall_ns)
 * and all its page faults. */
static void check_perf_run(const struct set_result *r, uint64_t wall_ns, uint64_t faults, const char *what)
{
	printf("%s: %" PRIu64 " TASK_CLOCK %" PRIu64 " PAGE_FAULTS, runs %" PRIu64 "; %" PRIu64
	       " ns, %" PRIu64 " faults in all\n", what, r->v[0], r->v[1], (uint64_t)r->si.set_runs, wall_ns, faults);
	CHECK(r->v[0] >= WORK_BURN_NS && r->v[0] <= wall_ns, "%s: task clock %" PRIu64 " outside [%" PRIu64
	      ", %" PRIu64 "]", what, r->v[0], (uint64_t)WORK_BURN_NS, wall_ns);
	CHECK(r->v[1] >= WORK_PAGES && r->v[1] <= faults,
	      "%s: %" PRIu64 " page faults outside [%d, %" PRIu64 "]", what, r->v[1], WORK_PAGES, faults);
	CHECK_EQ_U64(r->si.set_runs, 1);
}

/* 1. pfmon -e E1,E2 COMMAND. */
static void count_command(void)
{
	struct set_result r;
	struct rusage ru;
	int cmd, ans, fd;
	uint64_t t0;
	pid_t pid;

	pid = pfmon_spawn("--serve", 0, &cmd, &ans);
	t0 = monotonic_ns();
	fd = pfmon_task_context(sets, 1, 0, pid);
	CHECK_STATE(fd, "active");
	CHECK_OK(ptrace(PTRACE_CONT, pid, NULL, NULL));
	if (on_sim)
		sim_advance(RUN_NS);
	else
		order_work(cmd, ans);
	close(cmd);	/* EOF: the command exits */
	close(ans);
	reap(pid, &ru);
	pfmon_results(fd, sets, 1, &r, 0);
	if (on_sim)
		check_sim_run(&r, RUN_NS, "count");
	else
		check_perf_run(&r, monotonic_ns() - t0, (uint64_t)(ru.ru_minflt + ru.ru_majflt), "count");
	CHECK(wait_sessions(0) == 0, "count: a session outlived close()");
}

/* 2. pfmon --switch-timeout=T -e E1,E2 -e E3,E4 COMMAND. */
static void two_sets(void)
{
	uint64_t timeout = on_sim ? SIM_SWITCH_NS : PERF_SWITCH_NS, t0 = monotonic_ns(), total;
	struct set_result r[2];
	struct rusage ru;
	int cmd, ans, fd;
	pid_t pid;

	memset(r, 0, sizeof(r));
	pid = pfmon_spawn("--serve", 0, &cmd, &ans);
	fd = pfmon_task_context(sets, 2, timeout, pid);
	CHECK_OK(ptrace(PTRACE_CONT, pid, NULL, NULL));
	if (on_sim) {
		sim_advance(SIM_SETS_NS);
	} else {
		/* Work until set 0 came back once: each set ran. */
		do {
			CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL,
			      "sets: set 0 ran %" PRIu64 " times, set 1 %" PRIu64 " after %ld ms of work",
			      (uint64_t)r[0].si.set_runs, (uint64_t)r[1].si.set_runs, wait_ms());
			order_work(cmd, ans);
			pfmon_results(fd, sets, 2, r, 1);
		} while (r[0].si.set_runs < 2 || r[1].si.set_runs < 1);
	}
	close(cmd);
	close(ans);
	reap(pid, &ru);
	pfmon_results(fd, sets, 2, r, 0);
	total = r[0].si.set_act_duration + r[1].si.set_act_duration;
	for (int s = 0; s < 2; s++) {
		CHECK(r[s].si.set_runs > 0 && r[s].si.set_act_duration > 0, "set %d was not activated", s);
		printf("sets: set %d ran %" PRIu64 " times for %" PRIu64 " ns: %" PRIu64 " and %" PRIu64
		       ", scaled to %" PRIu64 " and %" PRIu64 "\n", s, (uint64_t)r[s].si.set_runs,
		       (uint64_t)r[s].si.set_act_duration, r[s].v[0], r[s].v[1],
		       r[s].v[0] * total / r[s].si.set_act_duration, r[s].v[1] * total / r[s].si.set_act_duration);
	}
	if (on_sim) {
		/* Set 0: (0, 1], (2, 3], (4, 4.5] ms; set 1: (1, 2], (3, 4] ms
		 * (what is left of set 0's timeout depends on whether pfmfsd
		 * has seen the exit yet: unloaded, no set is active). pfmon's
		 * scaling is exact. */
		CHECK_EQ_U64(total, SIM_SETS_NS);
		CHECK_EQ_U64(r[0].si.set_runs, 3);
		CHECK_EQ_U64(r[0].si.set_act_duration, 2500000);
		CHECK_EQ_U64(r[1].si.set_runs, 2);
		CHECK_EQ_U64(r[1].si.set_act_duration, 2000000);
		CHECK_EQ_U64(r[1].si.set_timeout, timeout);
		CHECK_EQ_U64(r[0].v[0], 2500000 * SIM_INST_PER_NS);
		CHECK_EQ_U64(r[0].v[1], 2500000 * SIM_CYCLES_PER_NS);
		CHECK_EQ_U64(r[1].v[0], 2000000 / 100);		/* LLC_MISSES */
		CHECK_EQ_U64(r[1].v[1], 2000000 * 4 / 10);	/* BRANCH_INSTRUCTIONS_RETIRED */
		CHECK_EQ_U64(r[0].v[0] * total / r[0].si.set_act_duration, SIM_SETS_NS * SIM_INST_PER_NS);
		CHECK_EQ_U64(r[1].v[1] * total / r[1].si.set_act_duration, SIM_SETS_NS * 4 / 10);
	} else {
		/* Each set's time is the command's time on a CPU while it was
		 * active: no more than it lived; set 0's task clock, its own. */
		CHECK(total <= monotonic_ns() - t0, "sets ran %" PRIu64 " ns, in %" PRIu64 " ns", total,
		      monotonic_ns() - t0);
		CHECK(r[0].v[0] <= r[0].si.set_act_duration + SLACK_NS, "set 0: task clock %" PRIu64
		      " in %" PRIu64 " ns", r[0].v[0], (uint64_t)r[0].si.set_act_duration);
	}
	CHECK(wait_sessions(0) == 0, "sets: a session outlived close()");
}

/* 3. pfmon --attach-task PID, then SIGINT. */
static void attach(void)
{
	int cmd[2], ans[2], tidp[2], status, fd;
	uint64_t faults0 = 0, t0;
	struct set_result r;
	pid_t middle, tid = 0, t;

	CHECK(pipe2(cmd, O_CLOEXEC) == 0 && pipe2(ans, O_CLOEXEC) == 0 && pipe2(tidp, O_CLOEXEC) == 0, "pipe2");
	fflush(stdout);
	middle = fork();
	CHECK(middle >= 0, "fork: %s", strerror(errno));
	if (middle == 0) {
		/* The target's parent: it reaps it, and exits with its status. */
		t = fork();
		if (t == 0) {
			if (dup2(cmd[0], 0) < 0 || dup2(ans[1], 1) < 0)
				_exit(100);
			execl("/proc/self/exe", "pfmon-target", "--serve", (char *)NULL);
			_exit(101);
		}
		if (t < 0 || write(tidp[1], &t, sizeof(t)) != sizeof(t))
			_exit(102);
		close(cmd[1]), close(ans[0]);
		if (waitpid(t, &status, 0) != t)
			_exit(103);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 104);
	}
	close(cmd[0]), close(ans[1]), close(tidp[1]);
	CHECK_EQ_U64(read(tidp[0], &tid, sizeof(tid)), sizeof(tid));
	close(tidp[0]);
	order_work(cmd[1], ans[0]);	/* it runs, serving */

	CHECK_OK(ptrace(PTRACE_ATTACH, tid, NULL, NULL));
	CHECK_EQ_U64(wait_task(tid, &status, NULL), tid);
	CHECK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "attach: status 0x%x", status);
	CHECK_OK(ptrace(PTRACE_SETOPTIONS, tid, NULL, (void *)PTRACE_O_TRACEEXEC));
	faults0 = on_sim ? 0 : proc_faults(tid);
	t0 = monotonic_ns();
	fd = pfmon_task_context(sets, 1, 0, tid);
	CHECK_OK(ptrace(PTRACE_CONT, tid, NULL, NULL));
	if (on_sim)
		sim_advance(RUN_NS);
	else
		order_work(cmd[1], ans[0]);

	/* SIGINT: pfmon stops the target, reads, closes and detaches. */
	CHECK_OK(syscall(SYS_tgkill, tid, tid, SIGSTOP));
	CHECK_EQ_U64(wait_task(tid, &status, NULL), tid);
	CHECK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGSTOP, "SIGSTOP: status 0x%x", status);
	CHECK_STATE(fd, "active");
	pfmon_results(fd, sets, 1, &r, 0);
	if (on_sim) {
		check_sim_run(&r, RUN_NS, "attach");
	} else {
		check_perf_run(&r, monotonic_ns() - t0, proc_faults(tid) - faults0, "attach");
	}
	CHECK_OK(ptrace(PTRACE_DETACH, tid, NULL, NULL));

	/* The target runs on, unmonitored, and exits at EOF. */
	order_work(cmd[1], ans[0]);
	close(cmd[1]);
	close(ans[0]);
	CHECK_EQ_U64(wait_task(middle, &status, NULL), middle);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "attach: the target's parent: status 0x%x", status);
	CHECK(wait_sessions(0) == 0, "attach: a session outlived close()");
}

/* 4.'s command (--forker): a fork, a vfork that execs the command (--serve-w)
 * and a thread, each working once, then waiting for EOF; once it made them,
 * the command sends itself SIGUSR1 (ignored): pfmon passes the signal on, and
 * the test learns that every task the command makes has been announced. */
static void *forker_thread(void *arg)
{
	char c;

	work();
	while (read(0, &c, 1) > 0)
		;
	return arg;
}

static int forker(void)
{
	pthread_t thread;
	pid_t a, b;
	int status;

	signal(SIGUSR1, SIG_IGN);
	a = fork();
	if (a == 0)
		_exit(forker_thread(NULL) != NULL);
	b = vfork();
	if (b == 0) {
		execl("/proc/self/exe", "pfmon-command", "--serve-w", (char *)NULL);
		_exit(101);
	}
	if (a < 0 || b < 0 || pthread_create(&thread, NULL, forker_thread, NULL) != 0)
		return 2;
	raise(SIGUSR1);
	forker_thread(NULL);
	pthread_join(thread, NULL);
	if (waitpid(a, &status, 0) != a || status != 0 || waitpid(b, &status, 0) != b || status != 0)
		return 3;
	return 0;
}

/* A task of the command: its context once it has one, and what of the
 * sim's advance it counted. A sanitizer's runtime may add threads of its
 * own: they are followed too. */
struct followed {
	pid_t tid;
	int fd;
	int announced;	/* its creator's ptrace event came */
	int stopped;	/* its first stop came */
	uint64_t ns;	/* sim: loaded for the advance, or not yet */
};

#define MAX_FOLLOWED 16
static struct followed followed[MAX_FOLLOWED];
static int nfollowed, pending;	/* tasks, and those without a context yet */

static struct followed *find_task(pid_t tid)
{
	for (int i = 0; i < nfollowed; i++)
		if (followed[i].tid == tid)
			return &followed[i];
	CHECK(nfollowed < MAX_FOLLOWED, "task %d: more than %d tasks", (int)tid, MAX_FOLLOWED);
	pending++;
	followed[nfollowed] = (struct followed){ .tid = tid, .fd = -1 };
	return &followed[nfollowed++];
}

/* A new task has both its creator's event and its stop: its context, go. */
static void follow_task(struct followed *f)
{
	if (!f->announced || !f->stopped || f->fd >= 0)
		return;
	f->fd = pfmon_task_context(sets, 1, 0, f->tid);
	pending--;
	CHECK_OK(ptrace(PTRACE_CONT, f->tid, NULL, NULL));
}

/* 4. pfmon --follow-all COMMAND. */
static void follow_all(void)
{
	int cmd, ans, status, sig, made = 0, exited = 0, worked = 0;
	unsigned long event, new_tid;
	struct set_result r;
	struct followed *f;
	char what[48];
	pid_t pid, tid;

	pid = pfmon_spawn("--forker", PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE, &cmd, &ans);
	f = find_task(pid);
	f->announced = f->stopped = 1;
	follow_task(f);
	while (exited < nfollowed) {
		tid = wait_task(-1, &status, NULL);
		f = find_task(tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && f->fd >= 0,
			      "task %d: status 0x%x, context %d", (int)tid, status, f->fd);
			pfmon_results(f->fd, sets, 1, &r, 0);
			exited++;
			snprintf(what, sizeof(what), "follow-all task %d", (int)tid);
			if (on_sim && f->ns && r.si.set_act_duration == 0 && r.v[0] == 0)
				/* A runtime's thread that ended before the advance,
				 * its exit seen after it: it counted nothing. */
				printf("%s: ended before the command's time\n", what);
			else if (on_sim) {
				check_sim_run(&r, f->ns, what);
				worked += f->ns == RUN_NS;
			} else
				printf("%s: %" PRIu64 " TASK_CLOCK %" PRIu64 " PAGE_FAULTS, runs %" PRIu64 "\n", what,
				       r.v[0], r.v[1], (uint64_t)r.si.set_runs);
			if (!on_sim)
				worked += r.v[0] >= WORK_BURN_NS && r.v[1] >= WORK_PAGES;
			continue;
		}
		sig = WSTOPSIG(status);
		event = (unsigned long)status >> 16;
		if (sig == SIGTRAP && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
				       event == PTRACE_EVENT_CLONE)) {
			CHECK_OK(ptrace(PTRACE_GETEVENTMSG, tid, NULL, &new_tid));
			find_task((pid_t)new_tid)->announced = 1;
			follow_task(find_task((pid_t)new_tid));
			sig = 0;
		} else if (sig == SIGTRAP) {
			CHECK_EQ_U64(event, PTRACE_EVENT_EXEC);	/* the task keeps its context */
			sig = 0;
		} else if (sig == SIGSTOP && f->fd < 0) {
			f->stopped = 1;
			follow_task(f);
			sig = -1;	/* continued with its context, or at its creator's event */
		} else if (sig == SIGUSR1 && tid == pid) {
			made = 1;
		}
		if (sig >= 0)
			CHECK_OK(ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig));
		if (made && !pending && cmd >= 0) {
			/* Every task has its context: the command's time. (A
			 * sanitizer's thread may have ended already: its
			 * context is closed.) */
			CHECK_EQ_U64(wait_sessions_named(own_sessions(), nfollowed - exited), nfollowed - exited);
			printf("follow-all: %d contexts open at once\n", nfollowed);
			if (on_sim)
				sim_advance(RUN_NS);
			for (int i = 0; i < nfollowed; i++)
				followed[i].ns = RUN_NS;
			close(cmd);	/* EOF: every task exits */
			close(ans);
			cmd = -1;
		}
	}
	CHECK(cmd < 0 && nfollowed >= 4, "follow-all: %d tasks, the command's SIGUSR1 %sseen", nfollowed,
	      made ? "" : "not ");
	/* The command, its fork, its vfork and its thread did their work. */
	CHECK(worked >= 4, "follow-all: %d tasks worked, of the command's 4", worked);
	CHECK(wait_sessions(0) == 0, "follow-all: a session outlived close()");
}

/* 5. pfmon --system-wide: one worker per CPU. */
struct sys_cpu {
	int cpu;
	pthread_t thread;
	struct set_result r;
	uint64_t o0, i0, i1, o1;	/* monotonic: around and inside start..stop */
};

static pthread_barrier_t sys_loaded, sys_started, sys_end;

static void *sys_worker(void *arg)
{
	struct sys_cpu *c = arg;
	pfarg_load_t load;
	pfarg_ctx_t ctx;
	int fd;

	pin(c->cpu);
	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = PFM_FL_SYSTEM_WIDE;
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	pfmon_program(fd, &sys_set, 1, 0, NULL);
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)c->cpu;
	CHECK_OK(pfm_load_context(fd, &load));
	pthread_barrier_wait(&sys_loaded);
	c->o0 = monotonic_ns();
	CHECK_OK(pfm_start(fd, NULL));
	c->i0 = monotonic_ns();
	pthread_barrier_wait(&sys_started);
	pthread_barrier_wait(&sys_end);
	c->i1 = monotonic_ns();
	CHECK_OK(pfm_stop(fd));
	c->o1 = monotonic_ns();
	pfmon_results(fd, &sys_set, 1, &c->r, 0);
	return NULL;
}

static void system_wide(void)
{
	static struct sys_cpu cpus[CPU_SETSIZE];
	int ncpus = 0;
	cpu_set_t all;
	char what[32];

	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	for (int i = 0; i < CPU_SETSIZE; i++)	/* pfmon's --cpu-list: every CPU it may use */
		if (CPU_ISSET(i, &all))
			cpus[ncpus++].cpu = i;
	sys_set.inp = sets[0].inp;
	pfmon_dispatch(&sys_set, 1);
	pthread_barrier_init(&sys_loaded, NULL, (unsigned int)ncpus + 1);
	pthread_barrier_init(&sys_started, NULL, (unsigned int)ncpus + 1);
	pthread_barrier_init(&sys_end, NULL, (unsigned int)ncpus + 1);
	for (int i = 0; i < ncpus; i++)
		CHECK(pthread_create(&cpus[i].thread, NULL, sys_worker, &cpus[i]) == 0, "pthread_create");
	pthread_barrier_wait(&sys_loaded);
	pthread_barrier_wait(&sys_started);
	CHECK_EQ_U64(wait_sessions_named(own_sessions(), ncpus), ncpus);
	if (on_sim) {
		sim_advance(RUN_NS);
	} else {
		pin(cpus[0].cpu);	/* the first CPU counts these faults */
		touch_pages();
		nap_ms(PERF_SYS_MS);
		CHECK_OK(sched_setaffinity(0, sizeof(all), &all));
	}
	pthread_barrier_wait(&sys_end);
	for (int i = 0; i < ncpus; i++) {
		const struct sys_cpu *c = &cpus[i];

		pthread_join(c->thread, NULL);
		snprintf(what, sizeof(what), "system-wide CPU%d", c->cpu);
		if (on_sim) {
			check_sim_run(&c->r, RUN_NS, what);
			continue;
		}
		printf("%s: %" PRIu64 " TASK_CLOCK %" PRIu64 " PAGE_FAULTS, runs %" PRIu64 ", %" PRIu64
		       " ns active; started for %" PRIu64 " to %" PRIu64 " ns\n", what, c->r.v[0], c->r.v[1],
		       (uint64_t)c->r.si.set_runs, (uint64_t)c->r.si.set_act_duration, c->i1 - c->i0, c->o1 - c->o0);
		CHECK(c->r.v[0] >= c->i1 - c->i0 && c->r.v[0] <= c->o1 - c->o0,
		      "%s: task clock %" PRIu64 " outside [%" PRIu64 ", %" PRIu64 "]", what, c->r.v[0],
		      c->i1 - c->i0, c->o1 - c->o0);
		CHECK(i != 0 || c->r.v[1] >= WORK_PAGES, "%s: %" PRIu64 " page faults, %d pages written", what,
		      c->r.v[1], WORK_PAGES);
		CHECK_EQ_U64(c->r.si.set_runs, 1);
	}
	CHECK(wait_sessions(0) == 0, "system-wide: a session outlived close()");
}

int main(int argc, char **argv)
{
	on_sim = on_backend("sim");
	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		_exit(serve(0));
	if (argc > 1 && strcmp(argv[1], "--serve-w") == 0)
		_exit(serve(1));
	if (argc > 1 && strcmp(argv[1], "--forker") == 0)
		_exit(forker());	/* as serve's, under ptrace */

	pfmon_prologue(on_sim ? sim_names : perf_names, 2, sets, NULL);
	pfmon_dispatch(&sets[0], 0);
	pfmon_dispatch(&sets[1], 0);
	count_command();
	two_sets();
	attach();
	follow_all();
	system_wide();
	printf("pfmon_calls: ok on %s\n", backend_name());
	return 0;
}
