// pfmfs-test: backends=sim,x86
/*
 * errno_perm.c: perfmon2's EPERM rules, met by a plain user (errno_rules.c
 * runs as root, who may do all of this). The driver runs this program as
 * root on a mount with allow_other; a child drops to an unprivileged uid and
 * checks that it may create and use its own context, but not:
 *   - load another user's thread (EPERM, pfmfs(5) OWNERSHIP AND PERMISSIONS),
 *   - load a set-gid program it runs itself, which the kernel would not let
 *     it count either (EPERM, pfmfs(5) SECURITY),
 *   - load a CPU system-wide (EPERM: not root, no --system-group),
 *   - set the OS (kernel) bit of a PMC (EPERM without --allow-kernel),
 * and that each refusal changed nothing (the context still counts exactly).
 * On x86 the child counts its own CPU time instead of the parent's advance:
 * 2 instructions per ns of it, within check.h's bracket (CHECK_WINDOW).
 */
#include "check.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#define PLAIN_UID 65534 /* nobody */
#define PLAIN_GID 65534
#define SETGID_GID 65533 /* the group of the plain user's set-gid program */

#define PMC0_INST (0xc0 | SIM_PMC_USR)

static int create(uint32_t flags)
{
	pfarg_ctx_t ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = flags;
	return pfm_create_context(&ctx, NULL, NULL, 0);
}

static int load(int fd, pid_t target)
{
	pfarg_load_t l;

	memset(&l, 0, sizeof(l));
	l.load_pid = (uint32_t)target;
	return pfm_load_context(fd, &l);
}

static void drop_to_plain_user(void)
{
	CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHECK(setgid(PLAIN_GID) == 0 && setuid(PLAIN_UID) == 0, "dropping to uid %d: %s", PLAIN_UID, strerror(errno));
}

/* The effective gid of process `pid`, from /proc; -1 if unreadable. */
static long egid_of(pid_t pid)
{
	char path[64], line[256];
	long rgid, egid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Gid: %ld %ld", &rgid, &egid) == 2)
			break;
	fclose(f);
	return egid;
}

/*
 * The plain user's own set-gid program: a copy of cat owned by them, group
 * SETGID_GID, mode 02755, in a directory that honours set-id bits, run by
 * them with its input a pipe (closing `*feed` ends it). Returns its pid
 * once the exec has taken (its effective gid is SETGID_GID).
 */
static pid_t start_setgid_program(char *dir, size_t dir_len, int *feed)
{
	static const char *const bases[] = { "/tmp", "/var/tmp" };
	static const char *const cats[] = { "/usr/bin/cat", "/bin/cat" };
	char prog[256], cmd[600];
	const char *cat = NULL;
	struct statvfs vfs;
	int in[2];
	size_t i;
	pid_t pid;

	dir[0] = '\0';
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]) && !dir[0]; i++) {
		if (statvfs(bases[i], &vfs) != 0 || (vfs.f_flag & ST_NOSUID))
			continue;
		snprintf(dir, dir_len, "%s/pfmfs-setgid-XXXXXX", bases[i]);
		CHECK(mkdtemp(dir) != NULL, "mkdtemp in %s: %s", bases[i], strerror(errno));
	}
	CHECK(dir[0], "no directory here honours set-id bits");
	CHECK(chmod(dir, 0755) == 0, "chmod %s: %s", dir, strerror(errno));
	for (i = 0; i < sizeof(cats) / sizeof(cats[0]) && !cat; i++)
		if (access(cats[i], X_OK) == 0)
			cat = cats[i];
	CHECK(cat, "no cat to copy");
	snprintf(prog, sizeof(prog), "%s/cat", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", cat, prog);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	CHECK(chown(prog, PLAIN_UID, SETGID_GID) == 0 && chmod(prog, 02755) == 0, "making %s set-gid: %s", prog,
	      strerror(errno));

	CHECK(pipe(in) == 0, "pipe: %s", strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[0]);
		close(in[1]);
		drop_to_plain_user();
		execl(prog, "cat", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	*feed = in[1];
	/* Until the exec has taken: the kernel sets the effective gid in it. */
	for (i = 0; egid_of(pid) != SETGID_GID; i++) {
		CHECK(i < 60 * 1000, "the set-gid program did not start in 60 s (egid %ld)", egid_of(pid));
		usleep(1000);
	}
	return pid;
}

static void as_plain_user(pid_t roots_thread, pid_t setgid_program)
{
	pfarg_pmc_t pc;
	pfarg_pmd_t pd;
	struct cpu_window win;
	int fd, sys_fd;

	drop_to_plain_user();

	fd = (int)CHECK_OK(create(0));
	memset(&pc, 0, sizeof(pc));
	pc.reg_num = 0;
	pc.reg_value = PMC0_INST;
	CHECK_OK(pfm_write_pmcs(fd, &pc, 1));
	memset(&pd, 0, sizeof(pd));
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));

	/* Kernel-level counting is root's (or --allow-kernel's). */
	pc.reg_value = PMC0_INST | SIM_PMC_OS;
	CHECK_ERRNO(pfm_write_pmcs(fd, &pc, 1), EPERM);

	/* Another user's thread: root's. */
	CHECK_ERRNO(load(fd, roots_thread), EPERM);
	/* Its own set-gid program: its effective gid is not the user's. */
	CHECK_ERRNO(load(fd, setgid_program), EPERM);

	/* System-wide is root's. */
	sys_fd = (int)CHECK_OK(create(PFM_FL_SYSTEM_WIDE));
	CHECK_ERRNO(load(sys_fd, 0), EPERM);
	close(sys_fd);

	/* Nothing of that changed the context: it loads on this thread and counts. */
	CHECK_OK(load(fd, tid_self()));
	window_open(&win);
	CHECK_OK(pfm_start(fd, NULL));
	/* x86: the child's own CPU time counts. */
	if (on_backend("x86"))
		window_burn(&win, X86_RUN_NS);
	/* The manual clock is root's: the parent advances it (see main). */
	CHECK(raise(SIGSTOP) == 0, "raise");
	CHECK_OK(pfm_stop(fd));
	window_close(&win);
	pd.reg_value = 0;
	CHECK_OK(pfm_read_pmds(fd, &pd, 1));
	if (on_backend("x86"))
		CHECK_WINDOW(pd.reg_value, X86_INST_PER_2NS, &win);
	else
		CHECK_EQ_U64(pd.reg_value, 2000);
	{
		pfarg_pmr_t r; /* the refused OS-bit write left pmc0 as it was */

		memset(&r, 0, sizeof(r));
		CHECK_OK(pfm_read(fd, 0, PFM_RW_PMC, &r, sizeof(r)));
		CHECK_EQ_U64(r.reg_value, PMC0_INST);
	}
	close(fd);
	exit(0);
}

int main(void)
{
	pid_t me = tid_self();
	pid_t child, setgid_program;
	char dir[128], cmd[200];
	int status, feed;

	setgid_program = start_setgid_program(dir, sizeof(dir), &feed);
	child = fork();
	CHECK(child >= 0, "fork: %s", strerror(errno));
	if (child == 0)
		as_plain_user(me, setgid_program);

	CHECK(waitpid(child, &status, WUNTRACED) == child, "waitpid: %s", strerror(errno));
	CHECK(WIFSTOPPED(status), "the child did not get to its load (status 0x%x)", status);
	if (!on_backend("x86"))
		sim_advance(1000); /* 1000 ns of the child's time: 2000 instructions */
	CHECK(kill(child, SIGCONT) == 0, "kill: %s", strerror(errno));
	CHECK(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the plain user's checks failed (status 0x%x)", status);
	close(feed);
	CHECK(waitpid(setgid_program, &status, 0) == setgid_program, "waitpid: %s", strerror(errno));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0, "%s failed", cmd);
	CHECK(wait_sessions(0) == 0, "sessions left behind");
	printf("ok\n");
	return 0;
}
