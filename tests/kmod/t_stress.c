/*
 * t_stress.c - everything at once for a few seconds: overflows every 100 us
 * of several threads that switch all the time, a second opener attaching,
 * holding, releasing and detaching in a loop, and a third reading the
 * statistics and cpu states; then every opener closes with counters
 * running. The kernel must log nothing (run.sh checks), every record must
 * name a thread of its opener, and nothing may be left counting.
 */
#include "kt.h"

#include <poll.h>
#include <unistd.h>

#define NSPIN	2
#define NSLEEP	2
#define PERIOD	300000ULL	/* cycles: 100 us */

static volatile int stop_churn;

static void arm(int fd, pid_t tid)
{
	struct pfmfs_helper_msr ops[] = {
		{ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EVTSEL_INT | EV_CYCLES },
		{ .msr = MSR_PMC0, .value = WIDTH48 - PERIOD },
		{ .msr = MSR_FIXED_CTRL, .value = FIXED_OS | FIXED_USR | FIXED_PMI },
		{ .msr = MSR_FIXED_CTR0, .value = WIDTH48 - 2 * PERIOD },
		{ .msr = MSR_GLOBAL_CTRL, .value = 1 | FIXED_BIT(0) },
	};

	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, tid, ops, 5));
}

/* The second opener: attach, program, hold, release, detach, over and over. */
static void *churn(void *arg)
{
	struct kt_thread *t = arg;
	unsigned long rounds = 0;
	int fd = kt_open(), i;

	while (!stop_churn) {
		for (i = 0; i < 2; i++) {
			CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, t[i].tid));
			arm(fd, t[i].tid);
		}
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, t[0].tid));
		kt_sleep_ms(2);
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_RELEASE, THREAD, t[0].tid));
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, t[1].tid));
		kt_sleep_ms(1);
		for (i = 0; i < 2; i++)
			CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, t[i].tid));
		rounds++;
		if (rounds % 7 == 0) {
			/* close with a hold and counters running */
			CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, t[0].tid));
			arm(fd, t[0].tid);
			CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_HOLD, THREAD, t[0].tid));
			close(fd);
			fd = kt_open();
		}
	}
	close(fd);
	kt_log("churn: %lu rounds", rounds);
	return NULL;
}

static void *watch(void *arg)
{
	int fd = kt_open(), cpu;

	(void)arg;
	while (!stop_churn) {
		(void)kt_stats(fd);
		for (cpu = 0; cpu < kt_ncpus(); cpu++)
			(void)kt_cpu_state(fd, cpu);
		kt_sleep_ms(1);
	}
	close(fd);
	return NULL;
}

void t_stress(void)
{
	struct kt_thread th[NSPIN + NSLEEP], other[2];
	struct pfmfs_helper_record recs[64];
	struct pfmfs_helper_stats s0, s1;
	pthread_t churner, watcher;
	unsigned long overflows = 0, forks = 0;
	int fd = kt_open(), i, j, n, cpu;
	uint64_t end;
	ssize_t len;

	for (i = 0; i < NSPIN + NSLEEP; i++) {
		kt_thread_start(&th[i], i < NSPIN ? KT_SPIN : KT_SLEEP, i % 2);
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, th[i].tid));
		arm(fd, th[i].tid);
	}
	kt_thread_start(&other[0], KT_SPIN, 0);
	kt_thread_start(&other[1], KT_SLEEP, 1);
	s0 = kt_stats(fd);
	stop_churn = 0;
	CHECK(pthread_create(&churner, NULL, churn, other) == 0, "pthread_create");
	CHECK(pthread_create(&watcher, NULL, watch, NULL) == 0, "pthread_create");

	end = kt_now() + 4000000000ULL;
	while (kt_now() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 100) <= 0)
			continue;
		len = read(fd, recs, sizeof(recs));
		CHECK(len > 0 && len % sizeof(recs[0]) == 0, "read %zd", len);
		n = len / sizeof(recs[0]);
		for (j = 0; j < n; j++) {
			if (recs[j].type == PFMFS_HELPER_REC_FORK) {
				forks++;
				continue;
			}
			CHECK(recs[j].type == PFMFS_HELPER_REC_OVERFLOW, "record type %u",
			      recs[j].type);
			overflows++;
			for (i = 0; i < NSPIN + NSLEEP; i++)
				if (recs[j].tid == (uint32_t)th[i].tid)
					break;
			CHECK(i < NSPIN + NSLEEP, "overflow of tid %u: not ours", recs[j].tid);
			CHECK(recs[j].value & (1 | FIXED_BIT(0)), "bits 0x%llx",
			      (unsigned long long)recs[j].value);
			arm(fd, th[i].tid);	/* thaw it, a new period */
		}
	}
	stop_churn = 1;
	pthread_join(churner, NULL);
	pthread_join(watcher, NULL);
	s1 = kt_stats(fd);
	kt_log("%lu overflow records, %llu PMIs, %llu switch-ins, %llu lost, %llu held",
	       overflows, (unsigned long long)(s1.pmis - s0.pmis),
	       (unsigned long long)(s1.switch_ins - s0.switch_ins),
	       (unsigned long long)(s1.lost - s0.lost),
	       (unsigned long long)(s1.held - s0.held));
	CHECK(overflows > 100, "only %lu overflow records in 4 s", overflows);
	CHECK(forks == 0, "FORK records");
	CHECK(s1.lost == s0.lost, "records lost");
	close(fd);

	/* Every opener closed with counters running: nothing runs now. */
	fd = kt_open();
	CHECK(kt_stats(fd).attached == 0, "attached %llu",
	      (unsigned long long)kt_stats(fd).attached);
	for (cpu = 0; cpu < kt_ncpus(); cpu++) {
		struct pfmfs_helper_cpu_state st = kt_cpu_state(fd, cpu);

		CHECK(st.global_ctrl == 0 && st.lvtpc == st.lvtpc_found && !st.owner_tid,
		      "cpu %d: GLOBAL_CTRL 0x%llx LVTPC 0x%x (found 0x%x) owner %u", cpu,
		      (unsigned long long)st.global_ctrl, st.lvtpc, st.lvtpc_found,
		      st.owner_tid);
	}
	close(fd);
	for (i = 0; i < NSPIN + NSLEEP; i++)
		kt_thread_stop(&th[i]);
	for (i = 0; i < 2; i++)
		kt_thread_stop(&other[i]);
}
