/*
 * faults_libpfm_client.c: a perfmon2 program for test_faults_daemon.py, which
 * compiles it against libpfm-compat (the build's libpfm.so.3) and kills
 * pfmfsd under it. It monitors itself through the mount in $PFMFS_MOUNT:
 * creates a context, programs pmc0 (argv[1]) and pmd0, loads itself, starts,
 * prints "ready TID" and blocks in read() of the context's descriptor, where
 * perfmon2 programs wait for their overflow messages (none comes). Once that
 * read returns (the test has killed the daemon) it makes the calls a program
 * makes next and prints, one line each, "CALL RESULT ERRNO-NAME": read,
 * pfm_read_pmds, pfm_stop, pfm_create_context, close. Exit 0 once all are
 * printed: it was not left hanging or stopped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfmon/perfmon.h>

static void report(const char *call, long rc) {
  const char *name = rc < 0 ? strerrorname_np(errno) : "-";
  printf("%s %ld %s\n", call, rc < 0 ? -1L : rc, name ? name : "?");
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PMC0-VALUE\n", argv[0]);
    return 2;
  }
  pfarg_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  int fd = pfm_create_context(&ctx, NULL, NULL, 0);
  pfarg_pmc_t pmc;
  memset(&pmc, 0, sizeof pmc);
  pmc.reg_value = strtoull(argv[1], NULL, 0);
  pfarg_pmd_t pmd;
  memset(&pmd, 0, sizeof pmd);
  pfarg_load_t load;
  memset(&load, 0, sizeof load);
  load.load_pid = (uint32_t)gettid();
  if (fd < 0 || pfm_write_pmcs(fd, &pmc, 1) != 0 || pfm_write_pmds(fd, &pmd, 1) != 0 ||
      pfm_load_context(fd, &load) != 0 || pfm_start(fd, NULL) != 0) {
    report("setup", -1);
    return 1;
  }
  printf("ready %d\n", gettid());
  fflush(stdout);

  char msg[sizeof(pfarg_msg_t)];
  report("read", (long)read(fd, msg, sizeof msg));
  report("pfm_read_pmds", pfm_read_pmds(fd, &pmd, 1));
  report("pfm_stop", pfm_stop(fd));
  pfarg_ctx_t again;
  memset(&again, 0, sizeof again);
  report("pfm_create_context", pfm_create_context(&again, NULL, NULL, 0));
  report("close", close(fd));
  return 0;
}
