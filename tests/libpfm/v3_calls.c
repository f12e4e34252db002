// pfmfs-test: backends=sim
/*
 * v3_calls.c: the perfmon3-style calls of libpfm 3.10 (pfm_create, pfm_write,
 * pfm_read, pfm_create_sets, pfm_getinfo_sets, pfm_attach, pfm_set_state),
 * with raw register values as a perfmon3 program writes them after pfmlib:
 *   pmc0  = INSTRUCTION_RETIRED (0xc0) at user level -> pmd0, 2 per ns
 *   pmc16 = fixed counter 1 (core cycles) at user level -> pmd17, 3 per ns
 * Two sets switch every millisecond of virtual time; set 0's pmd0 starts
 * 1000 events before an overflow and takes its short reset value (5) there.
 *
 * Sim only: set switches on exact milliseconds of virtual time and an
 * overflow 1000 events in, with exact counts per set, need the manual clock.
 */
#include "check.h"

#include <perfmon/perfmon_dfl_smpl.h>

#define PMC0_INST (0xc0 | SIM_PMC_USR)
#define PMC16_CYCLES 0x20	/* FIXED_CTR_CTRL: counter 1, USR bit */
#define SWITCH_NS 1000000
#define RUN_NS 2500000		/* set 0: [0, 1 ms) and [2, 2.5 ms); set 1: [1, 2 ms) */

static pfarg_pmd_attr_t attr(uint16_t set, uint16_t num, uint64_t value)
{
	pfarg_pmd_attr_t a;

	memset(&a, 0, sizeof(a));
	a.reg_set = set;
	a.reg_num = num;
	a.reg_value = value;
	return a;
}

int main(void)
{
	pfarg_sinfo_t sif;
	pfarg_pmr_t pmcs[3], pmr[2];
	pfarg_pmd_attr_t pmds[3];
	pfarg_set_desc_t sets[2];
	pfarg_set_info_t info[2];
	pfm_dfl_smpl_arg_t smpl;
	unsigned int i;
	int fd;

	/* A sampling format pfmfs does not have: refused, and nothing is left
	 * (smpl_task.c and smpl_refusals.c use the default format). */
	memset(&smpl, 0, sizeof(smpl));
	smpl.buf_size = 4096;
	CHECK_ERRNO(pfm_create(PFM_FL_SMPL_FMT, &sif, "pebs", &smpl, sizeof(smpl)), EINVAL);
	CHECK_EQ_U64(count_sessions(), 0);

	/* pfm_create tells which registers the session may use. */
	memset(&sif, 0xff, sizeof(sif));
	fd = (int)CHECK_OK(pfm_create(0, &sif));
	CHECK_EQ_U64(count_sessions(), 1);
	CHECK_EQ_U64(sif.sif_avail_pmcs[0], SIM_AVAIL_PMCS);
	CHECK_EQ_U64(sif.sif_avail_pmds[0], SIM_AVAIL_PMDS);
	for (i = 1; i < PFM_PMC_BV; i++) {
		CHECK_EQ_U64(sif.sif_avail_pmcs[i], 0);
		CHECK_EQ_U64(sif.sif_avail_pmds[i], 0);
	}

	/* Set 0 exists and is modified; set 1 is created: both switch on time. */
	memset(sets, 0, sizeof(sets));
	for (i = 0; i < 2; i++) {
		sets[i].set_id = (uint16_t)i;
		sets[i].set_flags = PFM_SETFL_TIME_SWITCH;
		sets[i].set_timeout = SWITCH_NS;
	}
	CHECK_ERRNO(pfm_create_sets(fd, 0, sets, sizeof(sets) - 1), EINVAL);
	CHECK_OK(pfm_create_sets(fd, 0, sets, sizeof(sets)));
	CHECK_EQ_U64(sets[1].set_timeout, SWITCH_NS);	/* the effective timeout: whole ticks */

	/* pfm_write: sizes are bytes and must be whole elements; flags 0. */
	memset(pmcs, 0, sizeof(pmcs));
	pmcs[0].reg_num = 0, pmcs[0].reg_value = PMC0_INST;
	pmcs[1].reg_num = 16, pmcs[1].reg_value = PMC16_CYCLES;
	pmcs[2].reg_set = 1, pmcs[2].reg_num = 0, pmcs[2].reg_value = PMC0_INST;
	CHECK_ERRNO(pfm_write(fd, 0, PFM_RW_PMC, pmcs, sizeof(pmcs) - 1), EINVAL);
	CHECK_ERRNO(pfm_write(fd, 0, 9, pmcs, sizeof(pmcs)), EINVAL);
	CHECK_ERRNO(pfm_write(fd, 1, PFM_RW_PMC, pmcs, sizeof(pmcs)), EINVAL);
	CHECK_OK(pfm_write(fd, 0, PFM_RW_PMC, pmcs, sizeof(pmcs)));

	/* Plain PMD values, then every attribute of set 0's pmd0. */
	memset(pmr, 0, sizeof(pmr));
	pmr[0].reg_num = 17;
	pmr[1].reg_set = 1, pmr[1].reg_num = 0;
	CHECK_OK(pfm_write(fd, 0, PFM_RW_PMD, pmr, sizeof(pmr)));
	pmds[0] = attr(0, 0, (uint64_t)-1000);
	pmds[0].reg_short_reset = 5;
	pmds[0].reg_long_reset = 7;
	pmds[0].reg_ovfl_swcnt = 3;
	CHECK_ERRNO(pfm_write(fd, 0, PFM_RW_PMD_ATTR, pmds, sizeof(pmds[0]) + 8), EINVAL);
	CHECK_OK(pfm_write(fd, 0, PFM_RW_PMD_ATTR, pmds, sizeof(pmds[0])));

	/* Read back before anything counted. */
	pmds[0] = attr(0, 0, 0);
	pmds[1] = attr(0, 17, 1);
	pmds[2] = attr(1, 0, 1);
	CHECK_OK(pfm_read(fd, 0, PFM_RW_PMD_ATTR, pmds, sizeof(pmds)));
	CHECK_EQ_U64(pmds[0].reg_value, (uint64_t)-1000);
	CHECK_EQ_U64(pmds[0].reg_ovfl_swcnt, 3);
	CHECK_EQ_U64(pmds[0].reg_last_value, 0);
	CHECK_EQ_U64(pmds[1].reg_value, 0);
	CHECK_EQ_U64(pmds[2].reg_value, 0);

	/* Attach to this thread, start, run 2.5 ms, stop. */
	CHECK_OK(pfm_attach(fd, 0, tid_self()));
	CHECK_STATE(fd, "loaded");
	CHECK_ERRNO(pfm_attach(fd, 0, tid_self()), EBUSY);
	CHECK_ERRNO(pfm_set_state(fd, 0, 7), EINVAL);
	CHECK_ERRNO(pfm_set_state(fd, 0, PFM_ST_RESTART), EBUSY);	/* nothing pending */
	CHECK_OK(pfm_set_state(fd, 0, PFM_ST_START));
	CHECK_STATE(fd, "active");
	sim_advance(RUN_NS);
	CHECK_OK(pfm_set_state(fd, 0, PFM_ST_STOP));
	CHECK_STATE(fd, "loaded");

	/* Set 0 counted 1.5 ms: 3,000,000 instructions from -1000, with one
	 * overflow (to the short reset, 5) after the first 1000; 4,500,000
	 * cycles. Set 1 counted 1 ms: 2,000,000 instructions. */
	pmds[0] = attr(0, 0, 0);
	pmds[1] = attr(0, 17, 0);
	pmds[2] = attr(1, 0, 0);
	CHECK_OK(pfm_read(fd, 0, PFM_RW_PMD_ATTR, pmds, sizeof(pmds)));
	CHECK_EQ_U64(pmds[0].reg_value, 5 + 1500000 * SIM_INST_PER_NS - 1000);
	CHECK_EQ_U64(pmds[0].reg_last_value, 5);
	CHECK_EQ_U64(pmds[0].reg_ovfl_swcnt, 3);	/* time switching leaves it alone */
	CHECK_EQ_U64(pmds[1].reg_value, 1500000 * SIM_CYCLES_PER_NS);
	CHECK_EQ_U64(pmds[2].reg_value, 1000000 * SIM_INST_PER_NS);
	memset(pmr, 0, sizeof(pmr));
	pmr[1].reg_set = 1;
	CHECK_ERRNO(pfm_read(fd, 0, PFM_RW_PMD, pmr, sizeof(pmr) + 1), EINVAL);
	CHECK_OK(pfm_read(fd, 0, PFM_RW_PMD, pmr, sizeof(pmr)));
	CHECK_EQ_U64(pmr[0].reg_value, 5 + 1500000 * SIM_INST_PER_NS - 1000);
	CHECK_EQ_U64(pmr[1].reg_value, 1000000 * SIM_INST_PER_NS);

	/* Each set's activations and time: what scaling divides by. */
	memset(info, 0, sizeof(info));
	info[0].set_id = 0;
	info[1].set_id = 1;
	CHECK_ERRNO(pfm_getinfo_sets(fd, 0, info, sizeof(info) - 4), EINVAL);
	CHECK_OK(pfm_getinfo_sets(fd, 0, info, sizeof(info)));
	CHECK_EQ_U64(info[0].set_runs, 2);
	CHECK_EQ_U64(info[0].set_duration, 1500000);
	CHECK_EQ_U64(info[0].set_ovfl_pmds[0], 0x1);	/* pmd0 overflowed last */
	CHECK_EQ_U64(info[1].set_runs, 1);
	CHECK_EQ_U64(info[1].set_duration, 1000000);
	CHECK_EQ_U64(info[1].set_timeout, SWITCH_NS);
	CHECK_EQ_U64(info[1].set_ovfl_pmds[0], 0);

	/* PFM_NO_TARGET detaches; counts stay; a thread that is gone: ESRCH. */
	CHECK_OK(pfm_attach(fd, 0, PFM_NO_TARGET));
	CHECK_STATE(fd, "unloaded");
	CHECK_ERRNO(pfm_set_state(fd, 0, PFM_ST_START), EINVAL);
	CHECK_OK(pfm_read(fd, 0, PFM_RW_PMD, pmr, sizeof(pmr)));
	CHECK_EQ_U64(pmr[1].reg_value, 1000000 * SIM_INST_PER_NS);
	CHECK_ERRNO(pfm_attach(fd, 0, 0x3ffffff0), ESRCH);
	CHECK_STATE(fd, "unloaded");

	CHECK_OK(close(fd));
	CHECK_EQ_U64(wait_sessions(0), 0);
	printf("v3_calls: ok\n");
	return 0;
}
