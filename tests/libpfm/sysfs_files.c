// pfmfs-test: backends=sim,perf
/*
 * sysfs_files.c: perfmon2's /sys/kernel/perfmon as programs linked with the
 * library see it, read the way they read it: PAPI (fopen + fscanf "%s" of
 * version, compared with PFM_VERSION), libpfm 3.10 (fscanf "%d" of
 * syscall), showreginfo (open + read of pmu_desc/model and of every
 * pmcN/pmdN file for N below PFM_MAX_PMCS), and access() + fopen + fgets.
 * Each file's text is checked exactly against the mount's pmu/info and
 * pmu/desc read directly; formats/default/version, smpl_buffer_mem_max,
 * and smpl_buffer_mem_cur as sampling buffers are made and closed (the
 * directories' listings: sysfs_dirs.c). Then the errors (ENOENT,
 * ENOTDIR, EACCES, EEXIST, EBADF on write), stat in all its names, that
 * every other path behaves as without the library (compared with the system
 * calls themselves), threads at once, and, in re-executed copies,
 * PFMFS_SYSFS=0 and no mount at all.
 */
#include "check.h"

#include <perfmon/perfmon_dfl_smpl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SYSFS "/sys/kernel/perfmon"

/* Not declared by glibc 2.36's headers, still called by binaries: the
 * pre-2.33 stat entry and _FORTIFY_SOURCE's open. */
extern int __xstat(int ver, const char *path, struct stat *st);
extern int __open_2(const char *path, int flags);

static char text_buf[4096];

/* The whole of an open descriptor (the file offset is where it is). */
static size_t read_fd(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len + 1 < size && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

/* A file of the mount, read directly; its first line and a newline. */
static const char *mount_line(const char *rel, char *out, size_t size)
{
	CHECK(read_text(mount_file("%s", rel), text_buf, sizeof(text_buf)) > 0, "read %s: %s", rel,
	      strerror(errno));
	snprintf(out, size, "%.*s\n", (int)strcspn(text_buf, "\n"), text_buf);
	return out;
}

/* A number of the mount's register files in perfmon2's format. */
static const char *mount_number(const char *rel, int hex, char *out, size_t size)
{
	char line[128];
	unsigned long long v;

	mount_line(rel, line, sizeof(line));
	v = strtoull(line, NULL, 0);
	snprintf(out, size, hex ? "0x%llx\n" : "%llu\n", v);
	return out;
}

/* SYSFS/rel says exactly want: open + read (twice, after lseek), pread,
 * fopen + fgets, and stat/fstat agree (a 0444 regular file of that size);
 * the descriptor is read-only. */
static void expect_file(const char *rel, const char *want)
{
	char path[PATH_MAX], got[512];
	struct stat st, fst;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), SYSFS "/%s", rel);
	fd = (int)CHECK_OK(open(path, O_RDONLY));
	read_fd(fd, got, sizeof(got));
	CHECK(strcmp(got, want) == 0, "%s says \"%s\", expected \"%s\"", path, got, want);
	CHECK_ERRNO(write(fd, "1\n", 2), EBADF);
	CHECK_OK(lseek(fd, 0, SEEK_SET));
	read_fd(fd, got, sizeof(got));
	CHECK(strcmp(got, want) == 0, "%s after lseek: \"%s\"", path, got);
	CHECK_EQ_U64(pread(fd, got, sizeof(got), 0), strlen(want));
	CHECK_OK(fstat(fd, &fst));
	CHECK_OK(close(fd));

	f = fopen(path, "r");
	CHECK(f != NULL, "fopen %s: %s", path, strerror(errno));
	CHECK(fgets(got, sizeof(got), f) != NULL, "fgets %s", path);
	CHECK(strcmp(got, want) == 0, "fgets %s: \"%s\"", path, got);
	fclose(f);

	CHECK_OK(stat(path, &st));
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0444, "%s: mode 0%o", path, st.st_mode);
	CHECK_EQ_U64(st.st_size, strlen(want));
	CHECK(S_ISREG(fst.st_mode) && (fst.st_mode & 07777) == 0444, "fstat %s: mode 0%o", path, fst.st_mode);
	CHECK_EQ_U64(fst.st_size, strlen(want));
	CHECK_OK(access(path, R_OK));
}

/* showreginfo's loop: every register N < PFM_MAX_PMCS of one kind. */
static void check_registers(const char *kind, uint64_t mask)
{
	static const char *const attrs[] = { "name", "dfl_val", "rsvd_msk", "width", "addr" };
	char rel[64], mrel[64], want[128];
	unsigned int n, a, found = 0;
	int is_pmd = strcmp(kind, "pmd") == 0;

	for (n = 0; n < PFM_MAX_PMCS; n++) {
		snprintf(rel, sizeof(rel), SYSFS "/pmu_desc/%s%u/name", kind, n);
		if (n >= 64 || !(mask >> n & 1)) {
			CHECK_ERRNO(open(rel, O_RDONLY), ENOENT);
			continue;
		}
		found++;
		for (a = 0; a < 5; a++) {
			snprintf(rel, sizeof(rel), "pmu_desc/%s%u/%s", kind, n, attrs[a]);
			snprintf(mrel, sizeof(mrel), "pmu/desc/%s%u/%s", kind, n, attrs[a]);
			if (a == 0)
				mount_line(mrel, want, sizeof(want));
			else if (a == 1 && is_pmd)
				snprintf(want, sizeof(want), "0x0\n");	/* a new session's PMD */
			else if (a == 3 && !is_pmd)
				snprintf(want, sizeof(want), "64\n");	/* not a counter */
			else
				mount_number(mrel, a != 3, want, sizeof(want));
			expect_file(rel, want);
		}
	}
	CHECK_EQ_U64(found, __builtin_popcountll(mask));
	printf("%s: %u registers\n", kind, found);
}

static void check_contents(void)
{
	char want[256], got[256];
	unsigned int major, minor;
	int base;
	FILE *f;

	/* PAPI's perfmon2 component. */
	f = fopen(SYSFS "/version", "r");
	CHECK(f != NULL, "fopen version: %s", strerror(errno));
	CHECK(fscanf(f, "%s\n", got) == 1, "fscanf version");
	fclose(f);
	snprintf(want, sizeof(want), "%d.%d", PFM_VERSION_MAJOR(PFM_VERSION), PFM_VERSION_MINOR(PFM_VERSION));
	CHECK(strcmp(got, want) == 0, "version %s, PFM_VERSION %s", got, want);
	CHECK(sscanf(got, "%u.%u", &major, &minor) == 2 && major == 2 && minor == 82, "version %s", got);
	expect_file("version", "2.82\n");

	/* libpfm 3.10's system call base. */
	f = fopen(SYSFS "/syscall", "r");
	CHECK(f != NULL && fscanf(f, "%d", &base) == 1, "syscall: %s", strerror(errno));
	fclose(f);
	CHECK_EQ_U64(base, 295);
	expect_file("syscall", "295\n");
	expect_file("smpl_buffer_mem_cur", "0\n");
	/* perfmon2's default, ~0 as %zu: no machine-wide limit (pfmfsd's is per user). */
	expect_file("smpl_buffer_mem_max", "18446744073709551615\n");

	/* perfmon2's formats/NAME/version: the default format, version 1.0. */
	expect_file("formats/default/version", "1.0\n");
	CHECK_OK(access(SYSFS "/formats/default", R_OK | X_OK));
	CHECK_ERRNO(access(SYSFS "/formats/pebs", F_OK), ENOENT);
	CHECK_ERRNO(open(SYSFS "/formats/default/uuid", O_RDONLY), ENOENT);
	CHECK_ERRNO(open(SYSFS "/formats", O_RDONLY | O_DIRECTORY), EOPNOTSUPP);	/* listed: sysfs_dirs.c */

	/* access() then fopen + fgets of the model. */
	CHECK_OK(access(SYSFS "/pmu_desc", F_OK));
	expect_file("pmu_desc/model", mount_line("pmu/desc/model", want, sizeof(want)));

	read_text(mount_file("pmu/info"), text_buf, sizeof(text_buf));
	check_registers("pmc", kv_u64(text_buf, "pmcs"));
	read_text(mount_file("pmu/info"), text_buf, sizeof(text_buf));
	check_registers("pmd", kv_u64(text_buf, "pmds"));
}

static void expect_counts(unsigned int task, unsigned int sys)
{
	char want[32];

	snprintf(want, sizeof(want), "%u\n", task);
	expect_file("task_sessions_count", want);
	snprintf(want, sizeof(want), "%u\n", sys);
	expect_file("sys_sessions_count", want);
}

/* perfmon2 counted loaded sessions: per-thread, and system-wide ones. */
static void check_session_counts(void)
{
	pfarg_ctx_t ctx;
	pfarg_load_t load;
	int fd, sys;

	expect_counts(0, 0);
	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	expect_counts(0, 0);	/* created, not loaded */
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	expect_counts(1, 0);

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = PFM_FL_SYSTEM_WIDE;
	sys = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	load.load_pid = 0;	/* CPU 0 */
	CHECK_OK(pfm_load_context(sys, &load));
	expect_counts(1, 1);
	CHECK_OK(pfm_unload_context(fd));
	expect_counts(0, 1);
	CHECK_OK(close(sys));
	CHECK_OK(close(fd));
	CHECK_EQ_U64(wait_sessions(0), 0);
	expect_counts(0, 0);
}

/* perfmon2's smpl_buffer_mem_cur: the sampling buffers' memory, each in
 * whole pages, whoever's session holds it. */
static void check_sampling_memory(void)
{
	pfm_dfl_smpl_arg_t arg;
	pfarg_ctx_t ctx;
	struct stat st;
	int a, b;

	memset(&ctx, 0, sizeof(ctx));
	memset(&arg, 0, sizeof(arg));
	arg.buf_size = 6000;
	a = (int)CHECK_OK(pfm_create_context(&ctx, PFM_DFL_SMPL_NAME, &arg, sizeof(arg)));
	expect_file("smpl_buffer_mem_cur", "8192\n");
	arg.buf_size = 4096;
	b = (int)CHECK_OK(pfm_create_context(&ctx, PFM_DFL_SMPL_NAME, &arg, sizeof(arg)));
	expect_file("smpl_buffer_mem_cur", "12288\n");
	CHECK_OK(stat(SYSFS "/smpl_buffer_mem_cur", &st));
	CHECK_EQ_U64(st.st_size, 6);
	CHECK_OK(close(a));
	CHECK_EQ_U64(wait_sessions(1), 1);
	expect_file("smpl_buffer_mem_cur", "4096\n");
	CHECK_OK(close(b));
	CHECK_EQ_U64(wait_sessions(0), 0);
	expect_file("smpl_buffer_mem_cur", "0\n");
	/* perfmon2's default, ~0 as %zu: no machine-wide limit (pfmfsd's is per user). */
	expect_file("smpl_buffer_mem_max", "18446744073709551615\n");
}

static void check_errors(void)
{
	struct stat st, st2;
	struct statx sx;
	FILE *f;

	CHECK_ERRNO(open(SYSFS "/nonexistent", O_RDONLY), ENOENT);
	CHECK_ERRNO(open(SYSFS "/pmu_desc/pmc00/name", O_RDONLY), ENOENT);
	CHECK_ERRNO(open(SYSFS "/pmu_desc/pmc0/pmds", O_RDONLY), ENOENT);	/* the mount's, not perfmon2's */
	CHECK_ERRNO(open(SYSFS "/version/x", O_RDONLY), ENOTDIR);
	CHECK_ERRNO(open(SYSFS "/version/", O_RDONLY), ENOTDIR);
	CHECK_ERRNO(access(SYSFS "/nonexistent", F_OK), ENOENT);
	CHECK_ERRNO(stat(SYSFS "/nonexistent", &st), ENOENT);
	CHECK(fopen(SYSFS "/nonexistent", "r") == NULL && errno == ENOENT, "fopen nonexistent: %s", strerror(errno));

	/* Read-only files: any write access is EACCES, even for root. */
	CHECK_ERRNO(open(SYSFS "/version", O_WRONLY), EACCES);
	CHECK_ERRNO(open(SYSFS "/version", O_RDWR), EACCES);
	CHECK_ERRNO(open(SYSFS "/version", O_RDONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	CHECK_ERRNO(open(SYSFS "/newfile", O_WRONLY | O_CREAT, 0644), EACCES);
	CHECK_ERRNO(open(SYSFS "/no/newfile", O_WRONLY | O_CREAT, 0644), ENOENT);
	CHECK(fopen(SYSFS "/version", "w") == NULL && errno == EACCES, "fopen w: %s", strerror(errno));
	CHECK(fopen(SYSFS "/version", "r+") == NULL && errno == EACCES, "fopen r+: %s", strerror(errno));
	CHECK_ERRNO(access(SYSFS "/version", W_OK), EACCES);
	CHECK_ERRNO(access(SYSFS "/version", X_OK), EACCES);
	CHECK_OK(access(SYSFS "/pmu_desc/pmc0", R_OK | X_OK));
	CHECK_ERRNO(faccessat(AT_FDCWD, SYSFS "/version", W_OK, AT_EACCESS), EACCES);

	/* Directories: 0555, in every stat (their listings: sysfs_dirs.c). */
	CHECK_OK(stat(SYSFS, &st));
	CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0555, "mode 0%o", st.st_mode);
	CHECK_OK(lstat(SYSFS "/", &st2));
	CHECK(st2.st_mode == st.st_mode && st2.st_ino == st.st_ino, "lstat " SYSFS "/");
	CHECK_OK(stat(SYSFS "/pmu_desc//pmc0/../pmc0", &st));
	CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0555, "pmc0: mode 0%o", st.st_mode);
	CHECK_ERRNO(open(SYSFS, O_RDONLY), EOPNOTSUPP);	/* no descriptor stands for one */
	CHECK(opendir(SYSFS "/version") == NULL && errno == ENOTDIR, "opendir version: %s", strerror(errno));
	CHECK_OK(fstatat(AT_FDCWD, SYSFS "/version", &st, AT_SYMLINK_NOFOLLOW));
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0444 && st.st_size == 5, "fstatat version");
	CHECK_OK(__xstat(1, SYSFS "/version", &st2));
	CHECK(memcmp(&st, &st2, sizeof(st)) == 0, "__xstat and fstatat differ");
	{
		struct stat64 st64;

		CHECK_OK(stat64(SYSFS "/version", &st64));
		CHECK(st64.st_mode == st.st_mode && st64.st_ino == st.st_ino, "stat64");
		CHECK_OK(lstat64(SYSFS "/pmu_desc", &st64));
		CHECK(S_ISDIR(st64.st_mode), "lstat64 pmu_desc");
		CHECK_OK(fstatat64(AT_FDCWD, SYSFS "/syscall", &st64, 0));
		CHECK(S_ISREG(st64.st_mode) && st64.st_size == 4, "fstatat64 syscall");
	}
	CHECK_OK(statx(AT_FDCWD, SYSFS "/version", 0, STATX_BASIC_STATS, &sx));
	CHECK(S_ISREG(sx.stx_mode) && (sx.stx_mode & 07777) == 0444 && sx.stx_size == 5 && sx.stx_ino == st.st_ino,
	      "statx version: mode 0%o", sx.stx_mode);
	CHECK_OK(close((int)CHECK_OK(open64(SYSFS "/version", O_RDONLY | O_CLOEXEC))));
	CHECK_OK(close((int)CHECK_OK(openat(AT_FDCWD, SYSFS "/version", O_RDONLY))));
	CHECK_OK(close((int)CHECK_OK(__open_2(SYSFS "/version", O_RDONLY))));
	f = fopen64(SYSFS "/version", "re");
	CHECK(f != NULL, "fopen64: %s", strerror(errno));
	fclose(f);

	/* A success leaves errno alone, as libc's calls do. */
	errno = EDOM;
	CHECK_OK(close(open(SYSFS "/pmu_desc/model", O_RDONLY)));
	CHECK(errno == EDOM, "errno %d after a successful open", errno);
	errno = EDOM;
	f = fopen(SYSFS "/version", "r");
	CHECK(f != NULL && errno == EDOM, "errno %d after fopen", errno);
	fclose(f);

	/* The system call itself is not the library's: the kernel's answer. */
	CHECK_ERRNO(syscall(SYS_openat, AT_FDCWD, SYSFS "/version", O_RDONLY), ENOENT);
}

/* errno of the system call for path, or 0: what the kernel says. */
static int kernel_errno(const char *path)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);

	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return errno;
}

/* Every other path: what libc alone gives, compared with the system calls. */
static void check_other_paths(void)
{
	char got[4096], raw[4096];
	struct stat st, kst;
	struct dirent *e;
	int fd, found = 0;
	FILE *f;
	DIR *d;

	fd = (int)CHECK_OK(open("/proc/self/cmdline", O_RDONLY));
	read_fd(fd, got, sizeof(got));
	close(fd);
	fd = (int)CHECK_OK(syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY));
	read_fd(fd, raw, sizeof(raw));
	close(fd);
	CHECK(strcmp(got, raw) == 0, "/proc/self/cmdline differs");
	f = fopen("/proc/self/status", "r");
	CHECK(f != NULL && fgets(got, sizeof(got), f) != NULL, "fopen /proc/self/status");
	fclose(f);
	CHECK(strncmp(got, "Name:\t", 6) == 0, "/proc/self/status: %s", got);

	umask(022);
	fd = (int)CHECK_OK(open("made", O_WRONLY | O_CREAT | O_EXCL, 0640));
	CHECK_EQ_U64(write(fd, "hello\n", 6), 6);
	CHECK_OK(close(fd));
	CHECK_ERRNO(open("made", O_WRONLY | O_CREAT | O_EXCL, 0600), EEXIST);
	CHECK_OK(stat("made", &st));
	CHECK_OK(syscall(SYS_newfstatat, AT_FDCWD, "made", &kst, 0));
	CHECK(memcmp(&st, &kst, sizeof(st)) == 0, "stat of made differs from the kernel's");
	CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640 && st.st_size == 6, "made: 0%o", st.st_mode);
	f = fopen("made", "r");
	CHECK(f != NULL && fgets(got, sizeof(got), f) != NULL && strcmp(got, "hello\n") == 0, "fopen made");
	fclose(f);
	fd = (int)CHECK_OK(openat(AT_FDCWD, "made2", O_RDWR | O_CREAT | O_TRUNC, 0600));
	CHECK_OK(fstat(fd, &st));
	CHECK((st.st_mode & 07777) == 0600, "made2: 0%o", st.st_mode);
	close(fd);
	CHECK_OK(access("made", R_OK | W_OK));
	CHECK_ERRNO(access("made", X_OK), EACCES);
	d = opendir(".");
	CHECK(d != NULL, "opendir .: %s", strerror(errno));
	while ((e = readdir(d)) != NULL)
		found += strcmp(e->d_name, "made") == 0;
	closedir(d);
	CHECK_EQ_U64(found, 1);

	CHECK_ERRNO(open("missing", O_RDONLY), ENOENT);
	CHECK_ERRNO(access("missing", F_OK), ENOENT);
	CHECK_ERRNO(stat("missing", &st), ENOENT);
	CHECK(fopen("missing", "r") == NULL && errno == ENOENT, "fopen missing");
	CHECK(opendir("missing") == NULL && errno == ENOENT, "opendir missing");
	/* Only the exact prefix is ours. */
	CHECK_ERRNO(open("/sys/kernel/perfmonx", O_RDONLY), kernel_errno("/sys/kernel/perfmonx"));
	CHECK_ERRNO(open("/sys/kernel/perfmo", O_RDONLY), kernel_errno("/sys/kernel/perfmo"));
}

/* Several threads at once (TSan's run checks the library's caches). */
static void *reader(void *arg)
{
	char got[64];
	int i, fd, v;
	FILE *f;

	(void)arg;
	for (i = 0; i < 100; i++) {
		f = fopen(SYSFS "/syscall", "r");
		CHECK(f != NULL && fscanf(f, "%d", &v) == 1 && v == 295, "thread: syscall");
		fclose(f);
		fd = (int)CHECK_OK(open(SYSFS "/pmu_desc/pmd0/width", O_RDONLY));
		CHECK(read_fd(fd, got, sizeof(got)) > 1, "thread: width");
		close(fd);
		fd = (int)CHECK_OK(open("/proc/self/cmdline", O_RDONLY));
		close(fd);
	}
	return NULL;
}

/* A copy of this program with one more environment variable: the files
 * must be absent from it, as without the library (argv[1] "absent"). */
static void run_absent(const char *var, const char *value)
{
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		char *argv[] = { "sysfs_files", "absent", NULL };

		setenv(var, value, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "with %s=%s: status 0x%x", var, value, status);
}

static int check_absent(void)
{
	int want = kernel_errno(SYSFS "/version");
	struct stat st;

	CHECK(want != 0, SYSFS "/version exists on this machine");
	CHECK_ERRNO(open(SYSFS "/version", O_RDONLY), want);
	CHECK(fopen(SYSFS "/version", "r") == NULL && errno == want, "fopen: %s", strerror(errno));
	CHECK_ERRNO(access(SYSFS "/pmu_desc", F_OK), want);
	CHECK_ERRNO(stat(SYSFS, &st), want);
	CHECK(opendir(SYSFS) == NULL && errno == want, "opendir: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t threads[4];
	int i;

	if (argc > 1 && strcmp(argv[1], "absent") == 0)
		return check_absent();
	check_contents();
	check_session_counts();
	check_sampling_memory();
	check_errors();
	check_other_paths();
	for (i = 0; i < 4; i++)
		CHECK(pthread_create(&threads[i], NULL, reader, NULL) == 0, "pthread_create");
	for (i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	run_absent("PFMFS_SYSFS", "0");
	run_absent("PFMFS_MOUNT", "/nonexistent");
	printf("sysfs_files: ok on %s\n", backend_name());
	return 0;
}
