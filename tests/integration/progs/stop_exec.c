// stop_exec PROGRAM ARGS...: stops itself (SIGSTOP) and, once continued,
// execs PROGRAM. A test loads pfmfs on the stopped process and starts it
// before the SIGCONT, so that the counts cover PROGRAM from its exec to its
// exit, as `perf stat PROGRAM` (enable_on_exec) does.
//
// Between the SIGCONT and the exec this process runs only code it has run
// before: raise()'s return path and execv(), called once beforehand on a path
// that does not exist. So it takes no page fault in user mode there, and a
// count of user-mode page faults (PAGE_FAULTS:u) is PROGRAM's alone.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: stop_exec PROGRAM [ARGS...]\n");
    return 2;
  }
  char *const none[] = {"/nonexistent/pfmfs-stop-exec", NULL};
  execv(none[0], none);  // fails (ENOENT): execv's code is now mapped
  raise(SIGSTOP);
  execv(argv[1], argv + 1);
  dprintf(2, "stop_exec: %s: %s\n", argv[1], strerror(errno));
  return 127;
}
