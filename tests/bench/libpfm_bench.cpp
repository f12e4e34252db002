// What libpfm-compat (issue 5) adds to a FUSE round trip: pfm_read_pmds,
// pfm_write_pmds and pfm_stop + pfm_start against a bare round trip to
// floor_fs, the same files of the session read and written by hand, and
// pfm_read_pmds's fast path (issue 15) against both, all in one run:
// `libpfm_bench PFMFSD FLOOR_FS [--quick]` (meson test --benchmark). A
// second section (libpfm_bench_perf.cpp) sets the fast path on perf against
// a direct perf group read().
//
// Two contexts with the same PMDs on a pfmfsd with the manual sim clock,
// advanced by a known time first, so every read in every loop is checked for
// the exact count (rate per ns x ns): one made with PFMFS_FASTPATH=0, loaded
// on a parked thread, whose every call goes through the mount, and one
// loaded on this thread, whose reads take the fast path. The manual clock
// moves every loaded target alike. pfm_write_pmds writes the values the PMDs
// already hold, which keeps those checks exact. Exit status as fs_bench's:
// 1 when something does not work or a value is wrong, 77 without /dev/fuse
// or root (the manual clock is root's), 0 whatever the figures (a VM is
// noisy: figures are reported, never failed).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfmon/perfmon.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "bench_harness.h"
#include "libpfm_bench.h"

namespace libpfm_bench {

void closeContext(int fd, const std::string& session) {
  using namespace bench;
  ::close(fd);
  struct stat gone {};
  for (int waited = 0; ::stat(session.c_str(), &gone) == 0; waited += 10) {
    if (waited >= 5000) fail(fmt::format("{} still there 5 s after close()", session));
    sleepMs(10);
  }
  // The library now sees the closed descriptor (EBADF) and closes its own
  // files on the mount, which would otherwise keep it busy at unmount.
  pfarg_pmd_t after{};
  if (pfm_read_pmds(fd, &after, 1) != -1 || errno != EBADF)
    fail(fmt::format("pfm_read_pmds on the closed descriptor {}: want -1 with EBADF", fd));
}

}  // namespace libpfm_bench

namespace {

using namespace bench;

// Target time given to the contexts before the loops, and once more after
// them (the reads must follow it: nothing is cached).
constexpr std::uint64_t kAdvanceNs = 1'000'000;
constexpr std::uint64_t kLaterNs = 1000;

// PERFEVTSEL values (USR, INT, EN) of the sim events whose rates are exact.
struct Counter {
  std::uint64_t pmc;
  std::uint64_t per_ns;
};
constexpr std::array<Counter, 4> kCounters{{
    {0x51003c, 3},  // UNHALTED_CORE_CYCLES
    {0x5100c0, 2},  // INSTRUCTION_RETIRED
    {0x51003c, 3},
    {0x5100c0, 2},
}};
constexpr int kN = static_cast<int>(kCounters.size());
constexpr std::string_view kFloorText = "123456\n";
// The floor's entry and attribute timeouts: pfmfsd's, as in fs_bench.
constexpr std::string_view kFloorTimeout = "3600";

// A context with PMDs 0-3 counting, loaded on `target` and started.
struct SimContext {
  int fd = -1;
  std::string session;  // its directory in the mount
  std::string active;   // the start of its `state` while it counts
};

SimContext makeContext(const std::string& mount, bool fast, pid_t target) {
  // Read when the context is created, and only then.
  if (!fast) ::setenv("PFMFS_FASTPATH", "0", 1);
  pfarg_ctx_t ctx{};
  SimContext c;
  c.fd = pfm_create_context(&ctx, nullptr, nullptr, 0);
  const int create_errno = errno;
  ::unsetenv("PFMFS_FASTPATH");
  if (c.fd < 0) fail(fmt::format("pfm_create_context: {}", errnoText(create_errno)));
  const std::string msg = fdPath(c.fd);  // the descriptor is the session's msg file
  c.session = msg.substr(0, msg.rfind('/'));
  expectPrefix(c.session, mount + "/sessions/", fmt::format("the session of descriptor {}", c.fd));
  pfarg_pmc_t pmcs[kN]{};
  pfarg_pmd_t pmds[kN]{};
  for (int i = 0; i < kN; ++i) {
    pmcs[i].reg_num = pmds[i].reg_num = static_cast<std::uint16_t>(i);
    pmcs[i].reg_value = kCounters[static_cast<std::size_t>(i)].pmc;
  }
  expectCall(pfm_write_pmcs(c.fd, pmcs, kN), "pfm_write_pmcs");
  expectCall(pfm_write_pmds(c.fd, pmds, kN), "pfm_write_pmds");
  pfarg_load_t load{};
  load.load_pid = static_cast<std::uint32_t>(target);
  expectCall(pfm_load_context(c.fd, &load), "pfm_load_context");
  expectCall(pfm_start(c.fd, nullptr), "pfm_start");
  c.active = fmt::format("state=active mode=thread target={} set=0 ", target);
  return c;
}

// One timed operation and what its row compares it with.
struct Op {
  std::string what;
  std::function<void()> run;
  bool library = false;  // a libpfm call: also against the pmd pread
  int by_hand = -1;      // the op doing the same on the mount directly
  int requests = 1;      // FUSE requests it sends: one per write or read (counted with pfmfsd -d)
  int mount_path = -1;   // a fast-path read: the same read through the mount
};

// ---- the report --------------------------------------------------------------------
// ops[0] is the floor's pread, ops[1] the pmd pread.

void printTable(const std::vector<Op>& ops, const std::vector<Stats>& st) {
  auto ratio = [&](std::size_t k, int to) {
    return to >= 0 ? fmt::format("{:.3f}", st[k].median / st[static_cast<std::size_t>(to)].median) : "-";
  };
  fmt::print("\n{:<34} {:>10} {:>10} {:>8} {:>11} {:>6} {:>9} {:>7}\n", "what", "median ns", "p99 ns", "x floor",
             "x pmd pread", "reqs", "x by hand", "x mount");
  for (std::size_t k = 0; k < ops.size(); ++k)
    fmt::print("{:<34} {:>10.0f} {:>10.0f} {:>8.3f} {:>11} {:>6} {:>9} {:>7}\n", ops[k].what, st[k].median, st[k].p99,
               st[k].median / st[0].median, ops[k].library ? ratio(k, 1) : "-", ops[k].requests,
               ratio(k, ops[k].by_hand), ratio(k, ops[k].mount_path));
  fmt::print(
      "(reqs: the FUSE requests one call sends, as pfmfsd -d counts them: a long `regs` text costs the "
      "daemon more to parse, not another request; x by hand: against the same file read or written "
      "directly, the pmds pread, regs write or ctl pair before it; x mount: a fast-path read against "
      "the same pfm_read_pmds through the mount, whose 0 requests the perf section checks)\n");
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::string_view(argv[3]) != "--quick")) {
    fmt::print(stderr, "usage: {} PFMFSD FLOOR_FS [--quick]\n", argv[0]);
    return 2;
  }
  const Sizes z = argc == 4 ? Sizes{100, 2000} : Sizes{};
  if (::access("/dev/fuse", R_OK | W_OK) != 0) {
    fmt::print("libpfm_bench: SKIP: /dev/fuse: {}\n", errnoText(errno));
    return 77;
  }
  if (::geteuid() != 0) {
    fmt::print("libpfm_bench: SKIP: needs root (writes pmu/sim/advance)\n");
    return 77;
  }
  const std::string tmp = begin("libpfm_bench", "/tmp/pfmfs-libpfm-bench-XXXXXX");
  startWatchdog(400);

  const std::string floor_dir = tmp + "/floor", mount = tmp + "/pfmfs";
  for (const std::string& d : {floor_dir, mount})
    if (::mkdir(d.c_str(), 0700) != 0) fail(fmt::format("mkdir {}: {}", d, errnoText(errno)));
  const int floor_slot =
      spawn({argv[2], "-f", "-o", fmt::format("default_permissions,timeout={}", kFloorTimeout), floor_dir}, floor_dir,
            tmp + "/floor.log");
  const int sim_slot = spawn({argv[1], "-f", "--pmu=sim", "--sim-clock=manual", mount}, mount, tmp + "/pfmfsd.log");
  waitMounted(floor_slot, floor_dir + "/value");
  waitMounted(sim_slot, mount + "/version");
  expectPrefix(readFile(mount + "/pmu/info"), "backend=sim model=intel-arch-v2 ", mount + "/pmu/info");
  // Before the library's first call: it looks for its mount once per
  // process, which is why perf's daemon later takes this mount point.
  ::setenv("PFMFS_MOUNT", mount.c_str(), 1);
  fmt::print("libpfm_bench: {} against {}, {} iterations per figure after {} of warm-up\n", argv[1], argv[2],
             z.iterations, z.warmup);

  // ---- the two contexts, both started before the clock moves ----
  {
    ParkedThread parked;
    const SimContext slow = makeContext(mount, false, parked.tid());
    const SimContext fast = makeContext(mount, true, static_cast<pid_t>(::gettid()));
    const int fd = slow.fd, fast_fd = fast.fd;
    const int advance_fd = openOrFail(mount + "/pmu/sim/advance", O_WRONLY);
    writeFd(advance_fd, fmt::format("{}\n", kAdvanceNs), "pmu/sim/advance");
    std::uint64_t target_ns = kAdvanceNs;
    for (const SimContext* c : {&slow, &fast})
      expectPrefix(readFile(c->session + "/state"), c->active, c->session + "/state");

    // Every read must fill in the exact count; stale values are overwritten first.
    auto expected = [&](int i) { return kCounters[static_cast<std::size_t>(i)].per_ns * target_ns; };
    auto readAndCheck = [&](int ctx_fd, int count, const char* what) {
      pfarg_pmd_t got[kN]{};
      for (int i = 0; i < count; ++i) {
        got[i].reg_num = static_cast<std::uint16_t>(i);
        got[i].reg_value = ~std::uint64_t{0};
      }
      if (pfm_read_pmds(ctx_fd, got, count) != 0) fail(fmt::format("{}: {}", what, errnoText(errno)));
      for (int i = 0; i < count; ++i)
        if (got[i].reg_value != expected(i))
          fail(fmt::format("{}: pmd{} = {}, want {} ({} per ns x {} ns)", what, i, got[i].reg_value, expected(i),
                           kCounters[static_cast<std::size_t>(i)].per_ns, target_ns));
    };
    readAndCheck(fd, kN, "pfm_read_pmds before the loops");
    readAndCheck(fast_fd, kN, "pfm_read_pmds (fast path) before the loops");

    const std::string session = slow.session, floor_value = floor_dir + "/value", pmd0 = session + "/sets/0/pmd0";
    const std::string pmds_path = session + "/sets/0/pmds", regs_path = session + "/sets/0/regs";
    const std::string ctl_path = session + "/ctl";
    const int floor_fd = openOrFail(floor_value, O_RDWR);
    const int pmd_fd = openOrFail(pmd0, O_RDONLY);
    const int pmds_fd = openOrFail(pmds_path, O_RDONLY);
    const int regs_fd = openOrFail(regs_path, O_WRONLY);
    const int ctl_fd = openOrFail(ctl_path, O_WRONLY);
    // The writes put back the values the PMDs hold, which keeps every read
    // exact: pfm_write_pmds (every attribute), perfmon3's value-only pfm_write
    // PFM_RW_PMD, and the `regs` text of each by hand.
    pfarg_pmd_t pmds[kN]{};
    pfarg_pmr_t pmrs[kN]{};
    std::string regs_text, values_text;
    std::vector<std::string> pmds_lines;
    for (int i = 0; i < kN; ++i) {
      pmds[i].reg_num = pmrs[i].reg_num = static_cast<std::uint16_t>(i);
      pmds[i].reg_value = pmrs[i].reg_value = expected(i);
      values_text += fmt::format("pmd{} {}\n", i, expected(i));
      regs_text += fmt::format(
          "pmd{} {} long_reset=0 short_reset=0 switch_cnt=0 reset_pmds=0x0 smpl_pmds=0x0 "
          "random_mask=0x0 eventid=0 notify=0 random=0\n",
          i, expected(i));
      pmds_lines.push_back(fmt::format("pmd={} value={} ", i, expected(i)));
    }
    const std::string pmd0_text = fmt::format("{}\n", expected(0));

    char buf[4096];
    auto pmdsOnce = [&] {
      const ssize_t n = ::pread(pmds_fd, buf, sizeof buf, 0);
      if (n < 0) fail(fmt::format("read {}: {}", pmds_path, errnoText(errno)));
      const std::string_view text(buf, static_cast<std::size_t>(n));
      for (const auto& line : pmds_lines)
        if (text.find(line) == std::string_view::npos)
          fail(fmt::format("{}: no \"{}\" in \"{}\"", pmds_path, line, text));
    };
    const std::vector<Op> ops{
        {"floor pread (1 FUSE round trip)",
         [&] { expectBytes(buf, ::pread(floor_fd, buf, sizeof buf, 0), kFloorText, floor_value); }},
        {"pfmfs pread sets/0/pmd0", [&] { expectBytes(buf, ::pread(pmd_fd, buf, sizeof buf, 0), pmd0_text, pmd0); }},
        {"pfmfs pread sets/0/pmds (4 PMDs)", pmdsOnce},
        {"pfm_read_pmds, 1 PMD", [&] { readAndCheck(fd, 1, "pfm_read_pmds of 1 PMD"); }, true, 2},
        {"pfm_read_pmds, 4 PMDs", [&] { readAndCheck(fd, 4, "pfm_read_pmds of 4 PMDs"); }, true, 2},
        {"pfm_read_pmds fast path, 1 PMD", [&] { readAndCheck(fast_fd, 1, "pfm_read_pmds (fast path) of 1 PMD"); },
         true, 1, 0, 3},
        {"pfm_read_pmds fast path, 4 PMDs", [&] { readAndCheck(fast_fd, 4, "pfm_read_pmds (fast path) of 4 PMDs"); },
         true, 2, 0, 4},
        {"floor write", [&] { writeFd(floor_fd, "1\n", floor_value); }},
        {"pfmfs write sets/0/regs, 4 PMDs", [&] { writeFd(regs_fd, regs_text, regs_path); }},
        {"pfm_write_pmds, 4 PMDs", [&] { expectCall(pfm_write_pmds(fd, pmds, kN), "pfm_write_pmds of 4 PMDs"); }, true,
         8},
        {"pfmfs write sets/0/regs, values", [&] { writeFd(regs_fd, values_text, regs_path); }},
        {"pfm_write PFM_RW_PMD, 4 PMDs",
         [&] { expectCall(pfm_write(fd, 0, PFM_RW_PMD, pmrs, sizeof pmrs), "pfm_write PFM_RW_PMD of 4 PMDs"); }, true,
         10},
        {"floor write pair",
         [&] {
           writeFd(floor_fd, "1\n", floor_value);
           writeFd(floor_fd, "2\n", floor_value);
         },
         false, -1, 2},
        {"pfmfs write ctl stop + start",
         [&] {
           writeFd(ctl_fd, "stop\n", ctl_path);
           writeFd(ctl_fd, "start\n", ctl_path);
         },
         false, -1, 2},
        {"pfm_stop + pfm_start",
         [&] {
           expectCall(pfm_stop(fd), "pfm_stop");
           expectCall(pfm_start(fd, nullptr), "pfm_start");
         },
         true, 13, 2},
    };
    std::vector<std::function<void()>> runs;
    for (const Op& op : ops) runs.push_back(op.run);
    const std::vector<Stats> st = measureAll(z, runs);

    // Still active, and the reads follow the clock: nothing was cached.
    for (const SimContext* c : {&slow, &fast})
      expectPrefix(readFile(c->session + "/state"), c->active, c->session + "/state");
    writeFd(advance_fd, fmt::format("{}\n", kLaterNs), "pmu/sim/advance");
    target_ns += kLaterNs;
    readAndCheck(fd, 4, "pfm_read_pmds after a further advance");
    readAndCheck(fast_fd, 4, "pfm_read_pmds (fast path) after a further advance");
    expectBytes(buf, ::pread(pmd_fd, buf, sizeof buf, 0), fmt::format("{}\n", expected(0)), pmd0);

    for (int f : {advance_fd, floor_fd, pmd_fd, pmds_fd, regs_fd, ctl_fd}) ::close(f);
    for (const SimContext* c : {&slow, &fast}) libpfm_bench::closeContext(c->fd, c->session);

    printTable(ops, st);
    std::fflush(stdout);
  }

  stopDaemon(sim_slot);
  stopDaemon(floor_slot);
  libpfm_bench::perfSection(z, argv[1], mount, tmp);
  cleanupAll();
  return 0;
}
