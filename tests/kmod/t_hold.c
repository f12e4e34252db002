/*
 * t_hold.c - holds (perfmon2's notify_block), exit and fork records, and a
 * daemon killed with SIGKILL mid-count: nothing left counting, held threads
 * released, the LVTPC as the module found it.
 */
#include "kt.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Waits up to `ms` for /proc/TID/stat's state to be `state`. */
static int wait_state(pid_t tid, char state, unsigned int ms)
{
	unsigned int i;

	for (i = 0; i < ms; i += 5) {
		if (kt_state(tid) == state)
			return 1;
		kt_sleep_ms(5);
	}
	return kt_state(tid) == state;
}

/*
 * Waits up to `ms` for the thread's CPU time to stand still over 20 ms, and
 * returns it. A thread shows state D from the moment it sets it, on its
 * way into schedule(): until it is off its cpu its clock still runs (2.4
 * ms was seen under TCG while the host compiled on both cores).
 */
static uint64_t settled_cputime(pid_t tid, unsigned int ms)
{
	uint64_t c = kt_cputime(tid), next;
	unsigned int i;

	for (i = 0; i < ms; i += 20) {
		kt_sleep_ms(20);
		next = kt_cputime(tid);
		if (next == c)
			break;
		c = next;
	}
	return c;
}

/*
 * A held thread sleeps in the kernel (TASK_KILLABLE: state D): once off its
 * cpu the scheduler runs it not at all, so its CPU time stays exactly where
 * it was. (A spinner that is not held never stands still for 20 ms on a cpu
 * of its own: the 400 ms check below then fails.)
 */
static void check_held(pid_t tid, const char *how)
{
	uint64_t c0, c1;

	CHECK(wait_state(tid, 'D', 3000), "%s: thread %d not held (state %c)", how,
	      tid, kt_state(tid));
	c0 = settled_cputime(tid, 3000);
	kt_sleep_ms(400);
	c1 = kt_cputime(tid);
	CHECK(c1 == c0, "%s: a held thread ran %llu ns", how,
	      (unsigned long long)(c1 - c0));
}

/*
 * A released spinner runs again: its state leaves D, and in 300 ms on a
 * cpu of its own it gets well over 30 ms (a third of it even on a TCG
 * vCPU that shares its host thread).
 */
static void check_running(pid_t tid, const char *how)
{
	uint64_t c0;

	CHECK(wait_state(tid, 'R', 3000), "%s: thread %d not running (state %c)",
	      how, tid, kt_state(tid));
	c0 = kt_cputime(tid);
	kt_sleep_ms(300);
	CHECK(kt_cputime(tid) - c0 > 30000000, "%s: ran %llu ns in 300 ms", how,
	      (unsigned long long)(kt_cputime(tid) - c0));
}

void t_hold(void)
{
	struct pfmfs_helper_record rec;
	struct kt_thread busy;
	uint64_t held;
	int fd = kt_open(), fd2, status;
	pid_t child;

	kt_pin(0);
	kt_thread_start(&busy, KT_SPIN, 1);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, busy.tid));
	held = kt_stats(fd).held;
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, busy.tid));
	check_held(busy.tid, "HOLD");
	CHECK(kt_stats(fd).held == held + 1, "held %llu",
	      (unsigned long long)kt_stats(fd).held);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, busy.tid));	/* again: no-op */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_RELEASE, THREAD, busy.tid));
	check_running(busy.tid, "RELEASE");
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_RELEASE, THREAD, busy.tid));	/* not held: no-op */
	CHECK(kt_stats(fd).held == held + 1, "held twice");

	/* DETACH releases. */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, busy.tid));
	check_held(busy.tid, "HOLD 2");
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, busy.tid));
	check_running(busy.tid, "DETACH");

	/* close releases. */
	fd2 = kt_open();
	CHECK_OK(kt_target(fd2, PFMFS_HELPER_IOC_ATTACH, THREAD, busy.tid));
	CHECK_OK(kt_target(fd2, PFMFS_HELPER_IOC_HOLD, THREAD, busy.tid));
	check_held(busy.tid, "HOLD 3");
	close(fd2);
	check_running(busy.tid, "close");
	kt_thread_stop(&busy);

	/* SIGKILL ends a held thread; it exits attached: an EXIT record. */
	child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		volatile int never = 0;

		kt_pin(1);
		kt_spin(&never);
		_exit(0);
	}
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, child));
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, child));
	check_held(child, "HOLD 4");
	kill(child, SIGKILL);
	{
		uint64_t t0 = kt_now();

		CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status),
		      "held child");
		CHECK(kt_now() - t0 < 2000000000ULL, "SIGKILL took %llu ms",
		      (unsigned long long)(kt_now() - t0) / 1000000);
	}
	CHECK(kt_read_record(fd, &rec, 2000), "no EXIT record");
	CHECK(rec.type == PFMFS_HELPER_REC_EXIT && rec.tid == (uint32_t)child &&
	      rec.pid == (uint32_t)child, "record type %u tid %u", rec.type, rec.tid);
	close(fd);
}

static void *idle_thread(void *arg)
{
	__atomic_store_n((pid_t *)arg, kt_gettid(), __ATOMIC_RELEASE);
	pause();
	return NULL;
}

/* Spins until the calling thread has had ns more of CPU time. */
static void burn_cpu(uint64_t ns)
{
	uint64_t end = kt_cputime(kt_gettid()) + ns;
	volatile uint64_t sink = 0;

	while (kt_cputime(kt_gettid()) < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

/* The child of exit_fork: obeys one byte at a time. */
static void exit_fork_child(int cmd, int reply)
{
	pthread_t th;
	pid_t tid;
	char c;

	while (read(cmd, &c, 1) == 1) {
		switch (c) {
		case 'b':	/* 200 ms of CPU time, so that what counted outweighs the slack */
			burn_cpu(200000000ULL);
			tid = kt_gettid();
			if (write(reply, &tid, sizeof(tid)) != sizeof(tid))
				_exit(3);
			break;
		case 't':
			tid = 0;
			pthread_create(&th, NULL, idle_thread, &tid);
			while (!__atomic_load_n(&tid, __ATOMIC_ACQUIRE))
				kt_sleep_ms(1);
			if (write(reply, &tid, sizeof(tid)) != sizeof(tid))
				_exit(3);
			break;
		case 'f':
			tid = fork();
			if (tid == 0)
				_exit(0);
			waitpid(tid, NULL, 0);
			if (write(reply, &tid, sizeof(tid)) != sizeof(tid))
				_exit(3);
			break;
		default:
			exit(0);
		}
	}
	_exit(2);
}

void t_exit_fork(void)
{
	struct pfmfs_helper_record rec;
	int cmd[2], reply[2], fd = kt_open();
	pid_t child, t, g, zombie, b;
	uint64_t after_exit, cpu0, exit_cpu, slack;
	int64_t counted, ran;
	long sw0, sw1;

	CHECK(pipe(cmd) == 0 && pipe(reply) == 0, "pipe");
	child = fork();
	CHECK(child >= 0, "fork");
	if (child == 0) {
		close(cmd[1]);
		close(reply[0]);
		exit_fork_child(cmd[0], reply[1]);
	}
	close(cmd[0]);
	close(reply[1]);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, child));
	/* Its core cycles count (FIXED_CTR1, user and kernel) while it runs. */
	kt_wr_ok(fd, THREAD, child, MSR_FIXED_CTRL, 0x3ULL << 4);
	kt_wr_ok(fd, THREAD, child, MSR_GLOBAL_CTRL, 1ULL << 33);
	sw0 = kt_ctxt(child, 1) + kt_ctxt(child, 0);
	cpu0 = kt_cputime(child);	/* exact: it waits in read() */
	CHECK(write(cmd[1], "b", 1) == 1 && read(reply[0], &b, sizeof(b)) == sizeof(b), "b");

	/* A thread: FORK with the same process, the new thread. */
	CHECK(write(cmd[1], "t", 1) == 1 && read(reply[0], &t, sizeof(t)) == sizeof(t), "t");
	CHECK(t > 0, "no new thread found");
	CHECK(kt_read_record(fd, &rec, 2000), "no FORK record for a thread");
	CHECK(rec.type == PFMFS_HELPER_REC_FORK && rec.pid == (uint32_t)child &&
	      rec.tid == (uint32_t)child && rec.child_pid == (uint32_t)child &&
	      rec.child_tid == (uint32_t)t, "thread FORK: type %u %u/%u -> %u/%u, expected %d -> %d",
	      rec.type, rec.pid, rec.tid, rec.child_pid, rec.child_tid, child, t);
	/* A process: FORK with its pid. Its exit: no record (not attached). */
	CHECK(write(cmd[1], "f", 1) == 1 && read(reply[0], &g, sizeof(g)) == sizeof(g), "f");
	CHECK(kt_read_record(fd, &rec, 2000), "no FORK record for a process");
	CHECK(rec.type == PFMFS_HELPER_REC_FORK && rec.child_pid == (uint32_t)g &&
	      rec.child_tid == (uint32_t)g && rec.tid == (uint32_t)child,
	      "process FORK: type %u -> %u/%u, expected %d", rec.type, rec.child_pid,
	      rec.child_tid, g);
	CHECK(!kt_read_record(fd, &rec, 200), "a record for the grandchild's exit (type %u)",
	      rec.type);
	/*
	 * Its exit: EXIT. The other thread: nothing. It stays attached, its
	 * image keeping the counts of its last switch-out (cycles counted while
	 * it ran: not 0, and still while nothing runs it) until DETACH.
	 */
	CHECK(write(cmd[1], "x", 1) == 1, "x");
	CHECK(kt_read_record(fd, &rec, 2000), "no EXIT record");
	CHECK(rec.type == PFMFS_HELPER_REC_EXIT && rec.pid == (uint32_t)child &&
	      rec.tid == (uint32_t)child, "EXIT: type %u %u/%u", rec.type, rec.pid, rec.tid);
	exit_cpu = rec.value;
	/*
	 * The EXIT record's CPU time is the thread's at its last switch-out,
	 * where its counts stopped: the scheduler brought it up to date there
	 * for the last time, so the zombie's CPU clock reads it exactly.
	 * (Queued at sched_process_exit, it would be as of the last tick, up
	 * to 4 ms behind.)
	 */
	CHECK(wait_state(child, 'Z', 60000), "the child is no zombie");
	sw1 = kt_ctxt(child, 1) + kt_ctxt(child, 0);
	CHECK(kt_own_cputime(child) == exit_cpu, "the EXIT record says %llu ns of CPU time, the zombie's own %llu ns",
	      (unsigned long long)exit_cpu, (unsigned long long)kt_own_cputime(child));
	waitpid(child, NULL, 0);
	CHECK(!kt_read_record(fd, &rec, 200), "another record (type %u tid %u)",
	      rec.type, rec.tid);
	CHECK(kt_stats(fd).attached == 1, "the exited thread is no longer attached");
	after_exit = kt_rd_ok(fd, THREAD, child, MSR_FIXED_CTR0 + 1);
	CHECK(after_exit > 0, "the exited thread's cycles read 0");
	/*
	 * The cycles (3 a ns) it counted since the enable: the test PMU counts
	 * every ns the thread is on its cpu, its CPU time since then, within
	 * t_count's slack per context switch (the probe's own work under TCG,
	 * and a host that deschedules the VM mid-probe) both ways, and above by
	 * KT_IRQ_SHARE. The 200 ms it burnt keep that slack under a fifth of
	 * what counts, so a count that stopped early or ran on still shows.
	 */
	counted = (int64_t)(after_exit / 3);
	ran = (int64_t)(exit_cpu - cpu0);
	slack = 20000000ULL + 250000ULL * (uint64_t)(sw1 - sw0);
	kt_log("counted %lld ns of CPU time, the EXIT record says %lld ns, %ld switches", (long long)counted,
	       (long long)ran, sw1 - sw0);
	CHECK(ran >= 200000000LL, "the child ran %lld ns, burnt 200 ms", (long long)ran);
	CHECK(counted + (int64_t)slack >= ran && counted <= ran + (int64_t)KT_IRQ_SHARE(ran) + (int64_t)slack,
	      "counted %lld ns, but the EXIT record's CPU time grew %lld ns (slack %llu)", (long long)counted,
	      (long long)ran, (unsigned long long)slack);
	kt_sleep_ms(50);
	CHECK(kt_rd_ok(fd, THREAD, child, MSR_FIXED_CTR0 + 1) == after_exit,
	      "the exited thread's cycles moved after its exit");
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, child));
	CHECK(kt_stats(fd).attached == 0, "the exited thread is still attached after DETACH");
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, child), EINVAL);

	/* A zombie is no thread to attach; a detached thread exits silently. */
	zombie = fork();
	if (zombie == 0)
		_exit(0);
	CHECK(wait_state(zombie, 'Z', 2000), "no zombie");
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, zombie), ESRCH);
	waitpid(zombie, NULL, 0);
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, child));
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, child));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	CHECK(!kt_read_record(fd, &rec, 200), "a record after DETACH (type %u)", rec.type);
	close(fd);
}

void t_kill9(void)
{
	struct kt_thread busy, victim;
	struct pfmfs_helper_cpu_state st;
	int ready[2], fd, cpu, i, status;
	uint64_t report[2];
	pid_t opener;

	kt_pin(0);
	kt_thread_start(&busy, KT_SPIN, 1);
	kt_thread_start(&victim, KT_SPIN, 0);
	CHECK(pipe(ready) == 0, "pipe");
	opener = fork();
	CHECK(opener >= 0, "fork");
	if (opener == 0) {
		/* The daemon: counts busy, holds victim, and is killed. */
		struct pfmfs_helper_msr ops[] = {
			{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
			{ .msr = MSR_EVTSEL0 + 1, .value = EVTSEL_COUNT | EV_INSTR },
			{ .msr = MSR_FIXED_CTRL, .value = 0x333 },
			{ .msr = MSR_GLOBAL_CTRL, .value = 3 | FIXED_BIT(0) | FIXED_BIT(1) | FIXED_BIT(2) },
		};

		close(ready[0]);
		fd = kt_open();
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, busy.tid));
		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, busy.tid, ops, 4));
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, victim.tid));
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, victim.tid));
		kt_sleep_ms(100);
		/* busy is cpu 1's current thread nearly always, not at every
		 * instant: a kernel thread may run there when we look. */
		for (i = 0; i < 100; i++) {
			st = kt_cpu_state(fd, 1);
			if (st.owner_tid == (uint32_t)busy.tid)
				break;
			kt_sleep_ms(10);
		}
		report[0] = kt_rd_ok(fd, THREAD, busy.tid, MSR_PMC0 + 1);
		report[1] = st.owner_tid == (uint32_t)busy.tid ? st.global_ctrl : 0;
		CHECK(write(ready[1], report, sizeof(report)) == sizeof(report), "ready");
		pause();
		_exit(0);
	}
	close(ready[1]);
	CHECK(read(ready[0], report, sizeof(report)) == sizeof(report), "the opener died");
	kt_log("before the kill: %llu instructions, cpu 1 GLOBAL_CTRL 0x%llx",
	       (unsigned long long)report[0], (unsigned long long)report[1]);
	CHECK(report[0] > 0, "busy did not count");
	CHECK(report[1] == (3 | FIXED_BIT(0) | FIXED_BIT(1) | FIXED_BIT(2)),
	      "cpu 1 GLOBAL_CTRL 0x%llx while busy ran there", (unsigned long long)report[1]);
	CHECK(wait_state(victim.tid, 'D', 3000), "victim not held");

	kill(opener, SIGKILL);
	CHECK(waitpid(opener, &status, 0) == opener && WIFSIGNALED(status), "opener");
	check_running(victim.tid, "the opener's death");

	/* A new opener that programs nothing: the APIC stays as it is now. */
	fd = kt_open();
	CHECK(kt_stats(fd).attached == 0, "targets left attached");
	for (cpu = 0; cpu < kt_ncpus(); cpu++) {
		st = kt_cpu_state(fd, cpu);
		kt_log("cpu %d: GLOBAL_CTRL 0x%llx, LVTPC 0x%x (found 0x%x), owner %u", cpu,
		       (unsigned long long)st.global_ctrl, st.lvtpc, st.lvtpc_found,
		       st.owner_tid);
		CHECK(st.global_ctrl == 0, "cpu %d counts: GLOBAL_CTRL 0x%llx", cpu,
		      (unsigned long long)st.global_ctrl);
		CHECK(st.lvtpc == st.lvtpc_found, "cpu %d: LVTPC 0x%x, found 0x%x", cpu,
		      st.lvtpc, st.lvtpc_found);
		CHECK(st.owner_tid == 0, "cpu %d: owner %u", cpu, st.owner_tid);
		for (i = 0; i < 2; i++)
			CHECK(kt_rd_ok(fd, CPU, cpu, MSR_EVTSEL0 + i) == 0,
			      "cpu %d: EVTSEL%d left programmed", cpu, i);
		CHECK(kt_rd_ok(fd, CPU, cpu, MSR_FIXED_CTRL) == 0,
		      "cpu %d: FIXED_CTR_CTRL left programmed", cpu);
	}
	close(fd);
	kt_thread_stop(&busy);
	kt_thread_stop(&victim);
}
