// pfmfs-test: backends=sim,perf
/*
 * pfmon_exec.c: the two pfmon 3.4 modes pfmon_calls.c and pfmon_smpl.c leave
 * out, each making the calls pfmon makes, in its order, with its arguments
 * (pfmon_calls.h: the prologue, the dispatch, the per-task context):
 *  1. pfmon --follow-exec --exec-split-results -e E1,E2 CMD: the command runs
 *     image 1 (--image1), which execs image 2 (--serve) at an 'x' order. At
 *     the exec's ptrace stop pfmon, on the same descriptor, reads image 1's
 *     results (PMDs, pfm_getinfo_evtsets), unloads, programs set 0 again
 *     (pfm_create_evtsets {0, 0, 0}, the PMCs, the PMDs at 0), loads on the
 *     same thread and starts; at the exit it reads image 2's results as
 *     usual (no stop nor unload) and closes.
 *  2. pfmon --overflow-block --long-smpl-periods=P --smpl-entries=16 CMD:
 *     pfmon_smpl.c's per-task sampling (the "default" format, {buf_size not
 *     page-rounded, buf_flags=0}, 64 bytes; PROT_READ, MAP_PRIVATE; a worker
 *     doing select(), read() of the 64-byte message, the buffer, pfm_restart)
 *     with PFM_FL_NOTIFY_BLOCK at the creation.
 * Sim (manual clock): 1. each image's counts exact and its own (2
 * instructions and 3 cycles per ns advanced while it ran); 2. instructions
 * sampled every 20000, cycles recorded, every field of every entry exact.
 * The sim cannot stop a real thread: notify_block holds the thread's own
 * clock (docs/design.md). So while a full buffer waits for pfm_restart, the
 * worker advances the manual clock: the session stays masked, its buffer
 * and counts stand still, and after the restart the samples' time stamps,
 * ips and cycles go on from where they stopped, as if no time had passed
 * for the command (without the hold, they would be HOLD_NS later).
 * perf: 1. each image had a work order (pfmon_calls.h), and counted its
 * task clock and page faults within its own wall time and faults;
 * 2. perf cannot hold a thread: pfm_create_context with PFM_FL_NOTIFY_BLOCK
 * and the default format fails with EINVAL, which is what pfmon sees.
 */
#include "check.h"
#include "pfmon_calls.h"
#include "smpl.h"

#include <sys/select.h>

#define RUN1_NS 300000ULL		/* sim: image 1's time */
#define RUN2_NS 700000ULL		/* sim: image 2's time */
#define ENTRIES 16			/* pfmon --smpl-entries */
#define ROUNDS 3			/* full buffers */
#define SIM_PERIOD 20000ULL		/* instructions per sample */
#define SIM_STEP_NS (SIM_PERIOD / SIM_INST_PER_NS)
#define HOLD_NS 5000000ULL		/* sim: the advance while a full buffer waits */
#define ENTRY_BYTES (sizeof(pfm_dfl_smpl_entry_t) + 8)	/* an entry and one PMD */

static const char *const sim_names[] = { "INSTRUCTIONS_RETIRED", "UNHALTED_CORE_CYCLES" };
static const char *const perf_names[] = { "TASK_CLOCK", "PAGE_FAULTS" };
static struct pfmon_set set;

/* ---- 1. --follow-exec --exec-split-results ---------------------------------- */

/* --image1: the command's first image: work orders as serve(), and at 'x'
 * the exec of the second (this program with --serve), same pipes. */
static int image1(void)
{
	char c;

	while (read(0, &c, 1) == 1) {
		if (c == 'x') {
			execl("/proc/self/exe", "pfmon-image2", "--serve", (char *)NULL);
			return 4;
		}
		work();
		if (write(1, "k", 1) != 1)
			return 3;
	}
	return 0;
}

/* What an image counted: sim, exactly ns of its time in one run; perf, its
 * work order, within its wall time and its page faults. The set's runs and
 * time go on over the loads (pfmon takes the difference): prev, image 1's
 * (NULL for image 1). */
static void check_image(const struct set_result *r, const struct set_result *prev, uint64_t ns, uint64_t wall_ns,
			uint64_t faults, const char *what)
{
	uint64_t runs0 = prev ? prev->si.set_runs : 0, act0 = prev ? prev->si.set_act_duration : 0;

	printf("%s: %" PRIu64 " %s %" PRIu64 " %s, runs %" PRIu64 ", %" PRIu64 " ns active\n", what, r->v[0],
	       on_sim ? "INSTRUCTION_RETIRED" : "TASK_CLOCK", r->v[1], on_sim ? "UNHALTED_CORE_CYCLES" : "PAGE_FAULTS",
	       (uint64_t)r->si.set_runs, (uint64_t)r->si.set_act_duration);
	CHECK_EQ_U64(r->si.set_flags, 0);
	if (on_sim) {
		CHECK_EQ_U64(r->v[0], ns * SIM_INST_PER_NS);
		CHECK_EQ_U64(r->v[1], ns * SIM_CYCLES_PER_NS);
		CHECK_EQ_U64(r->si.set_runs, runs0 + 1);
		CHECK_EQ_U64(r->si.set_act_duration - act0, ns);
		CHECK_EQ_U64(r->si.set_avail_pmcs[0], SIM_AVAIL_PMCS);
		return;
	}
	CHECK(r->v[0] >= WORK_BURN_NS && r->v[0] <= wall_ns, "%s: task clock %" PRIu64 " outside [%" PRIu64
	      ", %" PRIu64 "]", what, r->v[0], (uint64_t)WORK_BURN_NS, wall_ns);
	CHECK(r->v[1] >= WORK_PAGES && r->v[1] <= faults, "%s: %" PRIu64 " page faults outside [%d, %" PRIu64 "]",
	      what, r->v[1], WORK_PAGES, faults);
	CHECK_EQ_U64(r->si.set_runs, runs0 + 1);
	CHECK(r->si.set_act_duration - act0 <= wall_ns, "%s: active %" PRIu64 " ns in %" PRIu64 " ns", what,
	      (uint64_t)r->si.set_act_duration - act0, wall_ns);
}

static void exec_split(void)
{
	uint64_t t0, t1, faults1 = 0;
	struct set_result r1, r2;
	struct rusage ru;
	int cmd, ans, fd, status;
	pid_t pid;

	pid = pfmon_spawn("--image1", 0, &cmd, &ans);	/* PTRACE_O_TRACEEXEC: --follow-exec */
	t0 = monotonic_ns();
	fd = pfmon_task_context(&set, 1, 0, pid);
	CHECK_OK(ptrace(PTRACE_CONT, pid, NULL, NULL));
	if (on_sim)
		sim_advance(RUN1_NS);
	else
		order_work(cmd, ans);
	CHECK_EQ_U64(write(cmd, "x", 1), 1);	/* image 1 execs image 2 */
	CHECK_EQ_U64(wait_task(pid, &status, NULL), pid);
	CHECK(WIFSTOPPED(status) && status >> 8 == (SIGTRAP | PTRACE_EVENT_EXEC << 8),
	      "command %d: status 0x%x, expected its exec's stop", (int)pid, status);

	/* The exec's stop: image 1's results, the context anew on the same fd. */
	t1 = monotonic_ns();
	if (!on_sim)
		faults1 = proc_faults(pid);
	pfmon_results(fd, &set, 1, &r1, 1);
	CHECK_STATE(fd, "active");
	CHECK_OK(pfm_unload_context(fd));
	CHECK_STATE(fd, "unloaded");
	pfmon_program(fd, &set, 1, 0, NULL);
	pfmon_load_start(fd, pid);
	CHECK_STATE(fd, "active");
	CHECK_OK(ptrace(PTRACE_CONT, pid, NULL, NULL));
	if (on_sim)
		sim_advance(RUN2_NS);
	else
		order_work(cmd, ans);
	close(cmd);	/* EOF: image 2 exits */
	close(ans);
	reap(pid, &ru);
	pfmon_results(fd, &set, 1, &r2, 0);
	check_image(&r1, NULL, RUN1_NS, t1 - t0, faults1, "exec-split: image 1");
	check_image(&r2, &r1, RUN2_NS, monotonic_ns() - t1, (uint64_t)(ru.ru_minflt + ru.ru_majflt) - faults1,
		    "exec-split: image 2");
	CHECK(wait_sessions(0) == 0, "exec-split: a session outlived close()");
}

/* ---- 2. --overflow-block with sampling ---------------------------------------- */

static uint64_t buf_size, num_pmds;
static unsigned int smpl_pmd, rec_pmd;
static const pfm_dfl_smpl_hdr_t *hdr;
static pid_t child;
static int ctx_fd;
static int full_buffers;	/* __atomic: the worker's restarts so far */
static uint64_t samples;	/* the worker's: entries walked so far */

/* pfmon_smpl.c's buffer_size(): 16 entries of one PMD and the slack. */
static void buffer_size(void)
{
	unsigned int n = 0;

	CHECK_PFM(pfm_get_num_pmds(&n));
	num_pmds = n;
	buf_size = sizeof(pfm_dfl_smpl_hdr_t) + (sizeof(pfm_dfl_smpl_entry_t) + 8 * num_pmds - ENTRY_BYTES) +
		   ENTRIES * ENTRY_BYTES;
	CHECK_EQ_U64(buf_size, on_sim ? 944 : 952);	/* what pfmon asked for in its trace */
}

/* sim: the buffer's header and count entries, after fills buffers: entry k
 * of the command's time at (samples + k + 1) sampling steps, the held time
 * left out. */
static void walk_buffer(uint64_t count, int fills)
{
	const unsigned char *pos = (const unsigned char *)(hdr + 1);

	CHECK_EQ_U64(hdr->hdr_count, count);
	CHECK_EQ_U64(hdr->hdr_cur_offs, sizeof(*hdr) + count * ENTRY_BYTES);
	CHECK_EQ_U64(hdr->hdr_overflows, fills);
	CHECK_EQ_U64(hdr->hdr_buf_size, buf_size);
	for (uint64_t k = 0; k < count; k++, pos += ENTRY_BYTES) {
		const pfm_dfl_smpl_entry_t *e = (const pfm_dfl_smpl_entry_t *)pos;
		uint64_t value = *(const uint64_t *)(e + 1), t = (samples + k + 1) * SIM_STEP_NS;

		CHECK(e->pid == (uint32_t)child && e->tgid == (uint32_t)child, "sample %" PRIu64
		      ": pid %u tgid %u, expected the command, %d", samples + k + 1, e->pid, e->tgid, (int)child);
		CHECK_EQ_U64(e->ovfl_pmd, smpl_pmd);
		CHECK_EQ_U64(e->last_reset_val, -SIM_PERIOD);
		CHECK_EQ_U64(e->set, 0);
		CHECK_EQ_U64(e->cpu, 0);
		CHECK_EQ_U64(e->tstamp, t);
		CHECK_EQ_U64(e->ip, smpl_sim_ip(t));
		CHECK_EQ_U64(value, t * SIM_CYCLES_PER_NS);	/* the cycles at the overflow */
	}
	samples += count;
}

/* The two PMDs of the context now (from the worker: the command runs). */
static void read_both(uint64_t v[2])
{
	pfarg_pmd_t pd[2];

	memset(pd, 0, sizeof(pd));
	pd[0].reg_num = (uint16_t)smpl_pmd;
	pd[1].reg_num = (uint16_t)rec_pmd;
	CHECK_OK(pfm_read_pmds(ctx_fd, pd, 2));
	v[0] = pd[0].reg_value;
	v[1] = pd[1].reg_value;
}

/* pfmon's sampling worker: select(), read(64), the buffer, pfm_restart. Before
 * the restart, the hold: the clock moves, the command's time does not. */
static void *worker(void *arg)
{
	uint64_t before[2], after[2];
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
		n = __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE);
		if (msg.type == PFM_MSG_END) {
			walk_buffer(1, n);	/* the last, partial buffer */
			printf("end: %" PRIu64 " samples in %d full buffers and a partial one\n", samples, n);
			return arg;
		}
		CHECK_EQ_U64(msg.type, PFM_MSG_OVFL);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 1ULL << smpl_pmd);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pid, child);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_tid, child);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_active_set, 0);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_ip, smpl_sim_ip((samples + ENTRIES) * SIM_STEP_NS));
		walk_buffer(ENTRIES, n + 1);

		/* Held: the manual clock moves every loaded target but this one. */
		CHECK_STATE(ctx_fd, "masked");
		read_both(before);
		sim_advance(HOLD_NS);
		read_both(after);
		CHECK_STATE(ctx_fd, "masked");
		CHECK_EQ_U64(after[0], before[0]);
		CHECK_EQ_U64(after[1], before[1]);
		CHECK_EQ_U64(before[1], samples * SIM_STEP_NS * SIM_CYCLES_PER_NS);
		CHECK_EQ_U64(hdr->hdr_count, ENTRIES);
		CHECK_EQ_U64(hdr->hdr_overflows, n + 1);
		printf("buffer %d: %d samples, held for %" PRIu64 " ns of the clock: cycles stay %" PRIu64 "\n",
		       n + 1, ENTRIES, (uint64_t)HOLD_NS, after[1]);

		CHECK_OK(pfm_restart(ctx_fd));
		CHECK_EQ_U64(hdr->hdr_count, 0);
		__atomic_add_fetch(&full_buffers, 1, __ATOMIC_ACQ_REL);
	}
}

/* pfmon's create call with --overflow-block: the default format. */
static int create_blocking(void)
{
	static char fmt_name[] = PFM_DFL_SMPL_NAME;
	pfm_dfl_smpl_arg_t arg;
	pfarg_ctx_t ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = PFM_FL_NOTIFY_BLOCK;
	memset(&arg, 0, sizeof(arg));
	arg.buf_size = buf_size;	/* buf_flags 0 */
	CHECK_EQ_U64(sizeof(arg), 64);
	return pfm_create_context(&ctx, fmt_name, &arg, sizeof(arg));
}

static void overflow_block(void)
{
	pthread_t thread;
	pfarg_pmd_t pd[2];
	struct rusage ru;
	int cmd, ans;

	if (!on_sim) {
		/* perf cannot hold a thread: pfmon stops at its create. */
		CHECK_ERRNO(create_blocking(), EINVAL);
		CHECK(wait_sessions(0) == 0, "overflow-block: the refused context left a session");
		printf("overflow-block: refused (EINVAL), as perf cannot hold a thread\n");
		return;
	}
	child = pfmon_spawn("--serve", 0, &cmd, &ans);
	ctx_fd = (int)CHECK_OK(create_blocking());
	hdr = smpl_map(ctx_fd, buf_size, MAP_PRIVATE);
	CHECK_OK(fcntl(ctx_fd, F_SETFD, FD_CLOEXEC));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_flags = PFM_REGFL_OVFL_NOTIFY;
	pd[0].reg_value = pd[0].reg_long_reset = pd[0].reg_short_reset = -SIM_PERIOD;
	pd[0].reg_smpl_pmds[0] = 1ULL << rec_pmd;
	pfmon_program(ctx_fd, &set, 1, 0, pd);
	pfmon_load_start(ctx_fd, child);
	CHECK(pthread_create(&thread, NULL, worker, NULL) == 0, "pthread_create");
	CHECK_OK(ptrace(PTRACE_CONT, child, NULL, NULL));
	for (int round = 1; round <= ROUNDS; round++) {
		uint64_t t0 = monotonic_ns();

		sim_advance(ENTRIES * SIM_STEP_NS);	/* fills the buffer on its last ns */
		while (__atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE) < round) {
			CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL,
			      "%d full buffers of %d after %ld ms", __atomic_load_n(&full_buffers, __ATOMIC_ACQUIRE),
			      round, wait_ms());
			nap_ms(1);
		}
	}
	sim_advance(SIM_STEP_NS);	/* one more sample: the buffer holds it */
	close(cmd);	/* EOF: the command exits */
	close(ans);
	reap(child, &ru);
	pthread_join(thread, NULL);	/* after the end message */
	CHECK_EQ_U64(samples, ROUNDS * ENTRIES + 1);
	CHECK_OK(close(ctx_fd));
	CHECK_OK(munmap((void *)hdr, buf_size));
	CHECK(wait_sessions(0) == 0, "overflow-block: a session outlived close()");
}

int main(int argc, char **argv)
{
	on_sim = on_backend("sim");
	if (argc > 1 && strcmp(argv[1], "--serve") == 0)
		_exit(serve(0));
	if (argc > 1 && strcmp(argv[1], "--image1") == 0)
		_exit(image1());

	/* pfmon --follow-exec --exec-split-results -e E1,E2 CMD */
	pfmon_prologue(on_sim ? sim_names : perf_names, 1, &set, NULL);
	pfmon_dispatch(&set, 0);
	exec_split();

	/* pfmon --overflow-block --long-smpl-periods=P --smpl-entries=16 -e E1,E2 CMD:
	 * its own run (sim: instructions sampled, cycles recorded). */
	pfmon_prologue(on_sim ? sim_names : perf_names, 1, &set, PFM_DFL_SMPL_NAME);
	pfmon_dispatch(&set, 0);
	smpl_pmd = set.outp.pfp_pmds[0].reg_num;
	rec_pmd = set.outp.pfp_pmds[1].reg_num;
	buffer_size();
	overflow_block();
	printf("pfmon_exec: ok on %s\n", backend_name());
	return 0;
}
