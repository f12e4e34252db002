// pfmfs-test: backends=sim,perf
/*
 * thread_owners.c: libpfm 3.10's self_smpl_multi, checked. NTHREADS threads
 * each create a context on themselves and make themselves its owner; each
 * notification must reach the thread that owns its context, once, with
 * si_fd its descriptor, and no other thread. The ways to name the thread,
 * a run each (F_SETSIG picks the signal, so the siginfo carries si_fd):
 *   - F_SETOWN gettid() (self_smpl_multi's default), with F_SETSIG SIGIO:
 *     the kernel keeps the thread, though F_GETOWN reads it back as 0, and
 *     aims the signal at the process with that thread first in line;
 *   - F_SETOWN_EX F_OWNER_PID gettid(): the same, said the long way;
 *   - F_SETOWN_EX F_OWNER_TID gettid() (self_smpl_multi -f): the signal is
 *     the thread's alone.
 * The overflows come one context at a time: a signal aimed at the process
 * is only promised to its thread when no other is pending (any thread that
 * does not block it may take it then), on a perfmon2 kernel as here. The
 * F_OWNER_TID run then overflows every context at once, too. The main
 * thread leaves the signals unblocked, so one aimed wrongly lands there.
 *   sim: each context counts instructions; context i's counter starts
 *        (i + 1) periods from its overflow and restarts NTHREADS periods
 *        from it, so each advance of a period overflows exactly one, in
 *        turn; an advance of NTHREADS periods overflows each once.
 *   perf: each context counts its thread's page faults; in its turn a
 *        thread starts it, touches fresh pages until its signal came (the
 *        overflow masks the context until the handler's restart), stops it.
 * Last, an owner that is gone: the owner thread of a context on the main
 * thread exits; the next notification is queued, and no thread gets a
 * signal (the kernel sends none to an owner that is gone).
 */
#include "check.h"

#include <poll.h>
#include <sys/mman.h>

#define NTHREADS 4
#define ROUNDS 3	/* overflows of each context one at a time */
#define AT_ONCE 2	/* F_OWNER_TID: overflows of every context at once */
#define P 100000ULL	/* sim: sampling period, instructions */
#define STEP_NS (P / SIM_INST_PER_NS)	/* 50000 ns: one period */
#define PMC_INT (1ULL << 20)	/* PERFEVTSEL: interrupt on overflow */
#define PMC_EN (1ULL << 22)	/* PERFEVTSEL: enable */
#define INST_RETIRED 0xc0ULL
#define PERF_PERIOD 16ULL	/* perf: page faults per notification */
#define NPAGES 64

enum way { BY_SETOWN, BY_OWNER_PID, BY_OWNER_TID, WAYS };
static const char *const way_name[WAYS] = { "F_SETOWN gettid()", "F_SETOWN_EX F_OWNER_PID",
					    "F_SETOWN_EX F_OWNER_TID" };

/* One context. The handler finds it by si_fd; main reads what the threads
 * write (__atomic throughout: the threads and handlers run beside it). */
struct slot {
	int fd;		/* -1: none */
	pid_t target;	/* the thread the context is loaded on */
	pid_t owner;	/* the thread that must take its signals */
	int signals;	/* its notifications taken (handler) */
	int wanted;	/* perf: the thread works until signals reaches it */
};
static struct slot slots[NTHREADS];
static int on_perf, sig_no, done;
static enum way cur_way;	/* set before the threads start */
static int stray;	/* signals whose si_fd is no context's */
static pthread_barrier_t ready;

/* The handler cannot print: it records its first failed check for main. */
static int handler_bad_line, handler_bad_errno;
#define HANDLER_CHECK(cond)                                                                   \
	do {                                                                                  \
		int zero_ = 0;                                                                \
		if (!(cond) && __atomic_compare_exchange_n(&handler_bad_line, &zero_, __LINE__, 0, \
							   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) \
			__atomic_store_n(&handler_bad_errno, errno, __ATOMIC_SEQ_CST);        \
	} while (0)

static int slot_fd(const struct slot *s)
{
	return __atomic_load_n(&s->fd, __ATOMIC_ACQUIRE);
}

static int slot_signals(struct slot *s)
{
	return __atomic_load_n(&s->signals, __ATOMIC_ACQUIRE);
}

static void on_notify(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct slot *s = NULL;
	struct pollfd pfd;
	pfarg_msg_t msg;

	(void)uc;
	for (int i = 0; i < NTHREADS; i++)
		if (slot_fd(&slots[i]) >= 0 && slot_fd(&slots[i]) == si->si_fd)
			s = &slots[i];
	if (!s) {
		__atomic_add_fetch(&stray, 1, __ATOMIC_SEQ_CST);
		errno = saved_errno;
		return;
	}
	HANDLER_CHECK(sig == sig_no && si->si_signo == sig_no);
	HANDLER_CHECK(si->si_code == POLL_IN);
	HANDLER_CHECK(si->si_band & POLLIN);
	HANDLER_CHECK(tid_self() == s->owner);	/* its owner, no other thread */
	/* The message is there when the signal arrives. */
	pfd = (struct pollfd){ .fd = si->si_fd, .events = POLLIN };
	HANDLER_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	if (pfd.revents & POLLIN) {
		HANDLER_CHECK(read(si->si_fd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
		HANDLER_CHECK(msg.type == PFM_MSG_OVFL);
		HANDLER_CHECK(msg.pfm_ovfl_msg.msg_ovfl_pid == (uint32_t)s->target);
		HANDLER_CHECK(pfm_restart(si->si_fd) == 0);
	}
	__atomic_add_fetch(&s->signals, 1, __ATOMIC_RELEASE);	/* restarted, then counted */
	errno = saved_errno;
}

/* ---- the counters -------------------------------------------------------- */

static pfmlib_output_param_t perf_outp;	/* perf: PAGE_FAULTS, placed by pfmlib */

#define NEVER (1ULL << 30)	/* a reset no run reaches */

/* The counting PMD: its overflow `first` periods away (perf: one period),
 * then every `every` (0: never again). */
static void arm(int fd, uint64_t first, uint64_t every)
{
	pfarg_pmd_t pd = { .reg_num = 0, .reg_flags = PFM_REGFL_OVFL_NOTIFY };
	uint64_t period = on_perf ? PERF_PERIOD : P;

	if (on_perf) {
		pd.reg_num = (uint16_t)perf_outp.pfp_pmds[0].reg_num;
		first = 1;
		every = every ? 1 : 0;
	}
	pd.reg_value = -(first * period);
	pd.reg_short_reset = pd.reg_long_reset = every ? -(every * period) : -NEVER;
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
}

/* A context on the calling thread, armed and loaded. */
static int make_context(uint64_t first, uint64_t every)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc = { .reg_num = 0, .reg_value = INST_RETIRED | SIM_PMC_USR | PMC_INT | PMC_EN };
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));

	if (on_perf) {
		pc.reg_num = (uint16_t)perf_outp.pfp_pmcs[0].reg_num;
		pc.reg_value = perf_outp.pfp_pmcs[0].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	arm(fd, first, every);
	CHECK_OK(pfm_load_context(fd, &load));
	return fd;
}

/* perf: fresh pages, touched one at a time (mapped and made fresh again by
 * raw system calls, which take no fault at user level); not instrumented by
 * the sanitizers, whose shadow memory would fault too. */
struct pages {
	volatile char *base;
	long size, next;
};

static void map_pages(struct pages *p)
{
	p->size = sysconf(_SC_PAGESIZE);
	p->next = 0;
	p->base = (volatile char *)syscall(SYS_mmap, NULL, NPAGES * p->size, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p->base != (volatile char *)-1, "mmap: %s", strerror(errno));
	syscall(SYS_madvise, p->base, NPAGES * p->size, MADV_NOHUGEPAGE);
}

__attribute__((no_sanitize("address", "thread", "undefined"), noinline)) static void touch_page(struct pages *p)
{
	if (p->next == NPAGES) {
		syscall(SYS_madvise, p->base, NPAGES * p->size, MADV_DONTNEED);	/* fresh again */
		p->next = 0;
	}
	p->base[p->size * p->next++] = 1;
}

/* perf: touches pages while fd counts, until s has taken `want` signals. */
static void fault_until(struct pages *p, struct slot *s, int want)
{
	uint64_t deadline = monotonic_ns() + (uint64_t)wait_ms() * 1000000ULL;
	unsigned int spins = 0;

	while (slot_signals(s) < want) {
		touch_page(p);
		if (++spins % 64 == 0)
			CHECK(monotonic_ns() < deadline, "thread %d: %d signals after %ld ms, expected %d",
			      (int)tid_self(), slot_signals(s), wait_ms(), want);
	}
}

/* ---- one run: NTHREADS owners ------------------------------------------- */

static void set_owner(int fd, enum way way)
{
	struct f_owner_ex owner = { .type = way == BY_OWNER_TID ? F_OWNER_TID : F_OWNER_PID, .pid = tid_self() };

	CHECK_OK(fcntl(fd, F_SETSIG, sig_no));
	if (way == BY_SETOWN)
		CHECK_OK(fcntl(fd, F_SETOWN, tid_self()));
	else
		CHECK_OK(fcntl(fd, F_SETOWN_EX, &owner));
	CHECK_OK(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC));
}

static void *worker(void *arg)
{
	struct slot *s = arg;
	int i = (int)(s - slots), fd, want;
	struct pages pages;

	s->target = s->owner = tid_self();
	fd = make_context((uint64_t)i + 1, NTHREADS);
	signals_ready();
	set_owner(fd, cur_way);
	if (on_perf)
		map_pages(&pages);
	else
		CHECK_OK(pfm_start(fd, NULL));	/* main's advances drive it */
	__atomic_store_n(&s->fd, fd, __ATOMIC_RELEASE);
	pthread_barrier_wait(&ready);
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		want = __atomic_load_n(&s->wanted, __ATOMIC_ACQUIRE);
		if (!on_perf || slot_signals(s) >= want) {
			nap_ms(1);	/* the signals come meanwhile (sim) */
			continue;
		}
		CHECK_OK(pfm_start(fd, NULL));
		fault_until(&pages, s, want);
		CHECK_OK(pfm_stop(fd));
	}
	return NULL;
}

/* Waits until slot i has taken want[i] signals, each; then every count is
 * exactly what is wanted: no signal went to the wrong context or thread. */
static void wait_signals(const int *want)
{
	uint64_t t0 = monotonic_ns(), bound = (uint64_t)wait_ms() * 1000000ULL, took;
	int i;

	for (i = 0; i < NTHREADS; i++)
		while (slot_signals(&slots[i]) < want[i] && monotonic_ns() - t0 < bound)
			nap_ms(1);
	took = monotonic_ns() - t0;
	if (took > check_slowest_wait_ns_)
		check_slowest_wait_ns_ = took;
	CHECK(__atomic_load_n(&handler_bad_line, __ATOMIC_SEQ_CST) == 0,
	      "check at line %d in the signal handler failed (errno %d)",
	      __atomic_load_n(&handler_bad_line, __ATOMIC_SEQ_CST),
	      __atomic_load_n(&handler_bad_errno, __ATOMIC_SEQ_CST));
	CHECK(__atomic_load_n(&stray, __ATOMIC_SEQ_CST) == 0, "%d signals for no context",
	      __atomic_load_n(&stray, __ATOMIC_SEQ_CST));
	for (i = 0; i < NTHREADS; i++)
		CHECK(slot_signals(&slots[i]) == want[i], "thread %d (fd %d): %d signals, expected %d", i,
		      slot_fd(&slots[i]), slot_signals(&slots[i]), want[i]);
}

/* The overflows of the contexts whose want[] went up by one: sim, an
 * advance (one period: the next in turn; NTHREADS periods: each);
 * perf, their threads' turns. */
static void overflow(const int *want, int all)
{
	if (!on_perf) {
		sim_advance(all ? NTHREADS * STEP_NS : STEP_NS);
	} else {
		for (int i = 0; i < NTHREADS; i++)
			__atomic_store_n(&slots[i].wanted, want[i], __ATOMIC_RELEASE);
	}
	wait_signals(want);
}

static void run(enum way way)
{
	pthread_t threads[NTHREADS];
	int want[NTHREADS] = { 0 }, i, err;

	cur_way = way;
	sig_no = way == BY_SETOWN ? SIGIO : way == BY_OWNER_PID ? SIGRTMIN + 1 : SIGRTMIN + 2;
	__atomic_store_n(&done, 0, __ATOMIC_RELEASE);
	memset(slots, 0, sizeof(slots));
	for (i = 0; i < NTHREADS; i++)
		slots[i].fd = -1;
	CHECK(pthread_barrier_init(&ready, NULL, NTHREADS + 1) == 0, "pthread_barrier_init");
	for (i = 0; i < NTHREADS; i++) {
		err = pthread_create(&threads[i], NULL, worker, &slots[i]);
		CHECK(err == 0, "pthread_create: %s", strerror(err));
	}
	pthread_barrier_wait(&ready);

	for (int r = 0; r < ROUNDS; r++)
		for (i = 0; i < NTHREADS; i++) {
			want[i]++;
			overflow(want, 0);
		}
	if (way == BY_OWNER_TID)
		for (int k = 0; k < AT_ONCE; k++) {
			for (i = 0; i < NTHREADS; i++)
				want[i]++;
			overflow(want, 1);
		}
	quiet_window();	/* no late or second signal */
	wait_signals(want);

	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (i = 0; i < NTHREADS; i++) {
		err = pthread_join(threads[i], NULL);
		CHECK(err == 0, "pthread_join: %s", strerror(err));
		CHECK_OK(close(slot_fd(&slots[i])));
		__atomic_store_n(&slots[i].fd, -1, __ATOMIC_RELEASE);
	}
	pthread_barrier_destroy(&ready);
	CHECK(wait_sessions_named(own_sessions(), 0) == 0, "sessions outlived close()");
	printf("%s: %d threads, %d signals each, every one its owner's\n", way_name[way], NTHREADS, want[0]);
}

/* ---- an owner that is gone ----------------------------------------------- */

static int gone_fd;
static int owner_set, owner_may_go;	/* __atomic: main and the owner thread */

static void *owner_thread(void *arg)
{
	(void)arg;
	signals_ready();
	slots[0].owner = tid_self();
	CHECK_OK(fcntl(gone_fd, F_SETOWN, tid_self()));
	printf("F_SETOWN %d: F_GETOWN reads back %d\n", (int)tid_self(), fcntl(gone_fd, F_GETOWN));
	__atomic_store_n(&owner_set, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&owner_may_go, __ATOMIC_ACQUIRE))
		nap_ms(1);
	return NULL;
}

static void run_gone_owner(void)
{
	struct pollfd pfd;
	struct pages pages;
	pthread_t t;
	pfarg_msg_t msg;
	uint64_t t0;
	pid_t gone;
	int want[NTHREADS] = { 1 }, err;

	sig_no = SIGIO;
	memset(slots, 0, sizeof(slots));
	for (int i = 0; i < NTHREADS; i++)
		slots[i].fd = -1;
	slots[0].target = tid_self();
	gone_fd = make_context(1, 0);	/* what the main thread does next cannot overflow it */
	CHECK_OK(fcntl(gone_fd, F_SETSIG, SIGIO));
	CHECK_OK(fcntl(gone_fd, F_SETFL, fcntl(gone_fd, F_GETFL) | O_ASYNC));
	err = pthread_create(&t, NULL, owner_thread, NULL);
	CHECK(err == 0, "pthread_create: %s", strerror(err));
	while (!__atomic_load_n(&owner_set, __ATOMIC_ACQUIRE))
		nap_ms(1);
	__atomic_store_n(&slots[0].fd, gone_fd, __ATOMIC_RELEASE);
	if (on_perf)
		map_pages(&pages);
	CHECK_OK(pfm_start(gone_fd, NULL));

	/* The owner thread takes the signal of the main thread's context. */
	if (on_perf)
		fault_until(&pages, &slots[0], 1);
	else
		sim_advance(STEP_NS);
	wait_signals(want);

	/* It exits, and is gone (after pthread_join the kernel may still
	 * hold it a moment). */
	gone = slots[0].owner;
	__atomic_store_n(&owner_may_go, 1, __ATOMIC_RELEASE);
	err = pthread_join(t, NULL);
	CHECK(err == 0, "pthread_join: %s", strerror(err));
	for (t0 = monotonic_ns(); syscall(SYS_tgkill, getpid(), gone, 0) == 0;)
		CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL, "thread %d does not go", (int)gone);

	/* The next notification: its message, and no signal anywhere. */
	pfd = (struct pollfd){ .fd = gone_fd, .events = POLLIN };
	CHECK_OK(pfm_stop(gone_fd));
	arm(gone_fd, 1, 0);
	CHECK_OK(pfm_start(gone_fd, NULL));
	if (on_perf) {
		for (t0 = monotonic_ns(); poll(&pfd, 1, 0) == 0;) {
			touch_page(&pages);
			CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL, "no notification");
		}
	} else {
		sim_advance(STEP_NS);
		CHECK(poll(&pfd, 1, (int)wait_ms()) == 1, "no notification");
	}
	quiet_window();
	wait_signals(want);
	CHECK_EQ_U64(read(gone_fd, &msg, sizeof(msg)), sizeof(msg));
	CHECK_EQ_U64(msg.type, PFM_MSG_OVFL);
	__atomic_store_n(&slots[0].fd, -1, __ATOMIC_RELEASE);
	CHECK_OK(close(gone_fd));
	CHECK(wait_sessions_named(own_sessions(), 0) == 0, "the session outlived close()");
	printf("an owner that exited: its context's notification queued, no signal\n");
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_notify, .sa_flags = SA_SIGINFO | SA_RESTART };

	on_perf = on_backend("perf");
	if (on_perf) {
		pfmlib_input_param_t inp;

		CHECK_PFM(pfm_initialize());
		memset(&inp, 0, sizeof(inp));
		CHECK_PFM(pfm_find_event("PAGE_FAULTS", &inp.pfp_events[0].event));
		inp.pfp_event_count = 1;
		inp.pfp_dfl_plm = PFM_PLM3;
		CHECK_PFM(pfm_dispatch_events(&inp, NULL, &perf_outp, NULL));
		CHECK_EQ_U64(perf_outp.pfp_pmc_count, 1);
	}
	/* Every thread, the main one too, takes the signals: one aimed wrongly
	 * would land anywhere. */
	CHECK_OK(sigaction(SIGIO, &sa, NULL));
	CHECK_OK(sigaction(SIGRTMIN + 1, &sa, NULL));
	CHECK_OK(sigaction(SIGRTMIN + 2, &sa, NULL));
	signals_ready();
	for (int way = 0; way < WAYS; way++)
		run((enum way)way);
	run_gone_owner();
	return 0;
}
