/*
 * smpl.h: what the sampling programs (smpl_*.c) share: perfmon2's default
 * format on the sim, its buffer mapped with mmap() of the descriptor, and
 * the check of a buffer's header and entries against what the sim makes
 * exact under the manual clock (pfmfs(5), SAMPLING):
 *   pmc0 = UNHALTED_CORE_CYCLES, interrupt -> pmd0, 3 per ns: samples every
 *          SMPL_PERIOD cycles (SMPL_STEP_NS of the target's time), recording
 *   pmc1 = INSTRUCTION_RETIRED -> pmd1, 2 per ns, never reset.
 * Sample n (1, 2, ... since the load, none lost) is then taken at target time
 * n x SMPL_STEP_NS, with pmd1 = 2 x that, the sim's ip for that time, and
 * last_reset_val = -SMPL_PERIOD (the value written, and both resets).
 * Include check.h first.
 */
#ifndef PFMFS_TESTS_LIBPFM_SMPL_H
#define PFMFS_TESTS_LIBPFM_SMPL_H

#include <perfmon/perfmon_dfl_smpl.h>
#include <sys/mman.h>

#define SMPL_PERIOD 30000ULL				/* cycles per sample */
#define SMPL_STEP_NS (SMPL_PERIOD / SIM_CYCLES_PER_NS)	/* 10000 ns */
#define SMPL_PMC_INT (1ULL << 20)			/* PERFEVTSEL: interrupt on overflow */
#define SMPL_PMC_EN (1ULL << 22)			/* PERFEVTSEL: enable */
#define SMPL_PMC0 (0x3cULL | SIM_PMC_USR | SMPL_PMC_INT | SMPL_PMC_EN)
#define SMPL_PMC1 (0xc0ULL | SIM_PMC_USR | SMPL_PMC_EN)
#define SMPL_HDR_BYTES 128ULL				/* sizeof(pfm_dfl_smpl_hdr_t) */
#define SMPL_ENTRY_BYTES (40ULL + 8)			/* an entry and pmd1's value */
#define SIM_MIN_BUF_SPACE (40ULL + 8 * 7)		/* the largest entry: 7 PMDs on the sim */
/* The smallest buffer that fills after n entries: room for n - 1 and the
 * largest entry, not for n and another. */
#define SMPL_BUF_FOR(n) (SMPL_HDR_BYTES + ((n) - 1) * SMPL_ENTRY_BYTES + SIM_MIN_BUF_SPACE)

/* The made-up but stable ip the sim reports for an overflow at target time t. */
static inline uint64_t smpl_sim_ip(uint64_t t_ns)
{
	return 0x401000 + ((t_ns / 64) % 0x1000) * 4;
}

/* pfm_dfl_smpl_arg_t for buf_size bytes, reserved fields 0. */
static inline pfm_dfl_smpl_arg_t smpl_arg(uint64_t buf_size)
{
	pfm_dfl_smpl_arg_t a;

	memset(&a, 0, sizeof(a));
	a.buf_size = buf_size;
	return a;
}

/* perfmon2's call: a context with the default format of buf_size bytes. */
static inline int smpl_create(uint32_t ctx_flags, uint64_t buf_size)
{
	pfarg_ctx_t ctx;
	pfm_dfl_smpl_arg_t a = smpl_arg(buf_size);

	memset(&ctx, 0, sizeof(ctx));
	ctx.ctx_flags = ctx_flags;
	return pfm_create_context(&ctx, PFM_DFL_SMPL_NAME, &a, sizeof(a));
}

/* task_smpl's mapping of the buffer: PROT_READ, MAP_PRIVATE or MAP_SHARED. */
static inline const pfm_dfl_smpl_hdr_t *smpl_map(int fd, size_t len, int type)
{
	void *m = mmap(NULL, len, PROT_READ, type, fd, 0);

	CHECK(m != MAP_FAILED, "mmap of context %d's buffer (%zu bytes): %s", fd, len, strerror(errno));
	return (const pfm_dfl_smpl_hdr_t *)m;
}

/* The program's registers: pmd0 samples cycles every SMPL_PERIOD and records
 * pmd1 (instructions, from 0), with notify (the buffer-full notification). */
static inline void smpl_program_v2(int fd)
{
	pfarg_pmc_t pc[2];
	pfarg_pmd_t pd[2];

	memset(pc, 0, sizeof(pc));
	pc[0].reg_num = 0, pc[0].reg_value = SMPL_PMC0;
	pc[1].reg_num = 1, pc[1].reg_value = SMPL_PMC1;
	CHECK_OK(pfm_write_pmcs(fd, pc, 2));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_num = 0;
	pd[0].reg_flags = PFM_REGFL_OVFL_NOTIFY;
	pd[0].reg_value = -SMPL_PERIOD;
	pd[0].reg_short_reset = -SMPL_PERIOD;
	pd[0].reg_long_reset = -SMPL_PERIOD;
	pd[0].reg_smpl_pmds[0] = 1ULL << 1;
	pd[1].reg_num = 1;
	CHECK_OK(pfm_write_pmds(fd, pd, 2));
}

/* The header of a buffer of buf_size bytes holding count entries, full
 * `overflows` times so far. */
static inline void smpl_check_header(const pfm_dfl_smpl_hdr_t *h, uint64_t buf_size, uint64_t count,
				     uint64_t overflows)
{
	CHECK_EQ_U64(h->hdr_count, count);
	CHECK_EQ_U64(h->hdr_cur_offs, SMPL_HDR_BYTES + count * SMPL_ENTRY_BYTES);
	CHECK_EQ_U64(h->hdr_overflows, overflows);
	CHECK_EQ_U64(h->hdr_buf_size, buf_size);
	CHECK_EQ_U64(h->hdr_min_buf_space, SIM_MIN_BUF_SPACE);
	CHECK_EQ_U64(h->hdr_version, PFM_DFL_SMPL_VERSION);
	CHECK_EQ_U64(PFM_VERSION_MAJOR(h->hdr_version), 1);
	CHECK_EQ_U64(h->hdr_buf_flags, 0);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_U64(h->hdr_reserved[i], 0);
}

/* Walks a buffer as perfmon2 programs do (hdr_count entries after the
 * header, each followed by its smpl_pmds values) and checks every field:
 * the entries are samples first_n, first_n + 1, ... of thread tid of
 * process pid. */
static inline void smpl_check_entries(const pfm_dfl_smpl_hdr_t *h, uint64_t first_n, pid_t tid, pid_t pid)
{
	const unsigned char *pos = (const unsigned char *)(h + 1);
	uint64_t count = h->hdr_count;

	for (uint64_t k = 0; k < count; k++, pos += SMPL_ENTRY_BYTES) {
		const pfm_dfl_smpl_entry_t *e = (const pfm_dfl_smpl_entry_t *)pos;
		const uint64_t *values = (const uint64_t *)(e + 1);
		uint64_t n = first_n + k, t = n * SMPL_STEP_NS;

		CHECK(e->pid == (uint32_t)tid && e->tgid == (uint32_t)pid,
		      "entry %" PRIu64 ": pid %u tgid %u, expected thread %d of process %d", k, e->pid,
		      e->tgid, (int)tid, (int)pid);
		CHECK_EQ_U64(e->ovfl_pmd, 0);
		CHECK_EQ_U64(e->reserved, 0);
		CHECK_EQ_U64(e->last_reset_val, -SMPL_PERIOD);
		CHECK_EQ_U64(e->tstamp, t);
		CHECK_EQ_U64(e->ip, smpl_sim_ip(t));
		CHECK_EQ_U64(e->cpu, 0);
		CHECK_EQ_U64(e->set, 0);
		CHECK_EQ_U64(values[0], t * SIM_INST_PER_NS);	/* pmd1, at the interrupt */
	}
}

/* The session's smpl_buf (the same buffer through the mount) has exactly
 * the mapping's first buf_size bytes. */
static inline void smpl_check_file(int fd, const void *mapping, uint64_t buf_size)
{
	static unsigned char file[65536];
	char path[PATH_MAX];
	ssize_t n;
	int f;

	CHECK(buf_size < sizeof(file), "buffer of %" PRIu64 " bytes: too big for the check", buf_size);
	snprintf(path, sizeof(path), "%s/smpl_buf", fd_session_dir(fd));
	f = (int)CHECK_OK(open(path, O_RDONLY));
	n = read(f, file, sizeof(file));
	close(f);
	CHECK_EQ_U64(n, buf_size);
	CHECK(memcmp(file, mapping, buf_size) == 0, "smpl_buf and the mapping differ");
}

#endif /* PFMFS_TESTS_LIBPFM_SMPL_H */
