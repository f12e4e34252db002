/*
 * t_inherit_refuse.c - PFMFS_HELPER_IOC_TEMPLATE's refusals: threads
 * without a template or not the opener's, MSRs and values a template may
 * not name, MSRs off the allowlist, bad arguments; each one leaves the
 * family's template as it was (TEMPLATE is all or nothing). The helpers:
 * t_inherit.h.
 */
#include "t_inherit.h"

#include <sys/ioctl.h>
#include <unistd.h>

/* A template set and proven: PMC0 counting cycles from 1234, tag 5. */
static void good_template(int fd, pid_t tid)
{
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = 1234 },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
	};

	CHECK_OK(set_template(fd, tid, ops, 3, 5));
}

/*
 * The template is still good_template's: a new child of the root (agent 0)
 * on channel `ch` shows tag 5 and its registers; then it exits and is
 * detached.
 */
static void check_template_kept(int fd, pid_t P, int ch, const char *after)
{
	struct image im;
	pid_t C;

	C = ask(0, 'f', ch);
	{
		struct pfmfs_helper_record rec;

		CHECK(kt_read_record(fd, &rec, 5000), "%s: no FORK record", after);
		CHECK(rec.type == PFMFS_HELPER_REC_FORK && rec.tid == (uint32_t)P &&
		      rec.child_tid == (uint32_t)C && rec.flags == ATTACHED && rec.value == 5,
		      "%s: the template changed: %s record child %u flags 0x%x tag %llu", after,
		      rec_type(rec.type), rec.child_tid, rec.flags, ULL(rec.value));
	}
	im = read_image(fd, C);
	CHECK(im.evtsel[0] == (EVTSEL_COUNT | EV_CYCLES) && im.global_ctrl == 1 &&
	      im.pmc[0] >= 1234 && (im.pmc[0] - 1234) % 3 == 0 && !im.evtsel[1] &&
	      !im.fixed_ctrl && !im.pmc[1],
	      "%s: the template's registers changed: EVTSEL0 0x%llx PMC0 %llu GLOBAL_CTRL 0x%llx",
	      after, ULL(im.evtsel[0]), ULL(im.pmc[0]), ULL(im.global_ctrl));
	send_cmd(ch, 'x', 0);
	expect_exit(fd, C, C);
	CHECK(ask(0, 'w', C) == 0, "exit status");
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, C));
}

/* TEMPLATE's refusals: each one leaves the template as it was. */
void t_inherit_refuse(void)
{
	struct pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH + 1];
	struct pfmfs_helper_template tpl;
	struct pfmfs_helper_stats s0;
	struct pfmfs_helper_hello h;
	pid_t P, Q, R;
	int fd, fd2, raw, i;

	kt_pin(0);
	fam_start(1);
	P = fam_root;
	fd = kt_open();
	fd2 = kt_open();
	CHECK_OK(attach(fd, P, INHERIT));
	/* Before a TEMPLATE: the empty one. Then the good one. */
	good_template(fd, P);
	check_template_kept(fd, P, 1, "the good template");
	Q = ask(0, 'f', 2);
	expect_fork(fd, P, P, Q, Q, 1, 5);
	R = ask(0, 'f', 3);
	expect_fork(fd, P, P, R, R, 1, 5);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, Q));
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, R));

	/* A thread attached without INHERIT has no template. */
	CHECK_OK(attach(fd, Q, 0));
	ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_INSTR };
	CHECK_ERR(set_template(fd, Q, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, Q, NULL, 0, 99), EINVAL);
	/* Threads not attached by this opener: none, ours, another opener's family. */
	CHECK_ERR(set_template(fd, 0, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, kt_gettid(), ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd, 0xffffffff, ops, 1, 99), EINVAL);
	CHECK_OK(attach(fd2, R, INHERIT));
	CHECK_ERR(set_template(fd, R, ops, 1, 99), EINVAL);
	CHECK_ERR(set_template(fd2, P, ops, 1, 99), EINVAL);
	CHECK_OK(set_template(fd2, R, ops, 1, 98));	/* its own: fine */
	check_template_kept(fd, P, 4, "TEMPLATE of threads without a template");

	/* MSRs on the allowlist that a template may not name; bad values. */
	{
		static const struct {
			uint32_t msr;
			uint64_t value;
			const char *what;
		} bad[] = {
			{ MSR_GLOBAL_STATUS, 0, "GLOBAL_STATUS" },
			{ MSR_GLOBAL_OVF, 0, "GLOBAL_OVF_CTRL" },
			{ MSR_GLOBAL_OVF, 1, "GLOBAL_OVF_CTRL 1" },
			{ MSR_EVTSEL0, EVTSEL_COUNT | EV_CYCLES | (1ULL << 21), "EVTSEL0 AnyThread (v3)" },
			{ MSR_EVTSEL0 + 3, 1ULL << 32, "EVTSEL3 bit 32" },
			{ MSR_FIXED_CTRL, 0x1000, "FIXED_CTR_CTRL 0x1000" },
			{ MSR_FIXED_CTRL, 0x4, "FIXED_CTR_CTRL AnyThread (v3)" },
			{ MSR_GLOBAL_CTRL, 1ULL << 4, "GLOBAL_CTRL bit 4" },
			{ MSR_GLOBAL_CTRL, 1ULL << 35, "GLOBAL_CTRL bit 35" },
		};
		size_t k;

		for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			/* Good ops before and after it: all or nothing. */
			ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1,
							    .value = EVTSEL_COUNT | EV_INSTR };
			ops[1] = (struct pfmfs_helper_msr){ .msr = MSR_GLOBAL_CTRL, .value = 3 };
			ops[2] = (struct pfmfs_helper_msr){ .msr = bad[k].msr, .value = bad[k].value };
			ops[3] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = 99 };
			i = set_template(fd, P, ops, 4, 100 + k);
			CHECK(i == -EINVAL, "TEMPLATE with %s: %s, expected -EINVAL", bad[k].what,
			      kt_errname(i));
			i = set_template(fd, P, &ops[2], 1, 100 + k);
			CHECK(i == -EINVAL, "TEMPLATE of %s alone: %s, expected -EINVAL",
			      bad[k].what, kt_errname(i));
		}
	}
	check_template_kept(fd, P, 5, "refused MSRs and values");

	/* Off the allowlist: EPERM, counted as refused. */
	{
		static const uint32_t off[] = { 0x10, 0x4c1, 0x345, 0x18a, 0xc5, 0x30c, 0x391,
						0xc0000080 };
		size_t k;

		for (k = 0; k < sizeof(off) / sizeof(off[0]); k++) {
			s0 = kt_stats(fd);
			ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = 0 };
			ops[1] = (struct pfmfs_helper_msr){ .msr = off[k], .value = 0 };
			CHECK_ERR(set_template(fd, P, ops, 2, 200), EPERM);
			CHECK(kt_stats(fd).refused == s0.refused + 1, "MSR 0x%x: refused %llu -> %llu",
			      off[k], ULL(s0.refused), ULL(kt_stats(fd).refused));
		}
	}
	check_template_kept(fd, P, 6, "off-allowlist MSRs");

	/* The struct's and the ops' checks. */
	for (i = 0; i <= PFMFS_HELPER_MAX_BATCH; i++)
		ops[i] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = i };
	tpl = (struct pfmfs_helper_template){ .ops = (uintptr_t)ops, .count = 65, .tid = P, .tag = 300 };
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.count = 0xffffffff;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.count = 1;
	tpl.reserved = 1;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.reserved = 1ULL << 63;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	tpl.reserved = 0;
	ops[0].reserved = 1;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	ops[0].reserved = 0;
	tpl.ops = 0;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EFAULT);
	tpl.ops = 0xffff800000000000ULL;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EFAULT);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_TEMPLATE, NULL), EFAULT);
	/* Another size, another direction: unknown ioctls. */
	CHECK_ERR(kt_ioctl(fd, _IOW(PFMFS_HELPER_IOC_MAGIC, 9, char[24]), &tpl), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC, 9, struct pfmfs_helper_template), &tpl),
		  ENOTTY);
	/* Before HELLO. */
	raw = kt_open_raw(0);
	CHECK(raw >= 0, "open");
	tpl = (struct pfmfs_helper_template){ .ops = (uintptr_t)ops, .count = 1, .tid = P };
	CHECK_ERR(kt_ioctl(raw, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);
	CHECK_OK(kt_hello(raw, &h));
	CHECK_ERR(kt_ioctl(raw, PFMFS_HELPER_IOC_TEMPLATE, &tpl), EINVAL);	/* not its thread */
	close(raw);
	check_template_kept(fd, P, 7, "bad arguments");

	/* The largest template: 64 ops, the last write of a register wins. */
	for (i = 0; i < PFMFS_HELPER_MAX_BATCH; i++)
		ops[i] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + i % 4, .value = i };
	CHECK_OK(set_template(fd, P, ops, PFMFS_HELPER_MAX_BATCH, 400));
	{
		pid_t C = ask(0, 'f', 8);
		struct image im;

		expect_fork(fd, P, P, C, C, 1, 400);
		im = read_image(fd, C);
		CHECK(im.pmc[0] == 60 && im.pmc[1] == 61 && im.pmc[2] == 62 && im.pmc[3] == 63 &&
		      im.global_ctrl == 0 && im.evtsel[0] == 0,
		      "64 ops: PMC0..3 %llu %llu %llu %llu", ULL(im.pmc[0]), ULL(im.pmc[1]),
		      ULL(im.pmc[2]), ULL(im.pmc[3]));
	}
	/* DETACH: the tid names no template any more. */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, P));
	CHECK_ERR(set_template(fd, P, ops, 1, 500), EINVAL);
	fam_stop();
	close(fd2);
	close(fd);
}

