/*
 * t_inherit.c - the first tests of PFMFS_HELPER_ATTACH_INHERIT and
 * PFMFS_HELPER_IOC_TEMPLATE: children, grandchildren and threads of a thread
 * attached with INHERIT are attached at their creation with the family's
 * template and count from their first instruction; their FORK records say
 * so and carry the template's tag; EXIT records carry the thread's CPU
 * time; a TEMPLATE applies to later children only; without INHERIT nobody
 * is attached. The agents and checks they share: t_inherit_family.c;
 * TEMPLATE's refusals: t_inherit_refuse.c; the opener's close, a full ring
 * and races: t_inherit_close.c.
 */
#include "t_inherit.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


/* Waits for a thread to block (state S), and for its switch-out. */
static void wait_blocked(pid_t tid)
{
	kt_wait_off_cpu(tid);
}

/* A thread's CPU time, exact while it does not run (any thread's). */
static uint64_t runtime_of(pid_t tid)
{
	char path[64], buf[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "%s: %m", path);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n > 0, "%s: %m", path);
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

static long switches(pid_t tid)
{
	return kt_ctxt(tid, 1) + kt_ctxt(tid, 0);
}

/*
 * A count of `ns` ns (cycles / 3) against a thread's CPU time `cpu`, both
 * from its first instruction: the slack of t_count.c's check_share (20 ms,
 * and 250 us per switch, of which it had `sw`; above, its interrupts'
 * share, KT_IRQ_SHARE).
 */
static void check_counted(const char *who, uint64_t ns, uint64_t cpu, long sw)
{
	uint64_t slack = 20 * MS + 250000ULL * sw;

	kt_log("%s: counted %llu ns, ran %llu ns, %ld switches", who, ULL(ns), ULL(cpu), sw);
	CHECK(ns + slack >= cpu && ns <= cpu + KT_IRQ_SHARE(cpu) + slack,
	      "%s: counted %llu ns, ran %llu ns (slack %llu)", who, ULL(ns), ULL(cpu),
	      ULL(slack));
}

/* A template: cycles on PMC0 from pmc0, the fixed counters 0 and 1 from 0 and fixed1. */
void cycles_template(struct pfmfs_helper_msr *ops, uint32_t *n, uint64_t pmc0, uint64_t fixed1)
{
	*n = 0;
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = pmc0 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTRL, .value = 0x33 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + 1, .value = fixed1 };
	ops[(*n)++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL,
						 .value = 1 | FIXED_BIT(0) | FIXED_BIT(1) };
}

/*
 * An image of cycles_template(pmc0, fixed1) that counted: its controls, the
 * registers the template did not name 0, and three counters that moved
 * together from their start. Returns the ns counted.
 */
static uint64_t check_cycles_image(const char *who, const struct image *im, uint64_t pmc0,
				   uint64_t fixed1)
{
	uint64_t cyc = im->pmc[0] - pmc0;

	CHECK(im->evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im->fixed_ctrl == 0x33 &&
	      im->global_ctrl == CYCLES_GLOBAL,
	      "%s: EVTSEL0 0x%llx FIXED_CTR_CTRL 0x%llx GLOBAL_CTRL 0x%llx: not the template's",
	      who, ULL(im->evtsel[0]), ULL(im->fixed_ctrl), ULL(im->global_ctrl));
	CHECK(!im->evtsel[1] && !im->evtsel[2] && !im->evtsel[3] && !im->pmc[1] &&
	      !im->pmc[2] && !im->pmc[3] && !im->fixed[2],
	      "%s: a register the template did not name is not 0", who);
	/* From the template's start: 1000 is 1 mod 3, cycles come in threes. */
	CHECK(im->pmc[0] >= pmc0 && cyc % 3 == 0,
	      "%s: PMC0 %llu: did not count cycles from %llu", who, ULL(im->pmc[0]), ULL(pmc0));
	CHECK(im->fixed[1] - fixed1 == cyc, "%s: FIXED_CTR1 %llu: %llu cycles from %llu, PMC0 %llu",
	      who, ULL(im->fixed[1]), ULL(im->fixed[1] - fixed1), ULL(fixed1), ULL(cyc));
	CHECK(3 * im->fixed[0] == 2 * cyc, "%s: %llu instructions for %llu cycles", who,
	      ULL(im->fixed[0]), ULL(cyc));
	return cyc / 3;
}

/* ---- the tests */

/*
 * A child of a thread attached with INHERIT: attached at its creation with
 * the template, counting from the template's values, readable and writable
 * by its tid; its EXIT record with its CPU time; its image kept until DETACH.
 */
void t_inherit_fork(void)
{
	struct pfmfs_helper_msr ops[8];
	struct pfmfs_helper_record rec;
	struct image im, im2;
	uint64_t base, t0, ns, cpu, cpu_exit, ns_exit;
	uint32_t n;
	pid_t P, C;
	long sw, switches_exit;
	int fd;

	fd = fam_open(INHERIT, &base);
	P = fam_root;
	CHECK(attached_now(fd) == base + 1, "attached %llu", ULL(attached_now(fd)));
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 7));
	/* The template is not the root's image: that stays all 0. */
	im = read_image(fd, P);
	CHECK(image_is_zero(&im), "TEMPLATE changed the root's image");

	t0 = kt_now();
	C = ask(0, 'f', 1);
	rec = expect_fork(fd, P, P, C, C, 1, 7);
	CHECK(rec.time_ns >= t0, "FORK time %llu before the fork %llu", ULL(rec.time_ns), ULL(t0));
	CHECK(attached_now(fd) == base + 2, "the child is not counted as attached: %llu",
	      ULL(attached_now(fd)));
	CHECK_ERR(attach(fd, C, 0), EBUSY);

	/* 300 ms of CPU, counted from the template's start. */
	ask(1, 's', 300);
	wait_blocked(C);
	cpu = kt_cputime(C);
	sw = switches(C);
	im = read_image(fd, C);
	ns = check_cycles_image("child", &im, 1000, 5000);
	check_counted("child", ns, cpu, sw);
	CHECK(ns > 200 * MS, "the child counted %llu ns of its 300 ms", ULL(ns));
	/* Not running: the image stays. */
	kt_sleep_ms(50);
	im2 = read_image(fd, C);
	CHECK(!memcmp(&im, &im2, sizeof(im)), "a blocked child's counters moved");
	/* The root did not count: its image is its own. */
	im = read_image(fd, P);
	CHECK(image_is_zero(&im), "the root's image changed");

	/* A thread target like any other: MSR_WRITE by its tid. */
	kt_wr_ok(fd, THREAD, C, MSR_PMC0 + 2, 42);
	CHECK(kt_rd_ok(fd, THREAD, C, MSR_PMC0 + 2) == 42, "PMC2 of the child");
	kt_wr_ok(fd, THREAD, C, MSR_PMC0 + 2, 0);

	/* Its exit: EXIT with its CPU time; the image keeps its final counts. */
	switches_exit = switches(C) + 1;
	send_cmd(1, 'x', 0);
	rec = expect_exit(fd, C, C);
	cpu_exit = rec.value;
	kt_log("EXIT: %llu ns of CPU time, %llu ns before the exit command", ULL(cpu_exit),
	       ULL(cpu));
	CHECK(cpu_exit > 0 && cpu_exit >= cpu,
	      "EXIT CPU time %llu ns, %llu ns on cpu before", ULL(cpu_exit), ULL(cpu));
	/*
	 * Taken at its last switch-out, where the scheduler brought its clock
	 * up to date for the last time: the zombie's own clock reads it
	 * exactly (as t_exit_fork checks). A bound on the time since the exit
	 * command would race the host: 80 ms was seen under TCG while it
	 * compiled on both cores.
	 */
	for (n = 0; n < 600 && kt_state(C) != 'Z'; n++)
		kt_sleep_ms(100);
	CHECK(kt_state(C) == 'Z', "the child is no zombie (state %c)", kt_state(C));
	CHECK(kt_own_cputime(C) == cpu_exit, "EXIT CPU time %llu ns, the zombie's own %llu ns",
	      ULL(cpu_exit), ULL(kt_own_cputime(C)));
	CHECK(ask(0, 'w', C) == 0, "the child's exit status");
	im = read_image(fd, C);
	ns_exit = check_cycles_image("exited child", &im, 1000, 5000);
	CHECK(ns_exit >= ns, "the exited child's count went back: %llu < %llu", ULL(ns_exit),
	      ULL(ns));
	/* Counted to its last switch-out, where EXIT took its CPU time. */
	check_counted("exited child, against EXIT's CPU time", ns_exit, cpu_exit, switches_exit);
	kt_sleep_ms(50);
	im2 = read_image(fd, C);
	CHECK(!memcmp(&im, &im2, sizeof(im)), "the exited child's counters moved");
	CHECK(attached_now(fd) == base + 2, "the exited child is no longer attached");
	expect_no_record(fd, 200);

	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C));
	CHECK(attached_now(fd) == base + 1, "attached %llu after DETACH", ULL(attached_now(fd)));
	CHECK_ERR(kt_rd(fd, THREAD, C, MSR_PMC0, &ns), EINVAL);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C), EINVAL);
	fam_stop();
	expect_exit(fd, P, P);
	close(fd);
}

/*
 * Grandchildren and threads: the whole tree below the root is attached, each
 * FORK naming its parent; every member counts its own CPU time; a TEMPLATE
 * through any member changes the family's; DETACH of the root lets only the
 * root go.
 */
void t_inherit_tree(void)
{
	struct pfmfs_helper_msr ops[8];
	struct image im;
	uint64_t base;
	uint32_t n;
	pid_t P, C, G, T, TG, TT, C2, C3, C4;
	int fd, i;
	struct {
		const char *who;
		pid_t tid;
		int ch;
		int ms;
	} m[5];

	fd = fam_open(INHERIT, &base);
	P = fam_root;
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 11));

	C = ask(0, 'f', 1);
	expect_fork(fd, P, P, C, C, 1, 11);
	G = ask(1, 'f', 2);		/* a grandchild */
	expect_fork(fd, C, C, G, G, 1, 11);
	T = ask(1, 't', 3);		/* a thread of the child */
	expect_fork(fd, C, C, C, T, 1, 11);
	TG = ask(2, 't', 4);		/* a thread of the grandchild */
	expect_fork(fd, G, G, G, TG, 1, 11);
	TT = ask(3, 't', 5);		/* a thread created by a thread */
	expect_fork(fd, C, T, C, TT, 1, 11);
	CHECK(attached_now(fd) == base + 6, "attached %llu, expected %llu",
	      ULL(attached_now(fd)), ULL(base + 6));

	/* Each counts its own CPU time, from the template's start. */
	m[0].who = "child"; m[0].tid = C; m[0].ch = 1; m[0].ms = 0;
	m[1].who = "grandchild"; m[1].tid = G; m[1].ch = 2; m[1].ms = 200;
	m[2].who = "thread"; m[2].tid = T; m[2].ch = 3; m[2].ms = 100;
	m[3].who = "grandchild's thread"; m[3].tid = TG; m[3].ch = 4; m[3].ms = 150;
	m[4].who = "thread's thread"; m[4].tid = TT; m[4].ch = 5; m[4].ms = 50;
	for (i = 0; i < 5; i++)
		if (m[i].ms)
			ask(m[i].ch, 's', m[i].ms);
	for (i = 0; i < 5; i++) {
		uint64_t ns;

		wait_blocked(m[i].tid);
		im = read_image(fd, m[i].tid);
		ns = check_cycles_image(m[i].who, &im, 1000, 5000);
		check_counted(m[i].who, ns, runtime_of(m[i].tid), switches(m[i].tid));
		CHECK(ns + 20 * MS >= (uint64_t)m[i].ms * MS, "%s: counted %llu ns of its %d ms",
		      m[i].who, ULL(ns), m[i].ms);
	}

	/* One template for the family: set through the grandchild. */
	CHECK_OK(set_template(fd, G, ops, 2, 12));	/* EVTSEL0, PMC0 only */
	C2 = ask(0, 'f', 6);
	im = read_image(fd, C2);
	expect_fork(fd, P, P, C2, C2, 1, 12);
	CHECK(im.evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im.pmc[0] == 1000 &&
	      im.global_ctrl == 0 && im.fixed_ctrl == 0 && im.fixed[1] == 0,
	      "the root's new child does not have the template set through the grandchild");

	/* A thread's exit: EXIT with the process and the thread. */
	send_cmd(5, 'x', 0);
	expect_exit(fd, C, TT);

	/* DETACH of the root: its new children are not attached; the others' are. */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, P));
	C3 = ask(0, 'f', 7);
	expect_no_record(fd, 200);
	CHECK_ERR(kt_rd(fd, THREAD, C3, MSR_PMC0, &base), EINVAL);
	C4 = ask(2, 'f', 8);
	expect_fork(fd, G, G, C4, C4, 1, 12);
	CHECK_OK(set_template(fd, C, ops, 0, 13));
	CHECK_ERR(set_template(fd, P, ops, 0, 13), EINVAL);
	fam_stop();
	close(fd);
}

/*
 * TEMPLATE: rebuilt whole, each later child with the new registers and tag,
 * earlier children keeping theirs; the empty template (at ATTACH, or count 0)
 * attaches children that count nothing.
 */
void t_inherit_template(void)
{
	struct pfmfs_helper_msr ops[8];
	struct image im;
	uint64_t ns, inst, base;
	uint32_t n;
	pid_t P, C0, C1, C2, C3, C4;
	int fd;

	fd = fam_open(INHERIT, &base);
	P = fam_root;

	/* No TEMPLATE yet: tag 0, nothing counts. */
	C0 = ask(0, 'f', 1);
	expect_fork(fd, P, P, C0, C0, 1, 0);
	ask(1, 's', 100);
	wait_blocked(C0);
	im = read_image(fd, C0);
	CHECK(image_is_zero(&im), "a child of the ATTACH's empty template counted");

	/* Cycles from 1000: tag 21. */
	cycles_template(ops, &n, 1000, 5000);
	CHECK_OK(set_template(fd, P, ops, n, 21));
	C1 = ask(0, 'f', 2);
	expect_fork(fd, P, P, C1, C1, 1, 21);
	ask(2, 's', 100);
	wait_blocked(C1);
	im = read_image(fd, C1);
	ns = check_cycles_image("first template's child", &im, 1000, 5000);
	check_counted("first template's child", ns, kt_cputime(C1), switches(C1));

	/* Instructions on PMC1 from 7, nothing else: tag 22. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1, .value = EVTSEL_COUNT | EV_INSTR };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + 1, .value = 7 };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 2 };
	CHECK_OK(set_template(fd, P, ops, n, 22));
	C2 = ask(0, 'f', 3);
	expect_fork(fd, P, P, C2, C2, 1, 22);
	ask(3, 's', 100);
	wait_blocked(C2);
	im = read_image(fd, C2);
	CHECK(im.evtsel[0] == 0 && im.pmc[0] == 0 && im.fixed_ctrl == 0 && !im.fixed[0] &&
	      !im.fixed[1] && im.evtsel[1] == (EVTSEL_COUNT | EV_INSTR) && im.global_ctrl == 2,
	      "second template's child: EVTSEL0 0x%llx PMC0 %llu FIXED_CTR_CTRL 0x%llx EVTSEL1 0x%llx GLOBAL_CTRL 0x%llx",
	      ULL(im.evtsel[0]), ULL(im.pmc[0]), ULL(im.fixed_ctrl), ULL(im.evtsel[1]),
	      ULL(im.global_ctrl));
	inst = im.pmc[1] - 7;
	CHECK(im.pmc[1] >= 7 && inst % 2 == 0, "PMC1 %llu: not instructions from 7",
	      ULL(im.pmc[1]));
	check_counted("second template's child", inst / 2, kt_cputime(C2), switches(C2));
	/* The first child keeps the image it started with. */
	im = read_image(fd, C1);
	check_cycles_image("first template's child, later", &im, 1000, 5000);

	/* Values kept to the counters' width, as MSR_WRITE keeps them. */
	n = 0;
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + 3, .value = ~0ULL };
	ops[n++] = (struct pfmfs_helper_msr){ .msr = MSR_FIXED_CTR0 + 2, .value = WIDTH48 + 5 };
	CHECK_OK(set_template(fd, P, ops, n, 23));
	C3 = ask(0, 'f', 4);
	expect_fork(fd, P, P, C3, C3, 1, 23);
	im = read_image(fd, C3);
	CHECK(im.pmc[3] == WIDTH48 - 1 && im.fixed[2] == 5 && im.global_ctrl == 0,
	      "PMC3 0x%llx FIXED_CTR2 0x%llx", ULL(im.pmc[3]), ULL(im.fixed[2]));

	/* The empty template (count 0, no ops): attached, counting nothing. */
	CHECK_OK(set_template(fd, P, NULL, 0, 24));
	C4 = ask(0, 'f', 5);
	expect_fork(fd, P, P, C4, C4, 1, 24);
	ask(5, 's', 100);
	wait_blocked(C4);
	im = read_image(fd, C4);
	CHECK(image_is_zero(&im), "a child of an empty template counted");
	CHECK(attached_now(fd) == base + 6, "attached %llu", ULL(attached_now(fd)));
	fam_stop();
	close(fd);
}

/* Without INHERIT: FORK records as before, nobody attached. */
void t_inherit_off(void)
{
	struct pfmfs_helper_msr ops[8];
	uint64_t v, base;
	uint32_t n;
	pid_t P, C, T;
	int fd;

	fd = fam_open(0, &base);
	P = fam_root;
	cycles_template(ops, &n, 1000, 5000);
	CHECK_ERR(set_template(fd, P, ops, n, 7), EINVAL);
	C = ask(0, 'f', 1);
	expect_fork(fd, P, P, C, C, 0, 0);
	T = ask(0, 't', 2);
	expect_fork(fd, P, P, P, T, 0, 0);
	CHECK_ERR(kt_rd(fd, THREAD, C, MSR_PMC0, &v), EINVAL);
	CHECK_ERR(kt_rd(fd, THREAD, T, MSR_PMC0, &v), EINVAL);
	CHECK(attached_now(fd) == base + 1, "attached %llu", ULL(attached_now(fd)));
	/* Their own forks and exits: nothing. */
	ask(1, 'f', 3);
	send_cmd(2, 'x', 0);
	expect_no_record(fd, 300);
	/* Free to be attached: by ATTACH, from an image of 0. */
	CHECK_OK(attach(fd, C, 0));
	CHECK(kt_rd_ok(fd, THREAD, C, MSR_EVTSEL0) == 0, "EVTSEL0 of an ATTACH");
	fam_stop();
	close(fd);
}

