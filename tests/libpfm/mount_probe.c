// pfmfs-test: backends=sim,perf run=no
/*
 * mount_probe.c: which mount libpfm-compat finds on its own, for
 * test_trust.py. pfm_initialize() and pfm_create_context(), then prints
 * "init=N" (pfm_initialize's answer) and "context=ok SESSION-DIR" or
 * "context=ERRNO". Exits 0 whatever it found: the driver judges.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <perfmon/perfmon.h>
#include <perfmon/pfmlib.h>

/* A set-uid build runs with LeakSanitizer, which cannot trace a set-id
 * process (it exits 1 at the end): leaks are not what this probe is about. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

int main(void)
{
	pfarg_ctx_t ctx;
	char link[64], dir[PATH_MAX];
	ssize_t n;
	int fd;

	printf("init=%d\n", pfm_initialize());
	memset(&ctx, 0, sizeof(ctx));
	fd = pfm_create_context(&ctx, NULL, NULL, 0);
	if (fd < 0) {
		printf("context=%d\n", errno);
		return 0;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, dir, sizeof(dir) - 1);
	dir[n > 0 ? n : 0] = '\0';
	printf("context=ok %s\n", dir);
	close(fd);
	return 0;
}
