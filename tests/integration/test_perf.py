#!/usr/bin/env python3
# The perf backend on this machine (pfmfsd --pmu=perf, the perf-sw model):
# real processes, perf's software events, real time. Every test drives a
# target program (progs/perf_worker.c) one command at a time, so that what it
# does while pfmfs counts is known exactly; counts the kernel makes exact (the
# page faults of a paced program, overflow points, runs of `switch ovfl`) are
# asserted exactly, clocks within a stated tolerance.
#   - page faults of a whole program equal `perf stat -e page-faults`'s (user
#     level and all levels), within the program's own run-to-run spread (none
#     without ASLR); of a touching phase, exact
#   - context switches of a sleeper: >= the sleeps that blocked, and exactly
#     the kernel's count for the thread; task-clock of a busy loop against
#     the thread's own CPU time
#   - two sets multiplexed on task-clock time, the daemon preempting the
#     target: runs, duration_ns (a tick late at most), counts (TASK_CLOCK
#     equal to each set's running time), scaled estimates; an inactive set
#     never counts
#   - overflows on PAGE_FAULTS: notify/restart with long resets, one message
#     per period and their fields, short resets, switch on overflow
#   - system mode on cpu 0 as root; refused to a plain user, who counts their
#     own thread
#   - a monitored thread that exits mid-count
#
# The programs come from $PFMFS_PROGS, else from the build of $PFMFSD
# (BUILD/tests/integration/progs). perf stat comes from $PATH (Debian's
# linux-perf).
import errno
import os
import platform
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time

import pfmfs_mount
from pfmfs_mount import (TEST_USER, HiddenTime, Mount, MountTestCase, daemonPath, inCi, neg, parseKv, runAs, stateLine,
                         userIds, waitFor)

MS = 1_000_000
MSG = struct.Struct('<IIHHIQ5Q')  # pfarg_msg_t

# PERFEVTSEL bits of the perf-sw model: event 7:0 = perf's software event id.
USR = 1 << 16
OS = 1 << 17
PAGE_FAULTS = 0x2

REPLY_TIMEOUT_S = pfmfs_mount.WAIT_S  # a command's reply (a burn of 600 ms of CPU time at most)
# The kernel's default timer slack of a thread (prctl(PR_SET_TIMERSLACK)):
# how much later than asked the engine's timer thread may wake for a tick.
TIMER_SLACK_NS = 50_000

NO_ASLR = ['setarch', platform.machine(), '-R']  # util-linux


def progsDir():
    path = os.environ.get('PFMFS_PROGS')
    if path:
        return path
    daemon = daemonPath()
    if daemon is None:
        return None
    build = os.path.dirname(os.path.dirname(os.path.abspath(daemon)))
    return os.path.join(build, 'tests', 'integration', 'progs')


def prog(name):
    return os.path.join(progsDir(), name)


TARGET_CPU = max(os.sched_getaffinity(0))


def targetCpu():
    """The cpu the workers are pinned to: the last one, so that message cpus
    and per-cpu counts are known; the test and the daemon keep off it
    (keepOff) where there is another."""
    return TARGET_CPU


class Worker:
    """progs/perf_worker: one command a line on its stdin, one `ok k=v ...`
    line back (see the program's header). Warmed up before it says ready: a
    command then faults on exactly the pages it touches."""

    def __init__(self, cpu=None, user=None):
        args = [prog('perf_worker')]
        if cpu is not None:
            args += ['-c', str(cpu)]
        kwargs = {}
        if user is not None:
            uid, gid = userIds(user)
            kwargs = dict(user=uid, group=gid, extra_groups=[])
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, **kwargs)
        self._buf = b''
        ready = self._line()
        m = re.fullmatch(r'ready pid=(\d+) tid=(\d+)', ready)
        if not m:
            raise AssertionError(f'perf_worker: {ready!r}')
        self.pid, self.tid = int(m.group(1)), int(m.group(2))

    def _line(self):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while b'\n' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError(f'perf_worker {self.proc.pid}: no reply in {REPLY_TIMEOUT_S} s')
            chunk = os.read(fd, 4096)
            if not chunk:
                raise AssertionError(f'perf_worker {self.proc.pid} exited ({self.proc.wait()})')
            self._buf += chunk
        line, self._buf = self._buf.split(b'\n', 1)
        return line.decode()

    def send(self, command):
        """Sends a command without waiting for its reply (see reply())."""
        self.proc.stdin.write(command.encode() + b'\n')

    def replied(self):
        return b'\n' in self._buf or bool(select.select([self.proc.stdout.fileno()], [], [], 0)[0])

    def reply(self):
        line = self._line()
        if not line.startswith('ok'):
            raise AssertionError(f'perf_worker: {line!r}')
        return {k: int(v) for k, v in parseKv(line[2:]).items()}

    def cmd(self, command):
        self.send(command)
        return self.reply()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send('q')
                self.proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()


def textMappings(pid, path):
    """The executable mappings of `path` in process pid: [(start, end)]."""
    real = os.path.realpath(path)
    spans = []
    with open(f'/proc/{pid}/maps') as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and 'x' in fields[1] and os.path.realpath(fields[5]) == real:
                start, end = (int(x, 16) for x in fields[0].split('-'))
                spans.append((start, end))
    return spans


def processCpuNs(pid):
    """Process pid's CPU time to the ns, also while it runs: its CPU-time
    clock (CPUCLOCK_SCHED), which the kernel brings up to date when read
    (schedstat lags up to a tick behind a running thread). A worker that
    started no thread: its thread's. (Another process's thread clock is
    not for us to read.)"""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


class ThreadSnapshot:
    """A thread's own accounts, read from /proc while it is blocked (so that
    they are final up to that point): its context switches (voluntary and
    not: what rusage's nvcsw + nivcsw count) and its CPU time (schedstat's
    sum_exec_runtime: what CLOCK_THREAD_CPUTIME_ID reads)."""

    def __init__(self, pid, tid):
        self.base = f'/proc/{pid}/task/{tid}'
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        # Blocked ('S') and off its cpu: a read of /proc/.../syscall returns
        # only once a sleeping thread has been switched out (the kernel's
        # wait_task_inactive), and says 'running' if it woke meanwhile. The
        # same accounts before and after that read: it did not run between,
        # and its switch out is done and counted.
        while True:
            now = self._read()
            if now[0] == 'S' and self._offCpu() and self._read() == now:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f'thread {tid} not blocked: {now}')
            time.sleep(0.001)
        _, self.switches, self.cpu_ns = now

    def _offCpu(self):
        with open(f'{self.base}/syscall') as f:
            return f.read().split()[0] != 'running'

    def _read(self):
        with open(f'{self.base}/stat') as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        switches = 0
        with open(f'{self.base}/status') as f:
            for line in f:
                if line.startswith(('voluntary_ctxt_switches:', 'nonvoluntary_ctxt_switches:')):
                    switches += int(line.split()[1])
        with open(f'{self.base}/schedstat') as f:
            cpu_ns = int(f.read().split()[0])
        return state, switches, cpu_ns


# perf's task-clock runs from the moment the scheduler switches a thread in to
# the moment it switches it out, a little more than the thread's CPU time
# (about 2 us a switch on this VM); a thread preempted thousands of times (a
# loaded machine) gets that much more.
SWITCH_NS = 5_000


def clockSlack(cpu_ns, before, after, hidden):
    """How far a task-clock count may be from the thread's CPU time cpu_ns
    between two ThreadSnapshots: 5%, the switches' share and the cpu's
    hidden time (HiddenTime)."""
    return cpu_ns * 0.05 + (after.switches - before.switches) * SWITCH_NS + hidden.ns()


class DaemonTime:
    """How long, since construction, the daemon can have kept a running
    target waiting on it: the CPU time of all its threads (exited ones
    too), the time its threads waited for a cpu (schedstat's run_delay, of
    the threads alive at both ends: the FUSE workers and the engine's
    threads stay), and the cpus' interrupt and steal time. The kernel's own
    accounts: the sum grows with whatever kept the daemon from running."""

    def __init__(self, pid):
        self.pid = pid
        self.hidden = HiddenTime()
        self.cpu0, self.waits0 = self._read()

    def _read(self):
        cpu = time.clock_gettime_ns(((~self.pid) << 3) | 2)  # CPUCLOCK_SCHED of the process
        waits = {}
        for tid in os.listdir(f'/proc/{self.pid}/task'):
            try:
                with open(f'/proc/{self.pid}/task/{tid}/schedstat') as f:
                    waits[tid] = int(f.read().split()[1])
            except FileNotFoundError:
                pass
        return cpu, waits

    def ns(self):
        cpu, waits = self._read()
        waited = sum(ns - self.waits0.get(tid, 0) for tid, ns in waits.items())
        return (cpu - self.cpu0) + waited + self.hidden.ns()


def preempting(pid, cpu):
    """Puts every thread of process pid (the daemon) on `cpu`, the target's,
    in SCHED_FIFO (threads it creates meanwhile inherit both): whenever one
    of them has work it runs at once, and the target, a normal thread, does
    not run until it is done. Every read of the target's clock and every
    ioctl of a set switch then falls at one instant of the target's time.
    Returns a function that puts the threads back (normal, off the cpu as
    keepOff left them), or None where the kernel refuses real time (a
    cgroup without a real-time budget): then nothing was changed."""
    tids = [int(tid) for tid in os.listdir(f'/proc/{pid}/task')]
    before = {tid: os.sched_getaffinity(tid) for tid in tids}
    try:
        for tid in tids:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(1))
    except PermissionError:
        for tid in tids:
            os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        return None
    for tid in tids:
        os.sched_setaffinity(tid, {cpu})

    def back():
        for tid in os.listdir(f'/proc/{pid}/task'):
            try:
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))
                os.sched_setaffinity(int(tid), before.get(int(tid), before[pid]))
            except ProcessLookupError:
                pass
    return back


class PerfMount(Mount):
    """pfmfsd -f --pmu=perf --perf-model=sw -o allow_other TMP/mnt, whatever
    the suite's $PFMFS_BACKEND: these tests are the perf backend's own, on
    perf's software events (there on machines with a hardware PMU too)."""

    def command(self):
        return [daemonPath(), '-f', '--pmu=perf', '--perf-model=sw', '-o', 'allow_other'] + list(
            self.extra_args) + [self.mnt]


def keepOff(cpu, pids):
    """Moves every thread of `pids` off `cpu`, where a worker then runs
    alone: nothing of the test or the daemon preempts it (a thread created
    later inherits its creator's cpus). Nothing to do on a single cpu."""
    others = set(os.sched_getaffinity(0)) - {cpu}
    if not others:
        return
    for pid in pids:
        for tid in os.listdir(f'/proc/{pid}/task'):
            try:
                os.sched_setaffinity(int(tid), others)
            except ProcessLookupError:
                pass


class PerfTestCase(MountTestCase):

    @classmethod
    def setUpClass(cls):
        cls.m = PerfMount(cls.mount_args).start()
        keepOff(targetCpu(), [os.getpid(), cls.m.proc.pid])
        info = cls.m.read('pmu/info')
        if not info.startswith('backend=perf model=perf-sw '):
            m, cls.m = cls.m, None
            m.close()
            raise AssertionError(f'pmu/info of pfmfsd --pmu=perf: {info!r} (expected backend=perf model=perf-sw)')

    def worker(self, cpu=None, user=None):
        w = Worker(targetCpu() if cpu is None else cpu, user)
        self.addCleanup(w.close)
        return w

    def stateOf(self, s):
        return parseKv(s.state())

    def countsOf(self, s):
        """counts as {(set, pmd): {key: value}}."""
        out = {}
        for line in s.read('counts').splitlines():
            kv = parseKv(line)
            out[(int(kv['set']), int(kv['pmd']))] = kv
        return out

    def infoOf(self, s, set_id):
        return parseKv(s.read(f'sets/{set_id}/info'))


def perfStatPageFaults(test, argv):
    """`perf stat -x, -e page-faults:u,page-faults -- argv` without ASLR:
    the counts (user level, all levels)."""
    p = subprocess.run(NO_ASLR + ['perf', 'stat', '-x,', '-e', 'page-faults:u,page-faults', '--'] + argv,
                       capture_output=True, text=True, timeout=pfmfs_mount.WAIT_S)
    test.assertEqual(p.returncode, 0, p.stderr)
    counts = {}
    for line in p.stderr.splitlines():
        fields = line.split(',')
        if len(fields) > 2 and fields[2] in ('page-faults:u', 'page-faults'):
            counts[fields[2]] = int(fields[0])
    test.assertEqual(len(counts), 2, f'perf stat output: {p.stderr!r}')
    return counts['page-faults:u'], counts['page-faults']


class PageFaultTest(PerfTestCase):

    def perfStat(self, argv):
        return perfStatPageFaults(self, argv)

    def perfWorkloadEnv(self):
        """The environment perf stat gives the program it runs (it adds to
        ours): the same variables at the same places on the stack."""
        p = subprocess.run(['perf', 'stat', '-x,', '-e', 'page-faults', '--', 'env', '-0'], capture_output=True,
                           timeout=pfmfs_mount.WAIT_S)
        self.assertEqual(p.returncode, 0, p.stderr)
        return dict(item.split(b'=', 1) for item in p.stdout.split(b'\0') if item)

    def test_whole_program_page_faults_match_perf_stat(self):
        # What is compared: the page faults of `perf_worker touch N` from its
        # exec to its exit. perf stat counts exactly that (enable_on_exec; the
        # program has no threads). pfmfs is loaded on progs/stop_exec, stopped
        # before it execs the same command line with the same environment,
        # and started before the SIGCONT: it counts the same span plus
        # stop_exec's faults between the SIGCONT and the exec, none in user
        # mode (see stop_exec.c) and none seen in kernel mode.
        #
        # Both run without address space randomisation (setarch -R): with it
        # the program's own count moves by a few faults from run to run (where
        # the stack, the environment and the loader's mappings fall across
        # page boundaries); without it, it does not move at all here, and the
        # test checks that it moves by 2 at most. pfmfs's count must lie
        # within what perf stat counted: no slack.
        if shutil.which('perf') is None:
            if inCi():
                self.fail('perf is not installed (Debian: linux-perf)')
            self.skipTest('perf is not installed')
        n = 1000
        argv = [prog('perf_worker'), 'touch', str(n)]
        stats = [self.perfStat(argv) for _ in range(3)]
        user = [u for u, _ in stats]
        both = [b for _, b in stats]
        self.assertGreaterEqual(min(user), n)
        self.assertLessEqual(max(user) - min(user), 2, f'perf stat counts vary: {stats}')

        s = self.newSession()
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, f'{PAGE_FAULTS | USR | OS:#x}')
        proc = subprocess.Popen(NO_ASLR + [prog('stop_exec')] + argv, env=self.perfWorkloadEnv())
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        self.assertTrue(os.WIFSTOPPED(status), status)
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        self.assertEqual((s.readPmd(0), s.readPmd(1)), (0, 0))
        os.kill(proc.pid, signal.SIGCONT)
        self.assertEqual(proc.wait(pfmfs_mount.WAIT_S), 0)
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()), s.state())
        count_user, count_both = s.readPmd(0), s.readPmd(1)
        self.assertTrue(min(user) <= count_user <= max(user),
                        f'pfmfs counted {count_user} user page faults; perf stat -e page-faults:u {user}')
        self.assertTrue(min(both) <= count_both <= max(both),
                        f'pfmfs counted {count_both} page faults; perf stat -e page-faults {both}')

    def test_touching_phase_is_exact(self):
        # Loaded while the warmed-up worker waits for a command: every user
        # page fault in the window is one of its touches.
        w = self.worker()
        s = self.newSession()
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, 'minor-faults')  # case and '-' for '_' accepted; :u by default
        s.pmc(2, 'MAJOR_FAULTS:u')
        s.pmc(3, 'PAGE_FAULTS:k')  # kernel mode only: the worker's syscalls touch warm memory
        s.pmc(4, f'{PAGE_FAULTS | USR | OS:#x}')
        self.assertEqual(s.read('sets/0/pmc1'), f'{0x5 | USR:#x}\n')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', target=w.tid))
        self.assertEqual([s.readPmd(k) for k in range(5)], [0] * 5)
        self.assertEqual(w.cmd('t 300')['minflt'], 300)
        self.assertEqual([s.readPmd(k) for k in range(5)], [300, 300, 0, 0, 300])
        self.assertEqual(w.cmd('t 45')['minflt'], 45)
        s.ctl('stop')
        self.assertEqual(w.cmd('t 10')['minflt'], 10)  # stopped: not counted
        self.assertEqual([s.readPmd(k) for k in range(5)], [345, 345, 0, 0, 345])
        counts = self.countsOf(s)
        self.assertEqual(sorted(counts), [(0, k) for k in range(5)])
        self.assertEqual(counts[(0, 0)]['value'], '345')
        self.assertEqual(counts[(0, 0)]['scaled'], '345')  # one set: running == enabled
        s.ctl('start')
        self.assertEqual(w.cmd('t 5')['minflt'], 5)
        self.assertEqual(s.readPmd(0), 350)
        # A PMD written while loaded and active takes effect at once.
        s.pmd(0, '1000')
        self.assertEqual(w.cmd('t 7')['minflt'], 7)
        self.assertEqual(s.readPmd(0), 1007)
        s.ctl('unload')
        self.assertEqual(s.readPmd(0), 1007)


def sleepBlocking(w, k, us):
    """Has worker w sleep `us` microseconds at a time until k of its sleeps
    have blocked it (k voluntary context switches). A sleep whose timer
    expires before the thread is switched out (its cpu taken away by the
    host, or by a preemption, at that moment) does not block: more sleeps
    then. Returns the thread's own account of the context switches during
    the sleeps (rusage): {'nvcsw': >= k, 'nivcsw': ...}."""
    total = {'nvcsw': 0, 'nivcsw': 0}
    deadline = time.monotonic() + pfmfs_mount.WAIT_S
    while total['nvcsw'] < k:
        if time.monotonic() > deadline:
            raise AssertionError(f'perf_worker {w.pid}: {total["nvcsw"]} of {k} sleeps blocked')
        r = w.cmd(f's {k - total["nvcsw"]} {us}')
        for key in total:
            total[key] += r[key]
    return total


class ClockAndSwitchTest(PerfTestCase):

    def test_context_switches_of_a_sleeper(self):
        k = 25
        w = self.worker()
        s = self.newSession()
        s.pmc(0, 'CONTEXT_SWITCHES:k')
        # perf counts a context switch in the kernel (the scheduler's own
        # registers): user level alone sees none, as `perf stat -e
        # context-switches:u` shows.
        s.pmc(1, 'CONTEXT_SWITCHES:u')
        s.ctl(f'load {w.tid}')
        # Started and stopped while the worker is blocked in read(): the
        # window holds exactly the switches the kernel counted for the thread
        # between the two snapshots (its sleeps, its blocks in read() between
        # commands, and any preemption).
        before = ThreadSnapshot(w.pid, w.tid)
        s.ctl('start')
        slept = sleepBlocking(w, k, 1000)
        after = ThreadSnapshot(w.pid, w.tid)
        s.ctl('stop')
        count = s.readPmd(0)
        self.assertEqual(count, after.switches - before.switches)
        # At least the switches the thread counted during its sleeps (k of
        # them voluntary), and its block in read() after the last answer.
        self.assertGreaterEqual(count, slept['nvcsw'] + slept['nivcsw'] + 1, slept)
        self.assertGreaterEqual(count, k + 1)
        self.assertEqual(s.readPmd(1), 0)

    def test_task_clock_of_a_busy_loop(self):
        w = self.worker()
        s = self.newSession()
        s.pmc(0, 'TASK_CLOCK')
        s.ctl(f'load {w.tid}')
        before = ThreadSnapshot(w.pid, w.tid)
        hidden = HiddenTime(targetCpu())
        s.ctl('start')
        r = w.cmd('b 300')
        after = ThreadSnapshot(w.pid, w.tid)
        s.ctl('stop')
        cpu = after.cpu_ns - before.cpu_ns  # the thread's CPU time between start and stop
        self.assertGreaterEqual(cpu, r['end_ns'] - r['start_ns'])
        self.assertGreaterEqual(r['end_ns'] - r['start_ns'], 300 * MS)
        slack = clockSlack(cpu, before, after, hidden)
        count = s.readPmd(0)
        self.assertLessEqual(abs(count - cpu), slack, f'TASK_CLOCK {count} ns, the thread ran {cpu} ns')
        line = self.countsOf(s)[(0, 0)]
        self.assertEqual(int(line['value']), count)
        # The session's time is the thread's CPU time (docs/design.md, "Time").
        self.assertLessEqual(abs(int(line['enabled_ns']) - cpu), slack, line)
        self.assertEqual(line['enabled_ns'], line['running_ns'])


class MultiplexTest(PerfTestCase):

    def test_two_sets_on_task_clock_time(self):
        timeout = 20 * MS
        tick = int(parseKv(self.m.read('pmu/info'))['tick_ns'])
        w = self.worker()
        s = self.newSession()
        s.mkset(1)
        for set_id in (0, 1):
            s.write(f'sets/{set_id}/switch', f'time {timeout}\n')
        # Each set is a perf group led by its lowest counter: TASK_CLOCK leads
        # set 0; in set 1 it follows PAGE_FAULTS (which stays 0: the burn
        # touches no new page). A member must count as well as a leader.
        clock = {0: 0, 1: 1}  # the TASK_CLOCK pmd of each set
        s.pmc(0, 'TASK_CLOCK', 0)
        s.pmc(0, 'PAGE_FAULTS', 1)
        s.pmc(1, 'TASK_CLOCK', 1)
        self.assertEqual(int(self.infoOf(s, 1)['timeout_ns']), timeout)  # a whole number of ticks
        s.ctl(f'load {w.tid}')
        self.checkRunsAndCounts(s, w, timeout, tick, clock)
        self.checkWindows(s, w, clock)

    def checkRunsAndCounts(self, s, w, timeout, tick, clock):
        # A burn of 600 ms of the thread's time, started and stopped while
        # it is blocked, and nothing read meanwhile: every switch is the
        # timer thread's. It comes at the first tick after the set's time is
        # up, reads the thread's clock (the run's end, the next run's start),
        # then disables one group and enables the other. The daemon runs
        # preempting the thread meanwhile (preempting()): the thread's time
        # stands still from that read to the last ioctl, and moves by at
        # most a tick and the timer's slack from the end of a set's time to
        # the tick that ends its run. Where the kernel refuses that, each
        # also allows what the daemon's CPU time and waits for a cpu can have
        # let the thread run (DaemonTime).
        before = ThreadSnapshot(w.pid, w.tid)
        hidden = HiddenTime(targetCpu())
        daemon = DaemonTime(self.m.proc.pid)
        back = preempting(self.m.proc.pid, targetCpu())
        try:
            s.ctl('start')
            r = w.cmd('b 600')
            after = ThreadSnapshot(w.pid, w.tid)
            s.ctl('stop')
        finally:
            if back is not None:
                back()
        # What the thread ran while the daemon was between reading its clock
        # and an ioctl: none while the daemon preempts it.
        apart = 0 if back else daemon.ns()
        cpu = after.cpu_ns - before.cpu_ns  # the thread's CPU time while the session was active
        self.assertGreaterEqual(cpu, r['end_ns'] - r['start_ns'])
        self.assertGreaterEqual(r['end_ns'] - r['start_ns'], 600 * MS)
        slack = clockSlack(cpu, before, after, hidden)

        info = [self.infoOf(s, i) for i in (0, 1)]
        runs = [int(i['runs']) for i in info]
        durations = [int(i['duration_ns']) for i in info]
        last = int(self.stateOf(s)['set'])  # the set that was active at the stop
        where = f'{info}' + ('' if back else f', the daemon late by {apart} ns at most (not in real time)')
        # Round robin from set 0: set 0 has run once more than set 1 or as
        # often, and set 1 has run (600 ms hold 30 timeouts).
        self.assertGreaterEqual(runs[1], 1, where)
        self.assertIn(runs[0] - runs[1], (0, 1), where)
        self.assertEqual(last, 0 if runs[0] > runs[1] else 1, where)
        # Every run but the last lasted at least the timeout, and at most a
        # tick and the timer's slack more (and the thread's cpu's interrupt
        # and steal time, which its clock counts while the timer cannot
        # fire).
        late = hidden.ns() + apart
        for i in (0, 1):
            complete = runs[i] - (1 if i == last else 0)
            self.assertGreaterEqual(durations[i], complete * timeout, where)
            self.assertLessEqual(durations[i], runs[i] * (timeout + tick + TIMER_SLACK_NS) + late, where)
        self.assertLessEqual(abs(sum(durations) - cpu), slack,
                             f'duration_ns {durations} against {cpu} ns of CPU time')

        counts = self.countsOf(s)
        self.assertEqual(sorted(counts), [(0, 0), (1, 0), (1, 1)])
        self.assertEqual(counts[(1, 0)]['value'], '0')
        enabled = int(counts[(0, 0)]['enabled_ns'])
        self.assertEqual(sum(durations), enabled)
        for i in (0, 1):
            line = counts[(i, clock[i])]
            self.assertEqual(int(line['enabled_ns']), enabled)
            self.assertEqual(int(line['running_ns']), durations[i])
            value = int(line['value'])
            self.assertEqual(value, s.readPmd(clock[i], i))
            # TASK_CLOCK counts the set's own CPU time: its runs' duration,
            # to the ns (the same clock, read at the same instants)...
            self.assertLessEqual(abs(value - durations[i]), apart, (i, line, where))
            # ...and scaled to the whole session, the thread's.
            self.assertEqual(int(line['scaled']), value * enabled // durations[i])
            self.assertLessEqual(abs(int(line['scaled']) - cpu), apart * enabled // durations[i] + slack + 1,
                                 (i, line, cpu, where))

    def checkWindows(self, s, w, clock):
        # While the worker burns: two reads of `counts` with no switch between
        # them (the runs of both sets and the active set unchanged around
        # them). The inactive set's count and running time stay as they
        # were; the session's time (enabled_ns, on every line) and the active
        # set's running time grow by the same amount; and where the thread
        # ran between the two reads (its CPU clock, read just after the first
        # and just before the second, moved) the active set counted. Until
        # each set has been seen counting in 3 such windows: how many windows
        # that takes depends on how the reads and the switches fall.
        s.ctl('start')
        queued = 2  # one burn queued behind the other: the thread never waits for a command
        for _ in range(queued):
            w.send('b 200')
        busy = {0: 0, 1: 0}
        windows = 0
        deadline = time.monotonic() + pfmfs_mount.WAIT_S
        while min(busy.values()) < 3:
            self.assertLess(time.monotonic(), deadline, f'{windows} windows, of which busy in each set: {busy}')
            while w.replied():
                w.reply()
                w.send('b 200')
            runs0 = (self.infoOf(s, 0)['runs'], self.infoOf(s, 1)['runs'])
            active0 = self.stateOf(s)['set']
            c0 = self.countsOf(s)
            t0 = processCpuNs(w.pid)
            # The window: until the thread has run 2 ms more, or 20 ms have
            # passed (its cpu taken by others meanwhile).
            waitFor(lambda: processCpuNs(w.pid) - t0 >= 2 * MS, timeout=0.02, interval=0.001)
            t1 = processCpuNs(w.pid)
            c1 = self.countsOf(s)
            active1 = self.stateOf(s)['set']
            runs1 = (self.infoOf(s, 0)['runs'], self.infoOf(s, 1)['runs'])
            if runs0 != runs1 or active0 != active1:
                continue  # a switch fell inside: no conclusion
            windows += 1
            active = int(active0)
            inactive = 1 - active
            delta = lambda key, set_id: (int(c1[(set_id, clock[set_id])][key])  # noqa: E731
                                         - int(c0[(set_id, clock[set_id])][key]))
            self.assertEqual((delta('value', inactive), delta('running_ns', inactive)), (0, 0),
                             f'set {inactive} counted while inactive: {c0} then {c1}')
            grown = delta('enabled_ns', active)
            self.assertEqual(delta('enabled_ns', inactive), grown)
            self.assertEqual(delta('running_ns', active), grown, (c0, c1))
            self.assertEqual(c1[(1, 0)]['value'], '0')  # no page faults
            if t1 > t0:
                self.assertGreater(grown, 0, f'the session\'s time stood while the thread ran: {c0} {c1}')
                self.assertGreater(delta('value', active), 0, f'set {active} did not count while active: {c0} {c1}')
                busy[active] += 1
        for _ in range(queued):
            w.reply()
        s.ctl('stop')


class OverflowTest(PerfTestCase):

    def pace(self, s, touch, n, on_mask=None):
        """Touches n pages one at a time (`touch()` does one and waits for the
        ack); after each, reads `state`, which makes the engine take a pending
        overflow. Returns the touch numbers after which the session was
        masked; on_mask(i) handles each (reads the message, restarts)."""
        masked_at = []
        for i in range(1, n + 1):
            touch()
            state = self.stateOf(s)
            if state['state'] == 'masked':
                masked_at.append(i)
                if on_mask is not None:
                    on_mask(i)
            else:
                self.assertEqual(state['state'], 'active', state)
        return masked_at

    def checkOvflMessage(self, line, seq, w, tid, cpu):
        kv = parseKv(line)
        self.assertEqual(list(kv), ['type', 'seq', 'set', 'pmds', 'pid', 'tid', 'cpu', 'ip'], line)
        self.assertEqual((kv['type'], kv['seq'], kv['set'], kv['pmds']), ('ovfl', str(seq), '0', '0x1'), line)
        self.assertEqual((int(kv['pid']), int(kv['tid'])), (w.pid, tid), line)
        self.assertEqual(int(kv['cpu']), cpu, line)
        return int(kv['ip'], 16)

    def assertIpInWorker(self, ip, w):
        # PAGE_FAULTS:u samples the faulting user instruction: a store in
        # perf_worker's touch loop.
        spans = textMappings(w.pid, prog('perf_worker'))
        self.assertTrue(any(a <= ip < b for a, b in spans), f'ip {ip:#x} not in perf_worker text {spans}')

    def test_notify_one_message_per_period(self):
        # The second thread of the worker is the target: pid != tid.
        p, n = 5, 23
        cpu = targetCpu()
        w = self.worker(cpu)
        tid = w.cmd('thread')['tid']
        self.assertNotEqual(tid, w.pid)
        s = self.newSession()
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmd(0, f'-{p} long_reset=-{p} notify')
        s.ctl(f'load {tid}')
        s.ctl('start')
        seq = [0]

        def onMask(i):
            seq[0] += 1
            self.assertEqual(s.state(), stateLine('masked', target=tid, queued=1))
            self.assertEqual(s.readPmd(0), 0)  # wrapped
            self.assertEqual(self.infoOf(s, 0)['ovfl_pmds'], '0x1')
            if seq[0] == 2:  # one as a pfarg_msg_t record
                record = MSG.unpack(s.readMsg())
                # msg_ovfl_pid holds the thread id, msg_ovfl_tid the process id (pfmfs(5), msg).
                self.assertEqual(record[:5], (1, tid, 0, cpu, w.pid))
                self.assertEqual(record[6:], (0x1, 0, 0, 0, 0))
                ip = record[5]
            else:
                text = s.readMessages()
                self.assertEqual(len(text.splitlines()), 1, text)
                ip = self.checkOvflMessage(text, seq[0], w, tid, cpu)
            self.assertIpInWorker(ip, w)
            self.assertEqual(s.state(), stateLine('masked', target=tid))
            s.ctl('restart')
            self.assertEqual(s.readPmd(0), neg(p))

        masked_at = self.pace(s, lambda: self.assertEqual(w.cmd('tt 1')['minflt'], 1), n, onMask)
        self.assertEqual(masked_at, [5, 10, 15, 20])
        self.assertEqual(len(masked_at), n // p)
        self.assertEqual(s.readPmd(0), neg(p) + n % p)
        self.assertEqual(s.state(), stateLine('active', target=tid))
        self.assertErrno(errno.EAGAIN, s.readMessages)
        self.assertErrno(errno.EBUSY, s.ctl, 'restart')

    def test_notify_long_reset_and_nothing_counts_while_masked(self):
        w = self.worker()
        s = self.newSession()
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, 'PAGE_FAULTS:u')  # a plain counter beside it
        s.pmd(0, '-3 long_reset=-7 notify')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        touch = lambda: self.assertEqual(w.cmd('t 1')['minflt'], 1)  # noqa: E731

        def onMask(i):
            if i == 3:
                # Masked: the counters are off until restart, as on perfmon2.
                for _ in range(4):
                    touch()
                self.assertEqual(s.state(), stateLine('masked', target=w.tid, queued=1))
                self.assertEqual((s.readPmd(0), s.readPmd(1)), (0, 3))
            self.assertTrue(s.readMessages().startswith('type=ovfl '))
            s.ctl('restart')
            self.assertEqual(s.readPmd(0), neg(7))
            self.assertEqual(self.stateOf(s)['state'], 'active')

        masked_at = self.pace(s, touch, 20, onMask)
        self.assertEqual(masked_at, [3, 10, 17])  # 3 first, then every 7
        self.assertEqual(s.readPmd(0), neg(7) + 3)
        self.assertEqual(s.readPmd(1), 20)

    def test_short_reset_without_notify(self):
        p, n = 4, 18
        w = self.worker()
        s = self.newSession()
        s.pmc(0, f'{PAGE_FAULTS | USR:#x}')
        s.pmc(1, f'{PAGE_FAULTS | USR:#x}')
        s.pmd(0, f'-{p} short_reset=-{p} long_reset=-100')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        values = []

        def touch():
            self.assertEqual(w.cmd('t 1')['minflt'], 1)

        for i in range(1, n + 1):
            touch()
            self.assertEqual(s.state(), stateLine('active', target=w.tid))
            values.append(s.readPmd(0))
        # Each overflow resets the PMD to -P at once: it runs -3 -2 -1 -4 ...
        self.assertEqual(values, [neg(p) + i % p for i in range(1, n + 1)])
        self.assertEqual(s.readPmd(1), n)
        self.assertEqual(self.infoOf(s, 0)['ovfl_pmds'], '0x1')
        # Unpaced, the same: perf reloads a software event's period in the
        # fault itself, so five overflows inside one command lose nothing.
        self.assertEqual(w.cmd('t 21')['minflt'], 21)
        self.assertEqual(s.readPmd(0), neg(p) + (n + 21) % p)
        self.assertEqual(s.readPmd(1), n + 21)
        self.assertEqual(s.state(), stateLine('active', target=w.tid))
        self.assertErrno(errno.EAGAIN, s.readMessages)

    def test_switch_on_overflow_counts_runs(self):
        p, n = 3, 20
        w = self.worker()
        s = self.newSession()
        s.mkset(1)
        for set_id in (0, 1):
            s.write(f'sets/{set_id}/switch', 'ovfl\n')
            s.pmc(0, 'PAGE_FAULTS:u', set_id)
            s.pmc(1, 'PAGE_FAULTS:u', set_id)
            s.pmd(0, f'-{p} short_reset=-{p} switch_cnt=1', set_id)
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        expected_counts = [0, 0]
        active = 0
        for i in range(1, n + 1):
            self.assertEqual(w.cmd('t 1')['minflt'], 1)
            expected_counts[active] += 1
            if i % p == 0:
                active = 1 - active
            self.assertEqual(s.state(), stateLine('active', target=w.tid, set_id=active), f'after touch {i}')
        k = n // p  # overflows, one switch each
        runs = [int(self.infoOf(s, i)['runs']) for i in (0, 1)]
        self.assertEqual(runs, [1 + k // 2, (k + 1) // 2])
        self.assertEqual(sum(runs), 1 + k)
        self.assertEqual([s.readPmd(1, i) for i in (0, 1)], expected_counts)
        # The active set's counter is n % p past its reset; the other was reset.
        self.assertEqual(s.readPmd(0, active), neg(p) + n % p)
        self.assertEqual(s.readPmd(0, 1 - active), neg(p))
        self.assertErrno(errno.EAGAIN, s.readMessages)


class SystemModeTest(PerfTestCase):

    def test_root_counts_cpu_0(self):
        cpu = 0
        s = self.newSession()
        s.write('mode', 'system\n')
        s.pmc(0, 'CPU_CLOCK:u')
        s.pmc(1, 'CONTEXT_SWITCHES:k')
        s.pmc(2, 'PAGE_FAULTS:u')
        s.ctl(f'load {cpu}')
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', mode='system', target=cpu))
        # CPU_CLOCK of a cpu counts wall time: between two reads, the time
        # between them, within the reads' own duration.
        t0 = time.monotonic_ns()
        v0 = s.readPmd(0)
        t1 = time.monotonic_ns()
        time.sleep(0.2)
        t2 = time.monotonic_ns()
        v1 = s.readPmd(0)
        t3 = time.monotonic_ns()
        self.assertTrue(t2 - t1 - MS <= v1 - v0 <= t3 - t0 + MS, (v1 - v0, t2 - t1, t3 - t0))
        # A worker pinned to that cpu that sleeps K times switches K times
        # there, at least; its page faults happen there too.
        w = self.worker(cpu)
        c0 = s.readPmd(1)
        slept = sleepBlocking(w, 25, 500)  # 25 sleeps that blocked, and as many more as it took
        c1 = s.readPmd(1)
        # Every switch the thread counted during its sleeps was on that cpu.
        self.assertGreaterEqual(c1 - c0, slept['nvcsw'] + slept['nivcsw'], slept)
        self.assertGreaterEqual(c1 - c0, 25)
        f0 = s.readPmd(2)
        self.assertEqual(w.cmd('t 200'), {'minflt': 200, 'cpu': cpu})
        self.assertGreaterEqual(s.readPmd(2) - f0, 200)
        s.ctl('stop')
        frozen = s.readPmd(0)
        time.sleep(0.01)
        self.assertEqual(s.readPmd(0), frozen)

    def test_plain_user_is_refused(self):
        path = self.m.path('sessions', 'plain-system')

        def attempt():
            os.mkdir(path)
            try:
                pfmfs_mount.write(os.path.join(path, 'mode'), 'system\n')
                pfmfs_mount.write(os.path.join(path, 'ctl'), 'load 0\n')
            except OSError as e:
                return e.errno, pfmfs_mount.read(os.path.join(path, 'state'))
            return None, None

        err, state = runAs(TEST_USER, attempt)
        self.addCleanup(lambda: os.path.isdir(path) and os.rmdir(path))
        self.assertEqual(err, errno.EPERM)
        self.assertEqual(state, stateLine(mode='system'))

    def test_plain_user_counts_its_own_thread(self):
        w = self.worker(user=TEST_USER)
        path = self.m.path('sessions', 'plain-thread')

        def setUp():
            os.mkdir(path)
            pfmfs_mount.write(os.path.join(path, 'sets/0/pmc0'), 'PAGE_FAULTS:u\n')
            try:
                pfmfs_mount.write(os.path.join(path, 'sets/0/pmc1'), 'PAGE_FAULTS:k\n')
                kernel = None
            except OSError as e:
                kernel = e.errno  # the OS bit needs root or --allow-kernel
            pfmfs_mount.write(os.path.join(path, 'ctl'), f'load {w.tid}\n')
            pfmfs_mount.write(os.path.join(path, 'ctl'), 'start\n')
            return kernel

        kernel = runAs(TEST_USER, setUp)
        self.addCleanup(lambda: os.path.isdir(path) and os.rmdir(path))
        self.assertEqual(kernel, errno.EPERM)
        self.assertEqual(w.cmd('t 12')['minflt'], 12)
        self.assertEqual(int(pfmfs_mount.read(os.path.join(path, 'sets/0/pmd0'))), 12)


class ExitTest(PerfTestCase):

    def test_thread_exit_mid_count(self):
        w = self.worker()
        tid = w.cmd('thread')['tid']
        s = self.newSession()
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, 'TASK_CLOCK')
        s.ctl(f'load {tid}')
        s.ctl('start')
        self.assertEqual(w.cmd('tt 10')['minflt'], 10)
        self.assertEqual(s.readPmd(0), 10)
        self.assertEqual(w.cmd('tx 15')['minflt'], 15)  # touches 15 pages, exits, joined
        final = stateLine('unloaded', queued=1, exited=True)
        self.assertTrue(waitFor(lambda: s.state() == final), s.state())
        # The counts are kept: every fault up to the exit (the exit path
        # itself was warmed up by the worker and faults on nothing).
        self.assertEqual(s.readPmd(0), 25)
        clock = s.readPmd(1)
        self.assertGreater(clock, 0)
        counts = self.countsOf(s)
        self.assertEqual(counts[(0, 0)]['value'], '25')
        self.assertEqual(int(counts[(0, 1)]['value']), clock)
        self.assertEqual(s.readMessages(), 'type=end seq=1\n')
        self.assertEqual(s.state(), stateLine('unloaded', exited=True))
        self.assertEqual(s.readPmd(0), 25)
        self.assertEqual(s.readPmd(1), clock)
        self.assertGreater(w.cmd('c')['cpu_ns'], 0)  # the process lives on
        # The session can be loaded again, on the main thread.
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        self.assertEqual(w.cmd('t 4')['minflt'], 4)
        self.assertEqual(s.readPmd(0), 29)


def requirePrograms():
    missing = [name for name in ('perf_worker', 'stop_exec')
               if progsDir() is None or not os.access(prog(name), os.X_OK)]
    if not missing:
        return
    reason = f'no {", ".join(missing)} in {progsDir()} (set PFMFS_PROGS)'
    if inCi():
        print(f'FAIL: CI=true and {reason}', file=sys.stderr)
        sys.exit(1)
    print(f'SKIP: {reason}', file=sys.stderr)
    sys.exit(pfmfs_mount.SKIP_STATUS)


if __name__ == '__main__':
    pfmfs_mount.requireEnvironment()
    requirePrograms()
    pfmfs_mount.main()
