// A target for the perf backend's integration tests (tests/integration/test_perf.py):
// a process whose page faults, sleeps and CPU time the test drives, one
// command at a time, so that pfmfs can be loaded on it before the part to
// measure and the counts compared with what the program saw itself.
//
//   perf_worker touch N         touch N fresh pages and exit (no warm-up, no output):
//                               the whole-program subject of `perf stat`
//   perf_worker [-c CPU]        the command loop below, pinned to CPU if given
//
// The command loop first runs every command once on its own scratch memory
// (the warm-up), so that the code, stack, stdio and pthread paths of a
// command have all been faulted in before the test loads pfmfs. After the
// warm-up a command faults exactly on the pages it is asked to touch. It then
// prints "ready pid=P tid=T" and reads commands from stdin, one line each,
// byte by byte (it never reads ahead of the command it runs), answering each
// with one line "ok key=value ...":
//   c             cpu_ns=      this thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
//   t N           touch N fresh pages (one byte written per page):
//                 minflt= (RUSAGE_THREAD minor faults during the touching) cpu=
//   s K US        sleep K times US microseconds: nvcsw= nivcsw= (RUSAGE_THREAD,
//                 voluntary and involuntary context switches during the sleeps)
//   b MS          burn MS ms of this thread's CPU time: start_ns= end_ns= (its
//                 CPU time before and after)
//   thread        start a second thread that waits for orders: tid=
//   tt N          the second thread touches N fresh pages: minflt= cpu=
//   tx N          the second thread touches N fresh pages and exits; joined: minflt=
//   q             exit 0
// Pages are never reused: every touch is a first write to an anonymous,
// MADV_NOHUGEPAGE page, one page fault each.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARENA_PAGES 65536u  // 256 MiB of address space; only touched pages cost memory

static size_t page_size;

struct arena {
  volatile char *base;
  size_t pages;
  size_t next;
};

static void die(const char *what) {
  dprintf(2, "perf_worker: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void arenaInit(struct arena *a, size_t pages) {
  size_t len = pages * page_size;
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) die("mmap");
  // No transparent huge page (of any size): one fault per base page.
  if (madvise(p, len, MADV_NOHUGEPAGE) != 0) die("madvise");
  a->base = p;
  a->pages = pages;
  a->next = 0;
}

static __attribute__((noinline)) void touch(struct arena *a, size_t n) {
  if (n > a->pages - a->next) {
    errno = ENOMEM;
    die("arena exhausted");
  }
  for (size_t i = 0; i < n; i++) {
    a->base[a->next * page_size] = 1;
    a->next++;
  }
}

static long threadMinflt(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) die("getrusage");
  return ru.ru_minflt;
}

static uint64_t threadCpuNs(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) die("clock_gettime");
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// ---- output: one write(2) per line, formatted on the stack (no stdio buffer)

static int quiet;  // during the warm-up: format, don't write

static void reply(const char *fmt, ...) {
  char line[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line) die("reply too long");
  if (quiet) return;
  for (int off = 0; off < n;) {
    ssize_t w = write(1, line + off, (size_t)(n - off));
    if (w < 0) {
      if (errno == EINTR) continue;
      die("write");
    }
    off += (int)w;
  }
}

// ---- the second thread: orders on one pipe, answers on another

struct order {
  long touch;  // pages to touch
  int exit;    // then exit
};

struct answer {
  long minflt;
  int cpu;
};

struct helper {
  pthread_t thread;
  int order_fd[2];
  int answer_fd[2];
  int tid_fd[2];
  struct arena *arena;
};

static void readAll(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len > 0) {
    ssize_t r = read(fd, p, len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("read");
    p += r;
    len -= (size_t)r;
  }
}

static void writeAll(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("write");
    p += w;
    len -= (size_t)w;
  }
}

static void *helperMain(void *arg) {
  struct helper *h = arg;
  pid_t tid = (pid_t)syscall(SYS_gettid);
  writeAll(h->tid_fd[1], &tid, sizeof tid);
  for (;;) {
    struct order o;
    readAll(h->order_fd[0], &o, sizeof o);
    long before = threadMinflt();
    touch(h->arena, (size_t)o.touch);
    struct answer a = {threadMinflt() - before, sched_getcpu()};
    writeAll(h->answer_fd[1], &a, sizeof a);
    if (o.exit) return NULL;
  }
}

static pid_t helperStart(struct helper *h, struct arena *a) {
  h->arena = a;
  if (pipe(h->order_fd) != 0 || pipe(h->answer_fd) != 0 || pipe(h->tid_fd) != 0) die("pipe");
  int err = pthread_create(&h->thread, NULL, helperMain, h);
  if (err != 0) {
    errno = err;
    die("pthread_create");
  }
  pid_t tid;
  readAll(h->tid_fd[0], &tid, sizeof tid);
  return tid;
}

static struct answer helperOrder(struct helper *h, long touch_pages, int exit_after) {
  struct order o = {touch_pages, exit_after};
  writeAll(h->order_fd[1], &o, sizeof o);
  struct answer a;
  readAll(h->answer_fd[0], &a, sizeof a);
  if (exit_after) {
    int err = pthread_join(h->thread, NULL);
    if (err != 0) {
      errno = err;
      die("pthread_join");
    }
    for (int i = 0; i < 2; i++) {
      close(h->order_fd[i]);
      close(h->answer_fd[i]);
      close(h->tid_fd[i]);
    }
  }
  return a;
}

// ---- commands

struct worker {
  struct arena *arena;
  struct helper helper;
  int helper_running;
};

static int command(struct worker *w, const char *line) {
  char name[16];
  long a = 0, b = 0;
  int n = sscanf(line, "%15s %ld %ld", name, &a, &b);
  if (n < 1) return -1;
  if (strcmp(name, "c") == 0) {
    reply("ok cpu_ns=%llu\n", (unsigned long long)threadCpuNs());
  } else if (strcmp(name, "t") == 0 && n == 2 && a >= 0) {
    long before = threadMinflt();
    touch(w->arena, (size_t)a);
    long after = threadMinflt();
    reply("ok minflt=%ld cpu=%d\n", after - before, sched_getcpu());
  } else if (strcmp(name, "s") == 0 && n == 3 && a >= 0 && b >= 0) {
    struct rusage r0, r1;
    if (getrusage(RUSAGE_THREAD, &r0) != 0) die("getrusage");
    for (long i = 0; i < a; i++) {
      struct timespec ts = {b / 1000000, (b % 1000000) * 1000};
      while (nanosleep(&ts, &ts) != 0) {
        if (errno != EINTR) die("nanosleep");
      }
    }
    if (getrusage(RUSAGE_THREAD, &r1) != 0) die("getrusage");
    reply("ok nvcsw=%ld nivcsw=%ld\n", r1.ru_nvcsw - r0.ru_nvcsw, r1.ru_nivcsw - r0.ru_nivcsw);
  } else if (strcmp(name, "b") == 0 && n == 2 && a >= 0) {
    uint64_t start = threadCpuNs(), end = start, goal = start + (uint64_t)a * 1000000u;
    do {
      for (volatile int i = 0; i < 1000; i++) {
      }
      end = threadCpuNs();
    } while (end < goal);
    reply("ok start_ns=%llu end_ns=%llu\n", (unsigned long long)start, (unsigned long long)end);
  } else if (strcmp(name, "thread") == 0 && n == 1 && !w->helper_running) {
    pid_t tid = helperStart(&w->helper, w->arena);
    w->helper_running = 1;
    reply("ok tid=%d\n", (int)tid);
  } else if ((strcmp(name, "tt") == 0 || strcmp(name, "tx") == 0) && n == 2 && a >= 0 && w->helper_running) {
    int exit_after = name[1] == 'x';
    struct answer ans = helperOrder(&w->helper, a, exit_after);
    if (exit_after) {
      w->helper_running = 0;
      reply("ok minflt=%ld\n", ans.minflt);
    } else {
      reply("ok minflt=%ld cpu=%d\n", ans.minflt, ans.cpu);
    }
  } else if (strcmp(name, "q") == 0 && n == 1) {
    exit(0);
  } else {
    return -1;
  }
  return 0;
}

// One line from stdin, a byte per read(2): never more than the command.
static int readLine(char *buf, size_t size) {
  size_t len = 0;
  for (;;) {
    char c;
    ssize_t r = read(0, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) die("read");
    if (r == 0) return len ? 0 : -1;  // EOF
    if (c == '\n') break;
    if (len + 1 < size) buf[len++] = c;
  }
  buf[len] = '\0';
  return 0;
}

// Runs every command once on scratch memory, output off: afterwards the code
// and stack of each are mapped, and a command's only page faults are its own
// touches.
static void warmUp(struct worker *w) {
  struct arena scratch;
  arenaInit(&scratch, 8);
  struct arena *real = w->arena;
  w->arena = &scratch;
  quiet = 1;
  static const char *const lines[] = {"c", "t 1", "s 1 1", "b 0", "thread", "tt 1", "tx 1", "thread", "tt 1", "tx 1"};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    if (command(w, lines[i]) != 0) die("warm-up");
  }
  quiet = 0;
  w->arena = real;
}

int main(int argc, char **argv) {
  page_size = (size_t)sysconf(_SC_PAGESIZE);
  if (argc == 3 && strcmp(argv[1], "touch") == 0) {
    size_t n = strtoul(argv[2], NULL, 10);
    struct arena a;
    arenaInit(&a, n ? n : 1);
    touch(&a, n);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "-c") == 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[2]), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) die("sched_setaffinity");
  } else if (argc != 1) {
    dprintf(2, "usage: perf_worker [-c CPU] | perf_worker touch N\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct arena arena;
  arenaInit(&arena, ARENA_PAGES);
  struct worker w = {.arena = &arena};
  warmUp(&w);
  reply("ready pid=%d tid=%d\n", (int)getpid(), (int)syscall(SYS_gettid));
  char line[128];
  while (readLine(line, sizeof line) == 0) {
    if (command(&w, line) != 0) reply("error %s\n", line);
  }
  return 0;
}
