// pfmfs-test: backends=sim,x86
/*
 * errno_perm.c: perfmon2's EPERM rules, met by a plain user (errno_rules.c
 * runs as root, who may do all of this). The driver runs this program as
 * root on a mount with allow_other; a child drops to an unprivileged uid and
 * checks that it may create and use its own context, but not:
 *   - load another user's thread (EPERM, pfmfs(5) OWNERSHIP AND PERMISSIONS),
 *   - load a CPU system-wide (EPERM: not root, no --system-group),
 *   - set the OS (kernel) bit of a PMC (EPERM without --allow-kernel),
 * and that each refusal changed nothing (the context still counts exactly).
 * On x86 the child counts its own CPU time instead of the parent's advance:
 * 2 instructions per ns of it, within check.h's bracket (CHECK_WINDOW).
 */
#include "check.h"

#include <grp.h>
#include <sys/wait.h>

#define PLAIN_UID 65534 /* nobody */
#define PLAIN_GID 65534

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

static void as_plain_user(pid_t roots_thread)
{
	pfarg_pmc_t pc;
	pfarg_pmd_t pd;
	struct cpu_window win;
	int fd, sys_fd;

	CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHECK(setgid(PLAIN_GID) == 0 && setuid(PLAIN_UID) == 0, "dropping to uid %d: %s", PLAIN_UID, strerror(errno));

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
	pid_t child;
	int status;

	child = fork();
	CHECK(child >= 0, "fork: %s", strerror(errno));
	if (child == 0)
		as_plain_user(me);

	CHECK(waitpid(child, &status, WUNTRACED) == child, "waitpid: %s", strerror(errno));
	CHECK(WIFSTOPPED(status), "the child did not get to its load (status 0x%x)", status);
	if (!on_backend("x86"))
		sim_advance(1000); /* 1000 ns of the child's time: 2000 instructions */
	CHECK(kill(child, SIGCONT) == 0, "kill: %s", strerror(errno));
	CHECK(waitpid(child, &status, 0) == child, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the plain user's checks failed (status 0x%x)", status);
	CHECK(wait_sessions(0) == 0, "sessions left behind");
	printf("ok\n");
	return 0;
}
