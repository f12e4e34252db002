/*
 * t_inherit.h - what the tests of PFMFS_HELPER_ATTACH_INHERIT and
 * PFMFS_HELPER_IOC_TEMPLATE (t_inherit.c, t_inherit_refuse.c,
 * t_inherit_close.c) share, defined in t_inherit_family.c unless inline
 * here.
 *
 * The monitored threads are "agents": processes and threads of a family
 * forked from this program before the device is opened (so that none of
 * them holds the opener's file), each obeying commands read from a channel
 * of its own (a pair of pipes made up front, inherited by the whole family).
 * The commands: agent() in t_inherit.c.
 */
#ifndef T_INHERIT_H
#define T_INHERIT_H

#include "kt.h"

#define INHERIT		PFMFS_HELPER_ATTACH_INHERIT
#define ATTACHED	PFMFS_HELPER_FORK_ATTACHED
#define NCHAN		12
#define MS		1000000ULL

#define ULL(x) ((unsigned long long)(x))

/* ---- the agents */

/* Main side: agent CH's replies, read with reply_of(). */
extern int reply_r[NCHAN];
/* The family's root: agent 0. */
extern pid_t fam_root;

/*
 * Starts the family: its root agent 0 pinned to `cpu` (or not, -1); the
 * whole family killed and reaped by fam_stop().
 */
void fam_start(int cpu);
void fam_stop(void);
/*
 * Most tests' start: this program on cpu 0, the family on cpu 1, a new
 * opener (returned) that attaches the root with `flags`; `*base` is
 * stats.attached before that ATTACH.
 */
int fam_open(uint32_t flags, uint64_t *base);
/* A command to agent CH; its answer; both. */
void send_cmd(int ch, char op, int arg);
uint64_t reply_of(int ch);
uint64_t ask(int ch, char op, int arg);

/* ---- the device */

static inline int attach(int fd, pid_t tid, uint32_t flags)
{
	struct pfmfs_helper_target t = { .target = THREAD, .id = tid, .flags = flags };

	return kt_ioctl(fd, PFMFS_HELPER_IOC_ATTACH, &t);
}

static inline int set_template(int fd, pid_t tid, const struct pfmfs_helper_msr *ops,
			       uint32_t count, uint64_t tag)
{
	struct pfmfs_helper_template t = {
		.ops = (uintptr_t)ops, .count = count, .tid = tid, .tag = tag,
	};

	return kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &t);
}

static inline uint64_t attached_now(int fd)
{
	return kt_stats(fd).attached;
}

const char *rec_type(uint32_t type);
/* The next record must be the FORK of child cpid/ctid by pid/tid. */
struct pfmfs_helper_record expect_fork(int fd, pid_t pid, pid_t tid, pid_t cpid, pid_t ctid,
				       int attached, uint64_t tag);
struct pfmfs_helper_record expect_exit(int fd, pid_t pid, pid_t tid);
void expect_no_record(int fd, int ms);

/* The whole image of a thread. */
struct image {
	uint64_t evtsel[4], pmc[4], fixed_ctrl, fixed[3], global_ctrl;
};

struct image read_image(int fd, pid_t tid);
int image_is_zero(const struct image *im);

/* A template: cycles on PMC0 from pmc0, the fixed counters 0 and 1 from 0 and fixed1. */
void cycles_template(struct pfmfs_helper_msr *ops, uint32_t *n, uint64_t pmc0, uint64_t fixed1);
#define CYCLES_GLOBAL	(1 | FIXED_BIT(0) | FIXED_BIT(1))

#endif /* T_INHERIT_H */
