// The sampled program of test_pfmstat_record.py's golden profile on the sim:
// its functions (hot_text.S) cover the sim's made-up ips, 0x401000..0x405000,
// at addresses this program fixes (non-PIE, the section placed by the link:
// meson.build). It says `ready`, waits for a line on stdin (the test moves
// the sim's clock meanwhile) and exits.
#include <stdio.h>

int main(void) {
  char line[64];
  puts("ready");
  fflush(stdout);
  return fgets(line, sizeof line, stdin) ? 0 : 1;
}
