#!/usr/bin/env python3
# Inheritance through the mount (flags inherit, pfmfs(5) INHERITANCE): a session loaded
# on a process follows the children it creates after the load.
#   - sim (manual clock, exact): a child's counts join `children=` when it
#     exits, the target's own values stay its own; a reprogrammed session
#     drops (and counts) the result of a child created before; the session
#     outlives its target until the last child, then ends with exited=1 and
#     an end message; rmdir, and kill -9 of target and children, leave no
#     session and nothing followed
#   - perf: a shell script running N programs that each touch P fresh pages:
#     value + children of page-faults:u equals `perf stat`'s (which follows
#     children), within the spread of perf stat's own runs measured here;
#     without inherit, value equals `perf stat --no-inherit`'s
#   - x86 (the helper module's test PMU, counting CPU time): children count
#     from their first instruction, threads and grandchildren too, at the
#     test PMU's rate of the CPU time they report; a child born while the
#     session is stopped counts nothing; a child's overflow masks the session
#     with the child's pid and tid; a reprogrammed session drops an older
#     child; the session outlives its target until the last child
#   - every backend: the keys inherit adds to state and counts, and none
#     without it
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

import pfmfs_mount
from pfmfs_mount import (PMU, X86_SLACK_HIGH_NS, X86_TOLERANCE, HiddenTime, MountTestCase, cpuNs, inCi, parseKv,
                         perfOnly, simOnly, waitAsleep, waitFor, x86Only)

NO_ASLR = ['setarch', platform.machine(), '-R']

# The target: one command a line on stdin. `fork` forks a child that waits for
# one byte on fd KIDS_FD (a pipe the test writes) and exits: the test ends
# children one byte at a time. `spin MS` forks a child that first burns MS ms
# of its CPU time and writes `cpu NS` (its CPU time then) to fd REPORT_FD;
# `tree MS` forks a child that forks a grandchild and starts a thread, each
# burning MS ms and reporting, and reports its own main thread's time last.
# `exit` ends the target itself, children or not.
DRIVER = r'''
import os, signal, sys, threading, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
kids_fd, report_fd = int(sys.argv[1]), int(sys.argv[2])

def burn(ms):
    end = time.thread_time_ns() + ms * 1_000_000
    while time.thread_time_ns() < end:
        pass

def report():
    os.write(report_fd, f'cpu {time.thread_time_ns()}\n'.encode())

print('ready', flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] in ('fork', 'spin', 'tree'):
        pid = os.fork()
        if pid == 0:
            if cmd[0] == 'spin':
                burn(int(cmd[1]))
                report()
            elif cmd[0] == 'tree':
                if os.fork() == 0:
                    burn(int(cmd[1]))
                    report()
                    os._exit(0)
                th = threading.Thread(target=lambda: (burn(int(cmd[1])), report()))
                th.start()
                th.join()
                report()
            os.read(kids_fd, 1)
            os._exit(0)
        print(pid, flush=True)
    elif cmd[0] == 'exit':
        break
'''


class Target:
    """A Python process driven by DRIVER; its children end on end()."""

    def __init__(self):
        self.kids_r, self.kids_w = os.pipe()
        self.report_r, self.report_w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, '-c', DRIVER, str(self.kids_r), str(self.report_w)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
                                     pass_fds=[self.kids_r, self.report_w])
        self.reports = os.fdopen(self.report_r, 'r', buffering=1)
        self.pid = self.proc.pid
        self.kids = []
        # Loaded only once Python has started and waits for its first
        # command: its start-up (hundreds of ms of CPU in the QEMU guest)
        # would count, and reach what the tests set for a child.
        assert self.proc.stdout.readline() == 'ready\n'
        waitAsleep(self.pid, self.pid)

    def fork(self, cmd='fork'):
        self.proc.stdin.write(cmd + '\n')
        self.proc.stdin.flush()
        kid = int(self.proc.stdout.readline())
        self.kids.append(kid)
        return kid

    def cpuReports(self, n):
        """The CPU times (ns) that the next n reports give."""
        out = []
        for _ in range(n):
            line = self.reports.readline()
            assert line.startswith('cpu '), repr(line)
            out.append(int(line.split()[1]))
        return out

    def end(self):
        """Ends one child (whichever reads the byte first)."""
        os.write(self.kids_w, b'x')

    def exit(self):
        self.proc.stdin.write('exit\n')
        self.proc.stdin.flush()
        self.proc.wait(10)

    def close(self):
        for kid in self.kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.kids_r, self.kids_w, self.report_w):
            os.close(fd)
        self.reports.close()
        self.proc.stdin.close()
        self.proc.stdout.close()


def alive(pid):
    """Whether pid runs (not a zombie). A process reaped between the open and
    the read is ESRCH: gone too."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (FileNotFoundError, ProcessLookupError):
        return False


class InheritCase(MountTestCase):
    """What the tests of inheritance share: targets, state and counts."""

    def target(self):
        t = Target()
        self.addCleanup(t.close)
        return t

    def stateOf(self, s):
        return parseKv(s.state())

    def countsOf(self, s, set_id=0, pmd=0):
        for line in s.read('counts').splitlines():
            kv = parseKv(line)
            if kv['set'] == str(set_id) and kv['pmd'] == str(pmd):
                return kv
        self.fail(f'no counts line for set {set_id} pmd {pmd}: {s.read("counts")!r}')

    def waitState(self, s, **want):
        ok = waitFor(lambda: all(self.stateOf(s).get(k) == str(v) for k, v in want.items()))
        self.assertTrue(ok, f'state {s.state()!r}, waited for {want}')


class InheritTest(InheritCase):

    def test_keys_only_with_inherit(self):
        t = self.target()
        plain = self.newSession()
        plain.pmc(0, PMU.pmc_a)
        plain.ctl(f'load {t.pid}')
        self.assertNotIn('followed=', plain.state())
        plain.ctl('start')
        self.assertNotIn('children=', plain.read('counts'))
        plain.ctl('unload')
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {t.pid}')
        self.assertTrue(s.state().rstrip('\n').endswith(' followed=0 merged=0 dropped=0'), s.state())
        s.ctl('start')
        kv = self.countsOf(s)
        self.assertEqual(list(kv)[-2:], ['children', 'total_scaled'])
        self.assertEqual(kv['children'], '0')

    @simOnly
    def test_children_counts_are_exact(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)  # cycles: 3 per ns
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        self.m.advance(1000)
        kid = t.fork()
        self.waitState(s, followed=1)
        self.m.advance(2000)
        self.assertEqual(s.readPmd(0), 9000)  # the target's own
        t.end()
        self.waitState(s, followed=0, merged=1)
        # perf reports the exit (the merge) just before the child becomes
        # a zombie: that may take a moment on a busy machine.
        self.assertTrue(waitFor(lambda: not alive(kid), 5.0))
        self.m.advance(1000)
        kv = self.countsOf(s)
        self.assertEqual((kv['value'], kv['children'], kv['scaled'], kv['total_scaled']),
                         ('12000', '6000', '12000', '18000'))

    @simOnly
    def test_reprogrammed_session_drops_older_children(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        t.fork()
        self.waitState(s, followed=1)
        self.m.advance(1000)
        s.pmc(0, PMU.pmc_a)  # a PMC write: a new control
        t.end()
        self.waitState(s, followed=0, merged=0, dropped=1)
        t.fork()
        self.waitState(s, followed=1)
        self.m.advance(1000)
        t.end()
        self.waitState(s, followed=0, merged=1, dropped=1)
        self.assertEqual(self.countsOf(s)['children'], '3000')

    @simOnly
    def test_session_outlives_its_target_until_the_last_child(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        t.fork()
        self.waitState(s, followed=1)
        self.m.advance(1000)
        t.exit()
        # The daemon hears of the exit (pidfd) and says so; until then an
        # advance would move the target too.
        self.waitState(s, state='active', target_exited=1, followed=1)
        self.m.advance(1000)  # the child alone
        t.end()
        self.waitState(s, state='unloaded', exited=1, merged=1)
        kv = self.countsOf(s)
        self.assertEqual((kv['value'], kv['children']), ('3000', '6000'))
        self.assertRegex(s.readMessages(), r'^type=end\b')

    @simOnly
    def test_rmdir_and_kill_leave_nothing_behind(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        kid = t.fork()
        self.waitState(s, followed=1)
        s.destroy()
        self.assertFalse(s.exists())
        self.m.advance(1000)  # nothing is driven for a destroyed session
        self.assertTrue(alive(kid))  # the child itself is untouched
        # kill -9 of target and children while followed: the session ends.
        s2 = self.newSession()
        s2.write('flags', 'inherit\n')
        s2.pmc(0, PMU.pmc_a)
        s2.ctl(f'load {t.pid}')
        s2.ctl('start')
        kids = [t.fork(), t.fork()]
        self.waitState(s2, followed=2)
        for pid in [t.pid] + kids:
            os.kill(pid, signal.SIGKILL)
        t.proc.wait()
        self.waitState(s2, state='unloaded', exited=1, followed=0, merged=2)

    def test_unload_lets_children_go(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        t.fork()
        self.waitState(s, followed=1)
        s.ctl('unload')
        self.waitState(s, state='unloaded', followed=0, dropped=1)


@x86Only
class X86ChildrenTest(InheritCase):
    """Children on the helper module's test PMU, which counts cycles at 3 per
    ns that a thread is on a cpu: a child's count is 3 × the CPU time it
    reports, within X86_TOLERANCE, X86_SLACK_HIGH_NS of the module's and the
    scheduler's clocks apart, and what it runs after its report (a blocked
    read, its exit: AFTER_REPORT_NS at most, in the guest)."""

    manual_clock = False
    BURN_MS = 300
    AFTER_REPORT_NS = 20_000_000

    def inheriting(self, t):
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)  # cycles
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        return s

    def assertCyclesOf(self, counted, reports, hidden):
        cpu = sum(reports)
        low = 3 * cpu * (1 - X86_TOLERANCE) - 3 * len(reports) * X86_SLACK_HIGH_NS
        high = 3 * (cpu * (1 + X86_TOLERANCE) + len(reports) * (X86_SLACK_HIGH_NS + self.AFTER_REPORT_NS) + hidden.ns())
        self.assertTrue(low <= counted <= high, f'{counted} cycles counted for {reports} ns of CPU time')

    def test_children_count_from_their_first_instruction(self):
        t = self.target()
        target_cpu = cpuNs(t.pid)
        s = self.inheriting(t)
        hidden = HiddenTime()
        # pfmfsd stopped: the children burn before it can hear of them, so
        # what they count is what the module started them with.
        os.kill(self.m.proc.pid, signal.SIGSTOP)
        try:
            kids = [t.fork(f'spin {self.BURN_MS}') for _ in range(2)]
            reports = t.cpuReports(2)
        finally:
            os.kill(self.m.proc.pid, signal.SIGCONT)
        self.waitState(s, followed=2)
        t.end()
        t.end()
        self.waitState(s, followed=0, merged=2, dropped=0)
        self.assertFalse(any(alive(k) for k in kids))
        kv = self.countsOf(s)
        self.assertCyclesOf(int(kv['children']), reports, hidden)
        # The target's own count is its own CPU time's (which its forks make
        # large in the guest: their copy-on-write faults), not its children's.
        target_cpu = cpuNs(t.pid) - target_cpu
        self.assertLessEqual(int(kv['value']), 3 * (target_cpu * (1 + X86_TOLERANCE) + X86_SLACK_HIGH_NS + hidden.ns()))

    def test_threads_and_grandchildren(self):
        t = self.target()
        s = self.inheriting(t)
        hidden = HiddenTime()
        t.fork(f'tree {self.BURN_MS}')
        reports = t.cpuReports(3)  # the grandchild, the thread, the child's main thread
        t.end()
        self.waitState(s, followed=0, merged=3, dropped=0)
        self.assertCyclesOf(int(self.countsOf(s)['children']), reports, hidden)

    def test_a_child_born_stopped_counts_from_start(self):
        t = self.target()
        s = self.inheriting(t)
        s.ctl('stop')
        t.fork(f'spin {self.BURN_MS}')
        t.cpuReports(1)
        t.end()
        self.waitState(s, followed=0, merged=1)
        self.assertEqual(self.countsOf(s)['children'], '0')
        s.ctl('start')
        hidden = HiddenTime()
        t.fork(f'spin {self.BURN_MS}')
        reports = t.cpuReports(1)
        t.end()
        self.waitState(s, followed=0, merged=2)
        self.assertCyclesOf(int(self.countsOf(s)['children']), reports, hidden)

    def test_a_childs_overflow_carries_its_pid_and_tid(self):
        t = self.target()
        s = self.newSession()
        s.write('flags', 'inherit\n')
        s.pmc(0, PMU.pmc_a)
        # 500 ms of a child's CPU time: the target, which only forks (a few to
        # 200 ms of CPU time in the guest), never gets there.
        s.pmd(0, '-1500000000 notify')
        s.ctl(f'load {t.pid}')
        s.ctl('start')
        kid = t.fork('spin 1000')
        self.waitState(s, state='masked')
        self.assertOvflLines(s.readMessages(), [(1, kid, kid, 0)])
        s.ctl('restart')
        t.cpuReports(1)
        t.end()
        self.waitState(s, followed=0, merged=1)

    def test_reprogrammed_session_drops_older_children(self):
        t = self.target()
        s = self.inheriting(t)
        t.fork(f'spin {self.BURN_MS // 10}')
        self.waitState(s, followed=1)
        s.pmc(0, PMU.pmc_a)  # a new control
        t.cpuReports(1)
        t.end()
        self.waitState(s, followed=0, merged=0, dropped=1)
        self.assertEqual(self.countsOf(s)['children'], '0')

    def test_session_outlives_its_target_until_the_last_child(self):
        t = self.target()
        s = self.inheriting(t)
        hidden = HiddenTime()
        t.fork(f'spin {self.BURN_MS}')
        self.waitState(s, followed=1)
        t.exit()
        reports = t.cpuReports(1)
        self.assertEqual(self.stateOf(s)['state'], 'active')
        t.end()
        self.waitState(s, state='unloaded', exited=1, merged=1)
        self.assertCyclesOf(int(self.countsOf(s)['children']), reports, hidden)
        self.assertRegex(s.readMessages(), r'^type=end\b')


@perfOnly
class ScriptTest(MountTestCase):
    """A shell script of N programs touching P pages each, on perf."""

    N, P = 4, 300

    def setUp(self):
        if shutil.which('perf') is None:
            if inCi():
                self.fail('perf is not installed (Debian: linux-perf)')
            self.skipTest('perf is not installed')
        progs = os.environ.get('PFMFS_PROGS')
        self.assertTrue(progs, 'PFMFS_PROGS names the test programs')
        self.worker_prog = os.path.join(progs, 'perf_worker')
        self.stop_exec = os.path.join(progs, 'stop_exec')
        self.script = ['/bin/sh', '-c', f'i=0; while [ $i -lt {self.N} ]; do {self.worker_prog} touch {self.P}; '
                       'i=$((i+1)); done']

    def perfStat(self, inherit):
        args = ['perf', 'stat', '-x,', '-e', 'page-faults:u'] + ([] if inherit else ['--no-inherit'])
        p = subprocess.run(NO_ASLR + args + ['--'] + self.script, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        for line in p.stderr.splitlines():
            fields = line.split(',')
            if len(fields) > 2 and fields[2] == 'page-faults:u':
                return int(fields[0])
        self.fail(f'perf stat output: {p.stderr!r}')

    def workloadEnv(self):
        """The environment perf stat gives its command (see test_perf.py)."""
        p = subprocess.run(['perf', 'stat', '-x,', '-e', 'page-faults', '--', 'env', '-0'], capture_output=True,
                           timeout=30)
        return dict(item.split(b'=', 1) for item in p.stdout.split(b'\0') if item)

    def pfmfsCount(self, inherit):
        """(value, children) of page-faults:u for the script, loaded before its
        exec (stop_exec) and read once the session ended."""
        s = self.newSession()
        if inherit:
            s.write('flags', 'inherit\n')
        s.pmc(0, 'PAGE_FAULTS:u')
        proc = subprocess.Popen(NO_ASLR + [self.stop_exec] + self.script, env=self.workloadEnv())
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        self.assertTrue(os.WIFSTOPPED(status), status)
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        os.kill(proc.pid, signal.SIGCONT)
        self.assertEqual(proc.wait(30), 0)
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state(), timeout=10), s.state())
        line = parseKv(s.read('counts').splitlines()[0])
        if inherit:
            self.assertEqual(parseKv(s.state())['merged'], str(self.N))
            return int(line['value']), int(line['children'])
        self.assertNotIn('children', line)
        return int(line['value']), 0

    def assertWithin(self, ours, samples, what):
        # The run-to-run variation of perf stat itself, measured here (at
        # least 2 faults: where the stack falls across a page boundary).
        spread = max(2, max(samples) - min(samples))
        self.assertTrue(min(samples) - spread <= ours <= max(samples) + spread,
                        f'{what}: pfmfs counted {ours}; perf stat {samples}')

    def test_script_with_inherit_matches_perf_stat(self):
        samples = [self.perfStat(inherit=True) for _ in range(5)]
        self.assertGreaterEqual(min(samples), self.N * self.P)
        value, children = self.pfmfsCount(inherit=True)
        self.assertGreaterEqual(children, self.N * self.P)  # the pages the programs touched
        self.assertWithin(value + children, samples, 'value + children')

    def test_script_without_inherit_matches_perf_stat_no_inherit(self):
        samples = [self.perfStat(inherit=False) for _ in range(5)]
        self.assertLess(max(samples), self.P)  # the shell alone
        value, _ = self.pfmfsCount(inherit=False)
        self.assertWithin(value, samples, 'value')


if __name__ == '__main__':
    pfmfs_mount.main()
