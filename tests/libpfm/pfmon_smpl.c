// pfmfs-test: backends=sim,perf
/*
 * pfmon_smpl.c: pfmon 3.4's sampling with the default format, making the
 * calls pfmon makes, in its order, with its arguments (pfmon_calls.h): the
 * prologue, in which pfmon lists /sys/kernel/perfmon/formats until it finds
 * "default"; the dispatch; the buffer's size from pfm_get_num_pmds() as pfmon
 * computes it (16 entries and a slack: not a multiple of the page size) and
 * the perfmon memory left (smpl_buffer_mem_cur and _max); then
 *  1. pfmon --long-smpl-periods=P --smpl-entries=16 -e E1,E2 CMD: the
 *     command's context is created with the "default" format's name and
 *     {buf_size, buf_flags=0}, its buffer mapped (PROT_READ, MAP_PRIVATE),
 *     FD_CLOEXEC, set 0, the first event's PMD sampling every P with
 *     OVFL_NOTIFY, value and resets -P, recording the second's. A worker
 *     thread, pinned, waits with select() for the 64-byte messages: at an
 *     overflow it walks the buffer and calls pfm_restart; at the end, it
 *     walks the last, partial buffer. pfmon's thread closes the context
 *     after the command exited;
 *  2. pfmon --system-wide --session-timeout with the same sampling on one
 *     CPU (sys_worker below).
 * Sim: instructions sampled every 20000 (10 us of the target's time), cycles
 * recorded: every field of every entry exact (the sim's ip model, time
 * stamps, cycles at the overflow, pid 0 for a CPU). perf: page faults
 * sampled every 8, the task clock recorded (never going back); the command
 * writes fresh pages until 3 buffers filled, and so does this program on
 * the sampled CPU.
 */
#include "check.h"
#include "pfmon_calls.h"
#include "smpl.h"

#include <sys/select.h>

#define ENTRIES 16			/* pfmon --smpl-entries */
#define ROUNDS 3			/* full buffers */
#define SIM_PERIOD 20000ULL		/* instructions per sample */
#define SIM_STEP_NS (SIM_PERIOD / SIM_INST_PER_NS)
#define PERF_PERIOD 8ULL		/* page faults per sample */
#define ENTRY_BYTES (sizeof(pfm_dfl_smpl_entry_t) + 8)	/* an entry and one PMD */

static const char *const sim_names[] = { "INSTRUCTIONS_RETIRED", "UNHALTED_CORE_CYCLES" };
static const char *const perf_names[] = { "PAGE_FAULTS", "TASK_CLOCK" };
static struct pfmon_set set;
static uint64_t period, buf_size, num_pmds;
static unsigned int smpl_pmd, rec_pmd;
static const pfm_dfl_smpl_hdr_t *hdr;
static pid_t child;
static int ctx_fd, sys_cpu = -1;
static int full_buffers;	/* __atomic: the worker's restarts so far */
static uint64_t samples;	/* the worker's: entries walked so far */

/* pfmon_get_perfmon_smpl_mem()'s reads: open, read, close. */
static uint64_t sysfs_number(const char *path)
{
	char number[32];
	int fd;

	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	memset(number, 0, sizeof(number));
	CHECK(read(fd, number, sizeof(number) - 1) > 0, "read %s: %s", path, strerror(errno));
	close(fd);
	return strtoull(number, NULL, 0);
}

/* dfl_smpl_init_ctx_arg(): the buffer holds ENTRIES entries of one PMD,
 * and a slack so that what is left after the last one is less than the
 * largest entry (every PMD), which fills it. */
static void buffer_size(void)
{
	unsigned int n = 0;
	uint64_t cur, max;

	CHECK_PFM(pfm_get_num_pmds(&n));
	CHECK_EQ_U64(n, on_sim ? 7 : 8);
	num_pmds = n;
	buf_size = sizeof(pfm_dfl_smpl_hdr_t) + (sizeof(pfm_dfl_smpl_entry_t) + 8 * num_pmds - ENTRY_BYTES) +
		   ENTRIES * ENTRY_BYTES;
	CHECK_EQ_U64(buf_size, on_sim ? 944 : 952);	/* what pfmon asked for in its trace */
	cur = sysfs_number("/sys/kernel/perfmon/smpl_buffer_mem_cur");
	max = sysfs_number("/sys/kernel/perfmon/smpl_buffer_mem_max");
	printf("buffer of %" PRIu64 " bytes; smpl_buffer_mem_cur %" PRIu64 ", _max %" PRIu64 "\n", buf_size, cur, max);
	CHECK_EQ_U64(cur, 0);
	CHECK(max >= buf_size, "smpl_buffer_mem_max %" PRIu64 " leaves no room for %" PRIu64 " bytes", max, buf_size);
}

/* The buffer's header and entries: count of them, after fills buffers, of
 * the command (per-task) or of sys_cpu (system-wide). */
static void walk_buffer(uint64_t count, int fills)
{
	const unsigned char *pos = (const unsigned char *)(hdr + 1);
	uint64_t prev = 0;

	CHECK_EQ_U64(hdr->hdr_count, count);
	CHECK_EQ_U64(hdr->hdr_cur_offs, sizeof(*hdr) + count * ENTRY_BYTES);
	CHECK_EQ_U64(hdr->hdr_overflows, fills);
	CHECK_EQ_U64(hdr->hdr_buf_size, buf_size);
	CHECK_EQ_U64(hdr->hdr_min_buf_space, sizeof(pfm_dfl_smpl_entry_t) + 8 * num_pmds);
	for (uint64_t k = 0; k < count; k++, pos += ENTRY_BYTES) {
		const pfm_dfl_smpl_entry_t *e = (const pfm_dfl_smpl_entry_t *)pos;
		uint64_t value = *(const uint64_t *)(e + 1), t = (samples + k + 1) * SIM_STEP_NS;

		CHECK(sys_cpu >= 0 || (e->pid == (uint32_t)child && e->tgid == (uint32_t)child),
		      "sample %" PRIu64 ": pid %u tgid %u, expected the command, %d", samples + k + 1, e->pid, e->tgid,
		      (int)child);
		CHECK(sys_cpu < 0 || !on_sim || (e->pid == 0 && e->tgid == 0), "sample %" PRIu64
		      ": pid %u tgid %u on CPU%d", samples + k + 1, e->pid, e->tgid, sys_cpu);
		CHECK_EQ_U64(e->ovfl_pmd, smpl_pmd);
		CHECK_EQ_U64(e->last_reset_val, -period);
		CHECK_EQ_U64(e->set, 0);
		if (on_sim) {
			CHECK_EQ_U64(e->tstamp, t);
			CHECK_EQ_U64(e->ip, smpl_sim_ip(t));
			CHECK_EQ_U64(e->cpu, sys_cpu < 0 ? 0 : sys_cpu);
			CHECK_EQ_U64(value, t * SIM_CYCLES_PER_NS);	/* the cycles at the overflow */
		} else {
			CHECK(e->ip != 0 && (sys_cpu < 0 ? (long)e->cpu < sysconf(_SC_NPROCESSORS_CONF) :
					     e->cpu == (uint32_t)sys_cpu),
			      "sample %" PRIu64 ": ip %#" PRIx64 " cpu %u", samples + k + 1, e->ip, e->cpu);
			CHECK(value >= prev, "sample %" PRIu64 ": task clock %" PRIu64 " after %" PRIu64,
			      samples + k + 1, value, prev);
			prev = value;
		}
	}
	samples += count;
}

/* pfmon's sampling worker: select(), read(64), the buffer, pfm_restart. */
static void *worker(void *arg)
{
	struct timeval tv;
	pfarg_msg_t msg;
	fd_set fds;
	int n;

	pin(first_cpu());
	for (;;) {
		FD_ZERO(&fds);
		FD_SET(ctx_fd, &fds);
		tv.tv_sec = wait_ms() / 1000;
		tv.tv_usec = 0;
		n = select(ctx_fd + 1, &fds, NULL, NULL, &tv);
		if (n < 0 && errno == EINTR)
			continue;
		CHECK(n == 1, "worker: no message within %ld ms after %d full buffers: %s", wait_ms(),
		      __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE), n < 0 ? strerror(errno) : "timeout");
		memset(&msg, 0, sizeof(msg));
		CHECK_EQ_U64(read(ctx_fd, &msg, sizeof(msg)), 64);
		if (msg.type == PFM_MSG_END) {
			/* The last, partial buffer. */
			n = __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE);
			CHECK(hdr->hdr_count < ENTRIES, "end: %" PRIu64 " entries", hdr->hdr_count);
			walk_buffer(on_sim ? 1 : hdr->hdr_count, n);
			printf("end: %" PRIu64 " samples in %d full buffers and a partial one\n", samples, n);
			return arg;
		}
		CHECK_EQ_U64(msg.type, PFM_MSG_OVFL);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 1ULL << smpl_pmd);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pid, child);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_tid, child);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_active_set, 0);
		if (on_sim)
			CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_ip, smpl_sim_ip((samples + ENTRIES) * SIM_STEP_NS));
		walk_buffer(ENTRIES, __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE) + 1);
		CHECK_OK(pfm_restart(ctx_fd));
		CHECK(!on_sim || hdr->hdr_count == 0, "%" PRIu64 " entries after the restart", hdr->hdr_count);
		__atomic_add_fetch(&full_buffers, 1, __ATOMIC_ACQ_REL);
	}
}

/* Until the worker has restarted n full buffers (sim: after the advance
 * that filled the n-th); on perf the command works meanwhile. */
static void wait_full_buffers(int n, int cmd, int ans)
{
	uint64_t t0 = monotonic_ns();

	while (__atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE) < n) {
		CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL, "%d full buffers of %d after %ld ms",
		      __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE), n, wait_ms());
		if (on_sim)
			nap_ms(1);
		else
			order_work(cmd, ans);
	}
}

/* A context with the default format (ctx_flags flags), its buffer mapped,
 * its set 0 programmed: the first event's PMD samples, recording the
 * second's. */
static void smpl_context(uint32_t flags, int cloexec)
{
	static char fmt_name[] = PFM_DFL_SMPL_NAME;
	pfm_dfl_smpl_arg_t arg;
	pfarg_pmd_t pd[2];
	pfarg_ctx_t ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = flags;
	memset(&arg, 0, sizeof(arg));
	arg.buf_size = buf_size;	/* buf_flags 0 */
	ctx_fd = (int)CHECK_OK(pfm_create_context(&ctx, fmt_name, &arg, sizeof(arg)));
	hdr = smpl_map(ctx_fd, buf_size, MAP_PRIVATE);
	samples = 0;
	walk_buffer(0, 0);
	CHECK_EQ_U64(PFM_VERSION_MAJOR(hdr->hdr_version), 1);
	if (cloexec)
		CHECK_OK(fcntl(ctx_fd, F_SETFD, FD_CLOEXEC));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_flags = PFM_REGFL_OVFL_NOTIFY;
	pd[0].reg_value = pd[0].reg_long_reset = pd[0].reg_short_reset = -period;
	pd[0].reg_smpl_pmds[0] = 1ULL << rec_pmd;
	pfmon_program(ctx_fd, &set, 1, 0, pd);
}

/* pfmon --long-smpl-periods=P --smpl-entries=16 -e E1,E2 CMD. */
static void task_sampling(void)
{
	pthread_t thread;
	struct rusage ru;
	int cmd, ans;

	child = pfmon_spawn("--serve", 0, &cmd, &ans);
	smpl_context(0, 1);
	pfmon_load_start(ctx_fd, child);
	CHECK(pthread_create(&thread, NULL, worker, NULL) == 0, "pthread_create");
	CHECK_OK(ptrace(PTRACE_CONT, child, NULL, NULL));
	for (int round = 1; round <= ROUNDS; round++) {
		if (on_sim)
			sim_advance(ENTRIES * SIM_STEP_NS);	/* fills the buffer on its last ns */
		wait_full_buffers(round, cmd, ans);
		printf("buffer %d: %d samples\n", round, ENTRIES);
	}
	if (on_sim)
		sim_advance(SIM_STEP_NS);	/* one more sample: the buffer holds it */
	close(cmd);	/* EOF: the command exits */
	close(ans);
	reap(child, &ru);
	pthread_join(thread, NULL);	/* after the end message */
	CHECK(on_sim ? samples == ROUNDS * ENTRIES + 1 : samples >= ROUNDS * ENTRIES, "%" PRIu64 " samples", samples);
	CHECK_OK(close(ctx_fd));
	CHECK_OK(munmap((void *)hdr, buf_size));
	CHECK(wait_sessions(0) == 0, "a session outlived close()");
}

/*
 * pfmon --system-wide --cpu-list=C --session-timeout=T with sampling: the
 * CPU's worker, pinned, makes its context (PFM_FL_SYSTEM_WIDE, the format,
 * no FD_CLOEXEC), maps the buffer, programs set 0, loads on its CPU, starts
 * after the barrier, and sits in read() of the next message (a full buffer:
 * walked, restarted) until pfmon's SIGALRM at the session's end interrupts
 * it (EINTR); it stops, walks the last buffer and closes.
 */
#define SYS_SAMPLES 5			/* sim: samples of the session */
static pthread_barrier_t sys_started;
static volatile sig_atomic_t alarmed;
static pid_t sys_tid;
static int sys_done;	/* __atomic */

static void on_alarm(int sig)
{
	(void)sig;
	alarmed = 1;
}

static void *sys_worker(void *arg)
{
	pfarg_load_t load;
	int fills = 0, interrupted = 0;
	pfarg_msg_t msg;
	ssize_t n;

	pin(sys_cpu);
	signals_ready();	/* before SIGALRM can come (check.h) */
	sys_tid = tid_self();
	smpl_context(PFM_FL_SYSTEM_WIDE, 0);
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)sys_cpu;
	CHECK_OK(pfm_load_context(ctx_fd, &load));
	pthread_barrier_wait(&sys_started);
	CHECK_OK(pfm_start(ctx_fd, NULL));
	pthread_barrier_wait(&sys_started);
	while (!alarmed) {	/* pfmon's session_state */
		n = read(ctx_fd, &msg, sizeof(msg));
		if (n < 0) {
			CHECK(errno == EINTR, "read of the next message: %s", strerror(errno));
			interrupted++;
			continue;
		}
		CHECK_EQ_U64(n, 64);
		CHECK_EQ_U64(msg.type, PFM_MSG_OVFL);
		walk_buffer(ENTRIES, ++fills);
		CHECK_OK(pfm_restart(ctx_fd));
	}
	/* Sim: nothing came but SIGALRM, in read(). perf: it may have come as
	 * a message did, and the buffer may have filled since. */
	CHECK(!on_sim || (interrupted == 1 && fills == 0), "sim: read interrupted %d times, %d full buffers",
	      interrupted, fills);
	CHECK_OK(pfm_stop(ctx_fd));
	CHECK(!on_sim || hdr->hdr_count == SYS_SAMPLES, "%" PRIu64 " samples", hdr->hdr_count);
	CHECK(hdr->hdr_overflows == (uint64_t)fills || hdr->hdr_overflows == (uint64_t)fills + 1,
	      "%" PRIu64 " full buffers, %d notified", hdr->hdr_overflows, fills);
	walk_buffer(hdr->hdr_count, (int)hdr->hdr_overflows);
	printf("system-wide CPU%d: %" PRIu64 " samples in %d full buffers and the last; read interrupted %d times\n",
	       sys_cpu, samples, fills, interrupted);
	CHECK_OK(close(ctx_fd));
	CHECK_OK(munmap((void *)hdr, buf_size));
	__atomic_store_n(&sys_done, 1, __ATOMIC_RELEASE);
	return arg;
}

/* The worker sleeps in read() of its context: /proc names the call. */
static int worker_in_read(void)
{
	char path[64], text[256] = "", want[32];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)sys_tid);
	snprintf(want, sizeof(want), "%d 0x%x ", SYS_read, ctx_fd);
	return read_text(path, text, sizeof(text)) > 0 && strncmp(text, want, strlen(want)) == 0;
}

static void system_wide_sampling(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */
	pthread_t thread;
	cpu_set_t all;
	uint64_t t0;

	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	sys_cpu = first_cpu();
	pthread_barrier_init(&sys_started, NULL, 2);
	CHECK(pthread_create(&thread, NULL, sys_worker, NULL) == 0, "pthread_create");
	pthread_barrier_wait(&sys_started);
	pthread_barrier_wait(&sys_started);
	if (on_sim) {
		sim_advance(SYS_SAMPLES * SIM_STEP_NS);
	} else {
		pin(sys_cpu);	/* faults of this CPU */
		touch_pages();
		CHECK_OK(sched_setaffinity(0, sizeof(all), &all));
	}
	/* The session's end: SIGALRM to the worker in read(), again while it
	 * is in it (it may have gone back to it before it saw the flag). */
	for (t0 = monotonic_ns(); !__atomic_load_n(&sys_done, __ATOMIC_ACQUIRE); nap_ms(10)) {
		CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL,
		      "the worker's read() was not interrupted by SIGALRM within %ld ms", wait_ms());
		if (worker_in_read())
			pthread_kill(thread, SIGALRM);
	}
	pthread_join(thread, NULL);
	CHECK(wait_sessions(0) == 0, "system-wide: a session outlived close()");
}

int main(int argc, char **argv)
{
	on_sim = on_backend("sim");
	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		_exit(serve(0));
	period = on_sim ? SIM_PERIOD : PERF_PERIOD;
	pfmon_prologue(on_sim ? sim_names : perf_names, 1, &set, PFM_DFL_SMPL_NAME);
	pfmon_dispatch(&set, 0);
	smpl_pmd = set.outp.pfp_pmds[0].reg_num;
	rec_pmd = set.outp.pfp_pmds[1].reg_num;
	buffer_size();
	task_sampling();

	/* pfmon --system-wide: its own run, dispatched for the system. */
	pfmon_dispatch(&set, 1);
	system_wide_sampling();
	printf("pfmon_smpl: ok on %s\n", backend_name());
	return 0;
}
