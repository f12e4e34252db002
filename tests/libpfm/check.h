/*
 * check.h: what every libpfm-compat test program shares: CHECK macros that
 * print "FAIL file:line: ..." and exit 1, and small helpers to reach the
 * mount (PFMFS_MOUNT) the driver started for the program.
 *
 * How a program is run (tests/libpfm/test_libpfm.py, the driver)
 * --------------------------------------------------------------
 * Every .c file of tests/libpfm is one test program (shared code goes in .h
 * files, never in a .c). The driver builds it as an outside program would
 * be, against the installed headers and library:
 *     cc -std=gnu11 -Wall -Wextra -Werror -pthread PROG.c \
 *        $(pkg-config --cflags --libs libpfm)   (+ the build's -fsanitize=)
 * and runs it as root, in an empty temporary directory, against a fresh
 * mount (pfmfsd --pmu=sim --sim-clock=manual unless the first line says
 * otherwise), with
 *     PFMFS_MOUNT    the mount point (the library and mount_path() use it)
 *     PFMFS_BACKEND  sim, perf or x86
 * Exit 0 is a pass; 77 a skip (a failure under CI=true); anything else, a
 * signal or running past the timeout is a failure and the program's output
 * is shown, with where each of its threads was. After the program exits
 * the driver asserts that MOUNT/sessions empties (no session leaked) and that
 * pfmfsd still runs.
 *
 * The first line of a program may change that, as space-separated words:
 *     // pfmfs-test: backends=sim,perf timeout=60 daemon-arg=--sim-width=32
 *   backends=LIST      which runs include it: `sim` (test 'libpfm', the
 *                      default), `perf` (test 'libpfm-perf': pfmfsd
 *                      --pmu=perf --perf-model=sw, real clock, no advance)
 *                      and/or `x86` (pfmfsd --pmu=x86 on pfmfs_helper.ko's
 *                      test PMU, in the QEMU guest: test 'x86' of suite vm,
 *                      tests/vm/x86-mount-tests.sh BUILD libpfm; counts are
 *                      rate x the target's CPU time, see "The x86 backend"
 *                      below)
 *   clock=real         the sim with its real clock (default: manual)
 *   daemon-arg=OPT     one more pfmfsd option (repeat the word for more)
 *   arg=X              one more argument to the program (repeatable)
 *   env=NAME=VALUE     one more environment variable (repeatable)
 *   timeout=S          seconds before the program is killed (default 60),
 *                      times PFMFS_TIME_SCALE (below)
 *   run=no             no test of its own: headers_c.c and headers_bits.c
 *                      (HeaderTest compiles them with several -std=, and
 *                      runs headers_bits.c). churn.c runs plainly
 *                      and is also driven by ChurnTest (SIGKILL, SIGSTOP).
 * Include check.h first: it defines _GNU_SOURCE and includes
 * <perfmon/perfmon.h> and <perfmon/pfmlib.h>.
 *
 * Time
 * ----
 * No program races the machine's speed. What must happen (a signal, a
 * session's end after close(), which FUSE tells the daemon of
 * asynchronously) is polled for, up to wait_ms() (WAIT_MS, 20 s, times
 * PFMFS_TIME_SCALE: the factor by which a run may be slower than a plain
 * build on an idle host, 1 unless the environment sets it, as for the QEMU
 * guest), far more than it takes on a loaded machine under a sanitizer,
 * and less than the program's own timeout, so that a failure names the
 * wait. What must not happen (a second signal) cannot be polled for: it is
 * given a window, quiet_window(), that grows with the slowest wait seen.
 */
#ifndef PFMFS_TESTS_LIBPFM_CHECK_H
#define PFMFS_TESTS_LIBPFM_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/perfmon.h>
#include <perfmon/pfmlib.h>

/* The sim backend (pfmfs(5), "The sim PMU"): rates per ns of target time under the
 * manual clock, and the registers perfmon2 numbers them with. */
#define SIM_INST_PER_NS 2          /* INSTRUCTION_RETIRED, fixed PMD16 */
#define SIM_CYCLES_PER_NS 3        /* UNHALTED_CORE_CYCLES, fixed PMD17 */
#define SIM_REF_CYCLES_X2_PER_NS 5 /* UNHALTED_REFERENCE_CYCLES (2.5/ns), PMD18 */
#define SIM_AVAIL_PMCS 0x1000fULL  /* PERFEVTSEL0-3 and FIXED_CTR_CTRL (pmc16) */
#define SIM_AVAIL_PMDS 0x7000fULL  /* PMC0-3 and FIXED_CTR0-2 (pmd16-18) */
#define SIM_PMC_USR (1ULL << 16)   /* PERFEVTSEL: count at user level */
#define SIM_PMC_OS (1ULL << 17)    /* PERFEVTSEL: count at kernel level */

/* ---- failing ------------------------------------------------------------- */

__attribute__((noreturn, format(printf, 3, 4))) static inline void
check_fail_(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* CHECK(cond, fmt, ...): a printf-style message says what went wrong. */
#define CHECK(cond, ...)                                                  \
	do {                                                              \
		if (!(cond))                                              \
			check_fail_(__FILE__, __LINE__, __VA_ARGS__);     \
	} while (0)

/* Both values are printed in decimal and hex: counts and masks alike. */
#define CHECK_EQ_U64(a, b)                                                     \
	do {                                                                   \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);               \
		if (a_ != b_)                                                  \
			check_fail_(__FILE__, __LINE__,                        \
				    "%s == %s: %" PRIu64 " (0x%" PRIx64        \
				    ") != %" PRIu64 " (0x%" PRIx64 ")",        \
				    #a, #b, a_, a_, b_, b_);                   \
	} while (0)

static inline long check_ok_(long r, int err, const char *file, int line, const char *expr)
{
	if (r < 0)
		check_fail_(file, line, "%s returned %ld: errno %d (%s)", expr, r, err,
			    strerror(err));
	return r;
}

/* CHECK_OK(call): a system-call-like call succeeds (>= 0); yields its value,
 * so `int fd = (int)CHECK_OK(pfm_create_context(...));` works. The comma
 * operators order the call before errno is read (function arguments would
 * not). */
static __thread long check_r_ __attribute__((unused));	/* per thread: CHECK_OK may */
static __thread int check_e_ __attribute__((unused));	/* run in several at once */
#define CHECK_OK(call)                                          \
	(check_r_ = (long)(call), check_e_ = errno,             \
	 check_ok_(check_r_, check_e_, __FILE__, __LINE__, #call))

static inline void check_errno_(long r, int got, int want, const char *file, int line,
				const char *expr, const char *want_name)
{
	if (r != -1)
		check_fail_(file, line, "%s returned %ld, expected -1 with errno %s", expr, r,
			    want_name);
	if (got != want)
		check_fail_(file, line, "%s failed with errno %d (%s), expected %s (%d)", expr,
			    got, strerror(got), want_name, want);
}

/* CHECK_ERRNO(call, EXXX): the call returns -1 with errno EXXX. */
#define CHECK_ERRNO(call, err)                                                    \
	do {                                                                      \
		errno = 0;                                                        \
		long r_ = (long)(call);                                           \
		int e_ = errno;                                                   \
		check_errno_(r_, e_, (err), __FILE__, __LINE__, #call, #err);     \
	} while (0)

/* CHECK_PFM(call): a pfmlib call returns PFMLIB_SUCCESS. */
#define CHECK_PFM(call)                                                          \
	do {                                                                     \
		int p_ = (call);                                                 \
		if (p_ != PFMLIB_SUCCESS)                                        \
			check_fail_(__FILE__, __LINE__, "%s returned %d (%s)", #call, \
				    p_, pfm_strerror(p_));                       \
	} while (0)

/* ---- the mount ----------------------------------------------------------- */

static inline const char *mount_path(void)
{
	const char *m = getenv("PFMFS_MOUNT");

	CHECK(m && *m, "PFMFS_MOUNT is not set: run me from test_libpfm.py");
	return m;
}

/* "sim", "perf" or "x86": the backend the driver started (PFMFS_BACKEND). */
static inline const char *backend_name(void)
{
	const char *b = getenv("PFMFS_BACKEND");

	return b && *b ? b : "sim";
}

static inline int on_backend(const char *name)
{
	return strcmp(backend_name(), name) == 0;
}

/* MOUNT/<printf fmt>, in one of a few rotating buffers of the calling
 * thread: good for the arguments of one call. */
__attribute__((format(printf, 1, 2))) static inline const char *mount_file(const char *fmt, ...)
{
	static __thread char bufs[4][PATH_MAX];
	static __thread unsigned next;
	char *buf = bufs[next++ % 4];
	size_t n;
	va_list ap;

	n = (size_t)snprintf(buf, PATH_MAX, "%s/", mount_path());
	va_start(ap, fmt);
	vsnprintf(buf + n, PATH_MAX - n, fmt, ap);
	va_end(ap);
	return buf;
}

/* The whole file into buf (NUL-terminated): its length, or -1 with errno. */
static inline ssize_t read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) != 0) {
		if (n < 0) {
			err = errno;
			close(fd);
			errno = err;
			return -1;
		}
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fd);
	return (ssize_t)len;
}

/* One write(2) of text, as `echo` does: 0, or -1 with errno. */
static inline int write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, err;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	err = errno;
	close(fd);
	if (n < 0) {
		errno = err;
		return -1;
	}
	CHECK((size_t)n == len, "short write to %s: %zd of %zu bytes", path, n, len);
	return 0;
}

/* The manual clock moves ns on every loaded target; every switch and overflow
 * in the interval is done when this returns, so counts read after are exact. */
static inline void sim_advance(uint64_t ns)
{
	char text[32];

	snprintf(text, sizeof(text), "%" PRIu64 "\n", ns);
	CHECK(write_text(mount_file("pmu/sim/advance"), text) == 0,
	      "advance %" PRIu64 ": %s (needs --pmu=sim --sim-clock=manual)", ns, strerror(errno));
}

/* ---- time ------------------------------------------------------------------ */

#define WAIT_MS 20000	/* the longest anything that must happen may take (see "Time") */

/* PFMFS_TIME_SCALE: how much slower than usual this run may be (>= 1). */
static inline double time_scale(void)
{
	const char *s = getenv("PFMFS_TIME_SCALE");
	double f = s && *s ? strtod(s, NULL) : 1.0;

	return f > 1.0 ? f : 1.0;
}

/* WAIT_MS, scaled: the bound of every wait for what must happen. */
static inline long wait_ms(void)
{
	return (long)(WAIT_MS * time_scale());
}

static inline uint64_t monotonic_ns(void)
{
	struct timespec ts;

	CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0, "clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&t, NULL);
}

/* The longest a wait_count() has waited so far: how slow this run is. */
static uint64_t check_slowest_wait_ns_ __attribute__((unused));

/* Polls until *count (a signal handler bumps it) reaches want, up to
 * wait_ms(); returns its value then. The caller checks it (== want: not
 * one more either). */
static inline int wait_count(volatile sig_atomic_t *count, int want)
{
	uint64_t t0 = monotonic_ns(), took;
	uint64_t bound = (uint64_t)wait_ms() * 1000000ULL;

	while (*count < want && monotonic_ns() - t0 < bound)
		nap_ms(1);
	took = monotonic_ns() - t0;
	if (took > check_slowest_wait_ns_)
		check_slowest_wait_ns_ = took;
	return (int)*count;
}

/* Before checking that something did not happen (a late or second signal):
 * it cannot be polled for, so it gets a window to show in. 200 ms, or four
 * times the slowest wait_count() of this run when that is more (a slow or
 * loaded machine), up to wait_ms(). A correct program passes whatever the
 * window; a shorter one only finds less. */
static inline void quiet_window(void)
{
	uint64_t ms = 4 * check_slowest_wait_ns_ / 1000000ULL;

	if (ms < 200)
		ms = 200;
	if (ms > (uint64_t)wait_ms())
		ms = (uint64_t)wait_ms();
	nap_ms((long)ms);
}

/* ---- sessions ---------------------------------------------------------------- */

/* The sessions that exist now whose name starts with prefix (entries of
 * MOUNT/sessions; "" counts them all). */
static inline int count_sessions_named(const char *prefix)
{
	DIR *d = opendir(mount_file("sessions"));
	struct dirent *e;
	size_t len = strlen(prefix);
	int n = 0;

	CHECK(d != NULL, "opendir sessions: %s", strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    strncmp(e->d_name, prefix, len) == 0)
			n++;
	closedir(d);
	return n;
}

/* The sessions that exist now, anyone's. */
static inline int count_sessions(void)
{
	return count_sessions_named("");
}

/* Waits for exactly n sessions named prefix* (the daemon destroys a session
 * when its last msg handle closes, which FUSE tells it of a moment after
 * close() returned: later on a loaded machine), up to wait_ms(); returns the
 * last count seen. */
static inline int wait_sessions_named(const char *prefix, int n)
{
	uint64_t t0 = monotonic_ns(), bound = (uint64_t)wait_ms() * 1000000ULL;
	int count;

	while ((count = count_sessions_named(prefix)) != n && monotonic_ns() - t0 < bound)
		nap_ms(5);
	return count;
}

/* Waits for exactly n sessions on the mount (see wait_sessions_named). */
static inline int wait_sessions(int n)
{
	return wait_sessions_named("", n);
}

/* The prefix of this process's contexts' sessions: libpfm-compat names them
 * pfm.PID.N (docs/libpfm-compat.md). */
static inline const char *own_sessions(void)
{
	static char prefix[32];

	snprintf(prefix, sizeof(prefix), "pfm.%d.", (int)getpid());
	return prefix;
}

/* To call on a thread before the first signal can reach it. GCC 12's
 * ThreadSanitizer runtime makes a thread's signal state lazily, at its first
 * blocking call, and a signal that arrives while it does so is lost: the
 * runtime's handler makes a second state, queues the signal there, and the
 * interrupted call then installs its own (later runtimes take the race with a
 * compare-and-swap). Traced with the kernel's signal tracepoints: the signal
 * was delivered to the thread, the runtime's handler ran, the program's
 * never did. One blocking call at a quiet moment makes that state; anywhere
 * else it is a zero-length sleep. */
static inline void signals_ready(void)
{
	struct timespec zero = { 0, 0 };

	nanosleep(&zero, NULL);
}

/* The calling thread's id (glibc's gettid() needs 2.30; this works on any). */
static inline pid_t tid_self(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- pfmfsd stopped: what answers without the mount ---------------------- */
/* The fast path's tests stop the daemon (SIGSTOP) to show that a read did
 * not ask the mount: such a request would wait for it. daemon_stop() finds
 * its pid in pmu/info (fastpath_pid=PID) and starts a
 * watchdog thread: if daemon_continue() has not come within `seconds` (times
 * PFMFS_TIME_SCALE; what the program does meanwhile takes milliseconds), it
 * lets the daemon go on (which lets the stuck request finish: a FUSE
 * request ignores other signals once it is sent) and fails the program. The
 * daemon goes on at exit too. */
static pid_t check_stopped_daemon_ __attribute__((unused));	/* __atomic */

static inline void daemon_continue(void)
{
	pid_t pid = __atomic_exchange_n(&check_stopped_daemon_, 0, __ATOMIC_ACQ_REL);
	if (pid > 0)
		kill(pid, SIGCONT);
}

static inline void *check_daemon_watchdog_(void *arg)
{
	static const char msg[] = "FAIL: a call waited for pfmfsd while it was stopped: it asked the mount\n";
	uint64_t t0 = monotonic_ns(), bound = (uint64_t)(uintptr_t)arg * 1000000ULL;

	while (monotonic_ns() - t0 < bound) {
		if (!__atomic_load_n(&check_stopped_daemon_, __ATOMIC_ACQUIRE))
			return NULL;
		nap_ms(10);
	}
	daemon_continue();
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static inline void daemon_stop(unsigned seconds)
{
	static const char key[] = " fastpath_pid=";
	char path[PATH_MAX], info[1024];
	const char *p;
	pthread_t watchdog;
	snprintf(path, sizeof(path), "%s/pmu/info", mount_path());
	CHECK(read_text(path, info, sizeof(info)) > 0, "cannot read %s", path);
	p = strstr(info, key);
	CHECK(p != NULL && strstr(info, ",fastpath"), "pmu/info offers no fast path: %s", info);
	atexit(daemon_continue);
	__atomic_store_n(&check_stopped_daemon_, (pid_t)strtol(p + strlen(key), NULL, 10), __ATOMIC_RELEASE);
	CHECK(kill(check_stopped_daemon_, SIGSTOP) == 0, "SIGSTOP pfmfsd: %s", strerror(errno));
	CHECK(pthread_create(&watchdog, NULL, check_daemon_watchdog_,
			     (void *)(uintptr_t)(seconds * 1000.0 * time_scale())) == 0,
	      "pthread_create");
	pthread_detach(watchdog);
}

/* ---- a descriptor's session ---------------------------------------------- */

/* The session directory behind a libpfm descriptor: the descriptor is an open
 * file directly inside sessions/NAME/, so /proc/self/fd names it. One static
 * buffer: call it (and session_text) from one thread at a time. */
static inline const char *fd_session_dir(int fd)
{
	static char dir[PATH_MAX];
	char link[64];
	ssize_t n;
	char *slash;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, dir, sizeof(dir) - 1);
	CHECK(n > 0, "readlink %s: %s", link, strerror(errno));
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	CHECK(slash != NULL && strstr(dir, "/sessions/") != NULL,
	      "descriptor %d is %s: not a file of a session", fd, dir);
	*slash = '\0';
	return dir;
}

/* A file of the descriptor's session (e.g. "state", "sets/0/info") into buf;
 * fails the test if it cannot be read. */
static inline const char *session_text(int fd, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", fd_session_dir(fd), file);
	CHECK(read_text(path, buf, size) >= 0, "read %s: %s", path, strerror(errno));
	return buf;
}

/* The value of `key=` in a key=value line (decimal or 0x hex); fails the
 * test when the key is missing. */
static inline uint64_t kv_u64(const char *text, const char *key)
{
	size_t klen = strlen(key);
	const char *p = text;

	while ((p = strstr(p, key)) != NULL) {
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[klen] == '=')
			return strtoull(p + klen + 1, NULL, 0);
		p += klen;
	}
	check_fail_(__FILE__, __LINE__, "no %s= in \"%s\"", key, text);
}

/* CHECK_STATE(fd, "loaded"): the session's `state=` is that word. */
#define CHECK_STATE(fd, want)                                                       \
	do {                                                                        \
		char st_[256];                                                      \
		const char *w_ = (want);                                            \
		size_t wl_ = strlen(w_);                                            \
		session_text((fd), "state", st_, sizeof(st_));                      \
		if (strncmp(st_, "state=", 6) != 0 || strncmp(st_ + 6, w_, wl_) != 0 \
		    || st_[6 + wl_] != ' ')                                         \
			check_fail_(__FILE__, __LINE__, "state of fd %d is \"%s\", expected state=%s", \
				    (fd), st_, w_);                                 \
	} while (0)

/* ---- the x86 backend's test PMU ------------------------------------------ */

/*
 * On x86 (pfmfs_helper.ko emulate=1) a thread's counter counts rate x the ns
 * the thread is on a cpu with its image loaded, user and kernel time alike:
 * cycles 3/ns, instructions 2/ns, reference cycles 2.5/ns (the sim's rates,
 * kept here per 2 ns to stay integers). A program checks such a count against
 * its own CPU time (CLOCK_THREAD_CPUTIME_ID) in a bracket, as tests/kmod's
 * t_count.c does: the outer CPU times are taken before the call that starts
 * counting and after the one that stops it, the inner ones right after and
 * right before them, so the count is at least rate x inner but for the
 * slack below, and at most rate x the outer window (of CLOCK_MONOTONIC,
 * below). That only widens with a loaded host or TCG's noise (the clocks are
 * exact), and a count that runs while stopped, stops early or counts at
 * another rate falls out of it.
 *
 * Slack (tests/kmod/t_count.c measured it): the module loads the image at the
 * sched_switch tracepoint, a little after the scheduler started the thread's
 * clock, and saves it a little after it stopped it, and its probe's own work
 * is not counted: about 110 us per switch-in and -out under TCG, where every
 * emulated MSR access is slow; 250 us per context switch of the window
 * (getrusage(RUSAGE_THREAD) counts them: every FUSE call sleeps), and 20 ms
 * once for the host descheduling the VM in the middle of a probe. Windows of
 * X86_RUN_NS of CPU time keep the slack under a tenth of what counts.
 *
 * Above, the bound is not the CPU time: the test PMU counts every ns a
 * thread is on its cpu with its image loaded, by the module's reading of
 * CLOCK_MONOTONIC, and under TCG that runs ahead of the scheduler's CPU time
 * as the host gets busier (6% to 8% with both host cores busy; once an
 * overflow period of 100 ms after 0.13 ms of CPU time: a host that stops the
 * guest in an interrupt charges the stop to no thread). So a count stands for
 * no more than the CLOCK_MONOTONIC time of its window, the bracket's outer
 * readings taken of that clock too, but for X86_MONO_SLACK_NS (the module's
 * NMI-safe reading of the clock and rounding). That bound holds on any host,
 * however loaded; a count that ran on while stopped or counted at another
 * rate falls out of it all the same, since the program spins through its
 * window.
 */
#define X86_SLACK_NS 20000000ULL
#define X86_MONO_SLACK_NS 1000000ULL
#define X86_SWITCH_SLACK_NS 250000ULL
#define X86_RUN_NS 250000000ULL		/* CPU time burnt in one window */
#define X86_INST_PER_2NS 4
#define X86_CYCLES_PER_2NS 6
#define X86_REF_CYCLES_PER_2NS 5

/* The calling thread's CPU time. */
static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	CHECK(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0, "clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The calling thread's context switches, voluntary and not. */
static inline long thread_switches(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0, "getrusage: %s", strerror(errno));
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

/* Spins until the thread has had ns more of CPU time. */
static inline void burn_cpu_ns(uint64_t ns)
{
	uint64_t end = thread_cpu_ns() + ns;
	volatile uint64_t sink = 0;

	while (thread_cpu_ns() < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

/* A counting window of the calling thread (see above). */
struct cpu_window {
	uint64_t o0, i0, i1, o1;	/* outer and inner CPU times */
	uint64_t m0, m1;		/* CLOCK_MONOTONIC at o0 and o1 */
	long sw0, sw1;			/* context switches at o0 and o1 */
};

/* Before the call that starts counting. */
static inline void window_open(struct cpu_window *w)
{
	w->sw0 = thread_switches();
	w->m0 = monotonic_ns();
	w->o0 = thread_cpu_ns();
}

/* Between start and stop: ns of CPU time, bracketed by the inner times. */
static inline void window_burn(struct cpu_window *w, uint64_t ns)
{
	w->i0 = thread_cpu_ns();
	burn_cpu_ns(ns);
	w->i1 = thread_cpu_ns();
}

/* After the call that stops counting. */
static inline void window_close(struct cpu_window *w)
{
	w->o1 = thread_cpu_ns();
	w->m1 = monotonic_ns();
	w->sw1 = thread_switches();
}

/* CHECK_WINDOW(count, per_2ns, &w): count (what counted in the window) is
 * per_2ns/2 per ns of the window's CPU time, within the bracket above. */
#define CHECK_WINDOW(count, per_2ns, w) \
	check_window_((count), (per_2ns), (w), __FILE__, __LINE__, #count)

static inline void check_window_(uint64_t count, uint64_t per_2ns, const struct cpu_window *w,
				 const char *file, int line, const char *what)
{
	uint64_t slack = X86_SLACK_NS + X86_SWITCH_SLACK_NS * (uint64_t)(w->sw1 - w->sw0);
	uint64_t inner = w->i1 - w->i0, outer = w->m1 - w->m0;
	uint64_t ns = count * 2 / per_2ns;	/* the time the count stands for */

	if (w->m1 <= w->m0)	/* a window built by hand without its monotonic readings */
		check_fail_(file, line, "%s: the window has no CLOCK_MONOTONIC readings (m0 %" PRIu64 ", m1 %" PRIu64 ")",
			    what, w->m0, w->m1);
	printf("%s: %" PRIu64 " counted: %" PRIu64 " ns; the window had %" PRIu64 " ns of CPU time inside, %" PRIu64
	       " of CPU time and %" PRIu64 " ns in all outside, %ld switches\n",
	       what, count, ns, inner, w->o1 - w->o0, outer, w->sw1 - w->sw0);
	if (ns + slack < inner || ns > outer + X86_MONO_SLACK_NS)
		check_fail_(file, line, "%s = %" PRIu64 ": %" PRIu64 " ns at %" PRIu64 "/2 per ns, outside [%" PRIu64
			    " ns of CPU time (slack %" PRIu64 " ns), %" PRIu64 " ns of the monotonic clock]",
			    what, count, ns, per_2ns, inner, slack, outer);
}

/* x86: what counted since a reset (a pfm_restart, a write) is no more than
 * the thread's CPU time since, at the rate, but for the slack. window_mark()
 * just before the call that resets the counter (it is async-signal-safe: a
 * handler may mark its own pfm_restart), CHECK_SINCE(count, per_2ns, mark)
 * when it has been read. The CPU time, not a fixed bound: a host that
 * deschedules the guest meanwhile makes both longer. */
static inline void window_mark(struct cpu_window *w)
{
	struct timespec ts = { 0, 0 };
	struct rusage ru;

	memset(&ru, 0, sizeof(ru));
	getrusage(RUSAGE_THREAD, &ru);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	w->sw0 = ru.ru_nvcsw + ru.ru_nivcsw;
	w->o0 = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	w->m0 = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	w->i0 = w->i1 = 0;	/* no inner bracket: nothing need have counted */
}

#define CHECK_SINCE(count, per_2ns, mark) \
	check_since_((count), (per_2ns), (mark), __FILE__, __LINE__, #count)

static inline void check_since_(uint64_t count, uint64_t per_2ns, struct cpu_window w, const char *file,
				int line, const char *what)
{
	window_close(&w);
	check_window_(count, per_2ns, &w, file, line, what);
}

/*
 * x86 overflows: a counter that starts at -period counts the thread's CPU
 * time, so the program's own spinning drives it to the wrap; the NMI freezes
 * the counters, the daemon masks or resets them and the library signals the
 * program. X86_PERIOD_NS of CPU time per period keeps a period five times the
 * slack above, so an overflow that came early (a wrong reset value, a count
 * that ran on) shows, and what the program does between overflows (a FUSE
 * call is tens to hundreds of us under TCG) cannot reach the next one.
 */
#define X86_PERIOD_NS 100000000ULL	/* 100 ms of CPU time */
#define X86_INST_PERIOD (X86_PERIOD_NS * X86_INST_PER_2NS / 2)

/* CHECK_NOT_EARLY(n, mono_ns, counted_ns): overflow n was seen mono_ns
 * (CLOCK_MONOTONIC) after the reset before it, for a period (and whatever
 * else counted since) of counted_ns: not early. */
#define CHECK_NOT_EARLY(n, mono_ns, counted_ns)                                                      \
	CHECK((counted_ns) <= (mono_ns) + X86_MONO_SLACK_NS,                                               \
	      "overflow %d seen %" PRIu64 " ns after the reset before it: early, for it stands for %" \
	      PRIu64 " ns", (int)(n), (uint64_t)(mono_ns), (uint64_t)(counted_ns))

/* Spins until *count reaches want (a signal handler bumps it); returns the
 * thread's CPU time when it saw it. A period of CPU time and the signal's
 * way take well under a second; it fails after wait_ms(). */
static inline uint64_t spin_until(volatile sig_atomic_t *count, int want)
{
	uint64_t t0 = monotonic_ns(), took;

	while (*count < want) {
		burn_cpu_ns(100000);
		took = monotonic_ns() - t0;
		CHECK(took < (uint64_t)wait_ms() * 1000000ULL,
		      "%d signals after %.1f s of spinning (%.1f s of CPU time), expected %d", (int)*count,
		      (double)took / 1e9, (double)thread_cpu_ns() / 1e9, want);
	}
	took = monotonic_ns() - t0;
	if (took > check_slowest_wait_ns_)
		check_slowest_wait_ns_ = took;
	return thread_cpu_ns();
}

#endif /* PFMFS_TESTS_LIBPFM_CHECK_H */
