#!/usr/bin/env python3
# pfmstat -G PATH (docs/pfmstat.1.md): one control group counted on every
# cpu through a cgroup-mode session (pfmfs(5), CONTROL-GROUP LOADS).
#   - the sim's manual clock: exact counts and metrics for a command's
#     duration, the group named absolute or below the cgroup2 mount
#   - no command: until ^C, or until the group is removed
#   - refusals: options that do not go with -G, a group that is not there,
#     another user's group (and a delegated one, which counts), exit 2 and
#     no session left behind
#   - perf: two groups with different work, each counted alone by its own
#     pfmstat, against `perf stat -a -G` over the same time
import os
import shutil
import signal
import subprocess
import time

import pfmfs_mount
from pfmfs_mount import TEST_USER, TEST_USER2, perfOnly, simOnly, userIds, waitFor
from test_cgroup import ROOT, CgroupCase
from test_pfmstat import MS, WAITER, PfmstatTestCase, csvMetrics, csvRows


class PfmstatCgroupCase(CgroupCase, PfmstatTestCase):
    pass


@simOnly
class SimTest(PfmstatCgroupCase):
    """The manual clock: a group's time is the advance."""

    def counted(self, *args, ns=MS):
        p = self.start('-x,', '-o', self.out, *args, 'sh', '-c', WAITER)
        self.ready(p)
        self.m.advance(ns)
        self.release(p)
        status, _, err = self.finish(p)
        self.assertEqual(status, 0, err)
        self.assertNoSession()
        return self.outFile()

    def test_exact_counts_for_a_command(self):
        g = self.group('pfmstat-exact')
        for name in (g, os.path.relpath(g, ROOT)):
            with self.subTest(name=name):
                out = self.counted('-e', 'cycles,instructions', '-G', name)
                rows = csvRows(out)
                self.assertEqual(rows['cycles'][:4], [3 * MS, 3 * MS, MS, MS])
                self.assertEqual(rows['instructions'][:4], [2 * MS, 2 * MS, MS, MS])
                self.assertEqual(csvMetrics(out)['ipc'], [2 / 3, 'insn per cycle', 'exact'])

    def test_table_names_the_group_and_a_is_accepted(self):
        g = self.group('pfmstat-table')
        p = self.start('-a', '-G', g, '-e', 'cycles', 'sh', '-c', WAITER)
        self.ready(p)
        self.m.advance(MS)
        self.release(p)
        status, _, err = self.finish(p)
        self.assertEqual(status, 0, err)
        self.assertIn(f"Performance counter stats for cgroup '{g}':", err)
        self.assertIn(f'{3 * MS:>18,}  cycles', err)

    def test_until_interrupted(self):
        g = self.group('pfmstat-int')
        p = self.start('-x,', '-o', self.out, '-e', 'instructions', '-G', g)
        self.waitActive(p)
        self.m.advance(5 * MS)
        p.send_signal(signal.SIGINT)
        self.assertEqual(self.finish(p)[0], 0)
        self.assertEqual(csvRows(self.outFile())['instructions'][0], 10 * MS)
        self.assertNoSession()

    def test_ends_when_the_group_is_removed(self):
        g = self.group('pfmstat-rm')
        p = self.start('-x,', '-o', self.out, '-e', 'cycles', '-G', g)
        s = self.waitActive(p)
        self.m.advance(2 * MS)
        os.rmdir(g)
        # The session sees the removal at its next tick or read.
        waitFor(lambda: p.poll() is not None or 'exited=1' in s.state(), 10)
        self.assertEqual(self.finish(p)[0], 0)
        self.assertEqual(csvRows(self.outFile())['cycles'][0], 6 * MS)
        self.assertNoSession()

    def test_refused_options(self):
        g = self.group('pfmstat-bad')
        for args, why in ((('-G', g, '-p', '1'), '-p/-t count threads, -G a control group'),
                          (('-G', g, '-C', '0'), '-C does not go with it'),
                          (('-G', g, '-i', 'true'), '--no-inherit is for threads'),
                          (('-G', g, '-r', '2', 'true'), '-r and -G do not go together'),
                          (('-G', g, '-G', g), '-G names one control group a run'),
                          (('-G', ''), "-G needs a control group's path")):
            with self.subTest(args=args):
                status, out, err = self.run_pfmstat(*args)
                self.assertEqual(status, 2, err)
                self.assertIn(why, err)
                self.assertNoSession()

    def test_group_refused_by_the_mount(self):
        missing = os.path.join(ROOT, f'pfmfs-test-missing-{os.getpid()}')
        for name, why in ((missing, 'No such file or directory'), ('a/../b', '..'), ('/tmp', 'cgroup')):
            with self.subTest(name=name):
                status, _, err = self.run_pfmstat('-G', name, '-e', 'cycles', 'true')
                self.assertEqual(status, 2, err)
                self.assertIn("ctl refused 'load", err)
                self.assertIn(why, err)
                self.assertNoSession()

    def test_delegated_group_counts_a_foreign_one_does_not(self):
        uid, gid = userIds(TEST_USER)
        mine = self.group('pfmstat-mine')
        self.delegate(mine, uid, gid)
        theirs = self.group('pfmstat-theirs')
        self.delegate(theirs, *userIds(TEST_USER2))
        status, _, err = self.run_pfmstat('-G', theirs, '-e', 'cycles', 'true', user=TEST_USER)
        self.assertEqual(status, 2, err)
        self.assertIn('not delegated', err)
        self.assertNoSession()
        p = self.start('-x,', '-o', self.out, '-G', mine, '-e', 'cycles', 'sh', '-c', WAITER, user=TEST_USER)
        self.ready(p)
        self.m.advance(MS)
        self.release(p)
        self.assertEqual(self.finish(p)[0], 0)
        self.assertEqual(csvRows(self.outFile())['cycles'][0], 3 * MS)
        self.assertNoSession()


@perfOnly
class PerfTest(PfmstatCgroupCase):
    """Real work: a spinning group and a sleeping one, each counted by its
    own pfmstat while perf stat -a -G counts both."""

    manual_clock = False

    def test_two_groups_against_perf_stat(self):
        perf = shutil.which('perf')
        self.assertIsNotNone(perf, 'perf(1) is needed to check the counts')
        busy, idle = self.group('pfmstat-busy'), self.group('pfmstat-idle')
        self.spawn(busy, 'while True: pass')
        sleeper = self.spawn(idle, 'import time\ntime.sleep(3600)')
        pfmfs_mount.waitAsleep(sleeper.pid, sleeper.pid)
        outs = [os.path.join(self.tmp, n) for n in ('busy', 'idle')]
        t0 = time.monotonic()
        ps = [self.start('-x,', '-o', o, '-e', 'task-clock', '-G', g) for o, g in zip(outs, (busy, idle))]
        for i in range(2):
            self.waitActive(ps[i])
        rel = [os.path.relpath(g, ROOT) for g in (busy, idle)]
        perf_out = subprocess.run([perf, 'stat', '-a', '-x,', '-e', 'task-clock,task-clock', '-G', ','.join(rel),
                                   'sleep', '1'], capture_output=True, text=True, check=True).stderr
        for p in ps:
            p.send_signal(signal.SIGINT)
        for p in ps:
            self.assertEqual(self.finish(p)[0], 0)
        wall_ns = (time.monotonic() - t0) * 1e9
        perf_ns = {}
        for line in perf_out.splitlines():
            f = line.split(',')
            if len(f) > 3 and f[2] == 'task-clock':
                perf_ns[f[3]] = 0 if f[0] == '<not counted>' else float(f[0]) * MS
        self.assertEqual(set(perf_ns), set(rel), perf_out)
        counted = []
        for o in outs:
            with open(o) as f:
                counted.append(csvRows(f.read())['task-clock'][0])
        # Each pfmstat counted from before perf started to after its ^C: at
        # least perf's count less 5% (perf opens its cpus' events in turn),
        # at most one spinner's whole wall time over pfmstat's run.
        self.assertGreater(perf_ns[rel[0]], 0.3e9, perf_out)
        self.assertGreaterEqual(counted[0], perf_ns[rel[0]] * 0.95, (counted, perf_out))
        self.assertLessEqual(counted[0], wall_ns * 1.05 + 20 * MS, (counted, perf_out))
        self.assertLess(counted[1], 20 * MS, (counted, perf_out))
        self.assertLess(perf_ns[rel[1]], 20 * MS, perf_out)
        self.assertNoSession()


if __name__ == '__main__':
    pfmfs_mount.main()
