/*
 * t_ovf.c - overflow interrupts: records with the monitored thread and an
 * IP in its program, counters frozen until written, the LVTPC re-armed,
 * the skid, cpu targets; and a full ring's LOST record.
 */
#include "kt.h"

#include <sys/wait.h>
#include <unistd.h>

#define MS_OF_CYCLES	3000000ULL	/* cycles count 3/ns */

static void check_overflow(const struct pfmfs_helper_record *rec, uint64_t bits,
			   pid_t tid, uint32_t cpu, uint64_t t0)
{
	uint64_t now = kt_now();

	CHECK(rec->type == PFMFS_HELPER_REC_OVERFLOW, "record type %u", rec->type);
	CHECK(rec->value == bits, "overflow bits 0x%llx, expected 0x%llx",
	      (unsigned long long)rec->value, (unsigned long long)bits);
	CHECK(rec->cpu == cpu, "cpu %u", rec->cpu);
	CHECK(rec->time_ns >= t0 && rec->time_ns <= now, "time %llu not in [%llu, %llu]",
	      (unsigned long long)rec->time_ns, (unsigned long long)t0,
	      (unsigned long long)now);
	if (tid) {
		CHECK(rec->tid == (uint32_t)tid && rec->pid == (uint32_t)getpid(),
		      "pid/tid %u/%u, expected %d/%d", rec->pid, rec->tid, getpid(), tid);
		CHECK(rec->ip >= (uintptr_t)__executable_start && rec->ip < (uintptr_t)etext,
		      "ip 0x%llx outside the program's text [%p, %p)",
		      (unsigned long long)rec->ip, __executable_start, etext);
	}
}

void t_overflow(void)
{
	struct pfmfs_helper_record rec;
	struct pfmfs_helper_stats s0, s1;
	struct pfmfs_helper_cpu_state st;
	struct kt_thread busy, waker;
	uint64_t t0, v, sw;
	int fd = kt_open(), i;

	kt_pin(0);
	kt_thread_start(&busy, KT_SPIN, 1);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, busy.tid));
	s0 = kt_stats(fd);
	for (i = 0; i < 5; i++) {
		struct pfmfs_helper_msr ops[] = {
			{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
			{ .msr = MSR_PMC0, .value = WIDTH48 - MS_OF_CYCLES },
			{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
		};

		t0 = kt_now();
		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, busy.tid, ops, 3));
		CHECK(kt_read_record(fd, &rec, 10000), "no overflow record in 10 s");
		check_overflow(&rec, 1, busy.tid, 1, t0);
		/* Frozen and acknowledged */
		CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_GLOBAL_CTRL) == 0, "not frozen");
		CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_GLOBAL_STATUS) == 0, "status not acked");
		v = kt_rd_ok(fd, THREAD, busy.tid, MSR_PMC0);
		CHECK(v < 3ULL * 1000000000, "PMC0 0x%llx: did not wrap", (unsigned long long)v);
		st = kt_cpu_state(fd, 1);
		CHECK(st.global_ctrl == 0, "cpu 1 GLOBAL_CTRL 0x%llx", (unsigned long long)st.global_ctrl);
		CHECK(st.lvtpc == APIC_DM_NMI, "LVTPC 0x%x: not re-armed", st.lvtpc);
		kt_log("overflow %d: ip 0x%llx, %llu cycles past the wrap, %llu us after the write",
		       i, (unsigned long long)rec.ip, (unsigned long long)v,
		       (unsigned long long)(rec.time_ns - t0) / 1000);
	}
	s1 = kt_stats(fd);
	CHECK(s1.pmis - s0.pmis == 5 && s1.records - s0.records == 5,
	      "pmis %llu records %llu", (unsigned long long)(s1.pmis - s0.pmis),
	      (unsigned long long)(s1.records - s0.records));

	/* Frozen across switches until GLOBAL_CTRL is written. */
	kt_thread_start(&waker, KT_SLEEP, 1);
	v = kt_rd_ok(fd, THREAD, busy.tid, MSR_PMC0);
	sw = kt_stats(fd).switch_ins;
	kt_sleep_ms(300);
	CHECK(kt_stats(fd).switch_ins > sw, "busy was not switched");
	CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_PMC0) == v, "a frozen counter counted");
	CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_GLOBAL_CTRL) == 0, "thawed by a switch");
	kt_wr_ok(fd, THREAD, busy.tid, MSR_GLOBAL_CTRL, 1);
	kt_sleep_ms(50);
	CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_PMC0) > v, "written GLOBAL_CTRL did not thaw");
	kt_thread_stop(&waker);

	/* A fixed counter's PMI */
	{
		struct pfmfs_helper_msr ops[] = {
			{ .msr = MSR_GLOBAL_CTRL, .value = 0 },
			{ .msr = MSR_FIXED_CTRL, .value = FIXED_OS | FIXED_USR | FIXED_PMI },
			{ .msr = MSR_FIXED_CTR0, .value = WIDTH48 - 2000000 },
			{ .msr = MSR_GLOBAL_CTRL, .value = FIXED_BIT(0) },
		};

		t0 = kt_now();
		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, busy.tid, ops, 4));
		CHECK(kt_read_record(fd, &rec, 10000), "no fixed-counter overflow in 10 s");
		check_overflow(&rec, FIXED_BIT(0), busy.tid, 1, t0);
	}
	/* No INT: wraps, no record. */
	{
		struct pfmfs_helper_msr ops[] = {
			{ .msr = MSR_FIXED_CTRL, .value = 0 },
			{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_CYCLES },
			{ .msr = MSR_PMC0, .value = WIDTH48 - MS_OF_CYCLES },
			{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
		};

		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, busy.tid, ops, 4));
		CHECK(!kt_read_record(fd, &rec, 300), "a record without INT");
		CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_GLOBAL_STATUS) == 1, "no status bit");
		CHECK(kt_rd_ok(fd, THREAD, busy.tid, MSR_GLOBAL_CTRL) == 1, "frozen without INT");
	}
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, busy.tid));
	CHECK(kt_cpu_state(fd, 1).global_ctrl == 0, "DETACH left cpu 1 counting");
	kt_thread_stop(&busy);
	close(fd);
}

/* A cpu target's overflow; run with skid=3000000: 1 ms of cycles. */
void t_overflow_cpu(void)
{
	struct pfmfs_helper_hello h;
	struct pfmfs_helper_record rec;
	struct kt_thread busy;
	uint64_t t0, v;
	int fd = kt_open_raw(0);
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = WIDTH48 - MS_OF_CYCLES },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 },
	};

	CHECK(fd >= 0, "open");
	CHECK_OK(kt_hello(fd, &h));
	kt_pin(0);
	kt_thread_start(&busy, KT_SPIN, 1);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 1));
	t0 = kt_now();
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 1, ops, 3));
	CHECK(kt_read_record(fd, &rec, 10000), "no overflow record in 10 s");
	/* Mostly the spinner; any thread that ran on cpu 1 is right. */
	check_overflow(&rec, 1, rec.tid == (uint32_t)busy.tid ? busy.tid : 0, 1, t0);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_GLOBAL_CTRL) == 0, "not frozen");
	v = kt_rd_ok(fd, CPU, 1, MSR_PMC0);
	kt_log("skid %u: frozen %llu cycles past the wrap, record tid %u",
	       h.skid, (unsigned long long)v, rec.tid);
	/* The PMI comes `skid` events after the wrap, not before. */
	CHECK(v >= h.skid, "frozen %llu events past the wrap, skid %u",
	      (unsigned long long)v, h.skid);
	/* Thawed by the opener, frozen by the next overflow. */
	kt_wr_ok(fd, CPU, 1, MSR_PMC0, WIDTH48 - MS_OF_CYCLES);
	t0 = kt_now();
	kt_wr_ok(fd, CPU, 1, MSR_GLOBAL_CTRL, 1);
	CHECK(kt_read_record(fd, &rec, 10000), "no second overflow record");
	check_overflow(&rec, 1, 0, 1, t0);
	kt_thread_stop(&busy);
	close(fd);
}

struct blocked {
	int fd;
	int reads;				/* read() calls returned */
	pid_t tid;
	ssize_t len[2];
	struct pfmfs_helper_record rec[2];
};

/*
 * Its own creation is a FORK of the attached thread: the first read()
 * returns that; the second blocks until the next one.
 */
static void *blocked_read(void *arg)
{
	struct blocked *b = arg;
	int i;

	b->tid = kt_gettid();
	for (i = 0; i < 2; i++) {
		b->len[i] = read(b->fd, &b->rec[i], sizeof(b->rec[i]));
		__atomic_store_n(&b->reads, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Run with ring_records=16. */
void t_lost(void)
{
	struct pfmfs_helper_record recs[64];
	struct pfmfs_helper_stats s0, s1;
	struct pfmfs_helper_hello h;
	pid_t kids[40];
	int fd = kt_open_raw(0), i, n;
	ssize_t len;

	CHECK(fd >= 0, "open");
	CHECK_OK(kt_hello(fd, &h));
	CHECK(h.ring_records == 16, "ring_records %u (load with ring_records=16)",
	      h.ring_records);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, kt_gettid()));
	s0 = kt_stats(fd);
	for (i = 0; i < 40; i++) {
		kids[i] = fork();
		CHECK(kids[i] >= 0, "fork");
		if (kids[i] == 0)
			_exit(0);
	}
	for (i = 0; i < 40; i++)
		waitpid(kids[i], NULL, 0);
	s1 = kt_stats(fd);
	CHECK(s1.records - s0.records == 16 && s1.lost - s0.lost == 24,
	      "records %llu lost %llu", (unsigned long long)(s1.records - s0.records),
	      (unsigned long long)(s1.lost - s0.lost));
	len = read(fd, recs, sizeof(recs));
	CHECK(len == 17 * (ssize_t)sizeof(recs[0]), "read %zd bytes", len);
	CHECK(recs[0].type == PFMFS_HELPER_REC_LOST && recs[0].value == 24,
	      "first record: type %u value %llu", recs[0].type,
	      (unsigned long long)recs[0].value);
	for (i = 1; i < 17; i++) {
		CHECK(recs[i].type == PFMFS_HELPER_REC_FORK, "record %d type %u", i, recs[i].type);
		CHECK(recs[i].pid == (uint32_t)getpid() && recs[i].tid == (uint32_t)kt_gettid(),
		      "record %d parent %u/%u", i, recs[i].pid, recs[i].tid);
		CHECK(recs[i].child_pid == (uint32_t)kids[i - 1] &&
		      recs[i].child_tid == (uint32_t)kids[i - 1],
		      "record %d child %u/%u, expected %d", i, recs[i].child_pid,
		      recs[i].child_tid, kids[i - 1]);
	}
	CHECK(!kt_read_record(fd, recs, 100), "more records");
	/* Room again: the next one comes alone. */
	kids[0] = fork();
	if (kids[0] == 0)
		_exit(0);
	waitpid(kids[0], NULL, 0);
	n = kt_read_record(fd, recs, 1000);
	CHECK(n == 1 && recs[0].type == PFMFS_HELPER_REC_FORK &&
	      recs[0].child_pid == (uint32_t)kids[0], "after the drain: %d, type %u",
	      n, recs[0].type);

	/* Whole records only: room for 2.5 gets 2 of the 3 queued. */
	for (i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(0);
		waitpid(kids[i], NULL, 0);
	}
	len = read(fd, recs, 5 * sizeof(recs[0]) / 2);
	CHECK(len == 2 * (ssize_t)sizeof(recs[0]), "read of 2.5 records: %zd", len);
	len = read(fd, recs, sizeof(recs));
	CHECK(len == (ssize_t)sizeof(recs[0]) && recs[0].child_pid == (uint32_t)kids[2],
	      "the third: %zd", len);

	/* A blocked read() wakes up for the next record. */
	{
		struct blocked b = { .fd = fd };
		pthread_t th;

		CHECK(pthread_create(&th, NULL, blocked_read, &b) == 0, "pthread_create");
		kt_sleep_ms(300);
		CHECK(__atomic_load_n(&b.reads, __ATOMIC_ACQUIRE) == 1,
		      "%d reads returned, expected 1", b.reads);
		CHECK(b.len[0] == sizeof(b.rec[0]) && b.rec[0].type == PFMFS_HELPER_REC_FORK &&
		      b.rec[0].child_tid == (uint32_t)b.tid && b.rec[0].child_pid == (uint32_t)getpid(),
		      "the reader's own FORK: %zd, type %u, child %u", b.len[0], b.rec[0].type,
		      b.rec[0].child_tid);
		kids[0] = fork();
		if (kids[0] == 0)
			_exit(0);
		waitpid(kids[0], NULL, 0);
		pthread_join(th, NULL);
		CHECK(b.len[1] == sizeof(b.rec[1]) && b.rec[1].type == PFMFS_HELPER_REC_FORK &&
		      b.rec[1].child_pid == (uint32_t)kids[0], "blocked read: %zd, type %u",
		      b.len[1], b.rec[1].type);
	}
	close(fd);
}

/* Run with emulate_counters=8 emulate_width=40: the allowlist and the wraps follow the shape. */
void t_shape(void)
{
	struct pfmfs_helper_hello h;
	struct pfmfs_helper_record rec;
	const uint64_t w40 = 1ULL << 40;
	uint64_t t0;
	int fd = kt_open_raw(0);
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0 + 7, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
		{ .msr = MSR_PMC0 + 7, .value = w40 - MS_OF_CYCLES },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1ULL << 7 },
	};

	CHECK(fd >= 0, "open");
	CHECK_OK(kt_hello(fd, &h));
	CHECK(h.gp_counters == 8 && h.gp_width == 40 && h.fixed_counters == 3 &&
	      h.fixed_width == 40, "shape %u/%u %u/%u (load with emulate_counters=8 emulate_width=40)",
	      h.gp_counters, h.gp_width, h.fixed_counters, h.fixed_width);
	kt_pin(0);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 1));
	kt_wr_ok(fd, CPU, 1, MSR_EVTSEL0 + 7, EVTSEL_COUNT | EV_INSTR);
	kt_wr_ok(fd, CPU, 1, MSR_PMC0 + 7, ~0ULL);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0 + 7) == w40 - 1, "PMC7 not 40 bits");
	kt_wr_ok(fd, CPU, 1, MSR_FIXED_CTR0 + 2, ~0ULL);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_FIXED_CTR0 + 2) == w40 - 1, "FIXED2 not 40 bits");
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_EVTSEL0 + 8, 0), EPERM);
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_PMC0 + 8, 0), EPERM);
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_GLOBAL_CTRL, 1ULL << 8), EIO);
	kt_wr_ok(fd, CPU, 1, MSR_GLOBAL_CTRL, 0xff);
	kt_wr_ok(fd, CPU, 1, MSR_GLOBAL_CTRL, 0);
	t0 = kt_now();
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 1, ops, 3));
	CHECK(kt_read_record(fd, &rec, 10000), "no overflow of PMC7 in 10 s");
	check_overflow(&rec, 1ULL << 7, 0, 1, t0);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0 + 7) < w40 / 2, "PMC7 did not wrap at 40 bits");
	close(fd);
}
