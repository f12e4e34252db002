// pfmfs-test: backends=sim
/*
 * smpl_self.c: perfmon2's self-sampling loop (self_smpl.c) with the default
 * format: a context with a buffer for SMPL_FILL entries, mapped with mmap()
 * of its descriptor; cycles on pmd0 sample every SMPL_PERIOD and record pmd1
 * (smpl.h). Every overflow writes an entry, seen in the mapping as soon as
 * the advance returns, without a notification; the one that fills the
 * buffer notifies and masks. The program takes the notification
 *   - "signal": by SIGIO (F_SETOWN + O_ASYNC); the handler copies the
 *     buffer, reads the message and restarts, as self_smpl's handler does;
 *   - "read": by a blocking read() of the message, then walks the live
 *     mapping (the same bytes as the session's smpl_buf) and restarts;
 * checks every field of every entry, and sees the restart empty the buffer.
 * Three fills, then a partial buffer, then close(): the mapping still reads
 * the last samples after the close, until munmap().
 */
#include "check.h"
#include "smpl.h"

#include <poll.h>

#define SMPL_FILL 4			/* entries per full buffer */
#define BUF_SIZE SMPL_BUF_FOR(SMPL_FILL)
#define ROUNDS 3

static int ctx_fd;
static const pfm_dfl_smpl_hdr_t *hdr;
static volatile sig_atomic_t notifications;
static unsigned char copy[BUF_SIZE];	/* the handler's copy of the full buffer */
static pfarg_msg_t last_msg;

/* The handler cannot print: it records its first failed check for main. */
static volatile sig_atomic_t handler_bad_line, handler_bad_errno;
#define HANDLER_CHECK(cond)                                      \
	do {                                                     \
		if (!(cond) && handler_bad_line == 0) {          \
			handler_bad_errno = errno;               \
			handler_bad_line = __LINE__;             \
		}                                                \
	} while (0)

static void on_sigio(int sig)
{
	int saved_errno = errno;
	struct pollfd pfd = { .fd = ctx_fd, .events = POLLIN };
	pfarg_msg_t msg;

	HANDLER_CHECK(sig == SIGIO);
	HANDLER_CHECK(poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN));
	if (pfd.revents & POLLIN) {
		HANDLER_CHECK(read(ctx_fd, &msg, sizeof(msg)) == (ssize_t)sizeof(msg));
		last_msg = msg;
		/* self_smpl: process the buffer, then restart, in the handler. */
		memcpy(copy, hdr, sizeof(copy));
		HANDLER_CHECK(pfm_restart(ctx_fd) == 0);
	}
	notifications++;
	errno = saved_errno;
}

static void check_handler(int want)
{
	wait_count(&notifications, want);
	CHECK(handler_bad_line == 0, "check at line %d in the SIGIO handler failed (errno %d)",
	      (int)handler_bad_line, (int)handler_bad_errno);
	CHECK(notifications == want, "%d notifications, expected %d", (int)notifications, want);
}

/* The overflow message of the entry that filled the buffer: sample n. */
static void check_msg(const pfarg_msg_t *m, uint64_t n)
{
	CHECK_EQ_U64(m->type, PFM_MSG_OVFL);
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_pmds[0], 0x1);
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_active_set, 0);
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_pid, tid_self());
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_tid, getpid());
	CHECK_EQ_U64(m->pfm_ovfl_msg.msg_ovfl_ip, smpl_sim_ip(n * SMPL_STEP_NS));
}

static void run(int by_signal)
{
	const char *how = by_signal ? "signal" : "read";
	pfarg_load_t load = { .load_pid = (uint32_t)tid_self() };
	struct sigaction sa = { .sa_handler = on_sigio, .sa_flags = SA_RESTART };
	uint64_t n = 0;	/* samples so far */
	pfarg_msg_t msg;

	ctx_fd = (int)CHECK_OK(smpl_create(0, BUF_SIZE));
	/* task_smpl maps it MAP_PRIVATE, others MAP_SHARED: both see the daemon's writes. */
	hdr = smpl_map(ctx_fd, BUF_SIZE, by_signal ? MAP_SHARED : MAP_PRIVATE);
	smpl_check_header(hdr, BUF_SIZE, 0, 0);
	smpl_program_v2(ctx_fd);
	if (by_signal) {
		CHECK_OK(sigaction(SIGIO, &sa, NULL));
		signals_ready();
		CHECK_OK(fcntl(ctx_fd, F_SETOWN, getpid()));
		CHECK_OK(fcntl(ctx_fd, F_SETFL, fcntl(ctx_fd, F_GETFL) | O_ASYNC));
	}
	CHECK_OK(pfm_load_context(ctx_fd, &load));
	CHECK_OK(pfm_start(ctx_fd, NULL));

	for (int round = 0; round < ROUNDS; round++) {
		/* Each overflow writes its entry: in the mapping at once, no notification. */
		for (int k = 1; k < SMPL_FILL; k++) {
			sim_advance(SMPL_STEP_NS);
			n++;
			smpl_check_header(hdr, BUF_SIZE, (uint64_t)k, (uint64_t)round);
			smpl_check_entries(hdr, n - (uint64_t)k + 1, tid_self(), getpid());
			CHECK_STATE(ctx_fd, "active");
		}
		CHECK_ERRNO(pfm_restart(ctx_fd), EBUSY);	/* nothing notified yet */
		/* The entry that fills it notifies. */
		sim_advance(SMPL_STEP_NS);
		n++;
		if (by_signal) {
			check_handler(round + 1);
			msg = last_msg;
		} else {
			CHECK_EQ_U64(read(ctx_fd, &msg, sizeof(msg)), sizeof(msg));
			CHECK_STATE(ctx_fd, "masked");
			smpl_check_file(ctx_fd, hdr, BUF_SIZE);
			memcpy(copy, hdr, sizeof(copy));
			CHECK_OK(pfm_restart(ctx_fd));
		}
		check_msg(&msg, n);
		smpl_check_header((const pfm_dfl_smpl_hdr_t *)copy, BUF_SIZE, SMPL_FILL, (uint64_t)round + 1);
		smpl_check_entries((const pfm_dfl_smpl_hdr_t *)copy, n - SMPL_FILL + 1, tid_self(), getpid());
		/* The restart emptied it; the fills are counted on. */
		smpl_check_header(hdr, BUF_SIZE, 0, (uint64_t)round + 1);
		CHECK_STATE(ctx_fd, "active");
		printf("%s: buffer %d full at sample %" PRIu64 "\n", how, round + 1, n);
	}

	/* A partial buffer: read after the stop, and after the close. */
	sim_advance(2 * SMPL_STEP_NS);
	n += 2;
	CHECK_OK(pfm_stop(ctx_fd));
	smpl_check_header(hdr, BUF_SIZE, 2, ROUNDS);
	CHECK_OK(close(ctx_fd));
	CHECK(wait_sessions(0) == 0, "the session outlived close()");
	smpl_check_header(hdr, BUF_SIZE, 2, ROUNDS);
	smpl_check_entries(hdr, n - 1, tid_self(), getpid());
	CHECK_OK(munmap((void *)hdr, BUF_SIZE));
	if (by_signal) {
		quiet_window();	/* no late or second signal */
		check_handler(ROUNDS);
		signal(SIGIO, SIG_DFL);
	}
	printf("%s: %" PRIu64 " samples, the last %d read after close\n", how, n, 2);
}

int main(void)
{
	run(1);
	run(0);
	printf("ok\n");
	return 0;
}
