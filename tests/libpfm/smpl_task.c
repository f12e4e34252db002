// pfmfs-test: backends=sim
/*
 * smpl_task.c: perfmon2's task_smpl loop, with the perfmon3-style calls
 * (pfm_create with PFM_FL_SMPL_FMT, pfm_write, pfm_attach, pfm_set_state):
 * a program samples a child process it forked (smpl.h's registers), and
 * waits for the notifications with read(): each message says the buffer is
 * full, the program walks the mapped buffer (every entry the child's) and
 * restarts. The child then exits: the end message comes, and the last,
 * partial buffer is still there to read after it, and after close().
 */
#include "check.h"
#include "smpl.h"

#include <poll.h>
#include <sys/wait.h>

#define SMPL_FILL 3			/* entries per full buffer */
#define BUF_SIZE SMPL_BUF_FOR(SMPL_FILL)
#define ROUNDS 3

/* The monitored child: runs until told to exit (a byte on its stdin pipe).
 * Under the manual clock its time is the program's advance, not its own
 * running, so it waits instead of spinning. */
static pid_t start_child(int *feed)
{
	int p[2];
	char c;
	pid_t pid;

	CHECK_OK(pipe(p));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(p[0]);
	*feed = p[1];
	return pid;
}

/* task_smpl's read() of the next message, bounded: the end message comes
 * once pfmfsd has seen the child exit, a moment after waitpid. */
static void next_msg(int fd, pfarg_msg_t *msg, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	CHECK(poll(&pfd, 1, (int)wait_ms()) == 1, "no message (%s) within %ld ms", what, wait_ms());
	CHECK_EQ_U64(read(fd, msg, sizeof(*msg)), sizeof(*msg));
}

static void program_v3(int fd)
{
	pfarg_pmr_t pmcs[2];
	pfarg_pmd_attr_t pmds[2];

	memset(pmcs, 0, sizeof(pmcs));
	pmcs[0].reg_num = 0, pmcs[0].reg_value = SMPL_PMC0;
	pmcs[1].reg_num = 1, pmcs[1].reg_value = SMPL_PMC1;
	CHECK_OK(pfm_write(fd, 0, PFM_RW_PMC, pmcs, sizeof(pmcs)));
	memset(pmds, 0, sizeof(pmds));
	pmds[0].reg_num = 0;
	pmds[0].reg_flags = PFM_REGFL_OVFL_NOTIFY;
	pmds[0].reg_value = -SMPL_PERIOD;
	pmds[0].reg_short_reset = -SMPL_PERIOD;
	pmds[0].reg_long_reset = -SMPL_PERIOD;
	pmds[0].reg_smpl_pmds[0] = 1ULL << 1;
	pmds[1].reg_num = 1;
	CHECK_OK(pfm_write(fd, 0, PFM_RW_PMD_ATTR, pmds, sizeof(pmds)));
}

int main(void)
{
	pfm_dfl_smpl_arg_t arg = smpl_arg(BUF_SIZE);
	const pfm_dfl_smpl_hdr_t *hdr;
	struct pollfd pfd;
	pfarg_sinfo_t sif;
	pfarg_msg_t msg;
	uint64_t n = 0;
	int fd, feed, status;
	pid_t child;

	memset(&sif, 0, sizeof(sif));
	fd = (int)CHECK_OK(pfm_create(PFM_FL_SMPL_FMT, &sif, PFM_DFL_SMPL_NAME, &arg, sizeof(arg)));
	CHECK_EQ_U64(sif.sif_avail_pmcs[0], SIM_AVAIL_PMCS);
	CHECK_EQ_U64(sif.sif_avail_pmds[0], SIM_AVAIL_PMDS);
	hdr = smpl_map(fd, BUF_SIZE, MAP_PRIVATE);
	printf("buffer mapped @%p, hdr_cur_offs=%" PRIu64 " version=%u.%u\n", (const void *)hdr,
	       hdr->hdr_cur_offs, PFM_VERSION_MAJOR(hdr->hdr_version), PFM_VERSION_MINOR(hdr->hdr_version));
	smpl_check_header(hdr, BUF_SIZE, 0, 0);
	program_v3(fd);

	child = start_child(&feed);
	CHECK_OK(pfm_attach(fd, 0, child));
	CHECK_OK(pfm_set_state(fd, 0, PFM_ST_START));

	for (int round = 0; round < ROUNDS; round++) {
		for (int k = 0; k < SMPL_FILL; k++)
			sim_advance(SMPL_STEP_NS);
		n += SMPL_FILL;
		/* task_smpl's loop: wait for a message, process the samples, restart. */
		next_msg(fd, &msg, "the buffer full");
		CHECK_EQ_U64(msg.type, PFM_MSG_OVFL);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pmds[0], 0x1);
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_pid, child);	/* perfmon2's naming: the thread */
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_tid, child);	/* and the process */
		CHECK_EQ_U64(msg.pfm_ovfl_msg.msg_ovfl_ip, smpl_sim_ip(n * SMPL_STEP_NS));
		smpl_check_header(hdr, BUF_SIZE, SMPL_FILL, (uint64_t)round + 1);
		smpl_check_entries(hdr, n - SMPL_FILL + 1, child, child);
		smpl_check_file(fd, hdr, BUF_SIZE);
		CHECK_OK(pfm_set_state(fd, 0, PFM_ST_RESTART));
		smpl_check_header(hdr, BUF_SIZE, 0, (uint64_t)round + 1);
		printf("buffer %d: %d samples of process %d\n", round + 1, SMPL_FILL, (int)child);
	}

	/* One more sample: no notification, the buffer holds it. */
	sim_advance(SMPL_STEP_NS);
	n++;
	pfd.fd = fd, pfd.events = POLLIN, pfd.revents = 0;
	CHECK_EQ_U64(poll(&pfd, 1, 0), 0);
	smpl_check_header(hdr, BUF_SIZE, 1, ROUNDS);

	/* The child exits: the end message; the partial buffer stays. */
	CHECK_EQ_U64(write(feed, "x", 1), 1);
	close(feed);
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child status 0x%x", status);
	next_msg(fd, &msg, "the child's end");
	CHECK_EQ_U64(msg.type, PFM_MSG_END);
	smpl_check_header(hdr, BUF_SIZE, 1, ROUNDS);
	smpl_check_entries(hdr, n, child, child);
	smpl_check_file(fd, hdr, BUF_SIZE);

	/* task_smpl closes first and unmaps after: the mapping outlives the context. */
	CHECK_OK(close(fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	smpl_check_header(hdr, BUF_SIZE, 1, ROUNDS);
	smpl_check_entries(hdr, n, child, child);
	CHECK_OK(munmap((void *)hdr, BUF_SIZE));
	printf("ok: %" PRIu64 " samples in %d full buffers and a partial one\n", n, ROUNDS);
	return 0;
}
