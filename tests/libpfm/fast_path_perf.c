// pfmfs-test: backends=perf
/*
 * fast_path_perf.c: on the perf backend, pfm_read_pmds of a self-monitoring
 * context reads the session's perf group itself (docs/libpfm-compat.md, "The
 * fast path") and answers what the mount answers. The program counts its
 * own page faults on two PMDs (PAGE_FAULTS and MINOR_FAULTS) and touches
 * fresh pages, which fault once each; between reads it touches nothing, so a
 * read through the fast path, one of the session's pmds file and another
 * fast read give the same numbers, and N pages touched add N (under a
 * sanitizer, whose runtime faults in memory of its own, the mount's number
 * lies between the fast ones, and N pages add at least N). With pfmfsd
 * stopped (SIGSTOP) the reads still answer and follow the counts, and once
 * it goes on the mount agrees with the last of them: they came from the
 * group, not the mount.
 */
#include "check.h"

#include <sys/mman.h>

static pfmlib_output_param_t outp;
static pfarg_pmd_t pd[2];

static void encode(void)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */
	memset(&inp, 0, sizeof(inp));
	CHECK_PFM(pfm_find_event("PAGE_FAULTS", &inp.pfp_events[0].event));
	CHECK_PFM(pfm_find_event("MINOR_FAULTS", &inp.pfp_events[1].event));
	inp.pfp_event_count = 2;
	inp.pfp_dfl_plm = PFM_PLM3;
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));
	CHECK_EQ_U64(outp.pfp_pmd_count, 2);
	for (int i = 0; i < 2; i++)
		pd[i].reg_num = (uint16_t)outp.pfp_pmds[i].reg_num;
}

/* n page faults at user level, no more (fresh pages, no huge pages). */
static void touch_pages(unsigned int n)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile char *m = mmap(NULL, (size_t)page * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	madvise((void *)m, (size_t)page * n, MADV_NOHUGEPAGE);
	for (unsigned int i = 0; i < n; i++)
		m[(size_t)page * i] = 1;
	munmap((void *)m, (size_t)page * n);
}

static void read_fast(int fd, uint64_t v[2])
{
	pfarg_pmd_t got[2] = { { .reg_num = pd[0].reg_num }, { .reg_num = pd[1].reg_num } };
	CHECK_OK(pfm_read_pmds(fd, got, 2));
	v[0] = got[0].reg_value;
	v[1] = got[1].reg_value;
}

/* The session's sets/0/pmds, read into a buffer that is already faulted in. */
static void read_mount(int fd, uint64_t v[2])
{
	static char text[16384];
	session_text(fd, "sets/0/pmds", text, sizeof(text));
	for (int i = 0; i < 2; i++) {
		char want[16];
		snprintf(want, sizeof(want), "pmd=%u ", pd[i].reg_num);
		char *line = strstr(text, want);
		CHECK(line != NULL, "sets/0/pmds has no pmd%u", pd[i].reg_num);
		v[i] = kv_u64(line, "value");
	}
}

/* A sanitizer's runtime faults its shadow memory in as the program goes:
 * then the program's own faults are a lower bound of what counts. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
static const int exact = 0;
#else
static const int exact = 1;
#endif

/* n fresh pages touched between reads a and b: n faults (at least, under a
 * sanitizer), on both PMDs alike. */
static void check_faults(const uint64_t a[2], const uint64_t b[2], uint64_t n)
{
	CHECK(b[0] - a[0] == n || (!exact && b[0] - a[0] > n), "%" PRIu64 " pages touched, %" PRIu64 " faults counted",
	      n, b[0] - a[0]);
	CHECK_EQ_U64(b[1] - a[1], b[0] - a[0]);
}

int main(void)
{
	pfarg_ctx_t ctx = { 0 };
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	uint64_t a[2], b[2], c[2];

	CHECK_PFM(pfm_initialize());
	encode();
	memset(pc, 0, sizeof(pc));
	for (unsigned int i = 0; i < outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
	}
	pd[0].reg_value = 1000;	/* counts on from where they are written */
	pd[1].reg_value = 1ULL << 40;
	int fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
	CHECK_OK(pfm_write_pmds(fd, pd, 2));
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));

	/* Once first, so that every buffer the reads use has faulted in. */
	read_mount(fd, a);
	read_fast(fd, a);
	for (int round = 0; round < 20; round++) {
		read_fast(fd, a);
		read_mount(fd, b);
		read_fast(fd, c);
		/* Nothing faults between the reads (under a sanitizer its runtime
		 * may: then the mount's answer lies between the two fast ones). */
		for (int i = 0; i < 2; i++)
			CHECK(a[i] <= b[i] && b[i] <= c[i] && ((a[i] == b[i] && b[i] == c[i]) || !exact),
			      "round %d, pmd%u: fast %" PRIu64 ", mount %" PRIu64 ", fast again %" PRIu64, round,
			      pd[i].reg_num, a[i], b[i], c[i]);
		touch_pages(37);
		read_fast(fd, b);
		check_faults(a, b, 37);
	}

	/* Only the group can answer now. */
	daemon_stop(10);  /* its watchdog thread faults pages in of our own thread: read after */
	read_fast(fd, a);
	for (int round = 0; round < 100; round++) {
		touch_pages(3);
		read_fast(fd, b);
		check_faults(a, b, 3);
		a[0] = b[0];
		a[1] = b[1];
	}
	daemon_continue();
	read_mount(fd, b);
	for (int i = 0; i < 2; i++)
		CHECK(b[i] == a[i] || (!exact && b[i] > a[i]), "pmd%u: the last fast read %" PRIu64 ", the mount then %" PRIu64,
		      pd[i].reg_num, a[i], b[i]);

	/* Stopped: the page holds the values, and nothing counts. */
	CHECK_OK(pfm_stop(fd));
	read_fast(fd, a);
	touch_pages(11);
	read_fast(fd, b);
	read_mount(fd, c);
	CHECK(a[0] == b[0] && b[0] == c[0] && a[1] == b[1] && b[1] == c[1], "stopped, the counts moved");  /* even under a sanitizer */
	CHECK(a[0] >= 1000 + 20 * 37 + 300 && a[1] >= (1ULL << 40) + 20 * 37 + 300, "too few faults counted");
	CHECK_EQ_U64(a[0] - 1000, a[1] - (1ULL << 40));
	CHECK_OK(pfm_unload_context(fd));
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	printf("fast_path_perf: the group's reads agree with the mount\n");
	return 0;
}
