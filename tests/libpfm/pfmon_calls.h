/*
 * pfmon_calls.h: what pfmon_calls.c and pfmon_smpl.c share: the calls pfmon
 * 3.4 makes, in its order and with its arguments' shapes, as a trace of
 * pfmon on pfmfs recorded them (pfmon's own function names in the comments):
 *  - its prologue: the perfmon version read with fopen and getline (2.2 or
 *    later: event sets), pfm_initialize, the library's version, the PMU type
 *    (pfmon refuses a type it has no support for) and name, the default event,
 *    the -e events found with pfm_find_full_event, pfm_set_options;
 *  - per event set, a probe context (pfm_create_context with no format,
 *    pfm_getinfo_evtsets of set 0, close) whose set_avail_pmcs it turns into
 *    pfp_unavail_pmcs, then pfm_dispatch_events with a zeroed
 *    pfmlib_gen_ia32_input_param_t as model_in and a NULL model_out;
 *  - a per-task context: FD_CLOEXEC, one pfm_create_evtsets per set, each
 *    set's PMCs and PMDs, load, pfm_start(fd, NULL) from pfmon's thread; at
 *    the end, each set's PMDs and pfm_getinfo_evtsets, and close, with no
 *    stop nor unload (the task has exited);
 *  - the command pfmon monitors (task_create: vfork, PTRACE_TRACEME, exec;
 *    it stays traced), which is this program again (--serve): it reads work
 *    orders on its stdin, answers each on its stdout, and exits at EOF. On
 *    perf an order is real work (fresh pages written, CPU time burnt); on
 *    the sim nothing: the manual clock's advance is the command's time.
 * Include check.h first.
 */
#ifndef PFMFS_TESTS_LIBPFM_PFMON_CALLS_H
#define PFMFS_TESTS_LIBPFM_PFMON_CALLS_H

#include <perfmon/pfmlib_gen_ia32.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#define MAX_SETS 2
#define PMC_USR_INT_EN 0x510000ULL	/* PERFEVTSEL (and perf-sw's): USR, INT, EN */
#define SIM_FIXED01_USR_PMI 0xaaULL	/* FIXED_CTR_CTRL: fixed 0 and 1, USR and PMI */
#define WORK_PAGES 64			/* perf: pages an order writes */
#define WORK_BURN_NS 20000000ULL	/* perf: CPU time an order burns */

static int on_sim __attribute__((unused));

/* One of pfmon's event sets: pfmlib's input as pfmon fills it (its -e list),
 * the dispatch's output. */
struct pfmon_set {
	pfmlib_input_param_t inp;
	pfmlib_output_param_t outp;
};

/* What pfmon reads of a set at the end. */
struct set_result {
	uint64_t v[2];
	pfarg_setinfo_t si;
};

/* pfmon_get_version(): perfmon 2.0's /proc/perfmon first (absent), then
 * /sys/kernel/perfmon/version with fopen and getline, "M.m" cut at the dot. */
static inline unsigned int pfmon_version(void)
{
	char *buf = NULL, *dot;
	size_t len = 0;
	unsigned int v;
	FILE *fp;

	errno = 0;
	fp = fopen("/proc/perfmon", "r");
	CHECK(fp == NULL && errno == ENOENT, "/proc/perfmon: %s", fp ? "exists" : strerror(errno));
	fp = fopen("/sys/kernel/perfmon/version", "r");
	CHECK(fp != NULL, "fopen /sys/kernel/perfmon/version: %s", strerror(errno));
	CHECK(getline(&buf, &len, fp) > 0, "getline of the version: %s", strerror(errno));
	dot = strchr(buf, '.');
	CHECK(dot != NULL, "version \"%s\" has no '.'", buf);
	*dot = '\0';
	v = (unsigned int)atoi(buf) << 16 | (unsigned int)atoi(dot + 1);
	free(buf);
	fclose(fp);
	return v;
}

/* pfmon_check_smpl_module(): a sampling run looks for its format as it
 * parses its options: "default" among /sys/kernel/perfmon/formats' entries. */
static inline void pfmon_find_format(const char *name)
{
	struct dirent *de;
	int found = 0;
	DIR *dir;

	dir = opendir("/sys/kernel/perfmon/formats");
	CHECK(dir != NULL, "opendir /sys/kernel/perfmon/formats: %s (pfmon: \"unable to open\", cannot proceed)",
	      strerror(errno));
	while (!found && (de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		found = strcmp(de->d_name, name) == 0;
	}
	closedir(dir);
	CHECK(found, "no format %s in /sys/kernel/perfmon/formats", name);
}

/* The prologue: names[2i], names[2i+1] are set i's events; smpl_fmt,
 * a sampling run's format (or NULL). */
static inline void pfmon_prologue(const char *const *names, int nsets, struct pfmon_set *sets, const char *smpl_fmt)
{
	unsigned int version, lib = 0, counters = 0;
	size_t len = 0;
	int type = -1, r;
	pfmlib_event_t e;
	pfmlib_options_t opt;
	char name[64];

	version = pfmon_version();
	printf("perfmon %u.%u\n", version >> 16, version & 0xffff);
	CHECK(version >= (2U << 16 | 2), "perfmon %#x: pfmon wants 2.2 or later for event sets", version);
	CHECK_PFM(pfm_initialize());
	CHECK_PFM(pfm_get_version(&lib));
	CHECK(PFM_VERSION_MAJOR(lib) >= 3 && PFM_VERSION_MINOR(lib) >= 2, "libpfm %#x: pfmon needs 3.2", lib);
	CHECK_EQ_U64(lib, PFMLIB_VERSION);
	CHECK_PFM(pfm_get_pmu_type(&type));
	CHECK(type == PFMLIB_GEN_IA32_PMU, "PMU type %d: pfmon has no support for it (wants %d)", type,
	      PFMLIB_GEN_IA32_PMU);
	CHECK_PFM(pfm_get_num_counters(&counters));
	CHECK_EQ_U64(counters, on_sim ? 7 : 8);
	CHECK_PFM(pfm_get_pmu_name(name, sizeof(name)));
	CHECK(strcmp(name, on_sim ? "intel-arch-v2" : "perf-sw") == 0, "PMU name \"%s\"", name);
	CHECK_PFM(pfm_get_max_event_name_len(&len));
	CHECK(len > 0 && len < sizeof(name), "longest event name: %zu", len);

	/* The default event: the cycle event (perf-sw has none: pfmon takes
	 * event 0 and goes on). */
	memset(&e, 0, sizeof(e));
	r = pfm_get_cycle_event(&e);
	CHECK(on_sim ? r == PFMLIB_SUCCESS : r != PFMLIB_SUCCESS, "pfm_get_cycle_event: %d", r);
	CHECK_PFM(pfm_get_full_event_name(&e, name, len + 1));
	CHECK(strcmp(name, on_sim ? "UNHALTED_CORE_CYCLES" : "CPU_CLOCK") == 0, "default event \"%s\"", name);

	memset(sets, 0, sizeof(*sets) * (size_t)nsets);
	for (int i = 0; i < 2 * nsets; i++) {
		memset(&e, 0, sizeof(e));
		CHECK_PFM(pfm_find_full_event(names[i], &e));
		CHECK_EQ_U64(e.num_masks, 0);
		CHECK_PFM(pfm_get_full_event_name(&e, name, len + 1));	/* what pfmon prints */
		printf("-e %s: event %u, %s\n", names[i], e.event, name);
		e.plm = PFM_PLM3;
		sets[i / 2].inp.pfp_events[i % 2] = e;
		sets[i / 2].inp.pfp_event_count = 2;
		sets[i / 2].inp.pfp_dfl_plm = PFM_PLM3;
	}
	if (smpl_fmt)
		pfmon_find_format(smpl_fmt);
	memset(&opt, 0, sizeof(opt));
	CHECK_PFM(pfm_set_options(&opt));
}

/* Per set (run_measurements): the probe context, then the dispatch. */
static inline void pfmon_dispatch(struct pfmon_set *s, int system_wide)
{
	static pfmlib_gen_ia32_input_param_t model_in;	/* zeroed, as pfmon's */
	pfarg_setinfo_t si;
	pfarg_ctx_t ctx;
	int fd, code;

	memset(&ctx, 0, sizeof(ctx));
	memset(&si, 0, sizeof(si));
	memset(&s->inp.pfp_unavail_pmcs, 0, sizeof(s->inp.pfp_unavail_pmcs));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_getinfo_evtsets(fd, &si, 1));
	for (int i = 0; i < (int)PFM_PMC_BV; i++)
		for (int j = 0; j < 64; j++)
			if ((si.set_avail_pmcs[i] & (1ULL << j)) == 0)
				pfm_regmask_set(&s->inp.pfp_unavail_pmcs, (unsigned int)(i * 64 + j));
	CHECK_OK(close(fd));
	CHECK_EQ_U64(s->inp.pfp_unavail_pmcs.bits[0], on_sim ? ~SIM_AVAIL_PMCS : ~0xffULL);

	s->inp.pfp_flags = system_wide ? PFMLIB_PFP_SYSTEMWIDE : 0;
	memset(&s->outp, 0, sizeof(s->outp));
	CHECK_PFM(pfm_dispatch_events(&s->inp, &model_in, &s->outp, NULL));

	/* The sim's instructions and cycles take the fixed counters; other
	 * events a general counter each, in order. */
	CHECK_EQ_U64(s->outp.pfp_pmd_count, 2);
	CHECK_PFM(pfm_get_event_code(s->inp.pfp_events[0].event, &code));
	if (on_sim && code == 0xc0) {	/* INSTRUCTION_RETIRED */
		CHECK_EQ_U64(s->outp.pfp_pmds[0].reg_num, 16);
		CHECK_EQ_U64(s->outp.pfp_pmc_count, 1);
		CHECK_EQ_U64(s->outp.pfp_pmcs[0].reg_num, 16);
		CHECK_EQ_U64(s->outp.pfp_pmcs[0].reg_value, SIM_FIXED01_USR_PMI);
		CHECK_EQ_U64(s->outp.pfp_pmds[1].reg_num, 17);
		return;
	}
	CHECK_EQ_U64(s->outp.pfp_pmc_count, 2);
	for (unsigned int i = 0; i < 2; i++) {
		CHECK_PFM(pfm_get_event_code(s->inp.pfp_events[i].event, &code));
		CHECK_EQ_U64(s->outp.pfp_pmcs[i].reg_num, i);
		CHECK_EQ_U64(s->outp.pfp_pmcs[i].reg_value, PMC_USR_INT_EN | (uint64_t)code);
		CHECK_EQ_U64(s->outp.pfp_pmds[i].reg_num, i);
	}
}

/* Each set's pfm_create_evtsets (one call per set: TIME_SWITCH and the
 * timeout when there are several), PMCs and PMDs (zeroes, or pd0 for set 0). */
static inline void pfmon_program(int fd, struct pfmon_set *sets, int nsets, uint64_t timeout_ns, const pfarg_pmd_t *pd0)
{
	pfarg_setdesc_t sd;
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd[2];

	for (int s = 0; s < nsets; s++) {
		memset(&sd, 0, sizeof(sd));
		sd.set_id = (uint16_t)s;
		sd.set_flags = nsets > 1 ? PFM_SETFL_TIME_SWITCH : 0;
		sd.set_timeout = nsets > 1 ? timeout_ns : 0;
		CHECK_OK(pfm_create_evtsets(fd, &sd, 1));
		CHECK_EQ_U64(sd.set_timeout, nsets > 1 ? timeout_ns : 0);	/* the effective timeout */
	}
	for (int s = 0; s < nsets; s++) {
		memset(pc, 0, sizeof(pc));
		for (unsigned int i = 0; i < sets[s].outp.pfp_pmc_count; i++) {
			pc[i].reg_num = (uint16_t)sets[s].outp.pfp_pmcs[i].reg_num;
			pc[i].reg_set = (uint16_t)s;
			pc[i].reg_value = sets[s].outp.pfp_pmcs[i].reg_value;
		}
		CHECK_OK(pfm_write_pmcs(fd, pc, (int)sets[s].outp.pfp_pmc_count));
		memset(pd, 0, sizeof(pd));
		if (s == 0 && pd0)
			memcpy(pd, pd0, sizeof(pd));
		for (int i = 0; i < 2; i++) {
			pd[i].reg_num = (uint16_t)sets[s].outp.pfp_pmds[i].reg_num;
			pd[i].reg_set = (uint16_t)s;
		}
		CHECK_OK(pfm_write_pmds(fd, pd, 2));
	}
}

static inline void pfmon_load_start(int fd, pid_t tid_or_cpu)
{
	pfarg_load_t load;

	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_or_cpu;
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
}

/* A per-task counting context on tid, started. */
static inline int pfmon_task_context(struct pfmon_set *sets, int nsets, uint64_t timeout_ns, pid_t tid)
{
	pfarg_ctx_t ctx;
	int fd;

	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(fcntl(fd, F_SETFD, FD_CLOEXEC));
	pfmon_program(fd, sets, nsets, timeout_ns, NULL);
	pfmon_load_start(fd, tid);
	return fd;
}

/* The end of a context: each set's PMDs and info; close unless keep. */
static inline void pfmon_results(int fd, struct pfmon_set *sets, int nsets, struct set_result *res, int keep)
{
	pfarg_pmd_t pd[2];

	for (int s = 0; s < nsets; s++) {
		memset(pd, 0, sizeof(pd));
		for (int i = 0; i < 2; i++) {
			pd[i].reg_num = (uint16_t)sets[s].outp.pfp_pmds[i].reg_num;
			pd[i].reg_set = (uint16_t)s;
		}
		CHECK_OK(pfm_read_pmds(fd, pd, 2));
		res[s].v[0] = pd[0].reg_value;
		res[s].v[1] = pd[1].reg_value;
		memset(&res[s].si, 0, sizeof(res[s].si));
		res[s].si.set_id = (uint16_t)s;
		CHECK_OK(pfm_getinfo_evtsets(fd, &res[s].si, 1));
		CHECK_EQ_U64(res[s].si.set_flags, nsets > 1 ? PFM_SETFL_TIME_SWITCH : 0);
	}
	if (!keep)
		CHECK_OK(close(fd));
}

/* The first CPU this program may run on. */
static inline int first_cpu(void)
{
	cpu_set_t all;
	int cpu = 0;

	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	while (!CPU_ISSET(cpu, &all))
		cpu++;
	return cpu;
}

/* pfmon_pin_self(): the calling thread on cpu alone. */
static inline void pin(int cpu)
{
	cpu_set_t mask;

	CPU_ZERO(&mask);
	CPU_SET(cpu, &mask);
	CHECK_OK(sched_setaffinity(0, sizeof(mask), &mask));
}

/* perf: field n (1-based) of /proc/PID/FILE, a line of numbers after the
 * command's name in parentheses for "stat". */
static inline uint64_t proc_field(pid_t pid, const char *file, int n)
{
	char path[64], text[1024], *p;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	CHECK(read_text(path, text, sizeof(text)) > 0, "read %s: %s", path, strerror(errno));
	p = strrchr(text, ')');
	p = p ? p + 2 : text;
	for (int i = p == text ? 1 : 3; i < n; i++) {
		p = strchr(p, ' ');
		CHECK(p != NULL, "%s has no field %d: %s", path, n, text);
		p++;
	}
	return strtoull(p, NULL, 10);
}

/* perf: a process's page faults so far (minor and major). */
static inline uint64_t proc_faults(pid_t pid)
{
	return proc_field(pid, "stat", 10) + proc_field(pid, "stat", 12);
}

/* ---- the command ------------------------------------------------------------ */

/* perf: WORK_PAGES fresh pages written, one user-level page fault each (no
 * huge pages; raw system calls, which fault nothing at user level; not
 * instrumented by the sanitizers, whose shadow memory would fault too). */
__attribute__((no_sanitize("address", "thread", "undefined"), noinline, unused)) static void touch_pages(void)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)page * WORK_PAGES;
	volatile char *m;

	m = (volatile char *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == (volatile char *)-1)
		_exit(90);
	syscall(SYS_madvise, m, len, MADV_NOHUGEPAGE);
	for (int i = 0; i < WORK_PAGES; i++)
		m[(size_t)page * i] = 1;
	syscall(SYS_munmap, m, len);
}

/* One work order (see the top). */
static inline void work(void)
{
	if (on_sim)
		return;
	touch_pages();
	burn_cpu_ns(WORK_BURN_NS);
}

/* --serve [w]: the command (work once first with w); 0 at EOF, for _exit:
 * LeakSanitizer's check at exit cannot run in a traced process. */
static inline int serve(int work_first)
{
	char c;

	if (work_first)
		work();
	while (read(0, &c, 1) == 1) {
		work();
		if (write(1, "k", 1) != 1)
			return 3;
	}
	return 0;
}

/* Waits for a byte on fd, up to wait_ms(). */
static inline void expect_byte(int fd, char want, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c = 0;

	CHECK(poll(&p, 1, (int)wait_ms()) == 1, "%s: no answer within %ld ms", what, wait_ms());
	CHECK(read(fd, &c, 1) == 1 && c == want, "%s: answer '%c', expected '%c'", what, c, want);
}

/* A work order to the command, and its answer. */
static inline void order_work(int cmd, int ans)
{
	CHECK_EQ_U64(write(cmd, "w", 1), 1);
	expect_byte(ans, 'k', "a work order");
}

/* pfmon's task_create(): vfork, PTRACE_TRACEME and exec in the child (this
 * program with mode, its stdin and stdout pipes to *cmd and from *ans); the
 * exec's stop, then PTRACE_SETOPTIONS (TRACEEXEC and follow's flags). */
static inline pid_t pfmon_spawn(const char *mode, unsigned long follow, int *cmd, int *ans)
{
	int in[2], out[2], status;
	pid_t pid;

	CHECK_OK(pipe2(in, O_CLOEXEC));
	CHECK_OK(pipe2(out, O_CLOEXEC));
	fflush(stdout);
	pid = vfork();
	CHECK(pid >= 0, "vfork: %s", strerror(errno));
	if (pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(100);
		execl("/proc/self/exe", "pfmon-command", mode, (char *)NULL);
		_exit(101);
	}
	close(in[0]);
	close(out[1]);
	CHECK_EQ_U64(waitpid(pid, &status, WUNTRACED), pid);
	CHECK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "command %d not stopped at its exec: status 0x%x",
	      (int)pid, status);
	CHECK_OK(ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(PTRACE_O_TRACEEXEC | follow)));
	*cmd = in[1];
	*ans = out[0];
	return pid;
}

/* The next wait4() event of tid (-1: any), polled for up to wait_ms(). */
static inline pid_t wait_task(pid_t tid, int *status, struct rusage *ru)
{
	uint64_t t0 = monotonic_ns();
	pid_t r;

	while ((r = wait4(tid, status, __WALL | WNOHANG, ru)) == 0) {
		CHECK(monotonic_ns() - t0 < (uint64_t)wait_ms() * 1000000ULL, "task %d: no event within %ld ms",
		      (int)tid, wait_ms());
		nap_ms(1);
	}
	CHECK(r > 0, "wait4 %d: %s", (int)tid, strerror(errno));
	return r;
}

/* pfmon's wait loop for one traced task: stops go on (SIGTRAP, pfmon's, is
 * not passed on), until it exits, 0. */
static inline void reap(pid_t pid, struct rusage *ru)
{
	int status, sig;

	for (;;) {
		wait_task(pid, &status, ru);
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		sig = WSTOPSIG(status) == SIGTRAP ? 0 : WSTOPSIG(status);
		CHECK_OK(ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig));
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "command %d: status 0x%x", (int)pid, status);
}

#endif /* PFMFS_TESTS_LIBPFM_PFMON_CALLS_H */
