/*
 * kt.h - helpers of the pfmfs_helper.ko tests (tests/kmod/): the device's
 * ioctls returning 0 or -errno, threads to monitor, CPU times from /proc,
 * and CHECK(), which ends the test with a message. Each test is a function
 * run by `kmod_test NAME` as root in the VM, with the module loaded.
 */
#ifndef KT_H
#define KT_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "pfmfs_helper.h"

/* Architectural MSRs */
#define MSR_PMC0		0x0c1
#define MSR_EVTSEL0		0x186
#define MSR_FIXED_CTR0		0x309
#define MSR_FIXED_CTRL		0x38d
#define MSR_GLOBAL_STATUS	0x38e
#define MSR_GLOBAL_CTRL		0x38f
#define MSR_GLOBAL_OVF		0x390

#define EVTSEL_USR		(1ULL << 16)
#define EVTSEL_OS		(1ULL << 17)
#define EVTSEL_INT		(1ULL << 20)
#define EVTSEL_EN		(1ULL << 22)
#define EVTSEL_COUNT		(EVTSEL_USR | EVTSEL_OS | EVTSEL_EN)

/* The test PMU's events and rates (events per ns: num/den). */
/*
 * The test PMU counts every ns a thread is on its cpu by the module's
 * clock, which under TCG runs ahead of the scheduler's CPU time by a share
 * that grows with the host's load (6% to 8% of a thread's time seen with
 * both host cores busy: its interrupts, or the two clocks' drift): a count
 * may exceed the CPU time by KT_IRQ_SHARE of it (tests/integration's
 * X86_AHEAD), not fall short of it.
 */
#define KT_IRQ_SHARE(ns)	((ns) / 4)

#define EV_CYCLES		0x003c	/* 3/1 */
#define EV_INSTR		0x00c0	/* 2/1 */
#define EV_REF_CYCLES		0x013c	/* 5/2 */
#define EV_LLC_REF		0x4f2e	/* 1/20 */
#define EV_LLC_MISS		0x412e	/* 1/100 */
#define EV_BRANCHES		0x00c4	/* 2/5 */
#define EV_BR_MISSES		0x00c5	/* 1/250 */

#define FIXED_OS		0x1
#define FIXED_USR		0x2
#define FIXED_PMI		0x8
#define FIXED_BIT(n)		(1ULL << (32 + (n)))

#define APIC_DM_NMI		0x400
#define APIC_LVT_MASKED		0x10000

#define THREAD			PFMFS_HELPER_TARGET_THREAD
#define CPU			PFMFS_HELPER_TARGET_CPU

#define WIDTH48			(1ULL << 48)

void kt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

/* Ends the test (exit 1) with the failed condition and a message. */
#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			kt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* `expr` (0 or -errno) must give -err. */
#define CHECK_ERR(expr, err)						\
	do {								\
		long kt_r_ = (expr);					\
		CHECK(kt_r_ == -(err), "%s: got %s, expected %s", #expr, \
		      kt_errname(kt_r_), kt_errname(-(err)));		\
	} while (0)

#define CHECK_OK(expr) CHECK_ERR(expr, 0)

const char *kt_errname(long r);
void kt_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The device */
int kt_open_raw(int flags);		/* fd or -errno, no HELLO */
int kt_open(void);			/* fd after a HELLO; CHECKs */
int kt_ioctl(int fd, unsigned long req, void *arg);	/* 0 or -errno */
int kt_hello(int fd, struct pfmfs_helper_hello *h);
int kt_batch(int fd, unsigned long req, uint32_t target, uint32_t id,
	     struct pfmfs_helper_msr *ops, uint32_t count);
int kt_rd(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t *value);
int kt_wr(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t value);
uint64_t kt_rd_ok(int fd, uint32_t target, uint32_t id, uint32_t msr);
void kt_wr_ok(int fd, uint32_t target, uint32_t id, uint32_t msr, uint64_t value);
int kt_target(int fd, unsigned long req, uint32_t target, uint32_t id);
struct pfmfs_helper_stats kt_stats(int fd);
struct pfmfs_helper_cpu_state kt_cpu_state(int fd, uint32_t cpu);
/* Reads one record within timeout_ms: 1, 0 on timeout. */
int kt_read_record(int fd, struct pfmfs_helper_record *rec, int timeout_ms);

/* Time, threads, /proc */
uint64_t kt_now(void);			/* CLOCK_MONOTONIC ns */
void kt_sleep_ms(unsigned int ms);
pid_t kt_gettid(void);
void kt_pin(int cpu);			/* the calling thread */
int kt_ncpus(void);
uint64_t kt_cputime(pid_t tid);		/* ns on cpu: CPU-time clocks */
uint64_t kt_own_cputime(pid_t tid);	/* a thread's own, a zombie's too: schedstat */
long kt_ctxt(pid_t tid, int voluntary);	/* context switches, /proc/TID/status */
char kt_state(pid_t tid);		/* R, S, D... from /proc/TID/stat */
/*
 * Waits (60 s at most) until the thread blocks and is off its CPU: its
 * switch-out, and the module's sched_switch hook with it, are done.
 */
void kt_wait_off_cpu(pid_t tid);

/* A thread to monitor: it spins in this program's text, or it sleeps. */
enum kt_mode { KT_SPIN, KT_SLEEP, KT_BLOCK };

struct kt_thread {
	pthread_t th;
	pid_t tid;
	int cpu;		/* pinned there, or -1 */
	enum kt_mode mode;
	volatile int stop;
};

void kt_thread_start(struct kt_thread *t, enum kt_mode mode, int cpu);
void kt_thread_stop(struct kt_thread *t);
void kt_spin(volatile int *stop);

/* This program's text, for overflow IPs. */
extern char __executable_start[], etext[];

/* The tests */
struct kt_test {
	const char *name;
	void (*run)(void);
};

void t_hello(void);
void t_perm(void);
void t_allowlist(void);
void t_garbage(void);
void t_exclusive(void);
void t_cpu_count(void);
void t_busy_sleep(void);
void t_two_cpus(void);
void t_shared_cpu(void);
void t_ctrl_writes(void);
void t_overflow(void);
void t_overflow_cpu(void);
void t_lost(void);
void t_hold(void);
void t_exit_fork(void);
void t_kill9(void);
void t_stress(void);
void t_shape(void);
void t_inherit_fork(void);
void t_inherit_tree(void);
void t_inherit_template(void);
void t_inherit_off(void);
void t_inherit_refuse(void);
void t_inherit_close(void);
void t_inherit_lost(void);
void t_inherit_race(void);
void t_inherit_dup(void);

#endif /* KT_H */
