/*
 * kt.c - the helpers of kt.h and main(): `kmod_test NAME` runs one test and
 * exits 0 when it passed, 1 (with the reason on stderr) when it failed.
 */
#include "kt.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *kt_test_name = "?";

void kt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "FAIL %s: %s:%d: %s: ", kt_test_name, file, line, expr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

void kt_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "  %s: ", kt_test_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *kt_errname(long r)
{
	static __thread char buf[32];

	if (r == 0)
		return "0";
	if (r < 0) {
		const char *n = strerrorname_np((int)-r);

		snprintf(buf, sizeof(buf), "-%s", n ? n : "?");
	} else {
		snprintf(buf, sizeof(buf), "%ld", r);
	}
	return buf;
}

int kt_open_raw(int flags)
{
	int fd = open(PFMFS_HELPER_DEVICE, O_RDWR | O_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

int kt_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

int kt_hello(int fd, struct pfmfs_helper_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->abi_version = PFMFS_HELPER_ABI_VERSION;
	h->size = sizeof(*h);
	return kt_ioctl(fd, PFMFS_HELPER_IOC_HELLO, h);
}

int kt_open(void)
{
	struct pfmfs_helper_hello h;
	int fd = kt_open_raw(0);

	CHECK(fd >= 0, "open %s: %s", PFMFS_HELPER_DEVICE, kt_errname(fd));
	CHECK_OK(kt_hello(fd, &h));
	return fd;
}

int kt_batch(int fd, unsigned long req, uint32_t target, uint32_t id,
	     struct pfmfs_helper_msr *ops, uint32_t count)
{
	struct pfmfs_helper_batch b = {
		.ops = (uintptr_t)ops, .count = count, .target = target, .id = id,
	};

	return kt_ioctl(fd, req, &b);
}

int kt_rd(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t *value)
{
	struct pfmfs_helper_msr op = { .msr = msr };
	int r = kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, target, id, &op, 1);

	*value = op.value;
	return r;
}

int kt_wr(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t value)
{
	struct pfmfs_helper_msr op = { .msr = msr, .value = value };

	return kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, target, id, &op, 1);
}

uint64_t kt_rd_ok(int fd, uint32_t target, uint32_t id, uint32_t msr)
{
	uint64_t v = 0;
	int r = kt_rd(fd, target, id, msr, &v);

	CHECK(r == 0, "read MSR 0x%x of %s %u: %s", msr,
	      target == CPU ? "cpu" : "thread", id, kt_errname(r));
	return v;
}

void kt_wr_ok(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t value)
{
	int r = kt_wr(fd, target, id, msr, value);

	CHECK(r == 0, "write MSR 0x%x = 0x%llx of %s %u: %s", msr,
	      (unsigned long long)value, target == CPU ? "cpu" : "thread", id,
	      kt_errname(r));
}

int kt_target(int fd, unsigned long req, uint32_t target, uint32_t id)
{
	struct pfmfs_helper_target t = { .target = target, .id = id };

	return kt_ioctl(fd, req, &t);
}

struct pfmfs_helper_stats kt_stats(int fd)
{
	struct pfmfs_helper_stats s;

	memset(&s, 0xff, sizeof(s));
	CHECK_OK(kt_ioctl(fd, PFMFS_HELPER_IOC_STATS, &s));
	return s;
}

struct pfmfs_helper_cpu_state kt_cpu_state(int fd, uint32_t cpu)
{
	struct pfmfs_helper_cpu_state st = { .cpu = cpu };

	CHECK_OK(kt_ioctl(fd, PFMFS_HELPER_IOC_CPU_STATE, &st));
	return st;
}

int kt_read_record(int fd, struct pfmfs_helper_record *rec, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int r;

	r = poll(&p, 1, timeout_ms);
	CHECK(r >= 0, "poll: %s", strerror(errno));
	if (r == 0)
		return 0;
	n = read(fd, rec, sizeof(*rec));
	CHECK(n == sizeof(*rec), "read of a record: %zd (%s)", n,
	      n < 0 ? strerror(errno) : "short");
	return 1;
}

uint64_t kt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void kt_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

pid_t kt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void kt_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "pin to cpu %d: %s",
	      cpu, strerror(errno));
}

int kt_ncpus(void)
{
	return (int)sysconf(_SC_NPROCESSORS_ONLN);
}

static int kt_proc_read(pid_t tid, const char *what, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", tid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/*
 * The kernel's CPU-time clocks (posix-cpu-timers): a thread's own clock
 * for a thread of this process, the process clock for another process (our
 * children are single-threaded). Unlike /proc/TID/schedstat they include
 * the running slice up to now.
 */
#define KT_CPUCLOCK_SCHED	2
#define KT_CPUCLOCK_PERTHREAD	4
#define KT_CPUCLOCK(pid, thread) \
	((clockid_t)((~(unsigned int)(pid) << 3) | KT_CPUCLOCK_SCHED | \
		     ((thread) ? KT_CPUCLOCK_PERTHREAD : 0)))

uint64_t kt_cputime(pid_t tid)
{
	struct timespec ts;

	if (clock_gettime(KT_CPUCLOCK(tid, 1), &ts) &&
	    clock_gettime(KT_CPUCLOCK(tid, 0), &ts))
		kt_fail(__FILE__, __LINE__, "clock_gettime", "CPU clock of %d: %s",
			tid, strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A thread's own CPU time (its sum_exec_runtime), also once it is a zombie:
 * the first field of /proc/TID/schedstat. (kt_cputime's clock of another
 * process is the whole process's, its exited threads included.)
 */
uint64_t kt_own_cputime(pid_t tid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	CHECK(f != NULL, "%s: %s", path, strerror(errno));
	CHECK(fscanf(f, "%llu", &ns) == 1, "%s: no CPU time", path);
	fclose(f);
	return ns;
}

long kt_ctxt(pid_t tid, int voluntary)
{
	const char *key = voluntary ? "voluntary_ctxt_switches:" :
				      "nonvoluntary_ctxt_switches:";
	char buf[4096], *p;

	CHECK(kt_proc_read(tid, "status", buf, sizeof(buf)) == 0,
	      "/proc/%d/status", tid);
	p = strstr(buf, key);
	CHECK(p, "/proc/%d/status has no %s", tid, key);
	if (voluntary && p > buf && p[-1] == 'n')
		p = strstr(p + 1, key);
	return strtol(p + strlen(key), NULL, 10);
}

char kt_state(pid_t tid)
{
	char buf[512], *p;

	if (kt_proc_read(tid, "stat", buf, sizeof(buf)))
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

void kt_wait_off_cpu(pid_t tid)
{
	char buf[256];
	int i;

	/*
	 * State S is set before the switch-out, which may come late when the
	 * host stops the guest's CPU in between. A read of /proc/TID/syscall
	 * waits in the kernel until the thread is off its CPU
	 * (wait_task_inactive), and says "running" if it ran again: a blocked
	 * thread's line, once read, means its switch-out has happened.
	 */
	for (i = 0; i < 60000; i++) {
		if (kt_state(tid) == 'S' && kt_proc_read(tid, "syscall", buf, sizeof(buf)) == 0 &&
		    strncmp(buf, "running", 7) != 0)
			return;
		kt_sleep_ms(1);
	}
	CHECK(0, "thread %d is not off its CPU after 60 s (state %c)", tid, kt_state(tid));
}

/* Spins until *stop: no call, no system call, in this program's text. */
__attribute__((noinline)) void kt_spin(volatile int *stop)
{
	unsigned long x = 1;

	while (!*stop)
		x = x * 3 + 1;
	__asm__ volatile("" : : "r"(x));
}

struct kt_start {
	struct kt_thread *t;
	volatile int ready;
};

static void *kt_thread_main(void *arg)
{
	struct kt_start *s = arg;
	struct kt_thread *t = s->t;

	if (t->cpu >= 0)
		kt_pin(t->cpu);
	t->tid = kt_gettid();
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	switch (t->mode) {
	case KT_SPIN:
		kt_spin(&t->stop);
		break;
	case KT_SLEEP:
		while (!t->stop)
			kt_sleep_ms(20);
		break;
	case KT_BLOCK:
		while (!t->stop)
			pause();
		break;
	}
	return NULL;
}

void kt_thread_start(struct kt_thread *t, enum kt_mode mode, int cpu)
{
	struct kt_start s = { .t = t };

	t->mode = mode;
	t->cpu = cpu;
	t->stop = 0;
	t->tid = 0;
	CHECK(pthread_create(&t->th, NULL, kt_thread_main, &s) == 0,
	      "pthread_create");
	while (!__atomic_load_n(&s.ready, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void kt_wake(int sig)
{
	(void)sig;
}

void kt_thread_stop(struct kt_thread *t)
{
	t->stop = 1;
	signal(SIGUSR1, kt_wake);
	pthread_kill(t->th, SIGUSR1);
	pthread_join(t->th, NULL);
}

static const struct kt_test kt_tests[] = {
	{ "hello", t_hello },
	{ "perm", t_perm },
	{ "allowlist", t_allowlist },
	{ "garbage", t_garbage },
	{ "exclusive", t_exclusive },
	{ "cpu_count", t_cpu_count },
	{ "busy_sleep", t_busy_sleep },
	{ "two_cpus", t_two_cpus },
	{ "shared_cpu", t_shared_cpu },
	{ "ctrl_writes", t_ctrl_writes },
	{ "overflow", t_overflow },
	{ "overflow_cpu", t_overflow_cpu },
	{ "lost", t_lost },
	{ "shape", t_shape },
	{ "hold", t_hold },
	{ "exit_fork", t_exit_fork },
	{ "kill9", t_kill9 },
	{ "stress", t_stress },
	{ "inherit_fork", t_inherit_fork },
	{ "inherit_tree", t_inherit_tree },
	{ "inherit_template", t_inherit_template },
	{ "inherit_off", t_inherit_off },
	{ "inherit_refuse", t_inherit_refuse },
	{ "inherit_close", t_inherit_close },
	{ "inherit_lost", t_inherit_lost },
	{ "inherit_race", t_inherit_race },
	{ "inherit_dup", t_inherit_dup },
};

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < sizeof(kt_tests) / sizeof(kt_tests[0]); i++)
			printf("%s\n", kt_tests[i].name);
		return 0;
	}
	/* Helpers of run.sh's coexist test: open DEVICE and hold it, or try. */
	if (argc == 3 && !strcmp(argv[1], "open_hold")) {
		struct pfmfs_helper_hello h;
		char c;
		int fd = open(argv[2], O_RDWR);

		if (fd < 0 || kt_hello(fd, &h) ||
		    kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 0)) {
			printf("%s\n", strerrorname_np(errno));
			return 1;
		}
		printf("open\n");
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "open_try")) {
		int fd = open(argv[2], O_RDWR);

		printf("%s\n", fd < 0 ? strerrorname_np(errno) : "0");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s --list | TEST\n", argv[0]);
		return 2;
	}
	for (i = 0; i < sizeof(kt_tests) / sizeof(kt_tests[0]); i++) {
		if (!strcmp(argv[1], kt_tests[i].name)) {
			kt_test_name = kt_tests[i].name;
			kt_tests[i].run();
			return 0;
		}
	}
	fprintf(stderr, "%s: no test %s\n", argv[0], argv[1]);
	return 2;
}
