// pfmfs-exporter's configuration parser without a mount: golden rows of
// {text, the error or ""}, each naming its line (libpfm4's validate_x86.c
// habit), and the values a good file sets. test_exporter.py feeds the same
// kind of garbage to the program itself.
#include <gtest/gtest.h>

#include <string>

#include "exporter/exporter_config.h"
#include "pfmstat/errors.h"

namespace {

struct Row {
  int line;
  const char* text;
  const char* error;  // "" for a good text; else what the reason must hold
};

const Row kRows[] = {
    {__LINE__, "", ""},
    {__LINE__, "# a comment\n\n  \t\n", ""},
    {__LINE__, "listen 0.0.0.0:9464\n", ""},
    {__LINE__, "listen 127.0.0.1:65535\r\n", ""},
    {__LINE__, "listen 127.0.0.1:65536\n", "f:1: '127.0.0.1:65536': the port is a number from 1 to 65535"},
    {__LINE__, "listen 127.1:80\n", "numeric IPv4"},
    {__LINE__, "listen :80\n", "numeric IPv4"},
    {__LINE__, "listen 1.2.3.4:+80\n", "the port"},
    {__LINE__, "cpus 0-3,8\n", ""},
    {__LINE__, "cpus 0-\n", "cpus is"},
    {__LINE__, "cpus -1\n", "cpus is"},
    {__LINE__, "cpus 3,2\n", "cpus is"},
    {__LINE__, "cpus 1000000000\n", "cpus is"},
    {__LINE__, "cpus 0-65536\n", "cpus is"},
    {__LINE__, "events {cycles,instructions},branches\n", ""},
    {__LINE__, "events cycles}\n", "events 'cycles}': a '}' without its '{'"},
    {__LINE__, "events ,,\n", "events names no event"},
    {__LINE__, "metrics ipc,default\n", ""},
    {__LINE__, "metrics ipc,,x\n", "'' is not a metric or group name"},
    {__LINE__, "cgroup /sys/fs/cgroup/a/\ncgroup /sys/fs/cgroup/b\n", ""},
    {__LINE__, "cgroup /sys/fs/cgroup//a\n", "no empty components"},
    {__LINE__, "cgroup /sys/fs/cgroup/./a\n", "'.' or '..'"},
    {__LINE__, "cgroup /a\ncgroup /a\n", "f:2: cgroup /a is already at f:1"},
    {__LINE__, "switch_ms 1\n", ""},
    {__LINE__, "switch_ms 60000\n", ""},
    {__LINE__, "switch_ms 0x10\n", "switch_ms is a number"},
    {__LINE__, "mount /run/pfmfs\nmount /run/pfmfs\n", "f:2: mount is already set at line 1"},
    {__LINE__, "Listen 127.0.0.1:1\n", "f:1: unknown key 'Listen' (known: listen, mount, events"},
    {__LINE__, "events\n", "f:1: events needs a value"},
};

TEST(ExporterConfig, GoldenRows) {
  for (const auto& row : kRows) {
    SCOPED_TRACE(testing::Message() << "row at line " << row.line << ": " << row.text);
    std::string error;
    try {
      (void)exporter::parseConfig(row.text, "f");
    } catch (const pfmstat::UsageError& e) {
      error = e.what();
    }
    if (*row.error == '\0') {
      EXPECT_EQ(error, "");
    } else {
      EXPECT_NE(error.find(row.error), std::string::npos) << error;
      EXPECT_EQ(error.rfind("f:", 0), 0u) << error;  // FILE:LINE first, always
    }
  }
}

TEST(ExporterConfig, ValuesOfAGoodFile) {
  auto c = exporter::parseConfig(
      "listen 10.0.0.5:9100\nevents cycles\nmetrics ipc\ncpus 2-3\n"
      "cgroup /sys/fs/cgroup/x/\nswitch_ms 10\n",
      "f");
  EXPECT_EQ(c.listen, "10.0.0.5:9100");
  EXPECT_EQ(c.events, "cycles");
  EXPECT_EQ(c.events_origin.where, "f:2");
  EXPECT_EQ(c.metrics, std::vector<std::string>{"ipc"});
  EXPECT_EQ(c.cpus, (std::vector<long>{2, 3}));
  EXPECT_EQ(c.cgroups, std::vector<std::string>{"/sys/fs/cgroup/x"});  // one spelling per group
  EXPECT_EQ(c.cgroup_origins.at(0).where, "f:5");
  EXPECT_EQ(c.switch_ms, 10u);
}

TEST(ExporterConfig, Defaults) {
  auto c = exporter::parseConfig("", "f");
  EXPECT_EQ(c.listen, "127.0.0.1:9464");  // loopback unless the admin says otherwise
  EXPECT_FALSE(c.cpus);                   // every online cpu
  EXPECT_EQ(exporter::parseConfig("cpus none\n", "f").cpus, std::vector<long>{});
}

}  // namespace
