/*
 * libpfm_fuzz.c: one libpfm-compat client issuing seeded random calls, the
 * part of mount_fuzz.py's clients that speaks the library's API rather than
 * the files.
 *
 *   PFMFS_MOUNT=MNT libpfm_fuzz SEED CALLS TARGET_PID
 *
 * Arguments are what perfmon2 programs get wrong: NULL and short vectors,
 * counts past the vector or negative, descriptors that are not contexts
 * (closed ones, other files, -1), unknown registers, sets, flags and
 * threads, every call in every state. After each call it checks what
 * libpfm-compat promises (docs/libpfm-compat.md, pfmlib.h):
 *   - a perfmon2 call returns >= 0, or -1 with an errno the docs list;
 *   - a pfmlib call returns PFMLIB_SUCCESS or one of the PFMLIB_ERR_* codes;
 *   - a refused write of one set's registers, or of one set, changed nothing
 *     of the context's session (its files, read before and after);
 *   - no call crashes or hangs (mount_fuzz.py sees to that from outside,
 *     and that no session outlives this process).
 * Exit 0: every check held; 3: a check failed, the seed and the last calls
 * on stderr. Every context is closed at the end (and by the exit anyway).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfmon/perfmon.h>
#include <perfmon/pfmlib.h>

#define MAX_CTX 4
#define MAX_VEC 8
#define TRACE 40

static uint64_t rng_state;
static const char *seed_text;
static char trace[TRACE][160];
static unsigned long calls_done;
static int ctx_fd[MAX_CTX];
static int stale_fd = -1; /* the number of a context closed earlier */
static pid_t target;

static uint64_t next64(void) {
  /* xorshift64*: enough for choices, and the same on every machine */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static unsigned pick(unsigned n) { return (unsigned)(next64() % n); }

static int chance(unsigned percent) { return pick(100) < percent; }

static void note(const char *fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(trace[calls_done % TRACE], sizeof(trace[0]), fmt, ap);
  va_end(ap);
}

static void violation(const char *fmt, ...) {
  va_list ap;
  unsigned long i, first = calls_done >= TRACE - 1 ? calls_done - (TRACE - 1) : 0;

  fprintf(stderr, "libpfm_fuzz: seed %s, call %lu: ", seed_text, calls_done);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n  its last calls:\n");
  for (i = first; i <= calls_done; ++i) fprintf(stderr, "    %lu: %s\n", i, trace[i % TRACE]);
  exit(3);
}

/* -1 with one of these, or success: docs/libpfm-compat.md's list, with
 * ENOSPC (a limit), ENOENT (the session went away under the call: its
 * target's death never does that, but a mount gone does), EOPNOTSUPP
 * (a sampling format), EFAULT (a NULL ctx or load argument) and
 * EAGAIN/EINTR for reads. */
static void check_os(const char *call, int rc) {
  if (rc >= 0) return;
  if (rc != -1) violation("%s returned %d, neither >= 0 nor -1", call, rc);
  switch (errno) {
    case EBADF:
    case EINVAL:
    case EBUSY:
    case ESRCH:
    case EPERM:
    case EACCES:
    case ENOSPC:
    case ENOENT:
    case EOPNOTSUPP:
    case EAGAIN:
    case EINTR:
    case EFAULT:
      return;
    default:
      violation("%s failed with errno %d (%s), which the docs do not list", call, errno, strerror(errno));
  }
}

static void check_lib(const char *call, int rc) {
  if (rc != PFMLIB_SUCCESS && (rc > 0 || rc < PFMLIB_ERR_NOMEM))
    violation("%s returned %d, not PFMLIB_SUCCESS or a PFMLIB_ERR_* code", call, rc);
}

/* ---- a context's configuration, as its session's files show it ------------ */

static int session_dir(int fd, char *out, size_t size) {
  char link[64];
  ssize_t n;
  char *slash;

  snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  n = readlink(link, out, size - 1);
  if (n <= 0) return -1;
  out[n] = '\0';
  slash = strrchr(out, '/'); /* .../sessions/pfm.PID.N/msg */
  if (!slash || strcmp(slash, "/msg") != 0) return -1;
  *slash = '\0';
  return 0;
}

static void append_file(char *out, size_t size, const char *path, int drop_values) {
  char buf[8192], *line, *save = NULL;
  int fd = open(path, O_RDONLY);
  ssize_t n;

  if (fd < 0) return;
  n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = '\0';
  for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char kept[512] = "", *word, *wsave = NULL;
    int k = 0;

    /* a PMD's value, and what is left of its switch count, move
     * while the session counts: the rest is configuration */
    for (word = strtok_r(line, " ", &wsave); word; word = strtok_r(NULL, " ", &wsave), ++k) {
      if (drop_values && strncmp(line, "pmd", 3) == 0 && (k == 1 || strncmp(word, "switch_cnt=", 11) == 0)) continue;
      strncat(kept, word, sizeof(kept) - strlen(kept) - 2);
      strcat(kept, " ");
    }
    strncat(out, kept, size - strlen(out) - 2);
    strcat(out, "\n");
  }
}

/* flags, mode, and each set's switch and registers (sets 0..7 and 65535,
 * the ones the calls below name) */
static void snapshot(int fd, char *out, size_t size) {
  static const unsigned sets[] = {0, 1, 2, 3, 4, 5, 6, 7, 65535};
  char dir[PATH_MAX], path[PATH_MAX + 32];
  unsigned i;

  out[0] = '\0';
  if (session_dir(fd, dir, sizeof(dir)) < 0) return;
  snprintf(path, sizeof(path), "%s/flags", dir);
  append_file(out, size, path, 0);
  snprintf(path, sizeof(path), "%s/mode", dir);
  append_file(out, size, path, 0);
  for (i = 0; i < sizeof(sets) / sizeof(sets[0]); ++i) {
    snprintf(path, sizeof(path), "%s/sets/%u/switch", dir, sets[i]);
    if (access(path, F_OK) != 0) continue;
    snprintf(out + strlen(out), size - strlen(out), "set %u\n", sets[i]);
    append_file(out, size, path, 0);
    snprintf(path, sizeof(path), "%s/sets/%u/regs", dir, sets[i]);
    append_file(out, size, path, 1);
  }
}

/* ---- random arguments ------------------------------------------------------ */

static int any_fd(void) {
  static const int others[] = {-1, 0, 1, 2, 1000000, INT_MAX};
  int live = ctx_fd[pick(MAX_CTX)];

  if (live >= 0 && chance(75)) return live;
  if (stale_fd >= 0 && chance(30)) return stale_fd;
  return others[pick(sizeof(others) / sizeof(others[0]))];
}

static uint16_t reg_num(void) {
  static const uint16_t nums[] = {0, 0, 1, 1, 2, 3, 4, 7, 8, 16, 17, 18, 63, 64, 255, 256, 65535};

  return nums[pick(sizeof(nums) / sizeof(nums[0]))];
}

static uint16_t set_id(void) {
  static const uint16_t ids[] = {0, 0, 0, 1, 1, 2, 3, 7, 65535};

  return ids[pick(sizeof(ids) / sizeof(ids[0]))];
}

static uint64_t value(void) {
  static const uint64_t vals[] = {0,         1,     0x13003c,     0x1300c0,        0x53003c,          0x5300c0,
                                  0x13412e,  0x222, (uint64_t)-1, (uint64_t)-1000, (uint64_t)-100000, 1ULL << 47,
                                  1ULL << 63};

  return chance(80) ? vals[pick(sizeof(vals) / sizeof(vals[0]))] : next64();
}

static uint32_t flags32(const uint32_t *good, unsigned n) { return chance(85) ? good[pick(n)] : (uint32_t)next64(); }

/* count for a vector of n elements: mostly n, sometimes short, zero,
 * negative or past it with a NULL vector (the library must not read it) */
static int vec_count(int n, void **vec) {
  switch (pick(12)) {
    case 0:
      return 0;
    case 1:
      return n > 0 ? n - 1 : 0;
    case 2:
      return -1;
    case 3:
      *vec = NULL;
      return n;
    case 4:
      *vec = NULL;
      return INT_MAX;
    case 5:
      return INT_MIN;
    default:
      return n;
  }
}

/* one set and no register twice: then a refusal must change nothing */
static int one_write(const uint16_t *nums, const uint16_t *sets, int count) {
  int i, j;

  for (i = 0; i < count; ++i)
    for (j = 0; j < i; ++j)
      if (sets[i] != sets[j] || nums[i] == nums[j]) return 0;
  return 1;
}

/* ---- the calls --------------------------------------------------------------- */

static void call_write_regs(int pmds) {
  static const uint32_t pmc_flags[] = {0, 0, PFM_REGFL_NO_EMUL64};
  static const uint32_t pmd_flags[] = {0, 0, PFM_REGFL_OVFL_NOTIFY, PFM_REGFL_RANDOM,
                                       PFM_REGFL_OVFL_NOTIFY | PFM_REGFL_RANDOM};
  pfarg_pmc_t pmc[MAX_VEC];
  pfarg_pmd_t pmd[MAX_VEC];
  uint16_t nums[MAX_VEC], sets[MAX_VEC];
  char before[16384], after[16384];
  int fd = any_fd(), n = (int)pick(MAX_VEC + 1), i, count, rc, err;
  void *vec = pmds ? (void *)pmd : (void *)pmc;

  memset(pmc, 0, sizeof(pmc));
  memset(pmd, 0, sizeof(pmd));
  for (i = 0; i < n; ++i) {
    nums[i] = reg_num();
    sets[i] = chance(80) ? 0 : set_id();
    pmc[i].reg_num = pmd[i].reg_num = nums[i];
    pmc[i].reg_set = pmd[i].reg_set = sets[i];
    pmc[i].reg_flags = flags32(pmc_flags, 3);
    pmc[i].reg_value = value();
    pmd[i].reg_flags = flags32(pmd_flags, 5);
    pmd[i].reg_value = value();
    pmd[i].reg_long_reset = value();
    pmd[i].reg_short_reset = value();
    pmd[i].reg_ovfl_switch_cnt = chance(80) ? 0 : pick(4);
    pmd[i].reg_reset_pmds[0] = chance(80) ? 0 : next64() & 0xff;
    pmd[i].reg_random_mask = chance(80) ? 0 : next64();
    if (chance(5)) pmd[i].reg_reserved2[0] = 1;
  }
  count = vec_count(n, &vec);
  snapshot(fd, before, sizeof(before));
  note("pfm_write_%s(%d, %s, %d) of %d", pmds ? "pmds" : "pmcs", fd, vec ? "vec" : "NULL", count, n);
  rc = pmds ? pfm_write_pmds(fd, vec, count) : pfm_write_pmcs(fd, vec, count);
  err = errno;
  check_os(pmds ? "pfm_write_pmds" : "pfm_write_pmcs", rc);
  if (rc < 0 && (count <= 0 || count > n || one_write(nums, sets, count))) {
    snapshot(fd, after, sizeof(after));
    if (strcmp(before, after) != 0)
      violation("a refused pfm_write_%s (%s) changed the session:\nbefore:\n%safter:\n%s", pmds ? "pmds" : "pmcs",
                strerror(err), before, after);
  }
}

static void call_read_pmds(void) {
  pfarg_pmd_t pmd[MAX_VEC];
  int fd = any_fd(), n = (int)pick(MAX_VEC + 1), i, count, rc;
  void *vec = pmd;

  memset(pmd, 0, sizeof(pmd));
  for (i = 0; i < n; ++i) {
    pmd[i].reg_num = reg_num();
    pmd[i].reg_set = chance(80) ? 0 : set_id();
  }
  count = vec_count(n, &vec);
  note("pfm_read_pmds(%d, %s, %d) of %d", fd, vec ? "vec" : "NULL", count, n);
  rc = pfm_read_pmds(fd, vec, count);
  check_os("pfm_read_pmds", rc);
}

static void call_sets(int which) {
  static const uint32_t set_flags[] = {0, 0, PFM_SETFL_OVFL_SWITCH, PFM_SETFL_TIME_SWITCH};
  static const char *names[] = {"pfm_create_evtsets", "pfm_delete_evtsets", "pfm_getinfo_evtsets"};
  pfarg_setdesc_t d[4];
  pfarg_setinfo_t info[4];
  char before[16384], after[16384];
  int fd = any_fd(), n = (int)pick(5), i, count, rc, err;
  void *vec = which == 2 ? (void *)info : (void *)d;

  memset(d, 0, sizeof(d));
  memset(info, 0, sizeof(info));
  for (i = 0; i < n; ++i) {
    d[i].set_id = info[i].set_id = set_id();
    d[i].set_flags = flags32(set_flags, 4);
    d[i].set_timeout = chance(50) ? 0 : value() % 100000000;
  }
  count = vec_count(n, &vec);
  snapshot(fd, before, sizeof(before));
  note("%s(%d, %s, %d) of %d", names[which], fd, vec ? "vec" : "NULL", count, n);
  if (which == 0)
    rc = pfm_create_evtsets(fd, vec, count);
  else if (which == 1)
    rc = pfm_delete_evtsets(fd, vec, count);
  else
    rc = pfm_getinfo_evtsets(fd, vec, count);
  err = errno;
  check_os(names[which], rc);
  /* a vector of several sets is several mkdirs, as it was several
   * kernel steps: only a one-set refusal must leave everything alone */
  if (rc < 0 && (which == 2 || count <= 1 || count > n)) {
    snapshot(fd, after, sizeof(after));
    if (strcmp(before, after) != 0)
      violation("a refused %s (%s) changed the session:\nbefore:\n%safter:\n%s", names[which], strerror(err), before,
                after);
  }
}

static void call_create(void) {
  static const uint32_t ctx_flags[] = {0,
                                       0,
                                       0,
                                       PFM_FL_NOTIFY_BLOCK,
                                       PFM_FL_OVFL_NO_MSG,
                                       PFM_FL_SYSTEM_WIDE,
                                       PFM_FL_SYSTEM_WIDE | PFM_FL_NOTIFY_BLOCK,
                                       PFM_FL_SMPL_FMT};
  pfarg_ctx_t ctx;
  int slot = (int)pick(MAX_CTX), fd;
  char *fmt = chance(10) ? "default" : NULL;
  int null_ctx = chance(5);

  memset(&ctx, 0, sizeof(ctx));
  ctx.ctx_flags = flags32(ctx_flags, 8);
  if (chance(5)) ctx.ctx_reserved3[0] = next64();
  if (ctx_fd[slot] >= 0) {
    note("close(%d)", ctx_fd[slot]);
    if (close(ctx_fd[slot]) != 0) violation("close of context %d: %s", ctx_fd[slot], strerror(errno));
    stale_fd = ctx_fd[slot];
    ctx_fd[slot] = -1;
    ++calls_done;
  }
  note("pfm_create_context(%s flags 0x%x, %s)", null_ctx ? "NULL" : "ctx", ctx.ctx_flags, fmt ? fmt : "NULL");
  fd = pfm_create_context(null_ctx ? NULL : &ctx, fmt, NULL, 0);
  check_os("pfm_create_context", fd);
  if (fd >= 0) ctx_fd[slot] = fd;
}

static void call_load(void) {
  pfarg_load_t l;
  uint32_t pids[] = {(uint32_t)target, (uint32_t)target,        (uint32_t)getpid(), 1, 0,
                     999999999,        (uint32_t)PFM_NO_TARGET, (uint32_t)next64()};
  int fd = any_fd(), rc;

  memset(&l, 0, sizeof(l));
  l.load_pid = pids[pick(8)];
  l.load_set = chance(80) ? 0 : set_id();
  int null_arg = chance(5);

  note("pfm_load_context(%d, %s pid %u set %u)", fd, null_arg ? "NULL" : "arg", l.load_pid, l.load_set);
  rc = pfm_load_context(fd, null_arg ? NULL : &l);
  check_os("pfm_load_context", rc);
}

static void call_state(void) {
  pfarg_start_t s;
  int fd = any_fd(), rc;

  switch (pick(5)) {
    case 0:
      memset(&s, 0, sizeof(s));
      s.start_set = chance(70) ? 0 : set_id();
      rc = chance(30);
      note("pfm_start(%d, %s set %u)", fd, rc ? "NULL" : "arg", s.start_set);
      rc = pfm_start(fd, rc ? NULL : &s);
      check_os("pfm_start", rc);
      break;
    case 1:
      note("pfm_stop(%d)", fd);
      check_os("pfm_stop", pfm_stop(fd));
      break;
    case 2:
      note("pfm_restart(%d)", fd);
      check_os("pfm_restart", pfm_restart(fd));
      break;
    case 3:
      note("pfm_unload_context(%d)", fd);
      check_os("pfm_unload_context", pfm_unload_context(fd));
      break;
    default: {
      /* the descriptor as a file: reads of every size, without blocking */
      char buf[256];
      size_t sizes[] = {0, 1, 63, 64, 65, 256};
      size_t size = sizes[pick(6)];
      ssize_t n;

      /* only a live context's: another number may be any file now,
       * the library's own among them */
      fd = ctx_fd[pick(MAX_CTX)];
      note("read(%d, %zu) O_NONBLOCK", fd, size);
      if (fd >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK) == 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};

        n = read(fd, buf, size);
        check_os("read of a context", n < 0 ? -1 : 0);
        if (n > 0 && n % 64) violation("a read of context %d gave %zd bytes, not whole records", fd, n);
        if (poll(&p, 1, 0) < 0) violation("poll of context %d: %s", fd, strerror(errno));
      }
    }
  }
}

static void call_pfmlib(void) {
  static const char *names[] = {"UNHALTED_CORE_CYCLES",
                                "INSTRUCTION_RETIRED",
                                "INSTRUCTIONS_RETIRED:u",
                                "LLC_MISSES:k:u",
                                "TASK_CLOCK",
                                "",
                                ":",
                                "::::",
                                "BOGUS",
                                "UNHALTED_CORE_CYCLES:x",
                                "\xff\xfe",
                                "a very long name that no PMU has ever had in any table"};
  char buf[300];
  unsigned idx = 0, i;
  pfmlib_input_param_t in;
  pfmlib_output_param_t out;
  char *desc = NULL;

  switch (pick(4)) {
    case 0:
      note("pfm_find_event(%s)", names[idx = pick(12)]);
      check_lib("pfm_find_event", pfm_find_event(names[idx], &idx));
      break;
    case 1: {
      size_t len = pick(3) == 0 ? 0 : pick(sizeof(buf)) + 1;

      idx = chance(70) ? pick(12) : (unsigned)next64();
      note("pfm_get_event_name(%u, buf, %zu)", idx, len);
      check_lib("pfm_get_event_name", pfm_get_event_name(idx, buf, len));
      break;
    }
    case 2:
      idx = chance(70) ? pick(12) : (unsigned)next64();
      note("pfm_get_event_description(%u)", idx);
      check_lib("pfm_get_event_description", pfm_get_event_description(idx, &desc));
      free(desc);
      break;
    default:
      memset(&in, 0, sizeof(in));
      memset(&out, 0, sizeof(out));
      /* the count may pass the array: the library must refuse it unread */
      in.pfp_event_count = chance(85) ? pick(6) : (unsigned)next64();
      in.pfp_dfl_plm = chance(80) ? PFM_PLM3 : (unsigned)next64();
      for (i = 0; i < 6 && i < PFMLIB_MAX_PMCS; ++i) {
        in.pfp_events[i].event = chance(80) ? pick(12) : (unsigned)next64();
        in.pfp_events[i].num_masks = chance(90) ? 0 : (unsigned)next64();
      }
      note("pfm_dispatch_events(%u events)", in.pfp_event_count);
      check_lib("pfm_dispatch_events", pfm_dispatch_events(&in, NULL, &out, NULL));
      if (out.pfp_pmc_count > PFMLIB_MAX_PMCS || out.pfp_pmd_count > PFMLIB_MAX_PMDS)
        violation("pfm_dispatch_events: %u PMCs, %u PMDs", out.pfp_pmc_count, out.pfp_pmd_count);
  }
}

int main(int argc, char **argv) {
  unsigned long calls, i;
  const char *p;
  int rc;

  if (argc != 4) {
    fprintf(stderr, "usage: libpfm_fuzz SEED CALLS TARGET_PID\n");
    return 2;
  }
  seed_text = argv[1];
  rng_state = 0x9e3779b97f4a7c15ULL;
  for (p = seed_text; *p; ++p) rng_state = (rng_state ^ (unsigned char)*p) * 0x100000001b3ULL;
  rng_state |= 1;
  calls = strtoul(argv[2], NULL, 10);
  target = (pid_t)atoi(argv[3]);
  for (i = 0; i < MAX_CTX; ++i) ctx_fd[i] = -1;

  rc = pfm_initialize();
  if (rc != PFMLIB_SUCCESS) violation("pfm_initialize: %s", pfm_strerror(rc));
  for (calls_done = 0; calls_done < calls; ++calls_done) {
    switch (pick(20)) {
      case 0:
      case 1:
        call_create();
        break;
      case 2:
      case 3:
      case 4:
        call_write_regs(0);
        break;
      case 5:
      case 6:
      case 7:
        call_write_regs(1);
        break;
      case 8:
      case 9:
        call_read_pmds();
        break;
      case 10:
        call_sets(0);
        break;
      case 11:
        call_sets(1);
        break;
      case 12:
        call_sets(2);
        break;
      case 13:
      case 14:
        call_load();
        break;
      case 15:
      case 16:
      case 17:
        call_state();
        break;
      default:
        call_pfmlib();
    }
  }
  for (i = 0; i < MAX_CTX; ++i)
    if (ctx_fd[i] >= 0 && close(ctx_fd[i]) != 0)
      violation("close of context %d at the end: %s", ctx_fd[i], strerror(errno));
  return 0;
}
