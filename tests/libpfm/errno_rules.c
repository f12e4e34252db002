// pfmfs-test: backends=sim,x86
/*
 * errno_rules.c: perfmon2's error rules (pfmfs(5) ctl, docs/libpfm-compat.md), each one
 * checked as a program meets it, and after each failure the proof that it
 * changed nothing: the state is the same, the registers hold what they held,
 * and the context still counts exactly.
 *   pmc0 = INSTRUCTION_RETIRED at user level -> pmd0, 2 per ns of advance.
 * On x86 the rules are the same (a thread takes one loaded context there
 * too), "counts exactly" becomes 2 per ns of the thread's CPU time within
 * check.h's bracket (CHECK_WINDOW), and one more rule holds: a thread
 * context and a system-wide one exclude each other (EBUSY).
 */
#include "check.h"

#include <perfmon/perfmon_dfl_smpl.h>

#include <sys/mman.h>
#include <sys/wait.h>

#define PMC0_INST (0xc0 | SIM_PMC_USR)

static pfarg_pmc_t pmc(uint16_t set, uint16_t num, uint64_t value)
{
	pfarg_pmc_t p;

	memset(&p, 0, sizeof(p));
	p.reg_set = set;
	p.reg_num = num;
	p.reg_value = value;
	return p;
}

static pfarg_pmd_t pmd(uint16_t set, uint16_t num, uint64_t value)
{
	pfarg_pmd_t p;

	memset(&p, 0, sizeof(p));
	p.reg_set = set;
	p.reg_num = num;
	p.reg_value = value;
	return p;
}

static int create(uint32_t flags)
{
	pfarg_ctx_t ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = flags;
	return pfm_create_context(&ctx, NULL, NULL, 0);
}

static int load(int fd, pid_t tid, uint16_t set)
{
	pfarg_load_t l;

	memset(&l, 0, sizeof(l));
	l.load_pid = (uint32_t)tid;
	l.load_set = set;
	return pfm_load_context(fd, &l);
}

static int start_set(int fd, uint16_t set)
{
	pfarg_start_t s;

	memset(&s, 0, sizeof(s));
	s.start_set = set;
	return pfm_start(fd, &s);
}

static int one_set(int fd, uint16_t id, int create_it)
{
	pfarg_setdesc_t d;

	memset(&d, 0, sizeof(d));
	d.set_id = id;
	return create_it ? pfm_create_evtsets(fd, &d, 1) : pfm_delete_evtsets(fd, &d, 1);
}

static uint64_t read_pmd0(int fd)
{
	pfarg_pmd_t p = pmd(0, 0, 0);

	CHECK_OK(pfm_read_pmds(fd, &p, 1));
	return p.reg_value;
}

/* A file of the set, e.g. "pmc1": what the daemon holds now. */
static const char *set_file(int fd, const char *file)
{
	static char buf[256];
	char rel[64];

	snprintf(rel, sizeof(rel), "sets/0/%s", file);
	return session_text(fd, rel, buf, sizeof(buf));
}

/* Every call on something that is not a context: EBADF. */
static void not_a_context(int fd)
{
	pfarg_pmc_t pc = pmc(0, 0, PMC0_INST);
	pfarg_pmd_t pd = pmd(0, 0, 0);
	pfarg_setdesc_t sd;
	pfarg_setinfo_t si;
	pfarg_pmr_t pr;

	memset(&sd, 0, sizeof(sd));
	memset(&si, 0, sizeof(si));
	memset(&pr, 0, sizeof(pr));
	CHECK_ERRNO(pfm_write_pmcs(fd, &pc, 1), EBADF);
	CHECK_ERRNO(pfm_write_pmds(fd, &pd, 1), EBADF);
	CHECK_ERRNO(pfm_read_pmds(fd, &pd, 1), EBADF);
	CHECK_ERRNO(load(fd, tid_self(), 0), EBADF);
	CHECK_ERRNO(pfm_start(fd, NULL), EBADF);
	CHECK_ERRNO(pfm_stop(fd), EBADF);
	CHECK_ERRNO(pfm_restart(fd), EBADF);
	CHECK_ERRNO(pfm_unload_context(fd), EBADF);
	CHECK_ERRNO(pfm_create_evtsets(fd, &sd, 1), EBADF);
	CHECK_ERRNO(pfm_delete_evtsets(fd, &sd, 1), EBADF);
	CHECK_ERRNO(pfm_getinfo_evtsets(fd, &si, 1), EBADF);
	CHECK_ERRNO(pfm_write(fd, 0, PFM_RW_PMD, &pr, sizeof(pr)), EBADF);
	CHECK_ERRNO(pfm_attach(fd, 0, tid_self()), EBADF);
	CHECK_ERRNO(pfm_set_state(fd, 0, PFM_ST_START), EBADF);
}

/* A thread id that existed and is gone: a child that ran and was reaped. */
static pid_t gone_tid(void)
{
	pid_t child = (pid_t)CHECK_OK(fork());
	int status;

	if (child == 0)
		_exit(0);
	CHECK_EQ_U64(waitpid(child, &status, 0), child);
	return child;
}

int main(void)
{
	pfarg_pmc_t pcs[2];
	pfarg_pmd_t pds[2];
	pfarg_setinfo_t si;
	int fd, other, closed, devnull, version;
	int on_x86 = on_backend("x86");
	struct cpu_window win;
	uint64_t first = 0;		/* x86: pmd0 after the first window */
	char *smpl_name = "pebs";
	pfm_dfl_smpl_arg_t smpl;

	/* ---- descriptors that are not contexts ---- */
	devnull = (int)CHECK_OK(open("/dev/null", O_RDWR));
	not_a_context(devnull);
	version = (int)CHECK_OK(open(mount_file("version"), O_RDONLY));
	not_a_context(version);	/* a file of the mount, but no session's */
	closed = (int)CHECK_OK(create(0));
	CHECK_OK(close(closed));
	not_a_context(closed);
	not_a_context(-1);
	close(devnull);
	close(version);
	CHECK_EQ_U64(wait_sessions(0), 0);

	/* ---- contexts that cannot be made ---- */
	CHECK_ERRNO(create(PFM_FL_SYSTEM_WIDE | PFM_FL_NOTIFY_BLOCK), EINVAL);
	memset(&smpl, 0, sizeof(smpl));
	CHECK_ERRNO(pfm_create_context(NULL, NULL, NULL, 0), EFAULT);
	{
		pfarg_ctx_t ctx;
		void *m;

		memset(&ctx, 0, sizeof(ctx));
		smpl.buf_size = 4096;
		/* pfmfs has perfmon2's default format, no other. */
		CHECK_ERRNO(pfm_create_context(&ctx, smpl_name, &smpl, sizeof(smpl)), EINVAL);
		CHECK_EQ_U64(count_sessions(), 0);

		/* The default format's buffer maps on every backend (the fast
		 * path's socket hands it out on x86 too). */
		fd = (int)CHECK_OK(pfm_create_context(&ctx, PFM_DFL_SMPL_NAME, &smpl, sizeof(smpl)));
		errno = 0;
		m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
		CHECK_EQ_U64(((const pfm_dfl_smpl_hdr_t *)m)->hdr_buf_size, 4096);
		CHECK_OK(munmap(m, 4096));
		CHECK_OK(close(fd));
		CHECK_EQ_U64(wait_sessions(0), 0);
	}
	CHECK_EQ_U64(count_sessions(), 0);

	/* ---- unloaded ---- */
	fd = (int)CHECK_OK(create(0));
	pcs[0] = pmc(0, 0, PMC0_INST);
	CHECK_OK(pfm_write_pmcs(fd, pcs, 1));
	pds[0] = pmd(0, 0, 0);
	CHECK_OK(pfm_write_pmds(fd, pds, 1));
	CHECK_OK(one_set(fd, 1, 1));

	CHECK_ERRNO(pfm_start(fd, NULL), EINVAL);	/* start/stop need a load */
	CHECK_ERRNO(pfm_stop(fd), EINVAL);
	CHECK_ERRNO(pfm_restart(fd), EBUSY);
	CHECK_STATE(fd, "unloaded");
	CHECK_OK(pfm_unload_context(fd));		/* unloading the unloaded is harmless */

	/* Registers the PMU does not have (the sim: pmc0-3,16 and pmd0-3,16-18). */
	pcs[0] = pmc(0, 5, PMC0_INST);
	CHECK_ERRNO(pfm_write_pmcs(fd, pcs, 1), EINVAL);
	pds[0] = pmd(0, 40, 0);
	CHECK_ERRNO(pfm_write_pmds(fd, pds, 1), EINVAL);
	CHECK_ERRNO(pfm_read_pmds(fd, pds, 1), EINVAL);

	/* A set that does not exist. */
	pcs[0] = pmc(7, 0, PMC0_INST);
	CHECK_ERRNO(pfm_write_pmcs(fd, pcs, 1), EINVAL);
	pds[0] = pmd(7, 0, 0);
	CHECK_ERRNO(pfm_write_pmds(fd, pds, 1), EINVAL);
	CHECK_ERRNO(pfm_read_pmds(fd, pds, 1), EINVAL);
	memset(&si, 0, sizeof(si));
	si.set_id = 7;
	CHECK_ERRNO(pfm_getinfo_evtsets(fd, &si, 1), EINVAL);
	CHECK_ERRNO(one_set(fd, 9, 0), EINVAL);
	CHECK_ERRNO(load(fd, tid_self(), 7), EINVAL);
	CHECK_STATE(fd, "unloaded");

	/* A set whose rule the mount refuses (a time switch of 0 ns) is not
	 * made at all (found by mount_fuzz.py's libpfm client: the set stayed). */
	{
		pfarg_setdesc_t d;

		memset(&d, 0, sizeof(d));
		d.set_id = 7;
		d.set_flags = PFM_SETFL_TIME_SWITCH;
		CHECK_ERRNO(pfm_create_evtsets(fd, &d, 1), EINVAL);
		CHECK_ERRNO(pfm_getinfo_evtsets(fd, &si, 1), EINVAL);
		CHECK_ERRNO(one_set(fd, 7, 0), EINVAL);
	}

	/* A PMD never written (pmd2: nothing selects it either). */
	pds[0] = pmd(0, 2, 0);
	CHECK_ERRNO(pfm_read_pmds(fd, pds, 1), EINVAL);

	/* Bad PMC values: reserved bits (63:32), no privilege level. Rejected
	 * as a whole: pmc1 of the same vector is not written either. */
	pcs[0] = pmc(0, 1, PMC0_INST);
	pcs[1] = pmc(0, 0, PMC0_INST | (1ULL << 40));
	CHECK_ERRNO(pfm_write_pmcs(fd, pcs, 2), EINVAL);
	CHECK(strcmp(set_file(fd, "pmc1"), "0x0\n") == 0, "pmc1 is %s after a refused vector",
	      set_file(fd, "pmc1"));
	pcs[1] = pmc(0, 0, 0xc0);
	CHECK_ERRNO(pfm_write_pmcs(fd, pcs, 2), EINVAL);
	CHECK(strcmp(set_file(fd, "pmc0"), "0x100c0\n") == 0, "pmc0 is %s", set_file(fd, "pmc0"));

	/* No such thread. */
	CHECK_ERRNO(load(fd, gone_tid(), 0), ESRCH);
	CHECK_STATE(fd, "unloaded");
	CHECK_EQ_U64(read_pmd0(fd), 0);

	/* ---- loaded ---- */
	CHECK_OK(load(fd, tid_self(), 0));
	CHECK_ERRNO(load(fd, tid_self(), 0), EBUSY);
	CHECK_ERRNO(one_set(fd, 2, 1), EBUSY);		/* sets change only while unloaded */
	CHECK_ERRNO(one_set(fd, 1, 0), EBUSY);
	CHECK_ERRNO(start_set(fd, 9), EINVAL);
	CHECK_ERRNO(pfm_restart(fd), EBUSY);		/* nothing to restart */
	CHECK_STATE(fd, "loaded");
	other = (int)CHECK_OK(create(0));		/* the thread has its context (sim, x86) */
	CHECK_ERRNO(load(other, tid_self(), 0), EBUSY);
	CHECK_STATE(other, "unloaded");
	CHECK_OK(close(other));

	/* After all of that the context counts exactly. */
	if (on_x86) {
		/* A thread context is loaded: no cpu takes a system-wide one. */
		other = (int)CHECK_OK(create(PFM_FL_SYSTEM_WIDE));
		CHECK_ERRNO(load(other, 0, 0), EBUSY);
		CHECK_STATE(other, "unloaded");
		CHECK_OK(close(other));
		CHECK_STATE(fd, "loaded");
	}
	window_open(&win);
	CHECK_OK(pfm_start(fd, NULL));
	CHECK_ERRNO(pfm_restart(fd), EBUSY);
	CHECK_ERRNO(load(fd, tid_self(), 0), EBUSY);
	CHECK_STATE(fd, "active");
	if (on_x86)
		window_burn(&win, X86_RUN_NS);
	else
		sim_advance(1000);
	CHECK_OK(pfm_stop(fd));
	window_close(&win);
	if (on_x86)
		CHECK_WINDOW(first = read_pmd0(fd), X86_INST_PER_2NS, &win);
	else
		CHECK_EQ_U64(read_pmd0(fd), 1000 * SIM_INST_PER_NS);

	/* A refused write to the loaded context leaves the count alone. */
	pcs[0] = pmc(0, 0, PMC0_INST | (1ULL << 33));
	CHECK_ERRNO(pfm_write_pmcs(fd, pcs, 1), EINVAL);
	if (on_x86)
		CHECK_EQ_U64(read_pmd0(fd), first);	/* stopped: nothing counted */
	window_open(&win);
	CHECK_OK(pfm_start(fd, NULL));
	if (on_x86)
		window_burn(&win, X86_RUN_NS);
	else
		sim_advance(1000);
	CHECK_OK(pfm_stop(fd));
	window_close(&win);
	if (on_x86)
		CHECK_WINDOW(read_pmd0(fd) - first, X86_INST_PER_2NS, &win);
	else
		CHECK_EQ_U64(read_pmd0(fd), 2000 * SIM_INST_PER_NS);

	/* Unloaded again, sets may change again. */
	CHECK_OK(pfm_unload_context(fd));
	CHECK_OK(one_set(fd, 1, 0));
	CHECK_ERRNO(one_set(fd, 1, 0), EINVAL);

	CHECK_OK(close(fd));
	not_a_context(fd);	/* closed: its number means nothing now */
	CHECK_EQ_U64(wait_sessions(0), 0);
	printf("errno_rules: ok\n");
	return 0;
}
