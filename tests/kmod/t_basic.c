/*
 * t_basic.c - the device's interface: the handshake, who may open it, the
 * MSR allowlist and its all-or-nothing batches, garbage arguments, and
 * targets exclusive across openers.
 */
#include "kt.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void t_hello(void)
{
	struct pfmfs_helper_hello h;
	struct pfmfs_helper_stats s;
	struct pfmfs_helper_record rec;
	struct {
		uint32_t abi_version;
		uint32_t size;
	} small;
	int fd = kt_open_raw(0);

	CHECK(fd >= 0, "open: %s", kt_errname(fd));
	/* Before HELLO: every other ioctl is EINVAL, unknown ones ENOTTY. */
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_STATS, &s), EINVAL);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 0), EINVAL);
	CHECK_ERR(kt_ioctl(fd, _IO(PFMFS_HELPER_IOC_MAGIC, 42), NULL), ENOTTY);
	CHECK(read(fd, &rec, sizeof(rec)) < 0 && errno == EINVAL,
	      "read before HELLO: %s", strerror(errno));

	/* Another ABI: EPROTO, and the module's version and size back. */
	memset(&h, 0, sizeof(h));
	h.abi_version = 99;
	h.size = sizeof(h);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_HELLO, &h), EPROTO);
	CHECK(h.abi_version == PFMFS_HELPER_ABI_VERSION && h.size == sizeof(h),
	      "EPROTO wrote back %u/%u", h.abi_version, h.size);
	memset(&h, 0, sizeof(h));
	h.abi_version = PFMFS_HELPER_ABI_VERSION;
	h.size = sizeof(h) + 8;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_HELLO, &h), EPROTO);
	/* A caller whose struct is 8 bytes long learns it through EPROTO. */
	small.abi_version = 7;
	small.size = sizeof(small);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC, 0, small), &small),
		  EPROTO);
	CHECK(small.abi_version == PFMFS_HELPER_ABI_VERSION &&
	      small.size == sizeof(h), "small EPROTO wrote back %u/%u",
	      small.abi_version, small.size);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC, 0, uint32_t), &small),
		  EINVAL);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_HELLO, NULL), EFAULT);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_STATS, &s), EINVAL);

	CHECK_OK(kt_hello(fd, &h));
	kt_log("hello: v%u, %u counters of %u bits, %u fixed of %u bits, flags 0x%x, %u cpus, ring %u, record %u, skid %u",
	       h.arch_version, h.gp_counters, h.gp_width, h.fixed_counters,
	       h.fixed_width, h.flags, h.nr_cpu_ids, h.ring_records,
	       h.record_size, h.skid);
	CHECK(h.abi_version == PFMFS_HELPER_ABI_VERSION, "abi %u", h.abi_version);
	CHECK(h.arch_version == 2, "arch_version %u", h.arch_version);
	CHECK(h.gp_counters == 4 && h.gp_width == 48, "gp %u/%u", h.gp_counters,
	      h.gp_width);
	CHECK(h.fixed_counters == 3 && h.fixed_width == 48, "fixed %u/%u",
	      h.fixed_counters, h.fixed_width);
	CHECK(h.flags == PFMFS_HELPER_F_EMULATED, "flags 0x%x", h.flags);
	CHECK(h.nr_cpu_ids >= (uint32_t)kt_ncpus(), "nr_cpu_ids %u", h.nr_cpu_ids);
	CHECK(h.ring_records == 4096, "ring_records %u", h.ring_records);
	CHECK(h.record_size == sizeof(struct pfmfs_helper_record), "record_size %u",
	      h.record_size);
	CHECK(h.skid == 0, "skid %u", h.skid);
	/* A second HELLO is harmless. */
	CHECK_OK(kt_hello(fd, &h));
	s = kt_stats(fd);
	CHECK(!s.reserved[0] && !s.reserved[4], "stats reserved");
	CHECK(s.attached == 0, "attached %llu", (unsigned long long)s.attached);
	close(fd);
}

/* open() as another user or without CAP_SYS_RAWIO, in a child; its errno. */
static int open_as(uid_t uid, int drop_rawio)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int fd;

		if (drop_rawio) {
			struct __user_cap_header_struct hdr = {
				_LINUX_CAPABILITY_VERSION_3, 0 };
			struct __user_cap_data_struct data[2];

			if (syscall(SYS_capget, &hdr, data))
				_exit(100);
			data[0].effective &= ~(1u << CAP_SYS_RAWIO);
			data[0].permitted &= ~(1u << CAP_SYS_RAWIO);
			if (syscall(SYS_capset, &hdr, data))
				_exit(101);
		}
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(102);
		fd = open(PFMFS_HELPER_DEVICE, O_RDWR);
		_exit(fd >= 0 ? 0 : errno);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status), "child");
	CHECK(WEXITSTATUS(status) < 100, "child setup failed: %d",
	      WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

void t_perm(void)
{
	struct stat st;
	int e;

	CHECK(stat(PFMFS_HELPER_DEVICE, &st) == 0, "stat");
	CHECK((st.st_mode & 0777) == 0600 && st.st_uid == 0,
	      "mode 0%o uid %u", st.st_mode & 0777, st.st_uid);
	/* Root: yes. */
	CHECK((e = open_as(0, 0)) == 0, "root: %s", strerror(e));
	/* nobody: the node's mode says no. */
	CHECK((e = open_as(65534, 0)) == EACCES, "nobody, 0600: %s", strerror(e));
	/* nobody with the node open to all: the module's capability check. */
	CHECK(chmod(PFMFS_HELPER_DEVICE, 0666) == 0, "chmod");
	e = open_as(65534, 0);
	chmod(PFMFS_HELPER_DEVICE, 0600);
	CHECK(e == EPERM, "nobody, 0666: %s", strerror(e));
	/* root without CAP_SYS_RAWIO */
	CHECK((e = open_as(0, 1)) == EPERM, "root without CAP_SYS_RAWIO: %s",
	      strerror(e));
}

/* Every allowlisted MSR of a 4+3 counter PMU. */
static const uint32_t allowed[] = {
	0x186, 0x187, 0x188, 0x189,	/* PERFEVTSEL0..3 */
	0xc1, 0xc2, 0xc3, 0xc4,		/* PMC0..3 */
	0x309, 0x30a, 0x30b,		/* FIXED_CTR0..2 */
	0x38d, 0x38e, 0x38f, 0x390,	/* FIXED_CTR_CTRL, GLOBAL_STATUS/CTRL/OVF_CTRL */
};

/* A sample of others: neighbours of the allowed ones, and dangerous ones. */
static const uint32_t refused[] = {
	0x0, 0x10, 0x1b, 0x3a, 0x79, 0xc0, 0xc5, 0xc9, 0x185, 0x18a, 0x18e,
	0x1d9, 0x30c, 0x345, 0x38c, 0x391, 0x392, 0x3f1, 0x4c1, 0x600,
	0x808, 0x834, 0xc0000080, 0xc0000082, 0xc0010004, 0xffffffff,
};

/* A valid value to write to an allowed MSR that starts nothing counting. */
static uint64_t sample_value(uint32_t msr)
{
	if (msr >= 0x186 && msr <= 0x189)
		return EVTSEL_COUNT | EV_BRANCHES | (uint64_t)(msr - 0x186) << 24;
	if (msr >= 0xc1 && msr <= 0xc4)
		return 0x123456789aULL + msr;
	if (msr >= 0x309 && msr <= 0x30b)
		return 0xabcdef012ULL + msr;
	if (msr == 0x38d)
		return 0x0b3;
	return 0;	/* GLOBAL_CTRL, OVF_CTRL */
}

void t_allowlist(void)
{
	struct pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH];
	struct pfmfs_helper_stats s0, s1;
	uint64_t before, v;
	int fd = kt_open();
	size_t i;
	int r;

	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 1));
	/* Every allowed MSR reads, and writes what it reads back. */
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		uint32_t msr = allowed[i];

		CHECK_OK(kt_rd(fd, CPU, 1, msr, &v));
		if (msr == MSR_GLOBAL_STATUS) {
			/* Allowed, and read-only as on hardware: a fault. */
			CHECK_ERR(kt_wr(fd, CPU, 1, msr, 0), EIO);
			continue;
		}
		kt_wr_ok(fd, CPU, 1, msr, sample_value(msr));
		v = kt_rd_ok(fd, CPU, 1, msr);
		if (msr == MSR_GLOBAL_OVF)
			CHECK(v == 0, "OVF_CTRL reads 0x%llx", (unsigned long long)v);
		else
			CHECK(v == sample_value(msr), "MSR 0x%x: wrote 0x%llx, read 0x%llx",
			      msr, (unsigned long long)sample_value(msr),
			      (unsigned long long)v);
	}
	/* Others: refused, counted, and nothing written. */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		s0 = kt_stats(fd);
		ops[0].msr = refused[i];
		ops[0].reserved = 0;
		ops[0].value = 0x5a5a;
		CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, CPU, 1, ops, 1), EPERM);
		CHECK(ops[0].value == 0x5a5a, "refused read wrote the value back");
		CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 1, ops, 1), EPERM);
		s1 = kt_stats(fd);
		CHECK(s1.refused == s0.refused + 2, "MSR 0x%x: refused %llu -> %llu",
		      refused[i], (unsigned long long)s0.refused,
		      (unsigned long long)s1.refused);
	}
	/* All or nothing: a batch with one refused MSR changes nothing. */
	before = kt_rd_ok(fd, CPU, 1, MSR_EVTSEL0);
	ops[0] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0, .value = EVTSEL_COUNT | EV_INSTR };
	ops[1] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0, .value = 77 };
	ops[2] = (struct pfmfs_helper_msr){ .msr = 0x10, .value = 0 };	/* TSC */
	CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 1, ops, 3), EPERM);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_EVTSEL0) == before, "EVTSEL0 changed");
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0) == sample_value(MSR_PMC0), "PMC0 changed");
	/* A fault stops the batch; what came before it is done. */
	ops[2] = (struct pfmfs_helper_msr){ .msr = MSR_EVTSEL0 + 1, .value = 1ULL << 40 };
	ops[3] = (struct pfmfs_helper_msr){ .msr = MSR_PMC0 + 1, .value = 5 };
	CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 1, ops, 4), EIO);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_EVTSEL0) == (EVTSEL_COUNT | EV_INSTR), "op 0 not done");
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0) == 77, "op 1 not done");
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_EVTSEL0 + 1) == sample_value(MSR_EVTSEL0 + 1),
	      "faulting op 2 wrote");
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0 + 1) == sample_value(MSR_PMC0 + 1),
	      "op 3 after the fault done");
	/* Reserved bits fault like on hardware. */
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_FIXED_CTRL, 0x1000), EIO);
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_GLOBAL_CTRL, 1ULL << 4), EIO);
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_GLOBAL_CTRL, 1ULL << 35), EIO);
	CHECK_ERR(kt_wr(fd, CPU, 1, MSR_EVTSEL0, 1ULL << 21), EIO);	/* AnyThread: v3 */
	/* Counters keep their width. */
	kt_wr_ok(fd, CPU, 1, MSR_PMC0, ~0ULL);
	CHECK(kt_rd_ok(fd, CPU, 1, MSR_PMC0) == WIDTH48 - 1, "PMC0 not 48 bits");
	/* The largest batch, every op allowed. */
	for (i = 0; i < PFMFS_HELPER_MAX_BATCH; i++)
		ops[i] = (struct pfmfs_helper_msr){ .msr = allowed[i % 4] };
	CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, CPU, 1, ops,
			  PFMFS_HELPER_MAX_BATCH));
	/* The same on a thread's image. */
	{
		struct kt_thread t;

		kt_thread_start(&t, KT_BLOCK, -1);
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, CPU, 1));
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid));
		for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
			uint32_t msr = allowed[i];

			CHECK(kt_rd_ok(fd, THREAD, t.tid, msr) == 0,
			      "a new image's MSR 0x%x is not 0", msr);
			r = kt_wr(fd, THREAD, t.tid, msr, sample_value(msr));
			CHECK(r == (msr == MSR_GLOBAL_STATUS ? -EIO : 0),
			      "thread write 0x%x: %s", msr, kt_errname(r));
		}
		for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
			ops[0] = (struct pfmfs_helper_msr){ .msr = refused[i] };
			CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, THREAD, t.tid,
					   ops, 1), EPERM);
		}
		CHECK(kt_rd_ok(fd, THREAD, t.tid, MSR_EVTSEL0 + 2) ==
		      sample_value(MSR_EVTSEL0 + 2), "image EVTSEL2");
		CHECK(kt_rd_ok(fd, THREAD, t.tid, MSR_FIXED_CTR0 + 1) ==
		      sample_value(MSR_FIXED_CTR0 + 1), "image FIXED1");
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, t.tid));
		kt_thread_stop(&t);
	}
	close(fd);
}

void t_garbage(void)
{
	struct pfmfs_helper_msr ops[PFMFS_HELPER_MAX_BATCH + 1], *page;
	struct pfmfs_helper_batch b;
	struct pfmfs_helper_target tg;
	struct pfmfs_helper_cpu_state st;
	struct pfmfs_helper_stats s0, s1;
	struct pfmfs_helper_record rec;
	struct kt_thread t;
	uint64_t regs0[15], regs1[15];
	unsigned long req[2] = { PFMFS_HELPER_IOC_MSR_READ, PFMFS_HELPER_IOC_MSR_WRITE };
	long pagesz = sysconf(_SC_PAGESIZE);
	int fd = kt_open(), ncpu = kt_ncpus();
	char *map;
	int i, k;

	kt_thread_start(&t, KT_BLOCK, -1);
	s0 = kt_stats(fd);
	for (i = 0; i < 15; i++)
		regs0[i] = kt_rd_ok(fd, CPU, 0, allowed[i]);
	memset(ops, 0, sizeof(ops));
	ops[0].msr = MSR_EVTSEL0;

	/* Unmapped memory: a page mapped, then unmapped. */
	map = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(map != MAP_FAILED, "mmap");
	CHECK(munmap(map + pagesz, pagesz) == 0, "munmap");
	/* ops whose last one crosses into the unmapped page */
	page = (struct pfmfs_helper_msr *)(map + pagesz) - 1;
	memset(page, 0, sizeof(*page));
	page->msr = MSR_EVTSEL0;

	for (k = 0; k < 2; k++) {
		b = (struct pfmfs_helper_batch){ .ops = (uintptr_t)ops, .count = 1,
			.target = CPU, .id = 0 };
		CHECK_OK(kt_ioctl(fd, req[k], &b));
		b.count = 0;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.count = PFMFS_HELPER_MAX_BATCH + 1;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.count = 0xffffffff;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.count = 1;
		b.reserved = 1;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.reserved = 0;
		b.target = 2;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.target = 0xffffffff;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.target = CPU;
		b.id = ncpu;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.id = 4096;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.id = 0xffffffff;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.id = 0;
		b.ops = 0;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EFAULT);
		b.ops = (uintptr_t)(map + pagesz);
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EFAULT);
		b.ops = (uintptr_t)page;
		b.count = 2;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EFAULT);
		b.ops = 0xffff800000000000ULL;	/* kernel address */
		b.count = 1;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EFAULT);
		b.ops = (uintptr_t)ops;
		ops[0].reserved = 1;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		ops[0].reserved = 0;
		/* a thread that is not attached: not even our own */
		b.target = THREAD;
		b.id = t.tid;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.id = kt_gettid();
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		b.id = 0;
		CHECK_ERR(kt_ioctl(fd, req[k], &b), EINVAL);
		CHECK_ERR(kt_ioctl(fd, req[k], NULL), EFAULT);
		CHECK_ERR(kt_ioctl(fd, req[k], map + pagesz), EFAULT);
	}
	/* A read batch into memory it cannot write */
	{
		struct pfmfs_helper_msr *ro = mmap(NULL, pagesz, PROT_READ | PROT_WRITE,
						   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		CHECK(ro != MAP_FAILED, "mmap");
		memset(ro, 0, sizeof(*ro));
		ro->msr = MSR_PMC0;
		CHECK(mprotect(ro, pagesz, PROT_READ) == 0, "mprotect");
		CHECK_ERR(kt_batch(fd, PFMFS_HELPER_IOC_MSR_READ, CPU, 0, ro, 1), EFAULT);
		CHECK_OK(kt_batch(fd, PFMFS_HELPER_IOC_MSR_WRITE, CPU, 0, ro, 1));
		CHECK(kt_rd_ok(fd, CPU, 0, MSR_PMC0) == 0, "PMC0");
		kt_wr_ok(fd, CPU, 0, MSR_PMC0, regs0[4]);
		munmap(ro, pagesz);
	}

	/* ATTACH, DETACH, HOLD, RELEASE */
	{
		unsigned long treq[4] = { PFMFS_HELPER_IOC_ATTACH, PFMFS_HELPER_IOC_DETACH,
					  PFMFS_HELPER_IOC_HOLD, PFMFS_HELPER_IOC_RELEASE };

		for (k = 0; k < 4; k++) {
			/*
			 * Flags: PFMFS_HELPER_ATTACH_INHERIT on the ATTACH of a
			 * thread only (below); any other flag, any flag of a cpu.
			 */
			tg = (struct pfmfs_helper_target){ .target = THREAD, .id = t.tid, .flags = 2 };
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			tg.flags = PFMFS_HELPER_ATTACH_INHERIT | 2;
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			tg.flags = 0x80000000;
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			tg = (struct pfmfs_helper_target){ .target = CPU, .id = 0,
							  .flags = PFMFS_HELPER_ATTACH_INHERIT };
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			tg = (struct pfmfs_helper_target){ .target = THREAD, .id = t.tid };
			tg.reserved = 5;
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			tg.reserved = 0;
			tg.target = 2;
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
			CHECK_ERR(kt_ioctl(fd, treq[k], NULL), EFAULT);
			CHECK_ERR(kt_ioctl(fd, treq[k], map + pagesz), EFAULT);
			if (k == 0)
				continue;
			/* not attached */
			CHECK_ERR(kt_target(fd, treq[k], THREAD, t.tid), EINVAL);
			CHECK_ERR(kt_target(fd, treq[k], THREAD, 0), EINVAL);
			CHECK_ERR(kt_target(fd, treq[k], CPU, 0), EINVAL);
		}
	}
	/*
	 * INHERIT is a flag of ATTACH only: DETACH, HOLD and RELEASE with it
	 * are refused, and leave the thread attached and running.
	 */
	{
		unsigned long treq[3] = { PFMFS_HELPER_IOC_DETACH, PFMFS_HELPER_IOC_HOLD,
					  PFMFS_HELPER_IOC_RELEASE };

		tg = (struct pfmfs_helper_target){ .target = THREAD, .id = t.tid,
						  .flags = PFMFS_HELPER_ATTACH_INHERIT };
		CHECK_OK(kt_ioctl(fd, PFMFS_HELPER_IOC_ATTACH, &tg));
		CHECK(kt_stats(fd).attached == s0.attached + 1, "ATTACH with INHERIT: attached %llu",
		      (unsigned long long)kt_stats(fd).attached);
		for (k = 0; k < 3; k++)
			CHECK_ERR(kt_ioctl(fd, treq[k], &tg), EINVAL);
		CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_ATTACH, &tg), EBUSY);
		(void)kt_rd_ok(fd, THREAD, t.tid, MSR_PMC0);
		CHECK(kt_stats(fd).held == s0.held, "HOLD with a flag held the thread");
		CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, THREAD, t.tid));
	}
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, 0), ESRCH);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, 4194304), ESRCH);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, 0x80000000), ESRCH);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, 0xffffffff), ESRCH);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, THREAD, 2), EINVAL);	/* kthreadd */
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, ncpu), EINVAL);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 0xffffffff), EINVAL);
	/* HOLD and RELEASE take threads only */
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_ATTACH, CPU, 0));
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_HOLD, CPU, 0), EINVAL);
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_RELEASE, CPU, 0), EINVAL);
	CHECK_OK(kt_target(fd, PFMFS_HELPER_IOC_DETACH, CPU, 0));
	CHECK_ERR(kt_target(fd, PFMFS_HELPER_IOC_DETACH, CPU, 0), EINVAL);

	/* STATS, CPU_STATE */
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_STATS, NULL), EFAULT);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_STATS, map + pagesz), EFAULT);
	st = (struct pfmfs_helper_cpu_state){ .cpu = 0, .reserved = 1 };
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_CPU_STATE, &st), EINVAL);
	st = (struct pfmfs_helper_cpu_state){ .cpu = ncpu };
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_CPU_STATE, &st), EINVAL);
	st.cpu = 0xffffffff;
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_CPU_STATE, &st), EINVAL);
	CHECK_ERR(kt_ioctl(fd, PFMFS_HELPER_IOC_CPU_STATE, NULL), EFAULT);

	/* Unknown ioctls, and known ones with another size or direction */
	CHECK_ERR(kt_ioctl(fd, _IO(PFMFS_HELPER_IOC_MAGIC, 9), NULL), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC, 200, int), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOW(PFMFS_HELPER_IOC_MAGIC, 1, char[8]), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOW(PFMFS_HELPER_IOC_MAGIC, 1, char[32]), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOR(PFMFS_HELPER_IOC_MAGIC, 1, struct pfmfs_helper_batch), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOR(PFMFS_HELPER_IOC_MAGIC, 7, char[4]), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOW(PFMFS_HELPER_IOC_MAGIC, 0, struct pfmfs_helper_hello), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, _IOWR(PFMFS_HELPER_IOC_MAGIC + 1, 0, struct pfmfs_helper_hello), ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, 0x5401 /* TCGETS */, ops), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, 0, NULL), ENOTTY);
	CHECK_ERR(kt_ioctl(fd, 0xffffffff, NULL), ENOTTY);

	/* read(): a buffer smaller than a record; nothing queued */
	CHECK(read(fd, &rec, sizeof(rec) - 1) < 0 && errno == EINVAL, "short read: %s",
	      strerror(errno));
	CHECK(read(fd, &rec, 0) < 0 && errno == EINVAL, "empty read: %s", strerror(errno));
	{
		int nb = kt_open_raw(O_NONBLOCK);
		struct pfmfs_helper_hello h;

		CHECK(nb >= 0, "open");
		CHECK_OK(kt_hello(nb, &h));
		CHECK(read(nb, &rec, sizeof(rec)) < 0 && errno == EAGAIN,
		      "non-blocking read: %s", strerror(errno));
		CHECK(lseek(nb, 0, SEEK_SET) < 0 && errno == ESPIPE, "lseek");
		close(nb);
	}

	/* Nothing changed. */
	s1 = kt_stats(fd);
	CHECK(s1.attached == s0.attached && s1.held == s0.held &&
	      s1.refused == s0.refused && s1.records == s0.records,
	      "stats changed");
	for (i = 0; i < 15; i++) {
		regs1[i] = kt_rd_ok(fd, CPU, 0, allowed[i]);
		CHECK(regs0[i] == regs1[i], "MSR 0x%x changed: 0x%llx -> 0x%llx",
		      allowed[i], (unsigned long long)regs0[i],
		      (unsigned long long)regs1[i]);
	}
	kt_thread_stop(&t);
	close(fd);
}

void t_exclusive(void)
{
	int a = kt_open(), b = kt_open();
	struct kt_thread t;

	kt_thread_start(&t, KT_BLOCK, -1);
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid));
	CHECK_ERR(kt_target(a, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid), EBUSY);
	CHECK_ERR(kt_target(b, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid), EBUSY);
	/* threads and cpus exclude each other */
	CHECK_ERR(kt_target(a, PFMFS_HELPER_IOC_ATTACH, CPU, 0), EBUSY);
	CHECK_ERR(kt_target(b, PFMFS_HELPER_IOC_ATTACH, CPU, 1), EBUSY);
	CHECK_ERR(kt_wr(b, CPU, 0, MSR_EVTSEL0, 0), EBUSY);
	/* reads of a cpu are fine; another opener's thread is not ours */
	(void)kt_rd_ok(b, CPU, 0, MSR_GLOBAL_CTRL);
	CHECK_ERR(kt_wr(b, THREAD, t.tid, MSR_EVTSEL0, 0), EINVAL);
	CHECK_ERR(kt_target(b, PFMFS_HELPER_IOC_DETACH, THREAD, t.tid), EINVAL);
	CHECK_ERR(kt_target(b, PFMFS_HELPER_IOC_HOLD, THREAD, t.tid), EINVAL);
	CHECK(kt_stats(a).attached == 1, "attached");
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_DETACH, THREAD, t.tid));

	CHECK_OK(kt_target(b, PFMFS_HELPER_IOC_ATTACH, CPU, 0));
	CHECK_ERR(kt_target(a, PFMFS_HELPER_IOC_ATTACH, CPU, 0), EBUSY);
	CHECK_ERR(kt_target(b, PFMFS_HELPER_IOC_ATTACH, CPU, 0), EBUSY);
	CHECK_ERR(kt_target(a, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid), EBUSY);
	CHECK_ERR(kt_wr(a, CPU, 0, MSR_EVTSEL0, 0), EBUSY);
	kt_wr_ok(b, CPU, 0, MSR_EVTSEL0, EVTSEL_COUNT | EV_CYCLES);
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_ATTACH, CPU, 1));
	CHECK(kt_stats(a).attached == 2, "attached");
	/* b's close frees cpu 0 and clears what b programmed there */
	close(b);
	CHECK(kt_rd_ok(a, CPU, 0, MSR_EVTSEL0) == 0, "EVTSEL0 left programmed");
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_ATTACH, CPU, 0));
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_DETACH, CPU, 0));
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_DETACH, CPU, 1));
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid));
	close(a);
	a = kt_open();
	CHECK(kt_stats(a).attached == 0, "close left targets attached");
	/* the thread is free again after its opener closed */
	CHECK_OK(kt_target(a, PFMFS_HELPER_IOC_ATTACH, THREAD, t.tid));
	close(a);
	kt_thread_stop(&t);
}
