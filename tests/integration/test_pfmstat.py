#!/usr/bin/env python3
# pfmstat (docs/pfmstat.1.md) through a real mount, as a user types it. On
# the sim's manual clock every count is exact: the counted command is a
# shell that says `ready` and waits for a line on its stdin, and the test
# moves the clock in between, so what each set, thread and cpu counted is
# known to the event:
#   - groups as sets multiplexed every --switch-ms: counts, scaled
#     estimates, running percentages in the table, CSV and JSON
#   - children followed by default (their counts added), not with -i
#   - -p and -t attached to running threads, ending when they exit; -C and
#     -a counting cpus for the duration of a command
#   - -I intervals that add up to the whole; -r's mean and spread
#   - unknown names, impossible groups, a refused :k, bad options: one line,
#     exit status 2, no session left and the command never run; a command
#     that cannot run: 127; the command's own exit status passed on
#   - ^C, kill and kill -9 leave no session behind
# On perf: the page faults of a program equal `perf stat`'s.
#
# pfmstat comes from $PFMSTAT, else from the build of $PFMFSD.
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pfmfs_mount
from pfmfs_mount import TEST_USER, MountTestCase, inCi, onlineCpus, perfOnly, simOnly, waitFor
from test_perf import NO_ASLR, perfStatPageFaults, prog

MS = 1_000_000
WAITER = 'echo ready; read line; exit ${STATUS:-0}'  # the counted command: waits for the test


def pfmstatPath():
    path = os.environ.get('PFMSTAT')
    if path:
        return path
    return os.path.join(os.path.dirname(os.path.dirname(pfmfs_mount.daemonPath())), 'pfmstat', 'pfmstat')


def table(count, label, scaled, percent):
    """One line of the table, as pfmstat(1) shows it."""
    return f'{count:>18}  {label:<28} {scaled:>18}  {percent:>9}'


def csvRows(text):
    """-x, event lines as {event: [count, scaled, running_ns, enabled_ns, percent]}."""
    rows = {}
    for line in text.splitlines():
        if len(line.split(',')) == 4:
            continue  # a metric's (csvMetrics)
        count, event, scaled, running, enabled, percent = line.split(',')
        rows[event] = [int(count), int(scaled) if scaled else None, int(running), int(enabled), percent]
    return rows


def csvMetrics(text):
    """-x, metric lines as {metric: [value, unit, exact|estimate]}."""
    rows = {}
    for line in text.splitlines():
        fields = line.split(',')
        if len(fields) == 4:
            rows[fields[1]] = [float(fields[0]) if fields[0] else None, fields[2], fields[3]]
    return rows


class PfmstatTestCase(MountTestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmstat-test-')
        os.chmod(self.tmp, 0o777)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.out = os.path.join(self.tmp, 'out')

    def start(self, *args, env=None, user=None, prefix=()):
        """pfmstat ARGS with the test's mount; stdin and stdout are pipes to
        the counted command (stderr is pfmstat's, with the report unless -o)."""
        e = dict(os.environ, **(env or {}))
        # SIGINT as a terminal's foreground job has it: a test started in the
        # background of a script inherits it ignored, and so would the shell
        # pfmstat runs.
        p = subprocess.Popen(list(prefix) + [pfmstatPath(), '--mount', self.m.mnt] + list(args),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e,
                             user=user, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        self.addCleanup(self.reap, p)
        return p

    def reap(self, p):
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)

    def run_pfmstat(self, *args, user=None):
        p = self.start(*args, user=user)
        out, err = p.communicate(timeout=60)
        return p.returncode, out, err

    def ready(self, p):
        line = p.stdout.readline()
        self.assertEqual(line, 'ready\n', p.stderr.read() if not line else line)

    def release(self, p):
        p.stdin.write('go\n')
        p.stdin.flush()

    def finish(self, p):
        out, err = p.communicate(timeout=60)
        return p.returncode, out, err

    def sessions(self):
        return sorted(os.listdir(self.m.path('sessions')))

    def assertNoSession(self):
        self.assertTrue(waitFor(lambda: not self.sessions()), self.sessions())

    def sessionOf(self, p, index=0):
        return self.m.session(f'pfmstat.{p.pid}.{index}')

    def waitActive(self, p, index=0):
        s = self.sessionOf(p, index)
        self.assertTrue(waitFor(lambda: os.path.exists(s.path('state')) and s.state().startswith('state=active')),
                        self.sessions())
        return s

    def outFile(self):
        with open(self.out) as f:
            return f.read()

    def commandOf(self, p):
        """The pid of the command pfmstat runs (its one child)."""
        with open(f'/proc/{p.pid}/task/{p.pid}/children') as f:
            children = f.read().split()
        self.assertEqual(len(children), 1, children)
        return int(children[0])

    def comm(self, pid):
        with open(f'/proc/{pid}/comm') as f:
            return f.read().strip()


@simOnly
class ExactCountsTest(PfmstatTestCase):

    def multiplexed(self, fmt_args):
        """{cycles,instructions} and {SIM_PHASE_A} switched every ms for 10
        ms: each set ran 5 ms; phase A's events all fall in set 0's
        milliseconds, so set 1 never sees one (aliasing)."""
        p = self.start(*fmt_args, '-e', '{cycles,instructions}', '-e', '{SIM_PHASE_A}', '--switch-ms', '1',
                       'sh', '-c', WAITER, env={'STATUS': '5'})
        self.ready(p)
        self.m.advance(10 * MS)
        self.release(p)
        status, out, err = self.finish(p)
        self.assertEqual(status, 5, err)  # the command's own
        self.assertEqual(out, '')
        self.assertNoSession()
        return err

    def test_table(self):
        err = self.multiplexed([])
        lines = err.split('\n')
        self.assertRegex(lines[-3], r'^ +\d+\.\d{9} seconds time elapsed$')
        self.assertEqual(lines[:-3], [
            '',
            " Performance counter stats for 'sh -c " + WAITER + "':",
            '',
            table('count', 'event', 'scaled', 'running'),
            # The default metrics of events counted in one set: exact, the
            # sim's rates (3 cycles and 2 instructions per ns), however
            # little of the time the set ran.
            table('15,000,000', 'cycles', '30,000,000', '(50.00%)') + '  #        3.000 GHz',
            table('10,000,000', 'instructions', '20,000,000', '(50.00%)') + '  #        0.667 insn per cycle',
            table('0', 'SIM_PHASE_A', '0', '(50.00%)'),
            ''])
        self.assertEqual(lines[-2:], ['', ''])

    def test_csv(self):
        self.multiplexed(['-x,', '-o', self.out])
        self.assertEqual(csvRows(self.outFile()), {
            'cycles': [15 * MS, 30 * MS, 5 * MS, 10 * MS, '50.00'],
            'instructions': [10 * MS, 20 * MS, 5 * MS, 10 * MS, '50.00'],
            'SIM_PHASE_A': [0, 0, 5 * MS, 10 * MS, '50.00'],
        })
        self.assertEqual(csvMetrics(self.outFile()), {
            'ipc': [2 / 3, 'insn per cycle', 'exact'],
            'ghz': [3.0, 'GHz', 'exact'],
        })

    def test_json(self):
        err = self.multiplexed(['--json'])
        lines = [json.loads(line) for line in err.splitlines()]
        self.assertEqual(lines[0], {'event': 'cycles', 'set': 0, 'count': 15 * MS, 'scaled': 30 * MS,
                                    'enabled_ns': 10 * MS, 'running_ns': 5 * MS, 'percent': 50.0})
        self.assertEqual(lines[2]['set'], 1)
        self.assertEqual(lines[2]['count'], 0)
        self.assertEqual(lines[3:5], [
            {'metric': 'ipc', 'value': 2 / 3, 'unit': 'insn per cycle', 'estimate': False},
            {'metric': 'ghz', 'value': 3, 'unit': 'GHz', 'estimate': False},
        ])
        self.assertEqual(lines[5]['exit_status'], 5)
        self.assertEqual(lines[5]['runs'], 1)
        self.assertEqual(len(lines), 6)

    def test_loose_events_split_into_sets(self):
        # Six general-counter events on four counters: two sets, switched
        # every tick (the mount's tick_ns: 1 ms); 4 ms: 2 ms each.
        events = 'LLC_MISSES,LLC_REFERENCES,BRANCH_MISSES_RETIRED,BRANCH_INSTRUCTIONS_RETIRED,SIM_PHASE_B,SIM_PHASE_A'
        p = self.start('-x,', '-o', self.out, '-e', events, 'sh', '-c', WAITER)
        self.ready(p)
        s = self.waitActive(p)
        self.assertEqual(s.read('sets/1/switch'), f'time {MS}\n')
        self.m.advance(4 * MS)
        self.release(p)
        self.assertEqual(self.finish(p)[0], 0)
        rows = csvRows(self.outFile())
        self.assertEqual(list(rows), events.split(','))
        # Set 1 (SIM_PHASE_B, SIM_PHASE_A) ran in ms 1 and 3: phase B's.
        self.assertEqual(rows['SIM_PHASE_B'], [8 * MS, 16 * MS, 2 * MS, 4 * MS, '50.00'])
        self.assertEqual(rows['SIM_PHASE_A'], [0, 0, 2 * MS, 4 * MS, '50.00'])
        self.assertEqual(rows['LLC_MISSES'][:2], [20000, 40000])  # 0.01 per ns in 2 ms

    def test_children_followed_by_default(self):
        script = 'echo ready; read line; (echo child; read line); read line'
        # The shell counts 3 ms (1 + 2), its child 2: 3 cycles per ns.
        for args, expected in ((), 15 * MS), (('-i',), 9 * MS):
            with self.subTest(args=args):
                p = self.start('-x,', '-o', self.out, '-e', 'cycles', *args, 'sh', '-c', script)
                self.ready(p)
                s = self.waitActive(p)
                self.m.advance(1 * MS)
                self.release(p)
                self.assertEqual(p.stdout.readline(), 'child\n')
                if not args:
                    self.assertTrue(waitFor(lambda: ' followed=1 ' in s.state()), s.state())
                # The shell waits for its child meanwhile: 2 ms each.
                self.m.advance(2 * MS)
                self.release(p)
                self.release(p)
                self.assertEqual(self.finish(p)[0], 0)
                self.assertEqual(csvRows(self.outFile())['cycles'][0], expected)
                self.assertNoSession()

    def test_attach_to_threads(self):
        for flag in '-p', '-t':
            with self.subTest(flag=flag):
                target = subprocess.Popen(['sh', '-c', WAITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          text=True)
                self.addCleanup(self.reap, target)
                self.ready(target)
                p = self.start('-x,', '-o', self.out, '-e', 'cycles,instructions', flag, str(target.pid))
                self.waitActive(p)
                self.m.advance(2 * MS)
                self.release(target)
                # It ends by itself when its thread has exited.
                self.assertEqual(self.finish(p)[0], 0)
                rows = csvRows(self.outFile())
                self.assertEqual(rows['cycles'][:2], [6 * MS, 6 * MS])
                self.assertEqual(rows['instructions'][:2], [4 * MS, 4 * MS])
                self.assertNoSession()

    def test_cpus_for_the_duration_of_a_command(self):
        cpus = onlineCpus()
        for args, n in (('-C', '0'), 1), (('-a',), len(cpus)):
            with self.subTest(args=args):
                p = self.start('-x,', '-o', self.out, '-e', 'cycles', *args, 'sh', '-c', WAITER)
                self.ready(p)
                self.m.advance(1 * MS)
                self.release(p)
                self.assertEqual(self.finish(p)[0], 0)
                self.assertEqual(csvRows(self.outFile())['cycles'][:2], [n * 3 * MS, n * 3 * MS])
                self.assertNoSession()

    def test_intervals_add_up(self):
        p = self.start('-x,', '-o', self.out, '-I', '50', '-e', 'cycles', 'sh', '-c', WAITER)
        self.ready(p)
        self.waitActive(p)

        def counts():
            """The count of every whole line printed so far."""
            try:
                text = self.outFile()
            except FileNotFoundError:
                return []
            return [int(line.split(',')[1]) for line in text.split('\n')[:-1] if line.split(',')[2] == 'cycles']

        # Each advance is one step of the clock: the interval printed next
        # holds it whole. The second comes once the first is printed, so
        # that they fall in two intervals however late pfmstat prints; then
        # two intervals more, which counted nothing.
        self.m.advance(1 * MS)
        self.assertTrue(waitFor(lambda: 3 * MS in counts()), counts())
        self.m.advance(2 * MS)
        self.assertTrue(waitFor(lambda: 6 * MS in counts()), counts())
        printed = len(counts())
        self.assertTrue(waitFor(lambda: len(counts()) >= printed + 2), counts())
        self.release(p)
        self.assertEqual(self.finish(p)[0], 0)
        lines = [line.split(',') for line in self.outFile().splitlines()]
        # Each interval's cycles and its ghz metric: 3 GHz where the
        # interval counted, none (an empty value) where no time went by.
        metrics = [fields for fields in lines if fields[2] == 'ghz']
        lines = [fields for fields in lines if fields[2] != 'ghz']
        self.assertEqual([(m[0], m[1]) for m in metrics], [(fields[0], '3' if fields[1] != '0' else '')
                                                           for fields in lines])
        self.assertGreaterEqual(len(lines), 5, lines)
        times = [float(fields[0]) for fields in lines]
        self.assertEqual(times, sorted(times))
        self.assertTrue(all(fields[2] == 'cycles' for fields in lines))
        self.assertEqual(sum(int(fields[1]) for fields in lines), 9 * MS)
        # Two intervals held the two advances; the others counted nothing.
        self.assertEqual(sorted(int(fields[1]) for fields in lines if fields[1] != '0'), [3 * MS, 6 * MS])

    def test_repeat_mean_and_spread(self):
        p = self.start('-x,', '-o', self.out, '-r', '3', '-e', 'cycles', 'sh', '-c', WAITER)
        for k in 1, 2, 3:
            self.ready(p)
            self.m.advance(k * MS)
            self.release(p)
        self.assertEqual(self.finish(p)[0], 0)
        # 3, 6 and 9 million: mean 6, standard deviation of the mean 3/sqrt(3).
        # The metric of the means: 6 million cycles in 2 ms.
        self.assertEqual(self.outFile(), f'{6 * MS},cycles,{6 * MS},{2 * MS},{2 * MS},100.00,28.87\n3,ghz,GHz,exact\n')
        self.assertNoSession()


@simOnly
class RefusalTest(PfmstatTestCase):
    """What cannot be done as asked: one line, exit status 2, no session,
    and the command never ran (it would have made a file)."""

    def refused(self, *args, user=None):
        marker = os.path.join(self.tmp, 'ran')
        status, out, err = self.run_pfmstat(*args, 'touch', marker, user=user)
        self.assertEqual(status, 2, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.sessions(), [])
        return err

    def test_unknown_event(self):
        self.assertEqual(self.refused('-e', 'cycles,NOSUCH'),
                         "pfmstat: unknown event 'NOSUCH' (the mount's pmu/events lists them)\n")

    def test_group_that_does_not_fit(self):
        self.assertIn('does not fit in one event set: this PMU has 4 general and 3 fixed counters',
                      self.refused('-e', '{LLC_MISSES,LLC_REFERENCES,BRANCH_MISSES_RETIRED,SIM_PHASE_A,SIM_PHASE_B}'))

    def test_kernel_level_refused_by_the_mount(self):
        # The mount runs without --allow-kernel: :k is root's. Its reason
        # comes from the session's error file.
        err = self.refused('-e', 'cycles:k', user=TEST_USER)
        self.assertRegex(err, r"^pfmstat: sets/0/regs refused 'pmc16 0x10' \(Operation not permitted\): .*pmc16")

    def test_bad_options(self):
        self.assertEqual(self.refused('-e', '{cycles'), "pfmstat: -e '{cycles': a '{' without its '}'\n")
        self.assertEqual(self.refused('-I', '1'), "pfmstat: -I '1' is out of range (10..3600000)\n")
        self.assertEqual(self.refused('--mount', '/tmp', '-e', 'cycles'),
                         "pfmstat: --mount names '/tmp', which is not a pfmfs mount (no version file)\n")

    def test_command_that_cannot_run(self):
        status, _, err = self.run_pfmstat('-e', 'cycles', os.path.join(self.tmp, 'nosuch'))
        self.assertEqual(status, 127)
        self.assertEqual(err, f"pfmstat: cannot run '{self.tmp}/nosuch': No such file or directory\n")
        self.assertEqual(self.sessions(), [])


@simOnly
class SignalTest(PfmstatTestCase):

    def test_interrupt_reports_and_cleans_up(self):
        # sleep, not the shell's `read`: dash under -c catches SIGINT, and a
        # read it interrupts may return before the shell acts on it.
        p = self.start('-x,', '-o', self.out, '-e', 'cycles', 'sh', '-c', 'echo ready; exec sleep 1000')
        self.ready(p)
        self.waitActive(p)
        # The interrupt for sleep itself, once the shell has become it.
        command = self.commandOf(p)
        self.assertTrue(waitFor(lambda: self.comm(command) == 'sleep'), self.comm(command))
        self.m.advance(1 * MS)
        # kill -INT of pfmstat alone is passed to the command, as a ^C would
        # have reached it; the counts so far are reported.
        p.send_signal(signal.SIGINT)
        self.assertEqual(self.finish(p)[0], 128 + signal.SIGINT)
        self.assertEqual(csvRows(self.outFile())['cycles'][0], 3 * MS)
        self.assertNoSession()

    def test_terminate_while_attached(self):
        target = subprocess.Popen(['sh', '-c', WAITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, target)
        self.ready(target)
        p = self.start('-x,', '-o', self.out, '-e', 'cycles', '-p', str(target.pid))
        self.waitActive(p)
        self.m.advance(1 * MS)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(self.finish(p)[0], 0)
        self.assertEqual(csvRows(self.outFile())['cycles'][0], 3 * MS)
        self.assertNoSession()
        self.assertIsNone(target.poll())  # the attached process runs on

    def test_kill_9_leaves_no_session(self):
        p = self.start('-e', 'cycles', 'sh', '-c', WAITER)
        self.ready(p)
        self.waitActive(p)
        p.kill()
        p.wait(pfmfs_mount.WAIT_S)
        # The session's messages file was pfmstat's with autoclose.
        self.assertNoSession()


@perfOnly
class PerfStatTest(PfmstatTestCase):

    def test_page_faults_agree_with_perf_stat(self):
        # Both count the program from its exec (pfmstat stops it before the
        # exec and has run that code already: no fault of its own in user
        # mode), without address space randomisation (the program's count
        # then does not move from run to run; see test_perf.py).
        if shutil.which('perf') is None:
            if inCi():
                self.fail('perf is not installed (Debian: linux-perf)')
            self.skipTest('perf is not installed')
        argv = [prog('perf_worker'), 'touch', '1000']
        stats = [perfStatPageFaults(self, argv) for _ in range(3)]
        user, both = [u for u, _ in stats], [b for _, b in stats]
        self.assertLessEqual(max(user) - min(user), 2, stats)
        for args in (), ('-i',):
            with self.subTest(args=args):
                p = self.start('-x,', '-o', self.out, '-e', 'page-faults:u,page-faults:u:k', *args, *argv,
                               prefix=NO_ASLR)
                self.assertEqual(self.finish(p)[0], 0)
                rows = csvRows(self.outFile())
                self.assertTrue(min(user) <= rows['page-faults:u'][0] <= max(user), (rows, stats))
                self.assertTrue(min(both) <= rows['page-faults:u:k'][0] <= max(both), (rows, stats))
                self.assertEqual(rows['page-faults:u'][4], '100.00')
                self.assertNoSession()

    def test_multiplexed_sets_scale_as_the_mount_does(self):
        # Two groups on a busy loop's CPU time, switched every ms: each set
        # ran part of the time, and the estimate is the mount's formula.
        p = self.start('-x,', '-o', self.out, '-e', '{task-clock,page-faults}', '-e', '{cpu-clock}',
                       '--switch-ms', '1', 'sh', '-c', 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done')
        self.assertEqual(self.finish(p)[0], 0)
        rows = csvRows(self.outFile())
        self.assertEqual(list(rows), ['task-clock', 'page-faults', 'cpu-clock'])
        for event, (count, scaled, running, enabled, percent) in rows.items():
            self.assertGreater(running, 0, event)
            self.assertLess(running, enabled, event)
            self.assertEqual(scaled, count * enabled // running, event)
            self.assertEqual(percent, f'{100 * running / enabled:.2f}', event)
        self.assertEqual(rows['task-clock'][2], rows['page-faults'][2])  # one set, one running time


if __name__ == '__main__':
    pfmfs_mount.main()
