/*
 * A perfmon2 program as a user of the packages writes it: built against the
 * installed perfmon headers and libpfm (pkg-config libpfm, or libpfm.a), run on
 * a mount of the installed pfmfsd with --pmu=sim --sim-clock=manual, whose
 * counts are exact. It counts its own thread's instructions and cycles over
 * 1 ms of the sim's time, moved by writing to MOUNT/pmu/sim/advance, and
 * prints "inst=N cycles=N" (2 and 3 per ns: 2000000 and 3000000).
 * Exit status 1 with a message on any error.
 */
#include <perfmon/perfmon.h>
#include <perfmon/pfmlib.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void fail(const char *what, int err) {
  fprintf(stderr, "self_count: %s failed: %d (%s)\n", what, err, err < 0 ? pfm_strerror(err) : strerror(err));
  exit(1);
}

#define PFM(call)                                \
  do {                                           \
    int rc_ = (call);                            \
    if (rc_ != PFMLIB_SUCCESS) fail(#call, rc_); \
  } while (0)
#define SYS(call)                       \
  do {                                  \
    if ((call) < 0) fail(#call, errno); \
  } while (0)

static void advance(const char *mount, const char *ns) {
  char path[4096];
  FILE *f;

  snprintf(path, sizeof(path), "%s/pmu/sim/advance", mount);
  f = fopen(path, "w");
  if (f == NULL || fputs(ns, f) < 0 || fclose(f) != 0) fail("writing pmu/sim/advance", errno);
}

int main(void) {
  static pfmlib_input_param_t inp; /* large: not on the stack */
  static pfmlib_output_param_t outp;
  pfarg_pmc_t pc[PFMLIB_MAX_PMCS];
  pfarg_pmd_t pd[2];
  pfarg_ctx_t ctx;
  pfarg_load_t load;
  const char *mount = getenv("PFMFS_MOUNT");
  unsigned int i;
  int fd;

  if (mount == NULL) mount = "/run/pfmfs";
  PFM(pfm_initialize());
  memset(&inp, 0, sizeof(inp));
  PFM(pfm_get_inst_retired_event(&inp.pfp_events[0]));
  PFM(pfm_get_cycle_event(&inp.pfp_events[1]));
  inp.pfp_event_count = 2;
  inp.pfp_dfl_plm = PFM_PLM3;
  PFM(pfm_dispatch_events(&inp, NULL, &outp, NULL));

  memset(&ctx, 0, sizeof(ctx));
  fd = pfm_create_context(&ctx, NULL, NULL, 0);
  if (fd < 0) fail("pfm_create_context", errno);
  memset(pc, 0, sizeof(pc));
  for (i = 0; i < outp.pfp_pmc_count; i++) {
    pc[i].reg_num = (uint16_t)outp.pfp_pmcs[i].reg_num;
    pc[i].reg_value = outp.pfp_pmcs[i].reg_value;
  }
  memset(pd, 0, sizeof(pd));
  for (i = 0; i < 2; i++) pd[i].reg_num = (uint16_t)outp.pfp_pmds[i].reg_num;
  SYS(pfm_write_pmcs(fd, pc, (int)outp.pfp_pmc_count));
  SYS(pfm_write_pmds(fd, pd, 2));

  memset(&load, 0, sizeof(load));
  load.load_pid = (uint32_t)syscall(SYS_gettid);
  SYS(pfm_load_context(fd, &load));
  SYS(pfm_start(fd, NULL));
  advance(mount, "1000000\n");
  SYS(pfm_stop(fd));
  SYS(pfm_read_pmds(fd, pd, 2));
  printf("inst=%llu cycles=%llu\n", (unsigned long long)pd[0].reg_value, (unsigned long long)pd[1].reg_value);
  close(fd);
  return 0;
}
