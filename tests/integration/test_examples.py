#!/usr/bin/env python3
# Integration test of the shell examples in docs/examples/: mounts pfmfsd (the
# daemon named by $PFMFSD) with the sim backend, runs each script against the
# mount as a user would, and checks its exit status and its output: exact
# numbers under --sim-clock=manual, the sim's rates under the real clock.
#
# Needs root and /dev/fuse: without them it exits 77 (skip), except under
# CI=true, where a skip would hide it and it fails instead.
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
SKIP = 77
SCRIPT_TIMEOUT_S = 60


def checkRequirements():
    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    if not os.path.exists("/dev/fuse"):
        missing.append("/dev/fuse")
    if not os.environ.get("PFMFSD"):
        missing.append("$PFMFSD (the pfmfsd to test)")
    if not missing:
        return
    what = ", ".join(missing)
    if os.environ.get("CI") == "true":
        print(f"test_examples: missing {what}: failing, not skipping, under CI=true", file=sys.stderr)
        sys.exit(1)
    print(f"test_examples: skipped: missing {what}", file=sys.stderr)
    sys.exit(SKIP)


class Mount:
    """pfmfsd -f --pmu=sim [extra] -o allow_other TMP/mnt, for one test class."""

    def __init__(self, *extra):
        self.extra = list(extra)

    def start(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="pfmfs-examples-")
        self.path = Path(self.tmp.name) / "mnt"
        self.path.mkdir()
        self.log_path = Path(self.tmp.name) / "pfmfsd.log"
        self.log = open(self.log_path, "w")
        cmd = [os.environ["PFMFSD"], "-f", "--pmu=sim", *self.extra, "-o", "allow_other", str(self.path)]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not (self.path / "version").exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"pfmfsd exited {self.proc.returncode} before mounting:\n{self.daemonLog()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"{self.path}/version did not appear within 10 s:\n{self.daemonLog()}")
            time.sleep(0.02)

    def daemonLog(self):
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def stop(self):
        """SIGTERM; returns pfmfsd's exit status (None if it had to be killed)."""
        status = None
        self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        still_mounted = os.path.ismount(self.path)
        if still_mounted:
            subprocess.run(["fusermount3", "-u", "-z", str(self.path)], check=False)
        self.log.close()
        log = self.log_path.read_text(errors="replace")
        self.tmp.cleanup()
        return status, still_mounted, log


def run(script, *args, timeout=SCRIPT_TIMEOUT_S):
    return subprocess.run(["sh", str(EXAMPLES / script), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def fields(line):
    """key=value words of a line, as a dict."""
    return dict(w.split("=", 1) for w in line.split() if "=" in w)


def processGone(pid):
    """True once pid has exited (a zombie waiting for a reaper counts as gone)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.02)
    return False


class ExampleTest(unittest.TestCase):
    mount_args = ()

    @classmethod
    def setUpClass(cls):
        cls.mount = Mount(*cls.mount_args)
        cls.mount.start()
        cls.mnt = cls.mount.path

    @classmethod
    def tearDownClass(cls):
        status, still_mounted, log = cls.mount.stop()
        if status != 0 or still_mounted:
            raise AssertionError(f"pfmfsd after SIGTERM: exit status {status}, still mounted: {still_mounted}\n{log}")

    def setUp(self):
        self.target = None

    def tearDown(self):
        if self.target:
            self.target.kill()
            self.target.wait()
        # Every example removes the sessions it made, on success and on failure.
        self.assertEqual(sorted(os.listdir(self.mnt / "sessions")), [])

    def startSleeper(self):
        self.target = subprocess.Popen(["sleep", "600"])
        return self.target.pid

    def assertRan(self, result, status=0):
        self.assertEqual(result.returncode, status,
                         f"exit status {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")

    def table(self, stdout):
        """multiplex.sh's rows: dicts keyed by the header's column names."""
        lines = stdout.splitlines()
        header_at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["process", "pid"])
        keys = lines[header_at].split()
        return [dict(zip(keys, l.split())) for l in lines[header_at + 1:]]


class ManualClockTest(ExampleTest):
    """Under --sim-clock=manual every count, time and message is exact."""
    mount_args = ("--sim-clock=manual",)

    def test_count_thread_for_one_virtual_second(self):
        pid = self.startSleeper()
        r = run("count.sh", self.mnt, "-p", pid, "-t", 1)
        self.assertRan(r)
        self.assertEqual(r.stdout.splitlines(), [
            f"counted: thread {pid} for 1s",
            f"{'event':<30} {'count':>20} {'running_ns':>14}",
            f"{'UNHALTED_CORE_CYCLES':<30} {3000000000:>20} {1000000000:>14}",
            f"{'INSTRUCTION_RETIRED':<30} {2000000000:>20} {1000000000:>14}",
            "IPC 0.666",
        ])

    def test_count_chosen_events(self):
        pid = self.startSleeper()
        r = run("count.sh", self.mnt, "-e", "LLC_REFERENCES,LLC_MISSES,BRANCH_INSTRUCTIONS_RETIRED,"
                "BRANCH_MISSES_RETIRED", "-p", pid, "-t", 2)
        self.assertRan(r)
        rows = [l.split() for l in r.stdout.splitlines()[2:]]
        self.assertEqual(rows, [
            ["LLC_REFERENCES", "100000000", "2000000000"],
            ["LLC_MISSES", "20000000", "2000000000"],
            ["BRANCH_INSTRUCTIONS_RETIRED", "800000000", "2000000000"],
            ["BRANCH_MISSES_RETIRED", "8000000", "2000000000"],
        ])

    def test_count_reports_the_reason_of_a_refused_event(self):
        pid = self.startSleeper()
        r = run("count.sh", self.mnt, "-e", "NO_SUCH_EVENT", "-p", pid)
        self.assertRan(r, 1)
        self.assertIn("writing 'NO_SUCH_EVENT' to sessions/count-", r.stderr)
        self.assertIn("NO_SUCH_EVENT", r.stderr.split(":", 2)[2])  # the daemon's reason quotes it
        self.assertEqual(r.stdout, "")

    def test_count_refuses_more_events_than_counters(self):
        pid = self.startSleeper()
        r = run("count.sh", self.mnt, "-e", "LLC_MISSES,LLC_MISSES,LLC_MISSES,LLC_MISSES,LLC_MISSES", "-p", pid)
        self.assertRan(r, 2)
        self.assertEqual(r.stderr, "count.sh: 4 general counters: at most 4 events\n")

    def test_count_a_thread_that_does_not_exist(self):
        r = run("count.sh", self.mnt, "-p", 999999999)
        self.assertRan(r, 1)
        self.assertIn("writing 'load 999999999'", r.stderr)
        self.assertIn("no thread 999999999", r.stderr)

    def test_multiplex_table_is_exact(self):
        r = run("multiplex.sh", self.mnt)
        self.assertRan(r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "backend=sim clock=manual: 2 sets switched every 1000000 ns for 1 s")
        rows = self.table(r.stdout)
        # Virtual time moves every loaded target alike: 1 s, each set 500 ms.
        expected = [
            ("UNHALTED_CORE_CYCLES", 1500000000, 3000000000),
            ("INSTRUCTION_RETIRED", 1000000000, 2000000000),
            ("LLC_REFERENCES", 25000000, 50000000),
            ("BRANCH_INSTRUCTIONS_RETIRED", 200000000, 400000000),
        ]
        self.assertEqual([(row["process"], row["event"], int(row["raw_count"]), int(row["enabled_ns"]),
                           int(row["running_ns"]), int(row["scaled"])) for row in rows],
                         [(p, e, raw, 1000000000, 500000000, scaled)
                          for p in ("busy", "sleep") for e, raw, scaled in expected])
        busy_pid, sleep_pid = rows[0]["pid"], rows[4]["pid"]
        self.assertNotEqual(busy_pid, sleep_pid)
        self.assertTrue(processGone(busy_pid), "the busy loop outlived the script")
        self.assertTrue(processGone(sleep_pid), "the sleeper outlived the script")

    def test_multiplex_phases_show_the_sampling_bias(self):
        # SIM_PHASE_A runs in the first ms of every two, SIM_PHASE_B in the
        # second: set 1 always runs in the second ms, so it never sees A and
        # always sees B; B's estimate is twice the truth (2e9), A's is 0.
        r = run("multiplex.sh", self.mnt, "-phases", "-t", 1)
        self.assertRan(r)
        rows = {(row["process"], row["event"]): row for row in self.table(r.stdout)}
        self.assertEqual(len(rows), 8)
        a, b = rows[("busy", "SIM_PHASE_A")], rows[("busy", "SIM_PHASE_B")]
        self.assertEqual((a["raw_count"], a["running_ns"], a["scaled"]), ("0", "500000000", "0"))
        self.assertEqual((b["raw_count"], b["running_ns"], b["scaled"]), ("2000000000", "500000000", "4000000000"))

    def test_multiplex_switch_period(self):
        r = run("multiplex.sh", self.mnt, "-s", 250000000)
        self.assertRan(r)
        self.assertEqual(r.stdout.splitlines()[0],
                         "backend=sim clock=manual: 2 sets switched every 250000000 ns for 1 s")
        for row in self.table(r.stdout):
            self.assertEqual((row["enabled_ns"], row["running_ns"]), ("1000000000", "500000000"))

    def test_overflow_samples_are_exact(self):
        pid = self.startSleeper()
        r = run("overflow.sh", self.mnt, "-n", 5, "-p", pid)
        self.assertRan(r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"backend=sim clock=manual: a notification every 1000000 "
                                   f"UNHALTED_CORE_CYCLES of thread {pid}")
        samples = lines[1:6]
        for k, line in enumerate(samples, 1):
            m = re.fullmatch(rf"sample {k}: type=ovfl seq={k} set=0 pmds=0x1 pid={pid} tid={pid} cpu=0 "
                             r"ip=0x(40[1-4][0-9a-f]{3})", line)
            self.assertIsNotNone(m, line)
        # 10^6 cycles at 3 per ns overflow 333334 ns after each (re)start; the
        # instructions counter (2 per ns) runs alongside; masked time counts
        # for nothing.
        self.assertEqual(lines[6:], ["samples=5 period=1000000 instructions=3333340 enabled_ns=1666670"])

    def test_overflow_period_and_event(self):
        pid = self.startSleeper()
        r = run("overflow.sh", self.mnt, "-n", 3, "-P", 50000, "-e", "LLC_REFERENCES", "-p", pid)
        self.assertRan(r)
        # 50000 LLC references at 0.05 per ns: one sample per ms of virtual time.
        self.assertEqual(r.stdout.splitlines()[-1],
                         "samples=3 period=50000 instructions=6000000 enabled_ns=3000000")

    def test_overflow_reports_the_thread_exit(self):
        target = subprocess.Popen(["sleep", "0.5"])
        r = run("overflow.sh", self.mnt, "-n", 1000, "-P", 3000000000, "-p", target.pid)
        target.wait()
        self.assertRan(r)
        lines = r.stdout.splitlines()
        self.assertRegex(lines[-2], r"^the thread exited: type=end seq=\d+$")
        self.assertRegex(lines[-1], r"^samples=\d+ period=3000000000 ")


class RealClockTest(ExampleTest):
    """The default clock: a thread's time is its CPU time."""
    mount_args = ()

    def test_multiplex_busy_loop_counts_and_sleeper_does_not(self):
        r = run("multiplex.sh", self.mnt, "-t", 1)
        self.assertRan(r)
        self.assertEqual(r.stdout.splitlines()[0],
                         "backend=sim clock=real: 2 sets switched every 1000000 ns for 1 s")
        rows = self.table(r.stdout)
        self.assertEqual([(row["process"], row["event"]) for row in rows],
                         [(p, e) for p in ("busy", "sleep") for e in (
                             "UNHALTED_CORE_CYCLES", "INSTRUCTION_RETIRED", "LLC_REFERENCES",
                             "BRANCH_INSTRUCTIONS_RETIRED")])
        busy, sleep = rows[:4], rows[4:]
        rates = [3, 2, 0.05, 0.4]
        enabled = int(busy[0]["enabled_ns"])
        self.assertGreater(enabled, 100_000_000, "the busy loop got under 100 ms of CPU in 1 s")
        self.assertLessEqual(enabled, 1_500_000_000)
        running = {0: int(busy[0]["running_ns"]), 1: int(busy[2]["running_ns"])}
        # Both sets ran, and together for all the time the session counted.
        self.assertGreater(running[0], 0)
        self.assertGreater(running[1], 0)
        self.assertEqual(running[0] + running[1], enabled)
        for i, row in enumerate(busy):
            raw, run_ns = int(row["raw_count"]), int(row["running_ns"])
            self.assertEqual(int(row["enabled_ns"]), enabled)
            self.assertEqual(run_ns, running[i // 2])
            # The sim counts floor(rate x time) per activation: within one
            # event per activation (at most one per ms) of rate x running.
            self.assertLessEqual(abs(raw - rates[i] * run_ns), run_ns // 1_000_000 + 2, row)
            self.assertEqual(int(row["scaled"]), raw * enabled // run_ns)
        sleeper_cycles = 0 if sleep[0]["scaled"] == "-" else int(sleep[0]["scaled"])
        self.assertGreater(int(busy[0]["scaled"]), sleeper_cycles)
        self.assertLess(int(sleep[0]["enabled_ns"]), 50_000_000, "sleep(1) ran 50 ms of CPU")

    def test_count_a_command_from_start_to_exit(self):
        loop = "i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done"
        r = run("count.sh", self.mnt, "sh", "-c", loop)
        self.assertRan(r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"counted: sh -c {loop} (exit status 0)")
        cycles, instructions = (l.split() for l in lines[2:4])
        self.assertEqual((cycles[0], instructions[0]), ("UNHALTED_CORE_CYCLES", "INSTRUCTION_RETIRED"))
        self.assertEqual(cycles[2], instructions[2])  # one set: the same running time
        c, n, t = int(cycles[1]), int(instructions[1]), int(cycles[2])
        self.assertGreater(t, 1_000_000, "100000 shell iterations took under 1 ms of CPU")
        self.assertLessEqual(abs(c - 3 * t), 2)
        self.assertLessEqual(abs(n - 2 * t), 2)
        self.assertEqual(lines[4], "IPC 0.666")

    def test_count_a_thread_that_exits_while_counted(self):
        target = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done; sleep 0.3"])
        r = run("count.sh", self.mnt, "-p", target.pid, "-t", 1)
        target.wait()
        self.assertRan(r)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], f"counted: thread {target.pid} for 1s (it exited: counts up to its exit)")
        cycles = lines[2].split()
        self.assertEqual(cycles[0], "UNHALTED_CORE_CYCLES")
        self.assertLessEqual(abs(int(cycles[1]) - 3 * int(cycles[2])), 2)

    def test_count_passes_on_the_exit_status(self):
        r = run("count.sh", self.mnt, "sh", "-c", "exit 3")
        self.assertRan(r, 3)
        self.assertEqual(r.stdout.splitlines()[0], "counted: sh -c exit 3 (exit status 3)")

    def test_overflow_loop_on_a_busy_loop(self):
        r = run("overflow.sh", self.mnt, "-n", 5)
        self.assertRan(r)
        lines = r.stdout.splitlines()
        m = re.fullmatch(r"backend=sim clock=real: a notification every 1000000 UNHALTED_CORE_CYCLES "
                         r"of thread (\d+)", lines[0])
        self.assertIsNotNone(m, lines[0])
        pid = m.group(1)
        for k, line in enumerate(lines[1:6], 1):
            self.assertRegex(line, rf"^sample {k}: type=ovfl seq={k} set=0 pmds=0x1 pid={pid} tid={pid} cpu=0 "
                                   r"ip=0x[0-9a-f]+$")
        summary = fields(lines[6])
        self.assertEqual((summary["samples"], summary["period"]), ("5", "1000000"))
        # Each sample is 10^6 cycles (333333.3 ns at 3 per ns) of counting,
        # replayed at its exact instant even under the real clock.
        enabled, instructions = int(summary["enabled_ns"]), int(summary["instructions"])
        self.assertLessEqual(abs(enabled - 5 * 1000000 / 3), 5)
        self.assertLessEqual(abs(instructions - 5 * 2000000 / 3), 15)
        self.assertTrue(processGone(pid), "the busy loop outlived the script")


class WithoutMountTest(unittest.TestCase):
    def test_every_example_refuses_a_directory_that_is_not_a_mount(self):
        with tempfile.TemporaryDirectory() as d:
            for script in ("count.sh", "multiplex.sh", "overflow.sh"):
                args = ["-p", "1"] if script == "count.sh" else []
                r = run(script, d, *args)
                self.assertEqual(r.returncode, 1, script)
                self.assertEqual(r.stderr, f"{script}: no pfmfs mount at {d}\n")

    def test_every_example_has_a_usage(self):
        for script in ("count.sh", "multiplex.sh", "overflow.sh"):
            r = run(script, "/nonexistent", "-bogus")
            self.assertEqual(r.returncode, 2, script)
            self.assertTrue(r.stderr.startswith(f"usage: {script} [MOUNT]"), r.stderr)


if __name__ == "__main__":
    checkRequirements()
    unittest.main(verbosity=2)
