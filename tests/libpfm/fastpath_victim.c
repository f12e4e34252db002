// pfmfs-test: backends=sim,perf run=no
/*
 * fastpath_victim.c: the victim of test_trust.py's restart hijack (pfmfs(5),
 * SECURITY, "The fast path's socket"). A self-monitoring program that keeps
 * running while pfmfsd restarts on its mount, and another user binds the
 * old daemon's fast-path socket name in between.
 *
 * First it reads its counters once through the fast path (the library then
 * keeps the daemon's endpoint for the process), prints "ready" and waits for
 * a line on stdin. The driver restarts the daemon meanwhile. Then it makes
 * a new context on the new daemon and reads it: the library must tell the
 * squatter nothing, find the new daemon through pmu/info, map its page and
 * read the counts the mount shows. It prints "ok" and exits 0.
 */
#include "check.h"

/* The fast-path page of the session behind fd is mapped in this process. */
static int page_mapped(int fd)
{
	char want[128], line[512];
	const char *dir = fd_session_dir(fd), *name = strrchr(dir, '/') + 1;
	FILE *maps = fopen("/proc/self/maps", "r");
	int found = 0;

	CHECK(maps != NULL, "/proc/self/maps: %s", strerror(errno));
	snprintf(want, sizeof(want), "/memfd:pfmfs-fastpath:%s ", name);
	while (fgets(line, sizeof(line), maps))
		found |= strstr(line, want) != NULL;
	fclose(maps);
	return found;
}

/* A context counting the first event of the PMU on this thread, started. */
static int counting(const pfmlib_output_param_t *outp)
{
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd;
	pfarg_ctx_t ctx;
	pfarg_load_t load;
	int fd;

	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	memset(pc, 0, sizeof(pc));
	for (unsigned int i = 0; i < outp->pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp->pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp->pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp->pfp_pmc_count));
	memset(&pd, 0, sizeof(pd));
	pd.reg_num = (uint16_t)outp->pfp_pmds[0].reg_num;
	pd.reg_value = 12345;
	CHECK_OK(pfm_write_pmds(fd, &pd, 1));
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)tid_self();
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	return fd;
}

/* Stops the context and reads its PMD as pfm_read_pmds and as the mount
 * says: both the same, and the read came through the session's page. */
static void read_and_compare(int fd, unsigned pmd, const char *when)
{
	pfarg_pmd_t got;
	char pmds[4096], key[16];
	const char *line;

	CHECK_OK(pfm_stop(fd));
	memset(&got, 0, sizeof(got));
	got.reg_num = (uint16_t)pmd;
	CHECK_OK(pfm_read_pmds(fd, &got, 1));
	CHECK(page_mapped(fd), "%s: pfm_read_pmds did not map the session's page from pfmfsd", when);
	session_text(fd, "sets/0/pmds", pmds, sizeof(pmds));
	snprintf(key, sizeof(key), "pmd=%u ", pmd);
	line = strstr(pmds, key);
	CHECK(line != NULL, "%s: sets/0/pmds has no pmd%u: %s", when, pmd, pmds);
	CHECK(got.reg_value == kv_u64(line, "value"), "%s: pfm_read_pmds says %" PRIu64 ", the mount %" PRIu64,
	      when, got.reg_value, kv_u64(line, "value"));
	CHECK(got.reg_value >= 12345, "%s: pmd%u is %" PRIu64 ", below what was written", when, pmd, got.reg_value);
	printf("%s: pmd%u = %" PRIu64 "\n", when, pmd, got.reg_value);
}

int main(void)
{
	static pfmlib_input_param_t inp;
	static pfmlib_output_param_t outp;
	char go[16];
	int before, after;

	CHECK_PFM(pfm_initialize());
	inp.pfp_event_count = 1;	/* event 0: the first line of pmu/events */
	inp.pfp_dfl_plm = PFM_PLM3;
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));

	before = counting(&outp);
	read_and_compare(before, outp.pfp_pmds[0].reg_num, "before the restart");
	printf("ready\n");
	fflush(stdout);
	CHECK(fgets(go, sizeof(go), stdin) != NULL, "no go on stdin");

	/* The old daemon is gone, and its session with it. */
	close(before);
	after = counting(&outp);
	read_and_compare(after, outp.pfp_pmds[0].reg_num, "after the restart");
	CHECK_OK(close(after));
	printf("ok\n");
	return 0;
}
