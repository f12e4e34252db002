#!/usr/bin/env python3
# Fault injection, hostile input volume (issue 14): 10,000 blocking reads of
# `msg` at once, and writes of 1 MiB to every writable file, whole, in small
# appends and at huge offsets. Each test asserts what a user sees: the exact
# errno, the reason in `error` where pfmfs(5) promises one, that nothing
# changed, and that the daemon goes on serving everyone else with a bounded
# number of threads and bounded memory; the daemon's log, read after it
# exits, must hold no sanitizer report. Names and paths are in
# test_faults_input_names.py, which this program runs too.
#
#   PFMFSD=build/fs/pfmfsd PFMFS_BACKEND=sim|perf python3 tests/fuzz/test_faults_input.py
import errno
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))

import pfmfs_mount as pm  # noqa: E402  (after the path above)
from pfmfs_mount import (INTEL, MSG, PMU, PRINTABLE, SIM, TEST_USER, TEST_USER2, MountTestCase,  # noqa: E402
                         parseKv, runAs, simIp, stateLine, userIds, userPython, waitFor)

A, B = PMU.pmc_a, PMU.pmc_b
MIB = 1 << 20
MAX_WRITE = 65536       # pfmfs(5) LIMITS: the longest write taken
# "Promptly", with 10,000 reads blocked: an operation of another client takes
# no longer than PROMPT_S (5 s) or PROMPT_TRIPS round trips of this run,
# whichever is more; an rmdir that ends N blocked reads, no longer than that
# or PROMPT_TRIPS_PER_READ round trips per read. A round trip (roundTrip())
# is measured on the same mount before the readers come: a sanitized daemon
# on a slow, loaded machine gets bounds as much longer as its round trips are.
PROMPT_S = 5.0
PROMPT_TRIPS = 1000
PROMPT_TRIPS_PER_READ = 5
WAIT_S = pm.WAIT_S      # how long what must happen may take before a test fails
FUSE_WORKERS = 10       # libfuse's most worker threads (max_threads), what a daemon may add
SANITIZER_MARKERS = ('ERROR: AddressSanitizer', 'WARNING: ThreadSanitizer', 'runtime error:', 'ERROR: LeakSanitizer')
READ_NR = {'x86_64': '0', 'aarch64': '63', 'riscv64': '63'}.get(os.uname().machine)  # read(2)'s number


class FaultTestCase(MountTestCase):
    """One daemon per class; its log, read after its exit (LeakSanitizer
    reports then), must be free of sanitizer reports."""

    @classmethod
    def tearDownClass(cls):
        m = cls.m
        super().tearDownClass()
        log = m.log()
        for marker in SANITIZER_MARKERS:
            if marker in log:
                raise AssertionError(f'sanitizer report in the daemon log:\n{log[-4000:]}')


def daemonStatus(pid):
    """(threads, VmRSS in KiB) of a process."""
    with open(f'/proc/{pid}/status') as f:
        fields = dict(line.split(':', 1) for line in f if ':' in line)
    return int(fields['Threads']), int(fields['VmRSS'].split()[0])


def padded(value, size=MIB):
    """`value`, blanks and a newline, `size` bytes in all: a valid write
    whole, and one whose first piece alone is valid too."""
    data = value.encode()
    return data + b' ' * (size - len(data) - 1) + b'\n'


def writeAt(path, data, offset=None, flags=os.O_WRONLY):
    fd = os.open(path, flags)
    try:
        return os.write(fd, data) if offset is None else os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


# ---- 10,000 blocked readers ------------------------------------------------------------

# A process of reader threads: each opens its job's file and makes one
# blocking read(2) of 64 bytes through libc (os.read would retry after
# EINTR); the process's exit closes the files (thousands of threads closing
# at once take seconds). Commands on stdin, one JSON line back each: `count`
# (readers done, per job), `interrupt J K` (SIGUSR1, which has a handler, to
# K readers of job J still blocked), `report T` (every result as [job, n,
# errno, hex], after joining the threads for up to T s).
_READERS = r'''
import ctypes, json, signal, os, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
signal.signal(signal.SIGUSR1, lambda *a: None)
jobs = json.loads(sys.argv[1])
threading.stack_size(128 << 10)
results, threads, opened = [], [], threading.Semaphore(0)

def reader(j, path):
    fd = os.open(path, os.O_RDONLY)
    buf = ctypes.create_string_buffer(64)
    opened.release()
    n = libc.read(fd, buf, 64)
    results.append((j, n, ctypes.get_errno() if n < 0 else 0, buf.raw[:max(n, 0)].hex()))

for j, (path, count) in enumerate(jobs):
    for _ in range(count):
        threads.append((j, threading.Thread(target=reader, args=(j, path), daemon=True)))
        threads[-1][1].start()
for _ in threads:
    opened.acquire()
print('"opened"', flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == 'count':
        done = [0] * len(jobs)
        for r in list(results):
            done[r[0]] += 1
        print(json.dumps(done), flush=True)
    elif cmd[0] == 'interrupt':
        j, k, sent = int(cmd[1]), int(cmd[2]), 0
        for jj, t in threads:
            if jj == j and t.is_alive() and sent < k:
                signal.pthread_kill(t.ident, signal.SIGUSR1)
                sent += 1
        print(sent, flush=True)
    elif cmd[0] == 'report':
        end = time.monotonic() + float(cmd[1])
        for _, t in threads:
            t.join(max(0.0, end - time.monotonic()))
        print(json.dumps(results), flush=True)
        break
'''


class Readers:
    """A _READERS process over jobs [(path, count)], as `user` if given."""

    def __init__(self, jobs, user=None):
        kwargs, python = {}, sys.executable
        if user is not None:
            uid, gid = userIds(user)
            kwargs, python = dict(user=uid, group=gid, extra_groups=[]), userPython()
        self.proc = subprocess.Popen([python, '-c', _READERS, json.dumps(jobs)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, **kwargs)

    def answer(self, timeout=WAIT_S):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, f'reader process {self.proc.pid} did not answer in {timeout} s'
        return json.loads(self.proc.stdout.readline())

    def ask(self, command, timeout=WAIT_S):
        self.proc.stdin.write(command + '\n')
        self.proc.stdin.flush()
        return self.answer(timeout)

    def blocked(self):
        """Its threads now in read(2), asleep (the main thread aside)."""
        n = 0
        for tid in os.listdir(f'/proc/{self.proc.pid}/task'):
            try:
                with open(f'/proc/{self.proc.pid}/task/{tid}/stat') as f:
                    asleep = f.read().rsplit(')', 1)[1].split()[0] == 'S'
                with open(f'/proc/{self.proc.pid}/task/{tid}/syscall') as f:
                    call = f.read().split()[0]
            except OSError:
                continue
            n += int(tid) != self.proc.pid and asleep and (READ_NR is None or call == READ_NR)
        return n

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        exits(self.proc, WAIT_S)  # a read the daemon never answers holds the process in the kernel
        self.proc.stdin.close()
        self.proc.stdout.close()


def exits(proc, timeout):
    try:
        proc.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def within(seconds, what, fn, *args):
    """fn(*args) in a thread of its own: its result, or an AssertionError
    after `seconds` (a daemon out of threads would never answer)."""
    out = {}

    def run():
        try:
            out['value'] = fn(*args)
        except BaseException as e:  # re-raised in the caller
            out['error'] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise AssertionError(f'{what}: no answer within {seconds} s')
    if 'error' in out:
        raise out['error']
    return out['value']


def rootProbe(s):
    """probe()'s PMC write and read, by root on session s."""
    t = time.monotonic()
    s.pmc(1, B)
    assert s.read('sets/0/pmc1') == f'{B}\n'
    return [('pmc1 write and read by root', time.monotonic() - t)]


def roundTrip(mnt, n=500):
    """Seconds a read of `version` (open, read, close: the mount's cheapest
    requests) takes on this run's machine, daemon and load: the mean of n."""
    path = os.path.join(mnt, 'version')
    t = time.monotonic()
    for _ in range(n):
        pm.read(path)
    return (time.monotonic() - t) / n


def probe(mnt):
    """What another user waits for meanwhile: (operation, seconds) of a read of
    `version`, a session's mkdir, a PMC write and read, the rmdir."""
    took, t = [], time.monotonic()

    def lap(what):
        nonlocal t
        took.append((what, time.monotonic() - t))
        t = time.monotonic()
    pm.read(os.path.join(mnt, 'version'))
    lap('read version')
    path = os.path.join(mnt, 'sessions', 'probe-user2')
    os.mkdir(path)
    lap('mkdir')
    pm.write(os.path.join(path, 'sets/0/pmc0'), f'{B}\n')
    assert pm.read(os.path.join(path, 'sets/0/pmc0')) == f'{B}\n'
    lap('pmc0 write and read')
    os.rmdir(path)
    lap('rmdir')
    return took


class BlockedReadersTest(FaultTestCase):
    """10,000 blocking reads of `msg` at once, in four processes (one of the
    test user's) over 18 sessions, woken by messages, by rmdir, by signals
    and by SIGKILL of their process; unload wakes nobody (pfmfs(5) msg)."""

    K = 10  # overflow messages
    PERIOD = PMU.rate_a * 64  # sim: 64 ns apart, so each record's ip differs

    def assertPrompt(self, took, trip, reads=0):
        """Each (what, seconds) took no longer than PROMPT_S or PROMPT_TRIPS
        round trips (trip seconds each), plus PROMPT_TRIPS_PER_READ per read
        it ended, whichever is more."""
        limit = max(PROMPT_S, (PROMPT_TRIPS + PROMPT_TRIPS_PER_READ * reads) * trip)
        for what, seconds in took:
            self.assertLess(seconds, limit, f'{what} took {seconds:.2f} s with 10,000 reads blocked: more than '
                            f'{limit:.1f} s (a round trip takes {trip * 1e6:.0f} us in this run)')

    def assertThreads(self, base, when):
        threads, _ = daemonStatus(self.m.proc.pid)
        self.assertLessEqual(threads, base + FUSE_WORKERS, f'daemon threads {when}')

    def test_ten_thousand_blocked_readers(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # 2,500 descriptors a process
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 4096), max(hard, 4096)))
        threads0, rss0 = daemonStatus(self.m.proc.pid)
        trip = roundTrip(self.m.mnt)
        w = self.worker()
        msg = self.newSession('msg-0')
        msg.pmc(0, A)
        msg.pmd(0, f'-{self.PERIOD} long_reset=-{self.PERIOD} notify')
        msg.ctl(f'load {w.pid}')
        msg.ctl('start')
        unl = [self.newSession(f'unl-{i}') for i in range(2)]
        kil = [self.newSession(f'kil-{i}') for i in range(5)]
        intr = [self.newSession(f'int-{i}') for i in range(5)]
        for s in unl + kil[:1] + intr[:1]:
            s.target = self.sleeper()
            s.ctl(f'load {s.target}')
        rm = [pm.Session(self.m, f'rm-{i}') for i in range(5)]
        for s in rm:
            runAs(TEST_USER, os.mkdir, s.dir)
            self.addCleanup(s.destroy)
        groups = [[(msg, 500), (unl[0], 1000), (unl[1], 1000)], [(s, 500) for s in kil],
                  [(s, 500) for s in intr], [(s, 500) for s in rm]]
        procs = []
        for k, group in enumerate(groups):
            procs.append(Readers([(s.path('msg'), n) for s, n in group], user=TEST_USER if k == 3 else None))
            self.addCleanup(procs[-1].close)
        p1, p2, p3, p4 = procs
        for p in procs:
            self.assertEqual(p.answer(), 'opened')
        blocked = waitFor(lambda: sum(p.blocked() for p in procs) == 10_000, WAIT_S, interval=0.2)
        self.assertTrue(blocked, f'{sum(p.blocked() for p in procs)} of 10,000 readers blocked in read')

        # Everyone else is served at once: another user, and root on a
        # session 1,000 readers wait on.
        self.assertPrompt(within(WAIT_S, 'another user', runAs, TEST_USER2, probe, self.m.mnt), trip)
        self.assertPrompt(within(WAIT_S, 'root', rootProbe, unl[0]), trip)
        self.assertThreads(threads0, 'with 10,000 reads blocked')

        # Messages: each wakes one reader, with one whole 64-byte record.
        for _ in range(self.K):
            self.drive(w, self.PERIOD)
            self.assertTrue(waitFor(lambda: msg.state().startswith('state=masked'), WAIT_S), msg.state())
            msg.ctl('restart')
        self.assertTrue(waitFor(lambda: p1.ask('count')[0] == self.K, WAIT_S), p1.ask('count'))
        state = parseKv(msg.state())
        self.assertEqual((state['state'], state['queued'], state['lost']), ('active', '0', '0'))  # none left over

        # unload wakes nobody; a signal ends a read with EINTR; SIGKILL ends
        # the process, none of its 2,500 reads left behind in the daemon.
        for s in unl:
            s.ctl('unload')
        self.assertEqual(p3.ask('interrupt 0 500'), 500)
        self.assertEqual(p3.ask('interrupt 1 200'), 200)
        p2.proc.kill()
        self.assertTrue(exits(p2.proc, WAIT_S), 'SIGKILLed readers still in the kernel: their reads never answered')
        self.assertTrue(waitFor(lambda: p3.ask('count') == [500, 200, 0, 0, 0], WAIT_S), p3.ask('count'))
        self.assertEqual(p1.ask('count'), [self.K, 0, 0])
        self.assertEqual(p4.ask('count'), [0] * 5)
        self.assertThreads(threads0, 'after 2,500 reads were killed and 700 interrupted')
        # No reader is left on kil-0 and int-0: a message now stays queued
        # for the next read (a reader the daemon still kept would take it).
        for s in (kil[0], intr[0]):
            os.kill(s.target, signal.SIGKILL)
            self.assertTrue(waitFor(lambda: s.state() == stateLine(queued=1, exited=True), WAIT_S), s.state())
            self.assertEqual(s.readMsg(), MSG.pack(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

        # rmdir wakes every reader left, with end of file.
        t = time.monotonic()
        for s in [msg] + unl + kil + intr + rm:
            os.rmdir(s.dir)
        self.assertPrompt([('rmdir of 18 sessions', time.monotonic() - t)], trip, reads=7_500)
        r1, r3, r4 = (p.ask(f'report {WAIT_S}') for p in (p1, p3, p4))
        self.assertEqual(len(r1) + len(r3) + len(r4), 7_500, 'readers still blocked after rmdir')
        eof = [0, 0, '']
        got = [r for r in r1 if r[0] == 0 and r[1] != 0]
        self.assertEqual([r[1:3] for r in got], [[64, 0]] * self.K)
        records = sorted(bytes.fromhex(r[3]) for r in got)
        if SIM:
            self.assertEqual(records, sorted(MSG.pack(1, w.tid, 0, 0, w.pid, simIp(64 * k), 1, 0, 0, 0, 0)
                                             for k in range(1, self.K + 1)))
        for record in records if not SIM else []:
            self.assertOvflRecord(record, w.pid, w.tid, 0)
        self.assertEqual([r[1:] for r in r1 if r[0] != 0 or r[1] == 0], [eof] * 2490)
        self.assertEqual(sorted((r[0], r[1:]) for r in r3),
                         sorted([(0, [-1, errno.EINTR, ''])] * 500 + [(1, [-1, errno.EINTR, ''])] * 200
                                + [(1, eof)] * 300 + [(j, eof) for j in (2, 3, 4) for _ in range(500)]))
        self.assertEqual([r[1:] for r in r4], [eof] * 2500)

        # The daemon is back where it was.
        self.assertThreads(threads0, 'after every reader ended')
        _, rss = daemonStatus(self.m.proc.pid)
        # What stays after 10,000 reads came and went: under 8 KiB a read, the
        # sanitizers' allocators included (ASan kept 2, the plain daemon 0.4); a
        # thread or a buffer a read would keep more. LeakSanitizer, at exit,
        # sees a request never answered.
        self.assertLess(rss - rss0, 10_000 * 8, f'VmRSS {rss0} -> {rss} KiB after 10,000 reads')
        self.assertEqual(self.m.read('version'), 'pfmfs 0.1.0\nabi 1\n')
        self.assertEqual(sorted(os.listdir(self.m.path('sessions'))), [])


# ---- 1 MiB writes ------------------------------------------------------------------------

class LargeWriteTest(FaultTestCase):
    """Writes of 1 MiB, whole (EINVAL, refused whole: the kernel would hand
    them over in pieces), in 4 KiB appends on one descriptor (each its own
    value), and at offsets up to the largest (ignored; past it the kernel's
    EINVAL)."""

    @classmethod
    def setUpClass(cls):
        # The memory bounds below measure what the daemon keeps: under ASan
        # its quarantine (256 MiB of freed blocks by default) would count
        # too, so this daemon runs without one. Ignored by other builds.
        quarantine = os.environ.get('ASAN_OPTIONS', '') + ':quarantine_size_mb=0'
        cls.m = pm.Mount(cls.mount_args, manual_clock=cls.manual_clock,
                         env={'ASAN_OPTIONS': quarantine.lstrip(':')}).start()

    def prepare(self):
        """An unloaded session with two programmed sets, a switch and a flag."""
        s = self.newSession()
        s.mkset(1)
        s.pmc(0, A)
        s.pmd(0, '-1000 long_reset=-2000 notify')
        s.pmc(1, B, 1)
        s.write('sets/1/switch', 'ovfl\n')
        s.write('flags', 'no_msg\n')
        return s

    def writable(self, pid):
        """(file, a value that would change something if taken) for every
        writable file of a session and its sets."""
        out = [('mode', 'system'), ('flags', 'autoclose'), ('ctl', f'load {pid}')]
        for set_id in (0, 1):
            out += [(f'sets/{set_id}/pmc{k}', '0x222' if INTEL and k == 16 else A if set_id else B) for k in PMU.pmcs]
            out += [(f'sets/{set_id}/pmd{k}', '12345 notify') for k in PMU.pmds]
            out += [(f'sets/{set_id}/regs', f'pmc2 {A}\npmd2 7'), (f'sets/{set_id}/switch', 'time 1000')]
        return out

    def assertRefusedWhole(self, s, path, data, session_file=True):
        marker = self._markError(s, 'ctl', '')
        before = s.snapshot()
        self.assertErrno(errno.EINVAL, writeAt, path, data)
        self.assertEqual(s.snapshot(), before, f'{path} changed by a refused write of {len(data)} bytes')
        if session_file:
            reason = s.error()
            self.assertNotEqual(reason, marker)
            self.assertRegex(reason, PRINTABLE)
            self.assertRegex(reason, rf'^write of \d+ bytes or more: a value or command is at most {MAX_WRITE} '
                                     r'bytes\n$')
        else:
            self.assertEqual(s.error(), marker)

    def test_one_mib_to_every_writable_file(self):
        s = self.prepare()
        pid = self.sleeper()
        rss = []
        for _ in range(2):  # the second pass finds every buffer the first one needed
            for rel, value in self.writable(pid):
                with self.subTest(file=rel):
                    self.assertRefusedWhole(s, s.path(rel), padded(value))
                    self.assertRefusedWhole(s, s.path(rel), b'x' * MIB)
            if SIM:  # the top-level writable file: the clock does not move
                c = self.newSession()
                c.pmc(0, A)
                c.ctl(f'load {self.sleeper()}')
                c.ctl('start')
                self.assertRefusedWhole(s, self.m.path('pmu/sim/advance'), padded('1000'), session_file=False)
                self.assertEqual(c.readPmd(0), 0)
                c.destroy()
            for rel in ['state', 'error', 'counts', 'messages', 'msg', 'sets/0/info', 'sets/0/pmds']:
                self.assertErrno(errno.EACCES, os.open, s.path(rel), os.O_WRONLY)
            rss.append(daemonStatus(self.m.proc.pid)[1])
            self.assertEqual(self.m.read('version'), 'pfmfs 0.1.0\nabi 1\n')
        # The second pass wrote as many MiB as the first: none of them is kept.
        self.assertLess(rss[1] - rss[0], 16 * 1024, f'VmRSS {rss} KiB after each of two passes')

    def test_the_limit_is_exact(self):
        s = self.prepare()
        self.assertEqual(writeAt(s.path('sets/0/pmd1'), padded('4242', MAX_WRITE)), MAX_WRITE)
        self.assertEqual(s.readPmd(1), 4242)
        self.assertRefusedWhole(s, s.path('sets/0/pmd1'), padded('4243', MAX_WRITE + 1))
        self.assertRefusedWhole(s, s.path('sets/0/pmd1'), padded('4244', 2 * MIB + 1))
        self.assertEqual(s.readPmd(1), 4242)

    def test_one_mib_in_small_appends(self):
        """256 writes of 4 KiB on one O_APPEND descriptor are 256 values:
        each taken or refused alone, none joined to the one before."""
        s = self.prepare()
        fd = os.open(s.path('sets/0/pmd1'), os.O_WRONLY | os.O_APPEND)
        try:
            for k in range(256):
                self.assertEqual(os.write(fd, padded(str(k), 4096)), 4096)
                self.assertEqual(s.readPmd(1), k)
            self.assertEqual(os.fstat(fd).st_size, 0)
        finally:
            os.close(fd)
        before = s.snapshot()
        fd = os.open(s.path('ctl'), os.O_WRONLY | os.O_APPEND)
        try:
            for k in range(256):
                marker = self._markError(s, 'ctl', '')
                self.assertErrno(errno.EINVAL, os.write, fd, b'x' * 4096)
                self.assertNotEqual(s.error(), marker)
                self.assertRegex(s.error(), r"^ctl: unknown command 'x{64}\.\.\.'")
        finally:
            os.close(fd)
        self.assertEqual(s.snapshot(), before)
        self.assertEqual(self.m.read('version'), 'pfmfs 0.1.0\nabi 1\n')

    def test_writes_at_large_offsets(self):
        """The offset is ignored (pfmfs(5) Writes) up to the largest the
        kernel lets through; past it the kernel refuses with EINVAL and the
        daemon never sees the write (no reason in `error`)."""
        s = self.prepare()
        path = s.path('sets/0/pmd1')
        for offset, value in ((1 << 40, 77), ((1 << 63) - 4, 78)):
            self.assertEqual(writeAt(path, f'{value}\n'.encode(), offset), 3)
            self.assertEqual(s.readPmd(1), value)
        for offset in ((1 << 63) - 2, (1 << 63) - 1):
            marker = self._markError(s, 'ctl', '')
            before = s.snapshot()
            self.assertErrno(errno.EINVAL, writeAt, path, b'79\n', offset)
            self.assertEqual(s.snapshot(), before)
            self.assertEqual(s.error(), marker)
        self.assertErrno(errno.EINVAL, writeAt, path, b'80\n', -1)
        self.assertEqual(s.readPmd(1), 78)
        self.assertEqual(os.stat(path).st_size, 0)


if __name__ == '__main__':
    # One program for CI (faults-input, faults-input-perf): the names' and
    # paths' tests too.
    from test_faults_input_names import NamesTest, PathsTest  # noqa: E402,F401
    pm.main()
