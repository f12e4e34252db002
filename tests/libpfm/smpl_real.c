// pfmfs-test: backends=perf,x86
/*
 * smpl_real.c: perfmon2's sampling loops (self_smpl.c, task_smpl.c) on a
 * backend that counts for real, with the default format's buffer mapped
 * with mmap() of the descriptor. pfmlib picks two events: on perf both are
 * PAGE_FAULTS, the program's own user-level faults; on x86 (the module's
 * test PMU) instructions and cycles, which count the thread's CPU time. The
 * first samples every PERIOD and records the second; the buffer holds
 * `fill` entries (the header's hdr_min_buf_space says how many fit).
 *   - "self, by signal": the program samples itself, takes each
 *     buffer-full notification by SIGIO, reads the message, walks the
 *     mapped buffer and restarts;
 *   - "child, by read": the program samples a child it forked, waits for
 *     each notification with a blocking read() of the message, walks the
 *     buffer and restarts.
 * The work (touching fresh pages, or spinning) is in this program's text,
 * and while the counters count a monitored thread makes no system call and
 * no call out of the text (but for a rare clock reading), so every entry's
 * ip is in the text. Every
 * entry is the monitored thread's, of the sampling PMD, reset from -PERIOD,
 * of set 0, on a cpu that exists, its time stamp not before the last one's
 * on that cpu. The
 * recorded value is the group's at the overflow: on perf the same faults,
 * exactly PERIOD more at each entry of a buffer (and PERIOD at the first);
 * on x86 more cycles at each entry. The header counts the buffer's fills.
 */
#include "check.h"
#include "smpl.h"

#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define ROUNDS 3		/* full buffers in each part */
#define FILL 8			/* entries in a full buffer */
#define PERF_PERIOD 8ULL	/* page faults per sample */
#define X86_PERIOD (X86_INST_PERIOD / 10)	/* 10 ms of CPU time */
#define ENTRY_BYTES (sizeof(pfm_dfl_smpl_entry_t) + 8)	/* an entry and one value */

extern char __executable_start[], etext[];	/* this program's text (GNU ld) */

static int on_x86;
static uint64_t period;
static uint64_t buf_size;
static long ncpus;
#define MAX_CPUS 1024
static uint64_t last_tstamp[MAX_CPUS];	/* the last entry's tstamp, per cpu */

/* The events, placed by pfmlib: the sampling one first. */
static pfmlib_output_param_t outp;
static unsigned int smpl_pmd, recorded_pmd;

static void encode(void)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */

	memset(&inp, 0, sizeof(inp));
	if (on_x86) {
		CHECK_PFM(pfm_get_inst_retired_event(&inp.pfp_events[0]));
		CHECK_PFM(pfm_get_cycle_event(&inp.pfp_events[1]));
	} else {
		CHECK_PFM(pfm_find_event("PAGE_FAULTS", &inp.pfp_events[0].event));
		CHECK_PFM(pfm_find_event("PAGE_FAULTS", &inp.pfp_events[1].event));
	}
	inp.pfp_event_count = 2;
	inp.pfp_dfl_plm = PFM_PLM3;
	memset(&outp, 0, sizeof(outp));
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));
	CHECK_EQ_U64(outp.pfp_pmd_count, 2);
	smpl_pmd = outp.pfp_pmds[0].reg_num;
	recorded_pmd = outp.pfp_pmds[1].reg_num;
	CHECK(smpl_pmd < 64 && recorded_pmd < 64, "PMDs %u and %u", smpl_pmd, recorded_pmd);
}

static void program(int fd)
{
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd[2];

	memset(pc, 0, sizeof(pc));
	for (unsigned int i = 0; i < outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_num = (uint16_t)smpl_pmd;
	pd[0].reg_flags = PFM_REGFL_OVFL_NOTIFY;	/* the buffer-full notification */
	pd[0].reg_value = -period;
	pd[0].reg_short_reset = -period;
	pd[0].reg_long_reset = -period;
	pd[0].reg_smpl_pmds[0] = 1ULL << recorded_pmd;
	pd[1].reg_num = (uint16_t)recorded_pmd;
	CHECK_OK(pfm_write_pmds(fd, pd, 2));
}

/* A sampling context whose buffer fills after FILL entries, mapped. The
 * smallest room the format leaves for an entry depends on the PMU's PMDs:
 * a first context's header says. */
static int create(const pfm_dfl_smpl_hdr_t **hdr)
{
	const pfm_dfl_smpl_hdr_t *h;
	uint64_t min_space;
	int fd;

	if (buf_size == 0) {
		fd = (int)CHECK_OK(smpl_create(0, 4096));
		h = smpl_map(fd, 4096, MAP_PRIVATE);
		min_space = h->hdr_min_buf_space;
		CHECK_OK(munmap((void *)h, 4096));
		CHECK_OK(close(fd));
		buf_size = sizeof(pfm_dfl_smpl_hdr_t) + (FILL - 1) * ENTRY_BYTES + min_space;
	}
	fd = (int)CHECK_OK(smpl_create(0, buf_size));
	*hdr = smpl_map(fd, buf_size, MAP_PRIVATE);
	CHECK_EQ_U64((*hdr)->hdr_buf_size, buf_size);
	program(fd);
	return fd;
}

/*
 * The work, in this program's text, with no system call while it counts:
 * perf, fresh pages touched one by one (mapped and unmapped by raw system
 * calls, which take no fault at user level); x86, a spin. Not instrumented
 * by the sanitizers: their shadow memory would fault too.
 */
static volatile char *pages;
static long page;
#define NPAGES 64

static void map_pages(void)
{
	page = sysconf(_SC_PAGESIZE);
	pages = (volatile char *)syscall(SYS_mmap, NULL, NPAGES * page, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(pages != (volatile char *)-1, "mmap: %s", strerror(errno));
	syscall(SYS_madvise, pages, NPAGES * page, MADV_NOHUGEPAGE);
}

__attribute__((no_sanitize("address", "thread", "undefined"), noinline)) static void work(void)
{
	static volatile uint64_t sink;

	if (on_x86) {
		for (int i = 0; i < 200000; i++)
			sink += (uint64_t)i;
		return;
	}
	for (int i = 0; i < NPAGES; i++)
		pages[(size_t)page * i] = 1;
	syscall(SYS_madvise, pages, NPAGES * page, MADV_DONTNEED);	/* fresh again */
}

/* One full buffer: FILL entries of thread tid of process pid. */
static void check_buffer(const pfm_dfl_smpl_hdr_t *h, int round, pid_t tid, pid_t pid)
{
	const unsigned char *pos = (const unsigned char *)(h + 1);
	uint64_t first = 0, prev = 0;

	CHECK_EQ_U64(h->hdr_count, FILL);
	CHECK_EQ_U64(h->hdr_cur_offs, sizeof(*h) + FILL * ENTRY_BYTES);
	CHECK_EQ_U64(h->hdr_overflows, (uint64_t)round + 1);
	CHECK_EQ_U64(h->hdr_buf_size, buf_size);
	for (uint64_t k = 0; k < FILL; k++, pos += ENTRY_BYTES) {
		const pfm_dfl_smpl_entry_t *e = (const pfm_dfl_smpl_entry_t *)pos;
		uint64_t value = *(const uint64_t *)(e + 1);

		CHECK(e->pid == (uint32_t)tid && e->tgid == (uint32_t)pid,
		      "buffer %d entry %" PRIu64 ": pid %u tgid %u, expected thread %d of process %d", round + 1, k,
		      e->pid, e->tgid, (int)tid, (int)pid);
		CHECK_EQ_U64(e->ovfl_pmd, smpl_pmd);
		CHECK_EQ_U64(e->last_reset_val, -period);
		CHECK_EQ_U64(e->set, 0);
		CHECK((long)e->cpu < ncpus, "entry %" PRIu64 ": cpu %u of %ld", k, e->cpu, ncpus);
		CHECK(e->ip >= (uint64_t)(uintptr_t)__executable_start && e->ip < (uint64_t)(uintptr_t)etext,
		      "buffer %d entry %" PRIu64 ": ip %#" PRIx64 " not in the program's text [%p, %p)", round + 1, k,
		      e->ip, (void *)__executable_start, (void *)etext);
		CHECK(e->tstamp >= last_tstamp[e->cpu], "entry %" PRIu64 ": tstamp %" PRIu64 " before %" PRIu64
		      " on cpu %u", k, e->tstamp, last_tstamp[e->cpu], e->cpu);
		last_tstamp[e->cpu] = e->tstamp;
		if (k == 0) {
			first = value;
			if (!on_x86 && round == 0)
				CHECK_EQ_U64(value, period);	/* the same faults, from 0 */
		} else if (on_x86) {
			CHECK(value > prev, "entry %" PRIu64 ": cycles %" PRIu64 " after %" PRIu64, k, value, prev);
		} else {
			CHECK_EQ_U64(value - first, k * period);
		}
		prev = value;
	}
}

/* The notification's message: an overflow of the sampling PMD. */
static void check_msg(const pfarg_msg_t *m, pid_t tid)
{
	CHECK_EQ_U64(m->type, PFM_MSG_OVFL);
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_pmds[0], 1ULL << smpl_pmd);
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_pid, tid);
}

static volatile sig_atomic_t notifications;

static void on_sigio(int sig)
{
	(void)sig;
	notifications++;
}

static void self_by_signal(void)
{
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	const pfm_dfl_smpl_hdr_t *h;
	uint64_t deadline;
	unsigned int spins = 0;
	pfarg_load_t load;
	pfarg_msg_t msg;
	int fd, seen = 0;

	fd = create(&h);
	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	CHECK_OK(fcntl(fd, F_SETOWN, getpid()));
	CHECK_OK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC));
	work();	/* its pages and code are there before it counts */
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	deadline = monotonic_ns() + (uint64_t)wait_ms() * 1000000ULL;
	while (seen < ROUNDS) {
		work();
		if (notifications == seen) {
			if (++spins % 256 == 0)	/* the clock's code is not the program's */
				CHECK(monotonic_ns() < deadline, "%d notifications of %d after %ld ms", seen, ROUNDS,
				      wait_ms());
			continue;
		}
		/* Masked from the fill to the restart: the buffer holds still. */
		CHECK_EQ_U64(read(fd, &msg, sizeof(msg)), sizeof(msg));
		check_msg(&msg, tid_self());
		check_buffer(h, seen, tid_self(), getpid());
		seen++;
		CHECK_OK(pfm_restart(fd));
		deadline = monotonic_ns() + (uint64_t)wait_ms() * 1000000ULL;
	}
	CHECK_OK(pfm_stop(fd));
	CHECK_OK(close(fd));
	CHECK_OK(munmap((void *)h, buf_size));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	printf("self, by signal: %d full buffers of %d samples\n", ROUNDS, FILL);
}

/* The monitored child: works until it is killed, making no system call
 * once it said it is ready. */
static pid_t start_child(void)
{
	int r[2];
	pid_t pid;
	char c;

	CHECK_OK(pipe(r));
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(r[0]);
		work();	/* its copies of the pages it writes, before it counts */
		if (write(r[1], "r", 1) != 1)
			_exit(2);
		for (;;)
			work();
	}
	close(r[1]);
	CHECK(read(r[0], &c, 1) == 1, "the child did not get ready");
	close(r[0]);
	return pid;
}

static void child_by_read(void)
{
	const pfm_dfl_smpl_hdr_t *h;
	struct pollfd pfd;
	pfarg_load_t load;
	pfarg_msg_t msg;
	int fd, status;
	pid_t child;

	fd = create(&h);
	child = start_child();
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)child;
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	for (int round = 0; round < ROUNDS; round++) {
		pfd.fd = fd, pfd.events = POLLIN, pfd.revents = 0;
		CHECK(poll(&pfd, 1, (int)wait_ms()) == 1, "buffer %d: no message within %ld ms", round + 1, wait_ms());
		CHECK_EQ_U64(read(fd, &msg, sizeof(msg)), sizeof(msg));
		check_msg(&msg, child);
		check_buffer(h, round, child, child);
		CHECK_OK(pfm_restart(fd));
	}
	CHECK_OK(kill(child, SIGKILL));
	CHECK(waitpid(child, &status, 0) == child && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "child status 0x%x", status);
	CHECK_OK(close(fd));
	CHECK_OK(munmap((void *)h, buf_size));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	printf("child, by read: %d full buffers of %d samples of process %d\n", ROUNDS, FILL, (int)child);
}

int main(void)
{
	on_x86 = on_backend("x86");
	period = on_x86 ? X86_PERIOD : PERF_PERIOD;
	ncpus = sysconf(_SC_NPROCESSORS_CONF);
	CHECK(ncpus > 0 && ncpus <= MAX_CPUS, "%ld cpus", ncpus);
	CHECK_PFM(pfm_initialize());
	encode();
	if (!on_x86)
		map_pages();
	self_by_signal();
	child_by_read();
	printf("ok\n");
	return 0;
}
