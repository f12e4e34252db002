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
 *     PFMFS_BACKEND  sim or perf
 * Exit 0 is a pass; 77 a skip (a failure under CI=true); anything else, a
 * signal or running past the timeout is a failure and the program's output
 * is shown. After the program exits the driver asserts that MOUNT/sessions
 * is empty within 2 s (no session leaked) and that pfmfsd still runs.
 *
 * The first line of a program may change that, as space-separated words:
 *     // pfmfs-test: backends=sim,perf timeout=60 daemon-arg=--sim-width=32
 *   backends=LIST      which runs include it: `sim` (test 'libpfm', the
 *                      default) and/or `perf` (test 'libpfm-perf': pfmfsd
 *                      --pmu=perf --perf-model=sw, real clock, no advance)
 *   clock=real         the sim with its real clock (default: manual)
 *   daemon-arg=OPT     one more pfmfsd option (repeat the word for more)
 *   arg=X              one more argument to the program (repeatable)
 *   env=NAME=VALUE     one more environment variable (repeatable)
 *   timeout=S          seconds before the program is killed (default 30)
 *   run=no             no test of its own: headers_c.c (HeaderTest
 *                      compiles it with several -std=). churn.c runs plainly
 *                      and is also driven by ChurnTest (SIGKILL, SIGSTOP).
 * Include check.h first: it defines _GNU_SOURCE and includes
 * <perfmon/perfmon.h> and <perfmon/pfmlib.h>.
 */
#ifndef PFMFS_TESTS_LIBPFM_CHECK_H
#define PFMFS_TESTS_LIBPFM_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <perfmon/perfmon.h>
#include <perfmon/pfmlib.h>

/* The sim backend (SPEC section 4): rates per ns of target time under the
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

/* "sim" or "perf": the backend the driver started (PFMFS_BACKEND). */
static inline const char *backend_name(void)
{
	const char *b = getenv("PFMFS_BACKEND");

	return b && *b ? b : "sim";
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

/* The sessions that exist now (entries of MOUNT/sessions). */
static inline int count_sessions(void)
{
	DIR *d = opendir(mount_file("sessions"));
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL, "opendir sessions: %s", strerror(errno));
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* Waits up to timeout_ms for exactly n sessions (the daemon destroys a
 * session when its last msg handle closes: a moment after close()); returns
 * the last count seen. */
static inline int wait_sessions(int n, int timeout_ms)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };
	int count, waited = 0;

	while ((count = count_sessions()) != n && waited < timeout_ms) {
		nanosleep(&pause, NULL);
		waited += 5;
	}
	return count;
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

#endif /* PFMFS_TESTS_LIBPFM_CHECK_H */
