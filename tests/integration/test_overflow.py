#!/usr/bin/env python3
# Overflows and messages through the mount (pfmfs(5), messages and msg, OVERFLOWS): notify, mask and
# restart with long resets, silent short resets, reset_pmds, no_msg,
# notify_block, the message queue limit, the text and 64-byte records, read
# sizes, blocking reads, poll/select/epoll, O_NONBLOCK and EOF on rmdir.
# Overflows come from a driven Worker target (MountTestCase.drive): exact under
# the sim's manual clock; on perf, page faults, with the real cpu and ip.
import errno
import fcntl
import os
import select
import signal
import subprocess
import sys
import threading
import time

import pfmfs_mount
from pfmfs_mount import MSG, PMU, SIM, WAIT_S, MountTestCase, Reader, neg, ovflLine, simIp, simOnly, stateLine, waitFor

assert MSG.size == 64

# System call numbers as /proc/PID/syscall shows them: read(2), and the calls
# poll(2), select(2) and epoll_wait(2) are made of (python's select module
# makes poll, pselect6 and epoll_wait on x86-64). None where not known: then
# any system call will do.
_MACHINE = os.uname().machine
READ_NRS = {'x86_64': {0}, 'aarch64': {63}, 'riscv64': {63}}.get(_MACHINE)
WAIT_NRS = {'x86_64': {7, 23, 232, 270, 271, 281, 441}, 'aarch64': {22, 72, 73, 441},
            'riscv64': {22, 72, 73, 441}}.get(_MACHINE)


def blockedIn(pid, tid, nrs, fd=None):
    """Whether thread tid of process pid sleeps in one of the system calls
    `nrs`, on file descriptor `fd` (its first argument) if given. A read of
    /proc/.../syscall returns once a sleeping thread is off its cpu, and
    says 'running' if it woke meanwhile."""
    base = f'/proc/{pid}/task/{tid}'
    try:
        with open(f'{base}/stat') as f:
            if f.read().rsplit(')', 1)[1].split()[0] != 'S':
                return False
        with open(f'{base}/syscall') as f:
            fields = f.read().split()
    except OSError:  # gone
        return False
    if fields[0] in ('running', '-1'):
        return False
    return (nrs is None or int(fields[0]) in nrs) and (fd is None or int(fields[1], 16) == fd)


def waitBlockedIn(pid, tid, nrs, fd=None, timeout=WAIT_S):
    """Returns once thread tid of process pid sleeps in one of the system
    calls `nrs` (on `fd`, if given): a reader then waits in the kernel for
    the daemon's answer, a poller for the daemon's notification."""
    if not waitFor(lambda: blockedIn(pid, tid, nrs, fd), timeout, interval=0.001):
        raise AssertionError(f'thread {tid} of process {pid} not asleep in system call {nrs} (fd {fd}) '
                             f'after {timeout} s')


def openFds(pid, path):
    """The file descriptors of process pid open on `path`."""
    fds = []
    try:
        for name in os.listdir(f'/proc/{pid}/fd'):
            try:
                if os.readlink(f'/proc/{pid}/fd/{name}') == path:
                    fds.append(int(name))
            except OSError:
                pass
    except OSError:  # gone
        pass
    return fds


def waitReading(reader, timeout=WAIT_S):
    """Returns once a Reader thread sleeps in its read(2)."""
    waitBlockedIn(os.getpid(), reader.native_id, READ_NRS, reader.fd, timeout)


class WhenWaiting(threading.Thread):
    """Runs fn(*args) in a thread of its own once the thread that made it
    sleeps in poll(2), select(2) or epoll_wait(2): whatever fn does then
    must wake that thread. done() joins it and raises what it raised."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.waiter = threading.get_native_id()
        self.fn, self.args = fn, args
        self.error = None
        self.start()

    def run(self):
        try:
            waitBlockedIn(os.getpid(), self.waiter, WAIT_NRS)
            self.fn(*self.args)
        except BaseException as e:  # for done()
            self.error = e

    def done(self):
        self.join(WAIT_S)
        if self.is_alive():
            raise AssertionError(f'{self.fn} still running after {WAIT_S} s')
        if self.error is not None:
            raise self.error


def notifying(s, pid, first=3000, long_reset=6000, extra=''):
    """pmd0 counts event a (sim: cycles, 3/ns) and notifies after `first`
    events, then after `long_reset` events following each restart; loaded on
    pid and started."""
    s.pmc(0, PMU.pmc_a)
    s.pmd(0, f'-{first} long_reset=-{long_reset} notify{extra}')
    s.ctl(f'load {pid}')
    s.ctl('start')


class OverflowTest(MountTestCase):

    def test_notify_masks_queues_and_restart_applies_long_reset(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        # Thresholds the test's own commands cannot reach (on sim and perf
        # 3000 and 6000, driven to 3 short of them and then 3 more).
        first, long_reset = PMU.far(3000), PMU.far(6000)
        notifying(s, pid, first, long_reset)
        s.pmc(1, PMU.pmc_b)
        d = self.driven(w)
        d.drive(PMU.below(first))  # sim: 999 ns
        self.assertEqual(s.state(), stateLine('active', target=pid))
        d.check(s.readPmd(0), start=neg(first))  # sim: neg(3)
        d.drive(PMU.past(first))  # sim: the 3000th event wraps the 64-bit value
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        masked_at = s.readPmd(0)
        d.checkSince(masked_at, 0, first)  # the 64-bit value wrapped: sim 0
        b = s.readPmd(1)
        if SIM:
            self.assertEqual(s.readPmd(0), 0)
            self.assertEqual(b, 2000)
            self.assertEqual(s.read('sets/0/info').split()[:4],
                             ['runs=1', 'duration_ns=1000', 'timeout_ns=0', 'ovfl_pmds=0x1'])
        else:
            self.assertEqual(s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        self.drive(w, 3000)  # masked: nothing counts (sim: 1000 ns)
        self.assertEqual(s.readPmd(0), masked_at)
        self.assertEqual(s.readPmd(1), b)
        self.assertOvflLines(s.readMessages(), [(1, pid, pid, 1000)])
        self.assertEqual(s.state(), stateLine('masked', target=pid))  # the read consumed it
        s.ctl('restart')
        self.assertEqual(s.state(), stateLine('active', target=pid))
        self.assertEqual(s.readPmd(0), neg(long_reset))
        d = self.driven(w)
        d.drive(PMU.below(long_reset))  # sim: 1999 ns
        self.assertEqual(s.state(), stateLine('active', target=pid))
        d.drive(PMU.past(long_reset))
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        if SIM:
            self.assertEqual(s.readPmd(1), 6000)
        # The target's clock ran on while masked: on sim the overflow is at 4000 ns.
        self.assertOvflRecord(s.readMsg(), pid, pid, 4000)
        s.ctl('restart')
        self.assertEqual(s.readPmd(0), neg(long_reset))
        self.assertErrno(errno.EBUSY, s.ctl, 'restart')

    def test_pid_and_tid_of_a_thread_target(self):
        t = self.threaded()
        self.assertNotEqual(t.pid, t.tid)
        s = self.newSession()
        notifying(s, t.tid, long_reset=3000)
        self.drive(t, 3000)
        self.assertEventually(s.state, stateLine('masked', target=t.tid, queued=1))
        self.assertOvflLines(s.readMessages(), [(1, t.pid, t.tid, 1000)])
        s.ctl('restart')
        self.drive(t, 3000)
        self.assertEventually(s.state, stateLine('masked', target=t.tid, queued=1))
        fields = MSG.unpack(s.readMsg())
        # perfmon2's fields: msg_ovfl_pid holds the thread, msg_ovfl_tid the process.
        self.assertEqual(fields[0], 1)
        self.assertEqual(fields[1], t.tid)
        self.assertEqual(fields[4], t.pid)
        if SIM:
            self.assertEqual(fields[5], simIp(2000))
        else:
            self.assertNotEqual(fields[5], 0)
        self.assertEqual(fields[6:], (1, 0, 0, 0, 0))

    def test_message_of_a_second_set(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        s.mkset(2)
        s.pmc(1, '0x100c0' if SIM else PMU.pmc_a, 2)  # sim: instructions, 2/ns
        s.pmd(1, '-2000 notify', 2)
        s.ctl(f'load {pid} set=2')
        s.ctl('start')
        if SIM:
            self.m.advance(1000)
        else:
            self.drive(w, 2000)
        self.assertEventually(s.state, stateLine('masked', target=pid, set_id=2, queued=1))
        self.assertOvflLines(s.readMessages(), [(1, pid, pid, 1000, 2, 0x2)])
        self.assertEqual(s.read('sets/2/info').split()[3], 'ovfl_pmds=0x2')

    def test_short_reset_without_notify(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        first = PMU.far(3000)  # overflows of what the test drives only
        short = first // 2
        s.pmc(0, PMU.pmc_a)
        s.pmd(0, f'-{first} short_reset=-{short}')
        s.ctl(f'load {pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(PMU.reach(first))  # sim: 1000 ns
        self.assertEventually(lambda: s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        d.checkSince(s.readPmd(0), neg(short), first)  # sim: neg(1500)
        self.assertEqual(s.state(), stateLine('active', target=pid))
        d.drive(PMU.reach(short))  # overflows again, reset again
        d.checkSince(s.readPmd(0), neg(short), first + short)  # sim: neg(1500)
        d.drive(short // 2)
        d.checkSince(s.readPmd(0), neg(short), first + short)  # sim: neg(750)
        self.assertEqual(s.state(), stateLine('active', target=pid))
        self.assertEqual(s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path('messages'), 4096, os.O_NONBLOCK)

    def test_reset_pmds_resets_counters_of_the_same_event(self):
        s = self.newSession()
        w = self.worker()
        for k in (0, 1, 2):
            s.pmc(k, PMU.pmc_a)
        first = PMU.far(3000)  # one overflow, of what the test drives
        s.pmd(0, f'-{first} short_reset=-{first} reset_pmds=1,2')
        s.pmd(1, '5 short_reset=16')
        s.pmd(2, '0 short_reset=0x100')
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(PMU.below(first))  # sim: 2997
        d.check(s.readPmd(1), start=5)
        d.drive(PMU.past(first))  # pmd0 overflows: pmd1 and pmd2 take their short resets
        self.assertEventually(lambda: s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        d.checkSince(s.readPmd(0), neg(first), first)
        d.checkSince(s.readPmd(1), 16, first)
        d.checkSince(s.readPmd(2), 0x100, first)
        d.drive(30)
        d.checkSince(s.readPmd(1), 16, first)
        self.assertEqual(s.state(), stateLine('active', target=w.pid))

    @simOnly
    def test_reset_pmds_resets_another_counter(self):
        s = self.newSession()
        pid = self.sleeper()
        s.pmc(0, '0x1003c')
        s.pmc(1, '0x100c0')
        s.pmc(2, '0x100c0')
        s.pmd(0, '-3000 short_reset=-3000 reset_pmds=1,2')
        s.pmd(1, '5 short_reset=16')
        s.pmd(2, '0 short_reset=0x100')
        self.assertEqual(s.readPmd(1), 5)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(999)
        self.assertEqual(s.readPmd(1), 5 + 1998)
        self.m.advance(1)  # pmd0 overflows: pmd1 and pmd2 take their short resets
        self.assertEqual(s.readPmd(0), neg(3000))
        self.assertEqual(s.readPmd(1), 16)
        self.assertEqual(s.readPmd(2), 0x100)
        self.m.advance(10)
        self.assertEqual(s.readPmd(1), 36)
        self.assertEqual(s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')

    def test_no_msg_masks_without_a_message(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        s.write('flags', 'no_msg\n')
        notifying(s, pid, long_reset=3000)
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=pid))
        self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path('messages'), 4096, os.O_NONBLOCK)
        self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path('msg'), 64, os.O_NONBLOCK)
        s.ctl('restart')
        self.assertEqual(s.readPmd(0), neg(3000))
        self.assertEqual(s.state(), stateLine('active', target=pid))
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=pid))

    @simOnly
    def test_notify_block_holds_the_thread_clock(self):
        # The sim cannot stop a real thread: it stops the target's clock, so
        # 5000 ns advanced while held are not the thread's time.
        s = self.newSession()
        pid = self.sleeper()
        s.write('flags', 'notify_block\n')
        notifying(s, pid, long_reset=3000)
        self.m.advance(1000)
        self.m.advance(5000)
        self.assertEqual(s.readMessages(), ovflLine(1, pid, pid, 1000))
        s.ctl('restart')
        self.m.advance(1000)
        self.assertEqual(s.readMessages(), ovflLine(2, pid, pid, 2000))

    def twoMessages(self, s, w):
        """Two overflow messages queued (sim: at 1000 and 2000 ns), masked."""
        notifying(s, w.pid, long_reset=3000)
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=w.pid, queued=1))
        s.ctl('restart')
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=w.pid, queued=2))

    def test_message_read_sizes(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        self.twoMessages(s, w)
        if SIM:
            line1 = ovflLine(1, pid, pid, 1000).encode()
            too_small, one_line = len(line1) - 1, len(line1) + 5
        else:  # the cpu and ip are not known: sizes that fit no line, and one line but never two
            shortest, longest = pfmfs_mount.ovflLineLengths(1, pid, pid)
            self.assertLess(longest, 2 * shortest)
            too_small, one_line = shortest - 1, longest
        fd = os.open(s.path('messages'), os.O_RDONLY)
        try:
            self.assertErrno(errno.EINVAL, os.read, fd, too_small)  # not even one line fits
            self.assertErrno(errno.EINVAL, os.read, fd, 1)
            self.assertEqual(s.state(), stateLine('masked', target=pid, queued=2))  # nothing consumed
            first = os.read(fd, one_line).decode()  # whole lines only
            self.assertOvflLines(first, [(1, pid, pid, 1000)])
            self.assertOvflLines(os.read(fd, 4096).decode(), [(2, pid, pid, 2000)])
        finally:
            os.close(fd)
        self.assertEqual(s.state(), stateLine('masked', target=pid))

    def test_msg_read_sizes(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        self.twoMessages(s, w)
        fd = os.open(s.path('msg'), os.O_RDONLY)
        try:
            self.assertErrno(errno.EINVAL, os.read, fd, 63)
            self.assertErrno(errno.EINVAL, os.read, fd, 1)
            self.assertEqual(s.state(), stateLine('masked', target=pid, queued=2))
            first = os.read(fd, 100)  # one whole record
            self.assertOvflRecord(first, pid, pid, 1000)
            second = os.read(fd, 4096)
            self.assertOvflRecord(second, pid, pid, 2000)
            self.assertEqual(s.state(), stateLine('masked', target=pid))
        finally:
            os.close(fd)

    def test_text_and_records_share_one_queue(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid, long_reset=3000)
        for i in range(1, 4):
            self.drive(w, 3000)
            self.assertEventually(s.state, stateLine('masked', target=pid, queued=i))
            s.ctl('restart')
        self.assertEqual(s.state(), stateLine('active', target=pid, queued=3))
        self.assertOvflRecord(s.readMsg(), pid, pid, 1000)
        self.assertOvflLines(s.readMessages(), [(2, pid, pid, 2000), (3, pid, pid, 3000)])
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_both_message_files_nonblocking_when_empty(self):
        s = self.newSession()
        for rel, size in (('messages', 4096), ('msg', 64)):
            with self.subTest(rel=rel):
                self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path(rel), size, os.O_NONBLOCK)

    def test_nonblocking_set_with_fcntl(self):
        s = self.newSession()
        fd = os.open(s.path('messages'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self.assertErrno(errno.EAGAIN, os.read, fd, 4096)

    def test_poll_reports_the_end_of_a_session(self):
        s = self.newSession()
        fd = os.open(s.path('messages'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        p = select.poll()
        p.register(fd, select.POLLIN)
        self.assertEqual(p.poll(0), [])
        rmdir = WhenWaiting(os.rmdir, s.dir)
        self.addCleanup(rmdir.join)
        start = time.monotonic()
        events = p.poll(WAIT_S * 1000)
        # Woken, not found at the timeout (where the kernel polls once more).
        self.assertLess(time.monotonic() - start, WAIT_S)
        rmdir.done()  # the rmdir has returned
        self.assertEqual(len(events), 1)
        self.assertTrue(events[0][1] & (select.POLLIN | select.POLLHUP))
        self.assertEqual(os.read(fd, 4096), b'')

    def test_interrupted_read_loses_no_message(self):
        # A reader interrupted by a signal gets EINTR at once; the message
        # that comes later goes to the next reader, not to the dead request.
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        script = (
            'import os, signal\n'
            'class Stop(Exception): pass\n'
            'def stop(*args): raise Stop()\n'
            'signal.signal(signal.SIGUSR1, stop)\n'
            f'fd = os.open({s.path("messages")!r}, os.O_RDONLY)\n'
            'print("ready", fd, flush=True)\n'
            'try:\n'
            '    print("read", os.read(fd, 4096), flush=True)\n'
            'except Stop:\n'
            '    print("interrupted", flush=True)\n')
        child = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, text=True)
        self.addCleanup(child.wait)
        self.addCleanup(child.stdout.close)
        ready, fd = child.stdout.readline().split()
        self.assertEqual(ready, 'ready')
        waitBlockedIn(child.pid, child.pid, READ_NRS, int(fd))  # in the read, waiting for the daemon
        child.send_signal(signal.SIGUSR1)
        try:
            out, _ = child.communicate(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            self.fail('a blocked read ignored the signal')
        self.assertEqual(out, 'interrupted\n')
        notifying(s, pid)
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        self.assertOvflLines(s.readMessages(), [(1, pid, pid, 1000)])

    def test_killed_reader_loses_no_message(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        cat = subprocess.Popen(['cat', s.path('messages')], stdout=subprocess.DEVNULL)
        self.addCleanup(lambda: cat.poll() is None and (cat.kill(), cat.wait()))
        # Killed once it waits in its read of the file for the daemon's answer.
        self.assertTrue(waitFor(lambda: any(blockedIn(cat.pid, cat.pid, READ_NRS, fd)
                                            for fd in openFds(cat.pid, s.path('messages')))),
                        f'cat {cat.pid} never blocked in a read of messages')
        cat.kill()
        self.assertEqual(cat.wait(timeout=WAIT_S), -signal.SIGKILL)
        notifying(s, pid)
        self.drive(w, 3000)
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        self.assertOvflLines(s.readMessages(), [(1, pid, pid, 1000)])

    def test_two_blocked_readers_one_message_each(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid, long_reset=3000)
        fds = [os.open(s.path('messages'), os.O_RDONLY) for _ in range(2)]
        for fd in fds:
            self.addCleanup(os.close, fd)
        readers = [Reader(fd) for fd in fds]
        for r in readers:
            r.start()
        for r in readers:
            waitReading(r)
        self.drive(w, 3000)
        self.assertTrue(waitFor(lambda: sum(not r.is_alive() for r in readers) == 1))
        # One message wakes one reader: the other still waits in its read (and
        # gets the next message below, not this one again nor nothing).
        self.assertEqual([blockedIn(os.getpid(), r.native_id, READ_NRS, r.fd) for r in readers],
                         [r.is_alive() for r in readers])
        s.ctl('restart')
        self.drive(w, 3000)
        for r in readers:
            self.assertTrue(r.finished())
        self.assertOvflLines(''.join(sorted((r.result.decode() for r in readers), key=lambda x: x.split()[1])),
                             [(1, pid, pid, 1000), (2, pid, pid, 2000)])

    def test_blocking_read_woken_by_an_overflow(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid)
        for rel, size in (('messages', 4096), ('msg', 64)):
            with self.subTest(rel=rel):
                fd = os.open(s.path(rel), os.O_RDONLY)
                try:
                    reader = Reader(fd, size)
                    reader.start()
                    waitReading(reader)
                    self.assertTrue(reader.is_alive(), 'the read did not block on an empty queue')
                    self.drive(w, 3000)  # from this thread: the overflow wakes the reader
                    self.assertTrue(reader.finished(), 'the blocked read was not woken')
                    self.assertIsNone(reader.error)
                    if rel == 'messages':
                        self.assertOvflLines(reader.result.decode(), [(1, pid, pid, 1000)])
                    else:
                        self.assertEqual(len(reader.result), 64)
                        self.assertEqual(MSG.unpack(reader.result)[:2], (1, pid))
                finally:
                    os.close(fd)
                s.ctl('restart')
                s.pmd(0, '-3000 notify')  # the next overflow 1000 ns from here

    def triggerWhenWaiting(self, w, n=3000):
        """Drives n events on w from another thread, once this one sleeps in
        poll(2), select(2) or epoll_wait(2)."""
        t = WhenWaiting(self.drive, w, n)
        self.addCleanup(t.join)
        return t

    def test_poll_woken_by_an_overflow(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid)
        fd = os.open(s.path('messages'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        p = select.poll()
        p.register(fd, select.POLLIN)
        self.assertEqual(p.poll(0), [])
        t = self.triggerWhenWaiting(w)
        start = time.monotonic()
        events = p.poll(WAIT_S * 1000)
        # Woken, not found at the timeout (where the kernel polls once more).
        self.assertLess(time.monotonic() - start, WAIT_S)
        t.done()
        self.assertEqual(len(events), 1)
        self.assertEqual(events[0][0], fd)
        self.assertTrue(events[0][1] & select.POLLIN)
        self.assertEqual(p.poll(0)[0][1] & select.POLLIN, select.POLLIN)  # readable while not empty
        self.assertOvflLines(os.read(fd, 4096).decode(), [(1, pid, pid, 1000)])
        self.assertEqual(p.poll(0), [])

    def test_epoll_woken_by_an_overflow(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid)
        fd = os.open(s.path('msg'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        ep = select.epoll()
        self.addCleanup(ep.close)
        ep.register(fd, select.EPOLLIN)
        self.assertEqual(ep.poll(0), [])
        t = self.triggerWhenWaiting(w)
        events = ep.poll(WAIT_S)
        t.done()
        self.assertEqual(len(events), 1)
        self.assertTrue(events[0][1] & select.EPOLLIN)
        self.assertOvflRecord(os.read(fd, 64), pid, pid, 1000)
        self.assertEqual(ep.poll(0), [])

    def test_pollpri_while_masked_even_with_no_msg(self):
        # A no_msg notification queues nothing; POLLPRI is how a poller
        # (libpfm-compat's signal thread) sees it, until restart.
        s = self.newSession()
        w = self.worker()
        s.write('flags', 'no_msg\n')
        notifying(s, w.pid)
        fd = os.open(s.path('msg'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        p = select.poll()
        p.register(fd, select.POLLIN | select.POLLPRI)
        self.assertEqual(p.poll(0), [])
        t = self.triggerWhenWaiting(w)
        start = time.monotonic()
        events = p.poll(WAIT_S * 1000)
        self.assertLess(time.monotonic() - start, WAIT_S)  # woken, not found at the timeout
        self.assertEqual(events, [(fd, select.POLLPRI)])  # masked, and no message
        t.done()  # the drive is over (x86: the worker burns on after the overflow)
        s.ctl('restart')
        self.assertEqual(p.poll(0), [])

    def test_edge_triggered_epoll_sees_each_notification_once(self):
        # One wake-up per notification, whether it queues a message or not:
        # libpfm-compat sends one signal per edge.
        for flags in ('', 'no_msg'):
            with self.subTest(flags=flags):
                s = self.newSession()
                w = self.worker()
                s.write('flags', flags + '\n')
                notifying(s, w.pid)
                fd = os.open(s.path('msg'), os.O_RDONLY)
                self.addCleanup(os.close, fd)
                ep = select.epoll()
                self.addCleanup(ep.close)
                ep.register(fd, select.EPOLLIN | select.EPOLLPRI | select.EPOLLET)
                self.assertEqual(ep.poll(0), [])
                for round_ in range(2):
                    t = self.triggerWhenWaiting(w, n=6000 if round_ else 3000)
                    events = ep.poll(WAIT_S)
                    self.assertEqual(len(events), 1)
                    self.assertTrue(events[0][1] & select.EPOLLPRI)
                    self.assertEqual(bool(events[0][1] & select.EPOLLIN), flags == '')
                    self.assertEqual(ep.poll(0.2), [])  # edge-triggered: nothing new until the next one
                    if flags == '':
                        self.assertEqual(len(os.read(fd, 64)), 64)
                    t.done()  # the drive is over (x86: the worker burns on after the overflow)
                    s.ctl('restart')

    def test_select_woken_by_an_overflow(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid)
        fd = os.open(s.path('messages'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        self.assertEqual(select.select([fd], [], [], 0)[0], [])
        t = self.triggerWhenWaiting(w)
        start = time.monotonic()
        readable, _, _ = select.select([fd], [], [], WAIT_S)
        # Woken, not found at the timeout (where the kernel polls once more).
        self.assertLess(time.monotonic() - start, WAIT_S)
        t.done()
        self.assertEqual(readable, [fd])

    def test_blocked_reader_gets_eof_when_the_session_goes(self):
        s = self.newSession()
        pid = self.sleeper()
        notifying(s, pid)
        fds = [os.open(s.path('messages'), os.O_RDONLY), os.open(s.path('msg'), os.O_RDONLY)]
        try:
            readers = [Reader(fds[0], 4096), Reader(fds[1], 64)]
            for r in readers:
                r.start()
            for r in readers:
                waitReading(r)
            self.assertTrue(all(r.is_alive() for r in readers))
            os.rmdir(s.dir)
            for r in readers:
                self.assertTrue(r.finished(), 'a blocked read outlived its session')
                self.assertIsNone(r.error)
                self.assertEqual(r.result, b'')
        finally:
            for fd in fds:
                os.close(fd)
        self.assertFalse(os.path.exists(s.dir))
        # The thread is free for another session.
        t = self.newSession()
        t.ctl(f'load {pid}')


class QueueLimitTest(MountTestCase):
    """--max-messages=2: what does not fit is counted in lost=."""

    mount_args = ['--max-messages=2']

    def test_full_queue_counts_lost(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        notifying(s, pid, long_reset=3000)
        for i in range(1, 4):
            self.drive(w, 3000)
            # Masked whether the message fit or not.
            self.assertEventually(s.state,
                                  stateLine('masked', target=pid, queued=min(i, 2), lost=max(0, i - 2)))
            s.ctl('restart')
        self.assertOvflLines(s.readMessages(), [(1, pid, pid, 1000), (2, pid, pid, 2000)])
        self.drive(w, 3000)  # room again: seq goes on without a gap
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1, lost=1))
        self.assertOvflLines(s.readMessages(), [(3, pid, pid, 4000)])
        self.assertEqual(s.state(), stateLine('masked', target=pid, lost=1))


if __name__ == '__main__':
    pfmfs_mount.main()
