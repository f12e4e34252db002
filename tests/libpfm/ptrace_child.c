// pfmfs-test: backends=sim
/*
 * ptrace_child.c: monitoring another program the perfmon2 way (pfmon's
 * per-process mode). The child stops at its exec under ptrace, the parent
 * loads a context on it and starts monitoring while it is stopped, detaches,
 * lets it run and exit, and reads its counts afterwards: exactly 500 us of
 * the sim's virtual time, and one PFM_MSG_END message on the descriptor.
 */
#include "check.h"

#include <poll.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#define RUN_NS 500000

int main(void)
{
	static pfmlib_input_param_t inp;	/* 116 KiB: not on the stack */
	static pfmlib_output_param_t outp;
	pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
	pfarg_pmd_t pd[2];
	pfarg_ctx_t ctx;
	pfarg_load_t load;
	pfarg_msg_t msg;
	struct pollfd pfd;
	int pipefd[2], status, fd;
	unsigned int i;
	pid_t child;

	CHECK_PFM(pfm_initialize());
	CHECK_PFM(pfm_get_inst_retired_event(&inp.pfp_events[0]));
	CHECK_PFM(pfm_get_cycle_event(&inp.pfp_events[1]));
	inp.pfp_event_count = 2;
	inp.pfp_dfl_plm = PFM_PLM3;
	CHECK_PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));

	/* The child: traced from its exec on, then blocked reading a pipe that
	 * only the parent can close (time does not matter: the manual clock
	 * counts only what the parent advances). */
	CHECK_OK(pipe(pipefd));
	child = (pid_t)CHECK_OK(fork());
	if (child == 0) {
		close(pipefd[1]);
		dup2(pipefd[0], 0);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
			_exit(100);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(101);
	}
	close(pipefd[0]);
	CHECK_EQ_U64(waitpid(child, &status, 0), child);
	CHECK(WIFSTOPPED(status) && WSTOPSIG(status) == SIGTRAP, "child not stopped at exec: status 0x%x",
	      status);

	memset(&ctx, 0, sizeof(ctx));
	fd = (int)CHECK_OK(pfm_create_context(&ctx, NULL, NULL, 0));
	memset(pc, 0, sizeof(pc));
	for (i = 0; i < outp.pfp_pmc_count; i++) {
		pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
		pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
	}
	CHECK_OK(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
	memset(pd, 0, sizeof(pd));
	pd[0].reg_num = (uint16_t)outp.pfp_pmds[0].reg_num;
	pd[1].reg_num = (uint16_t)outp.pfp_pmds[1].reg_num;
	CHECK_OK(pfm_write_pmds(fd, pd, 2));

	/* Load and start while the child is stopped, as pfmon does. */
	memset(&load, 0, sizeof(load));
	load.load_pid = (uint32_t)child;
	CHECK_OK(pfm_load_context(fd, &load));
	CHECK_OK(pfm_start(fd, NULL));
	CHECK_STATE(fd, "active");
	CHECK_OK(ptrace(PTRACE_DETACH, child, NULL, NULL));

	sim_advance(RUN_NS);
	close(pipefd[1]);	/* EOF: cat exits */
	CHECK_EQ_U64(waitpid(child, &status, 0), child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);

	/* The thread's end: one message (read blocks until the daemon saw it). */
	memset(&msg, 0xff, sizeof(msg));
	CHECK_EQ_U64(read(fd, &msg, sizeof(msg)), sizeof(msg));
	CHECK_EQ_U64(msg.type, PFM_MSG_END);
	pfd.fd = fd;
	pfd.events = POLLIN;
	CHECK_EQ_U64(poll(&pfd, 1, 0), 0);	/* nothing more queued */
	CHECK_STATE(fd, "unloaded");

	/* The counts survive the thread: exactly RUN_NS of it. */
	CHECK_OK(pfm_read_pmds(fd, pd, 2));
	CHECK_EQ_U64(pd[0].reg_value, (uint64_t)RUN_NS * SIM_INST_PER_NS);
	CHECK_EQ_U64(pd[1].reg_value, (uint64_t)RUN_NS * SIM_CYCLES_PER_NS);
	sim_advance(RUN_NS);	/* nothing loaded: nothing moves */
	CHECK_OK(pfm_read_pmds(fd, pd, 2));
	CHECK_EQ_U64(pd[0].reg_value, (uint64_t)RUN_NS * SIM_INST_PER_NS);

	CHECK_OK(close(fd));
	CHECK_EQ_U64(wait_sessions(0, 2000), 0);
	printf("ptrace_child: ok\n");
	return 0;
}
