// pfmfsd's command line: the defaults, every option in both spellings, and a
// table of bad command lines, each refused with EINVAL and a reason naming
// what is wrong (pfmfsd prints it and exits 2).
#include "fs/daemon_options.h"

#include "pmu/backend_registry.h"
#include "pmu/perf/perf_backend.h"
#include "pmu/sim/sim_backend.h"

#include <grp.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace pfmfs::fs {
namespace {

// argv with a program name in front, as main() gets it.
Result<DaemonOptions> parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"pfmfsd"};
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);
  return parseDaemonOptions(static_cast<int>(argv.size() - 1), argv.data());
}

DaemonOptions parseOk(const std::vector<std::string>& args) {
  auto r = parse(args);
  EXPECT_TRUE(r.ok()) << r.error().reason;
  return r.ok() ? *r : DaemonOptions{};
}

// What the backends make of the options given to them.
pmu::sim::SimOptions sim(const DaemonOptions& o) { return pmu::sim::simOptions(o.backend_options); }
std::optional<pmu::perf::Model> perfModel(const DaemonOptions& o) {
  return pmu::perf::perfOptions(o.backend_options).model;
}
std::string simEventsPath(const DaemonOptions& o) {
  return std::string(pmu::textOr(o.backend_options, "sim-events", ""));
}
// A --sim-* option was given: --pmu=auto means the sim.
bool simOptions(const DaemonOptions& o) { return pmu::backendChosenBy(o.backend_options) == &pmu::sim::backendEntry(); }

std::string cwd() {
  char buf[PATH_MAX];
  EXPECT_NE(::getcwd(buf, sizeof buf), nullptr);
  return buf;
}

TEST(DaemonOptions, Defaults) {
  DaemonOptions o = parseOk({});
  EXPECT_EQ(o.mountpoint, "/run/pfmfs");
  EXPECT_FALSE(o.foreground);
  EXPECT_FALSE(o.debug);
  EXPECT_TRUE(o.fuse_options.empty());
  EXPECT_EQ(o.pmu, "auto");
  EXPECT_EQ(perfModel(o), std::nullopt);
  EXPECT_EQ(sim(o).clock, pmu::ClockKind::Real);
  EXPECT_EQ(sim(o).shape.general_counters, 4u);
  EXPECT_EQ(sim(o).shape.width, 48u);
  EXPECT_TRUE(sim(o).events.empty());
  EXPECT_EQ(simEventsPath(o), "");
  EXPECT_EQ(sim(o).skid, 0u);
  EXPECT_EQ(o.engine.max_sessions_per_user, 64u);
  EXPECT_EQ(o.engine.max_sets, 64u);
  EXPECT_EQ(o.engine.max_messages, 64u);
  EXPECT_EQ(o.engine.max_smpl_bytes_per_user, 67'108'864u);  // 64 MiB
  EXPECT_EQ(o.engine.tick_ns, 1'000'000u);
  EXPECT_FALSE(o.allow_kernel);
  EXPECT_FALSE(o.system_group.has_value());
  EXPECT_FALSE(o.help);
  EXPECT_FALSE(o.version);
}

// The perf backend, with its register model forced either way.
TEST(DaemonOptions, PerfBackend) {
  EXPECT_EQ(parseOk({"--pmu=perf"}).pmu, "perf");
  EXPECT_EQ(perfModel(parseOk({"--pmu", "perf", "--perf-model=sw"})), pmu::perf::Model::Software);
  EXPECT_EQ(perfModel(parseOk({"--perf-model", "x86"})), pmu::perf::Model::X86);
  EXPECT_EQ(perfModel(parseOk({"--perf-model=auto"})), std::nullopt);
  // A --sim-* option says which backend auto means, and contradicts perf.
  EXPECT_FALSE(simOptions(parseOk({"--pmu=perf"})));
  EXPECT_TRUE(simOptions(parseOk({"--sim-clock=manual"})));
  EXPECT_TRUE(simOptions(parseOk({"--sim-width", "32"})));
  EXPECT_TRUE(simOptions(parseOk({"--pmu=sim", "--sim-counters=2"})));
  EXPECT_FALSE(simOptions(parseOk({"--tick=5000"})));
}

// The x86 backend: MSRs through the helper module; the sim's options
// contradict it as they do perf.
TEST(DaemonOptions, X86Backend) {
  EXPECT_EQ(parseOk({"--pmu=x86"}).pmu, "x86");
  EXPECT_EQ(parseOk({"--pmu", "x86", "--tick=5000"}).pmu, "x86");
  auto bad = parseDaemonOptions(3, std::vector<const char*>{"pfmfsd", "--pmu=x86", "--sim-clock=manual"}.data());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, -EINVAL);
  EXPECT_NE(bad.error().reason.find("not with --pmu=x86"), std::string::npos) << bad.error().reason;
}

// The command line the tests run the daemon with.
TEST(DaemonOptions, TestCommandLine) {
  DaemonOptions o = parseOk({"-f", "--pmu=sim", "--sim-clock=manual", "-o", "allow_other", "/tmp/pfmfs-mnt"});
  EXPECT_TRUE(o.foreground);
  EXPECT_FALSE(o.debug);
  EXPECT_EQ(o.pmu, "sim");
  EXPECT_EQ(sim(o).clock, pmu::ClockKind::Manual);
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"allow_other"});
  EXPECT_EQ(o.mountpoint, "/tmp/pfmfs-mnt");
}

// --sim-skid=N: a --sim-* option like the others (auto means the sim).
TEST(DaemonOptions, SimSkid) {
  DaemonOptions o = parseOk({"--sim-skid=10"});
  EXPECT_EQ(sim(o).skid, 10u);
  EXPECT_TRUE(simOptions(o));
  EXPECT_EQ(o.pmu, "auto");
  EXPECT_EQ(sim(parseOk({"--sim-skid", "0x20", "--pmu=sim"})).skid, 32u);
  EXPECT_EQ(sim(parseOk({"--sim-skid=32767"})).skid, 32767u);
  o = parseOk({"--sim-skid=0"});
  EXPECT_EQ(sim(o).skid, 0u);
  EXPECT_TRUE(simOptions(o));
}

TEST(DaemonOptions, EveryOptionWithEquals) {
  DaemonOptions o =
      parseOk({"--pmu=sim", "--sim-clock=manual", "--sim-width=32", "--sim-counters=8",
               "--sim-events=/etc/pfmfs/events", "--tick=2000", "--max-sessions-per-user=3", "--max-sets=5",
               "--max-messages=7", "--max-smpl-bytes-per-user=8192", "--max-cgroup-events-per-user=11",
               "--fastpath-deadline=9", "--allow-kernel", "--system-group=0", "--help", "--version", "/mnt"});
  EXPECT_EQ(o.pmu, "sim");
  EXPECT_EQ(sim(o).clock, pmu::ClockKind::Manual);
  EXPECT_EQ(sim(o).shape.width, 32u);
  EXPECT_EQ(sim(o).shape.general_counters, 8u);
  EXPECT_EQ(simEventsPath(o), "/etc/pfmfs/events");
  EXPECT_EQ(o.engine.tick_ns, 2000u);
  EXPECT_EQ(o.engine.max_sessions_per_user, 3u);
  EXPECT_EQ(o.engine.max_sets, 5u);
  EXPECT_EQ(o.engine.max_messages, 7u);
  EXPECT_EQ(o.engine.max_smpl_bytes_per_user, 8192u);
  EXPECT_EQ(o.engine.max_cgroup_events_per_user, 11u);
  EXPECT_EQ(o.fastpath_deadline_ms, 9u);
  EXPECT_TRUE(o.allow_kernel);
  ASSERT_TRUE(o.system_group.has_value());
  EXPECT_EQ(*o.system_group, 0u);
  EXPECT_TRUE(o.help);
  EXPECT_TRUE(o.version);
  EXPECT_EQ(o.mountpoint, "/mnt");
}

TEST(DaemonOptions, EveryOptionWithSeparateValue) {
  DaemonOptions o = parseOk({"--pmu",
                             "auto",
                             "--sim-clock",
                             "real",
                             "--sim-width",
                             "64",
                             "--sim-counters",
                             "1",
                             "--sim-events",
                             "events.txt",
                             "--tick",
                             "1000",
                             "--max-sessions-per-user",
                             "1",
                             "--max-sets",
                             "65536",
                             "--max-messages",
                             "4294967295",
                             "--max-smpl-bytes-per-user",
                             "18446744073709551615",
                             "--fastpath-deadline",
                             "60000",
                             "--system-group",
                             "4321"});
  EXPECT_EQ(o.pmu, "auto");
  EXPECT_EQ(sim(o).clock, pmu::ClockKind::Real);
  EXPECT_EQ(sim(o).shape.width, 64u);
  EXPECT_EQ(sim(o).shape.general_counters, 1u);
  EXPECT_EQ(simEventsPath(o), cwd() + "/events.txt");  // absolute: still valid after daemonizing
  EXPECT_EQ(o.engine.tick_ns, 1000u);
  EXPECT_EQ(o.engine.max_sessions_per_user, 1u);
  EXPECT_EQ(o.engine.max_sets, 65536u);
  EXPECT_EQ(o.engine.max_messages, 4294967295u);
  EXPECT_EQ(o.engine.max_smpl_bytes_per_user, 18446744073709551615u);
  EXPECT_EQ(o.fastpath_deadline_ms, 60000u);
  ASSERT_TRUE(o.system_group.has_value());
  EXPECT_EQ(*o.system_group, 4321u);  // a number needs no group entry
  EXPECT_EQ(o.mountpoint, "/run/pfmfs");
}

TEST(DaemonOptions, RangeEdgesAndHexValues) {
  EXPECT_EQ(sim(parseOk({"--sim-width=16"})).shape.width, 16u);
  EXPECT_EQ(sim(parseOk({"--sim-width=0x40"})).shape.width, 64u);
  EXPECT_EQ(sim(parseOk({"--sim-counters=8"})).shape.general_counters, 8u);
  EXPECT_EQ(parseOk({"--tick=18446744073709551615"}).engine.tick_ns, 18446744073709551615u);
  EXPECT_EQ(parseOk({"--max-sets=1"}).engine.max_sets, 1u);
  EXPECT_EQ(parseOk({"--fastpath-deadline=1"}).fastpath_deadline_ms, 1u);
  EXPECT_EQ(parseOk({"--max-smpl-bytes-per-user=1"}).engine.max_smpl_bytes_per_user, 1u);
  EXPECT_EQ(parseOk({"--max-smpl-bytes-per-user=0x100000"}).engine.max_smpl_bytes_per_user, 1u << 20);
  EXPECT_EQ(parseOk({}).fastpath_deadline_ms, 250u);
}

TEST(DaemonOptions, SystemGroupByName) {
  // Whatever the host calls gid 0 ("root" on Debian), the name finds it.
  group* g = ::getgrgid(0);
  ASSERT_NE(g, nullptr);
  std::string name = g->gr_name;
  DaemonOptions o = parseOk({"--system-group=" + name});
  ASSERT_TRUE(o.system_group.has_value());
  EXPECT_EQ(*o.system_group, 0u);
  o = parseOk({"--system-group", name});
  ASSERT_TRUE(o.system_group.has_value());
  EXPECT_EQ(*o.system_group, 0u);
}

TEST(DaemonOptions, ShortOptions) {
  DaemonOptions o = parseOk({"-d"});
  EXPECT_TRUE(o.debug);
  EXPECT_TRUE(o.foreground);  // -d implies -f
  o = parseOk({"-f"});
  EXPECT_TRUE(o.foreground);
  EXPECT_FALSE(o.debug);
  o = parseOk({"-fd"});
  EXPECT_TRUE(o.foreground);
  EXPECT_TRUE(o.debug);
  o = parseOk({"-h"});
  EXPECT_TRUE(o.help);
  // -o: attached or separate, repeated, comma lists kept whole.
  o = parseOk({"-oallow_other", "-o", "ro,default_permissions", "-fo", "fsname=pfmfs"});
  EXPECT_EQ(o.fuse_options, (std::vector<std::string>{"allow_other", "ro,default_permissions", "fsname=pfmfs"}));
  EXPECT_TRUE(o.foreground);
}

TEST(DaemonOptions, MountPointMadeAbsolute) {
  EXPECT_EQ(parseOk({"mnt"}).mountpoint, cwd() + "/mnt");
  EXPECT_EQ(parseOk({"./mnt/"}).mountpoint, cwd() + "/mnt");
  EXPECT_EQ(parseOk({"a/./b//c"}).mountpoint, cwd() + "/a/b/c");
  EXPECT_EQ(parseOk({"."}).mountpoint, cwd() == "/" ? "/" : cwd());
  EXPECT_EQ(parseOk({"//tmp//x/"}).mountpoint, "/tmp/x");
  EXPECT_EQ(parseOk({"/"}).mountpoint, "/");
  EXPECT_EQ(parseOk({"/a/../b"}).mountpoint, "/a/../b");  // ".." is left to the kernel (symlinks)
  // Options may come after the mount point; "--" ends the options.
  DaemonOptions o = parseOk({"/mnt", "-f"});
  EXPECT_EQ(o.mountpoint, "/mnt");
  EXPECT_TRUE(o.foreground);
  EXPECT_EQ(parseOk({"--", "-weird"}).mountpoint, cwd() + "/-weird");
  EXPECT_EQ(parseOk({"-"}).mountpoint, cwd() + "/-");
}

// mount(8) -> mount.fuse3 -> `pfmfsd SOURCE MOUNTPOINT -o OPTS`: the source
// comes first and is ignored; two positionals at most.
TEST(DaemonOptions, SourceBeforeTheMountPoint) {
  DaemonOptions o = parseOk({"pfmfs", "/run/pfmfs"});
  EXPECT_EQ(o.source, "pfmfs");
  EXPECT_EQ(o.mountpoint, "/run/pfmfs");
  o = parseOk({"pfmfs", "mnt", "-f"});
  EXPECT_EQ(o.source, "pfmfs");
  EXPECT_EQ(o.mountpoint, cwd() + "/mnt");
  EXPECT_EQ(parseOk({"/tmp/a", "/tmp/b"}).mountpoint, "/tmp/b");  // whatever the source says
  EXPECT_EQ(parseOk({"/tmp/b"}).source, "");
}

// The exact command lines mount.fuse3 (libfuse 3.14) runs under util-linux
// 2.38's mount(8): `rw` first, `dev,suid` last, the fstab line's options
// between.
TEST(DaemonOptions, WhatMountFuse3Runs) {
  // mount -t fuse.pfmfsd pfmfs /run/pfmfs -o allow_other,pmu=sim,tick=1000000
  DaemonOptions o = parseOk({"pfmfs", "/run/pfmfs", "-o", "rw,allow_other,pmu=sim,tick=1000000,dev,suid"});
  EXPECT_EQ(o.source, "pfmfs");
  EXPECT_EQ(o.mountpoint, "/run/pfmfs");
  EXPECT_EQ(o.pmu, "sim");
  EXPECT_EQ(o.engine.tick_ns, 1'000'000u);
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"rw,allow_other,dev,suid"});
  EXPECT_TRUE(o.ignored_mount_options.empty());
  EXPECT_FALSE(o.foreground);  // daemonizes once mounted: what mount(8) waits for
  // fstab: pfmfs /run/pfmfs fuse.pfmfsd defaults,nofail,_netdev,x-systemd.requires=x,relatime,allow_other 0 0
  // (mount.fuse3 drops nofail and _netdev, libmount x-*; pfmfsd by hand gets them all)
  o = parseOk(
      {"pfmfs", "/run/pfmfs", "-o",
       "rw,defaults,nofail,_netdev,x-systemd.requires=x,relatime,noatime,allow_other,nouser,auto,exec,dev,suid"});
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"rw,noatime,allow_other,exec,dev,suid"});
  EXPECT_EQ(o.ignored_mount_options, (std::vector<std::string>{"defaults", "nofail", "_netdev", "x-systemd.requires=x",
                                                               "relatime", "nouser", "auto"}));
  // user/users/owner make mount(8) add noexec,nosuid,nodev: libfuse's.
  o = parseOk({"pfmfs", "/mnt", "-o", "rw,noexec,nosuid,nodev,uhelper=x,helper=y,comment=z,X-mount.mkdir"});
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"rw,noexec,nosuid,nodev"});
  EXPECT_EQ(o.ignored_mount_options.size(), 4u);
  // Only mount(8)'s options: nothing left for libfuse from that -o.
  EXPECT_TRUE(parseOk({"-o", "defaults,nofail"}).fuse_options.empty());
}

// Every long option but --help and --version inside -o, '_' or '-' between
// words; pfmfsd takes them, libfuse never sees them.
TEST(DaemonOptions, LongOptionsInsideDashO) {
  DaemonOptions o = parseOk({"-o",
                             "pmu=sim,sim_clock=manual,sim-width=32,sim_counters=8,sim_events=/etc/pfmfs/events,"
                             "sim_skid=3,tick=2000,max_sessions_per_user=3,max-sets=5,max_messages=7,allow_kernel,"
                             "system_group=0,max_smpl_bytes_per_user=4096"});
  EXPECT_EQ(o.pmu, "sim");
  EXPECT_EQ(sim(o).clock, pmu::ClockKind::Manual);
  EXPECT_EQ(sim(o).shape.width, 32u);
  EXPECT_EQ(sim(o).shape.general_counters, 8u);
  EXPECT_EQ(simEventsPath(o), "/etc/pfmfs/events");
  EXPECT_EQ(sim(o).skid, 3u);
  EXPECT_TRUE(simOptions(o));
  EXPECT_EQ(o.engine.tick_ns, 2000u);
  EXPECT_EQ(o.engine.max_sessions_per_user, 3u);
  EXPECT_EQ(o.engine.max_sets, 5u);
  EXPECT_EQ(o.engine.max_messages, 7u);
  EXPECT_EQ(o.engine.max_smpl_bytes_per_user, 4096u);
  EXPECT_TRUE(o.allow_kernel);
  ASSERT_TRUE(o.system_group.has_value());
  EXPECT_EQ(*o.system_group, 0u);
  EXPECT_TRUE(o.fuse_options.empty());
  o = parseOk({"-o", "allow-kernel,perf_model=sw,pmu=perf", "-o", "allow_other"});
  EXPECT_TRUE(o.allow_kernel);
  EXPECT_EQ(o.pmu, "perf");
  EXPECT_EQ(perfModel(o), pmu::perf::Model::Software);
  EXPECT_EQ(o.fuse_options, std::vector<std::string>{"allow_other"});
  // The later of -o and --opt wins, as between two --opt.
  EXPECT_EQ(parseOk({"--pmu=perf", "-o", "pmu=sim"}).pmu, "sim");
  EXPECT_EQ(parseOk({"-o", "pmu=sim", "--pmu=perf"}).pmu, "perf");
  // A value is taken as written but for libfuse's escapes; relative files are made absolute.
  EXPECT_EQ(simEventsPath(parseOk({"-o", "sim_events=ev\\,1.txt,allow_other"})), cwd() + "/ev,1.txt");
  // libfuse's escapes stay for libfuse.
  EXPECT_EQ(parseOk({"-o", "fsname=a\\,b,allow_other"}).fuse_options,
            std::vector<std::string>{"fsname=a\\,b,allow_other"});
  // Empty options are nothing.
  EXPECT_EQ(parseOk({"-o", ",allow_other,,"}).fuse_options, std::vector<std::string>{"allow_other"});
  // Not pfmfsd's, not mount(8)'s: libfuse's to refuse (pfmfsd: bad FUSE options ..., exit 2).
  EXPECT_EQ(parseOk({"-o", "bogus,help,version"}).fuse_options, std::vector<std::string>{"bogus,help,version"});
  EXPECT_FALSE(parseOk({"-o", "help"}).help);
}

struct BadRow {
  std::vector<std::string> args;
  std::string reason_has;  // the reason names the option or the problem
};

void PrintTo(const BadRow& r, std::ostream* os) {
  for (const auto& a : r.args) *os << "'" << a << "' ";
}

class BadCommandLine : public ::testing::TestWithParam<BadRow> {};

TEST_P(BadCommandLine, RefusedWithEinval) {
  const BadRow& row = GetParam();
  auto r = parse(row.args);
  ASSERT_FALSE(r.ok()) << "accepted";
  EXPECT_EQ(r.code(), -EINVAL);
  EXPECT_NE(r.error().reason.find(row.reason_has), std::string::npos) << r.error().reason;
  EXPECT_EQ(r.error().reason.find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(
    Rows, BadCommandLine,
    ::testing::Values(
        // Unknown options.
        BadRow{{"--foo"}, "unknown option '--foo'"}, BadRow{{"--foo=1"}, "unknown option '--foo'"},
        BadRow{{"-x"}, "unknown option '-x'"}, BadRow{{"-fx"}, "unknown option '-x'"},
        BadRow{{"--PMU=sim"}, "unknown option '--PMU'"}, BadRow{{"--sim"}, "unknown option '--sim'"},
        BadRow{{"--allow"}, "unknown option '--allow'"}, BadRow{{"---pmu=sim"}, "unknown option"},
        BadRow{{"--=1"}, "unknown option"},
        // Missing values.
        BadRow{{"--pmu"}, "--pmu needs a value"}, BadRow{{"--sim-clock"}, "--sim-clock needs a value"},
        BadRow{{"--sim-width"}, "--sim-width needs a value"}, BadRow{{"--sim-counters"}, "--sim-counters"},
        BadRow{{"--sim-events"}, "--sim-events"}, BadRow{{"--tick"}, "--tick"},
        BadRow{{"--max-sessions-per-user"}, "--max-sessions-per-user"}, BadRow{{"--max-sets"}, "--max-sets"},
        BadRow{{"--max-messages"}, "--max-messages"}, BadRow{{"--system-group"}, "--system-group"},
        BadRow{{"--max-smpl-bytes-per-user"}, "--max-smpl-bytes-per-user needs a value"},
        BadRow{{"--max-smpl-bytes-per-user="}, "--max-smpl-bytes-per-user"}, BadRow{{"-o"}, "-o needs mount options"},
        BadRow{{"-o", ""}, "-o needs mount options"}, BadRow{{"--sim-events="}, "--sim-events"},
        BadRow{{"--system-group="}, "--system-group"}, BadRow{{"--sim-width="}, "--sim-width"},
        BadRow{{"--tick="}, "--tick"},
        // Values that are no value of the option.
        BadRow{{"--pmu=perfect"}, "--pmu: 'perfect' is not auto, x86, perf or sim"},
        BadRow{{"--perf-model=arm"}, "--perf-model: 'arm'"}, BadRow{{"--perf-model"}, "--perf-model needs a value"},
        BadRow{{"--pmu=perf", "--sim-clock=manual"}, "not with --pmu=perf"},
        BadRow{{"--sim-width=32", "--pmu", "perf"}, "not with --pmu=perf"}, BadRow{{"--pmu=SIM"}, "--pmu"},
        BadRow{{"--pmu="}, "--pmu"}, BadRow{{"--sim-clock=virtual"}, "--sim-clock: 'virtual'"},
        BadRow{{"--sim-clock=Manual"}, "--sim-clock"}, BadRow{{"--allow-kernel=1"}, "--allow-kernel takes no value"},
        BadRow{{"--help=yes"}, "--help"}, BadRow{{"--version="}, "--version"},
        // Bad numbers.
        BadRow{{"--sim-width=abc"}, "--sim-width"}, BadRow{{"--sim-width=4a"}, "--sim-width"},
        BadRow{{"--tick=1e6"}, "--tick"}, BadRow{{"--tick=-1000"}, "--tick"}, BadRow{{"--tick=+1000"}, "--tick"},
        BadRow{{"--max-sets= 5"}, "--max-sets"}, BadRow{{"--max-sets=5 "}, "--max-sets"},
        BadRow{{"--max-sets=0x"}, "--max-sets"}, BadRow{{"--max-messages=1.5"}, "--max-messages"},
        BadRow{{"--tick=18446744073709551616"}, "--tick"},
        BadRow{{"--max-smpl-bytes-per-user=64M"}, "--max-smpl-bytes-per-user"},
        BadRow{{"--max-smpl-bytes-per-user=-1"}, "--max-smpl-bytes-per-user"},
        BadRow{{"--max-smpl-bytes-per-user=18446744073709551616"}, "--max-smpl-bytes-per-user"},
        // Out of range.
        BadRow{{"--sim-width=15"}, "--sim-width: 15 is out of range (16..64)"},
        BadRow{{"--sim-width=65"}, "--sim-width: 65 is out of range (16..64)"},
        BadRow{{"--sim-width=0"}, "--sim-width"},
        BadRow{{"--sim-counters=0"}, "--sim-counters: 0 is out of range (1..8)"},
        BadRow{{"--sim-counters=9"}, "--sim-counters: 9 is out of range (1..8)"},
        BadRow{{"--sim-skid=32768"}, "--sim-skid: 32768 is out of range (0..32767)"},
        BadRow{{"--sim-skid"}, "--sim-skid needs a value"}, BadRow{{"--sim-skid=-1"}, "--sim-skid"},
        BadRow{{"--sim-skid=ten"}, "--sim-skid"}, BadRow{{"--sim-skid="}, "--sim-skid"},
        BadRow{{"--pmu=perf", "--sim-skid=10"}, "--sim-skid shape the simulator: not with --pmu=perf"},
        BadRow{{"--tick=999"}, "--tick: 999 is too small (at least 1000)"}, BadRow{{"--tick=0"}, "--tick"},
        BadRow{{"--max-sessions-per-user=0"}, "--max-sessions-per-user: 0 is out of range"},
        BadRow{{"--max-sets=0"}, "--max-sets: 0 is out of range (1..65536)"},
        BadRow{{"--max-sets=65537"}, "--max-sets: 65537 is out of range (1..65536)"},
        BadRow{{"--max-messages=0"}, "--max-messages"}, BadRow{{"--max-messages=4294967296"}, "--max-messages"},
        BadRow{{"--max-sessions-per-user=4294967296"}, "--max-sessions-per-user"},
        BadRow{{"--max-smpl-bytes-per-user=0"}, "--max-smpl-bytes-per-user: 0 is too small (at least 1)"},
        BadRow{{"-o", "max_smpl_bytes_per_user=0"}, "--max-smpl-bytes-per-user"},
        BadRow{{"--fastpath-deadline=0"}, "--fastpath-deadline: 0 is out of range (1..60000)"},
        BadRow{{"--fastpath-deadline=60001"}, "--fastpath-deadline: 60001 is out of range (1..60000)"},
        BadRow{{"--fastpath-deadline"}, "--fastpath-deadline needs a value"},
        // Groups.
        BadRow{{"--system-group=no_such_group_pfmfs"}, "--system-group: unknown group 'no_such_group_pfmfs'"},
        BadRow{{"--system-group=-1"}, "--system-group"}, BadRow{{"--system-group=4294967295"}, "--system-group"},
        BadRow{{"--system-group=99999999999999999999"}, "--system-group"},
        // Mount points: [SOURCE] MOUNTPOINT.
        BadRow{{"pfmfs", "/a", "/b"},
               "too many arguments: 'pfmfs', '/a' and '/b' (at most a source and a mount point)"},
        BadRow{{"/a", "-f", "b", "c"}, "too many arguments"}, BadRow{{""}, "mount point"},
        BadRow{{"pfmfs", ""}, "mount point"}, BadRow{{"--", "s", "/a", "/b"}, "too many arguments"},
        BadRow{{"pfmfs", "/dev/fd/3"},
               "mount point /dev/fd/3: a FUSE descriptor mounted by someone else (mount.fuse3's drop_privileges) is "
               "not supported"},
        // pfmfsd's options inside -o: the same values, and a value where one belongs.
        BadRow{{"-o", "pmu=nope"}, "--pmu: 'nope' is not auto, x86, perf or sim"},
        BadRow{{"-o", "allow_other,pmu"}, "-o pmu: needs a value (pmu=auto|x86|perf|sim)"},
        BadRow{{"-o", "tick="}, "--tick"}, BadRow{{"-o", "sim_width=8"}, "--sim-width: 8 is out of range (16..64)"},
        BadRow{{"-o", "allow_kernel=1"}, "-o allow_kernel=1: allow_kernel takes no value"},
        BadRow{{"-o", "pmu=perf,sim_clock=manual"}, "not with --pmu=perf"},
        BadRow{{"-o", "system_group=no_such_group_pfmfs"}, "--system-group: unknown group"},
        // A bad option anywhere spoils the line, even next to --help.
        BadRow{{"--help", "--bogus"}, "--bogus"}));

TEST(DaemonOptions, UsageHasOneLinePerOption) {
  std::string usage = usageText();
  EXPECT_EQ(usage.rfind("usage: pfmfsd [options] [[SOURCE] MOUNTPOINT]", 0), 0u) << usage;
  std::vector<std::string> lines;
  std::istringstream in(usage);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_FALSE(usage.empty());
  EXPECT_EQ(usage.back(), '\n');
  const std::vector<std::string> options = {"-f",
                                            "-d",
                                            "-o OPT[,OPT...]",
                                            "--pmu=auto|x86|perf|sim",
                                            "--perf-model=auto|sw|x86",
                                            "--sim-clock=real|manual",
                                            "--sim-width=W",
                                            "--sim-counters=N",
                                            "--sim-events=FILE",
                                            "--sim-skid=N",
                                            "--tick=NS",
                                            "--max-sessions-per-user=N",
                                            "--max-sets=N",
                                            "--max-messages=N",
                                            "--max-smpl-bytes-per-user=BYTES",
                                            "--max-cgroup-events-per-user=N",
                                            "--fastpath-deadline=MS",
                                            "--allow-kernel",
                                            "--system-group=GROUP",
                                            "--help",
                                            "--version"};
  EXPECT_EQ(lines.size(), options.size() + 1);
  for (const auto& opt : options) {
    int found = 0;
    for (const auto& l : lines)
      if (l.find("  " + opt + " ") == 0 || l.find(" " + opt + " ") != std::string::npos) ++found;
    EXPECT_EQ(found, 1) << opt << " in\n" << usage;
  }
  for (const auto& l : lines) EXPECT_LE(l.size(), 120u) << l;
}

}  // namespace
}  // namespace pfmfs::fs
