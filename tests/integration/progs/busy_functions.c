// The sampled program of test_pfmstat_record.py on perf: burns about ten
// times more CPU in hot_spin() than in cold_spin(), both kept out of line
// and by name in .symtab, so that a profile of it must name hot_spin first.
//   busy_functions [MS]   hot_spin for MS ms of CPU time (default 400), cold_spin a tenth
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long long cpuNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The clock is read every 2^16 iterations: the loop's own time is the spin's.
__attribute__((noinline)) void hot_spin(long long ns) {
  long long end = cpuNs() + ns;
  do
    for (unsigned long i = 0; i < 65536; ++i) sink += i;
  while (cpuNs() < end);
}

__attribute__((noinline)) void cold_spin(long long ns) {
  long long end = cpuNs() + ns;
  do
    for (unsigned long i = 0; i < 65536; ++i) sink += i;
  while (cpuNs() < end);
}

int main(int argc, char** argv) {
  long long ms = argc > 1 ? atoll(argv[1]) : 400;
  hot_spin(ms * 1000000);
  cold_spin(ms * 100000);
  return 0;
}
