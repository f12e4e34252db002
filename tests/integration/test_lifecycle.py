#!/usr/bin/env python3
# Lifetimes through the mount: the monitored thread exiting, rmdir in every
# state, autoclose, the limits, and the daemon itself (bad options and mount
# points exit 2 with one line; SIGTERM, SIGINT and umount exit 0, unmounted).
import contextlib
import errno
import os
import random
import signal
import struct
import subprocess
import tempfile
import sys
import threading
import time

import pfmfs_mount
from pfmfs_mount import (PMU, SIM, WAIT_S, Mount, MountTestCase, Reader, backendArgs, daemonPath, neg, parseKv, read,
                         stateLine, waitFor, write)
from test_overflow import waitReading

A, B = PMU.pmc_a, PMU.pmc_b  # PMC values that count at user level


class ThreadExitTest(MountTestCase):

    def test_process_exit_unloads_and_queues_end(self):
        s = self.newSession()
        w = self.worker()
        proc = w.proc
        s.pmc(0, A)
        if SIM:
            s.pmc(16, '0x200')  # fixed counter 2: reference cycles
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(3000)  # sim: 1000 ns
        proc.kill()
        # Its way out counts too (x86 counts kernel time): high once it is a
        # zombie, before it is reaped and its counts are gone.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        d.freeze()
        proc.wait()
        final = stateLine('unloaded', queued=1, exited=True)
        self.assertEqual(waitFor(lambda: s.state() == final), True, s.state())
        self.assertEqual(s.state(), 'state=unloaded mode=thread target=- set=0 queued=1 lost=0 exited=1\n')
        kept = d.check(s.readPmd(0))  # counts kept: sim 3000
        if SIM:
            self.assertEqual(s.readPmd(18), 2500)
            self.assertEqual(s.read('counts').splitlines()[0],
                             'set=0 pmd=0 value=3000 enabled_ns=1000 running_ns=1000 scaled=3000')
        else:
            self.assertEqual(s.read('counts').split()[:3], ['set=0', 'pmd=0', f'value={kept}'])
        self.assertEqual(s.readMessages(), 'type=end seq=1\n')
        if SIM:
            self.m.advance(1000)  # nothing counts any more
        else:
            time.sleep(0.05)
        self.assertEqual(s.readPmd(0), kept)
        # The session can be used again on another thread.
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))

    def test_end_record_in_msg(self):
        s = self.newSession()
        proc = subprocess.Popen(['sleep', '1000'])
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        s.ctl(f'load {proc.pid}')  # loaded, not started: the exit still ends it
        proc.kill()
        proc.wait()
        fd = os.open(s.path('msg'), os.O_RDONLY)
        try:
            record = os.read(fd, 64)  # blocks until the end message is queued
        finally:
            os.close(fd)
        self.assertEqual(struct.unpack('<II56x', record), (2, 0))
        self.assertEqual(s.state(), stateLine(exited=True))

    def test_end_message_after_overflows_gets_the_next_seq(self):
        s = self.newSession()
        w = self.worker()
        proc = w.proc
        s.pmc(0, A)
        s.pmd(0, '-300 notify')
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        self.drive(w, 300)  # sim: 100 ns
        self.assertEventually(s.state, stateLine('masked', target=proc.pid, queued=1))
        proc.kill()
        proc.wait()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()))
        text = s.readMessages().splitlines()
        self.assertEqual(len(text), 2)
        self.assertTrue(text[0].startswith('type=ovfl seq=1 '))
        self.assertEqual(text[1], 'type=end seq=2')

    def test_end_message_under_no_msg(self):
        s = self.newSession()
        s.write('flags', 'no_msg')
        proc = subprocess.Popen(['sleep', '1000'])
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        proc.kill()
        proc.wait()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()))
        self.assertEqual(s.readMessages(), 'type=end seq=1\n')

    def test_thread_exit_while_the_process_lives(self):
        t = self.threaded()
        s = self.newSession()
        s.pmc(0, A)
        s.ctl(f'load {t.tid}')
        s.ctl('start')
        # The thread faults on its way out too (perf counts it): high is what
        # the process took.
        d = self.driven(t, process=True)
        d.drive(30)  # sim: 10 ns
        t.endThread()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()), s.state())
        self.assertEqual(s.state(), stateLine(queued=1, exited=True))
        d.check(s.readPmd(0))  # sim: 30
        self.assertEqual(s.readMessages(), 'type=end seq=1\n')

    def test_exited_clears_on_the_next_load(self):
        s = self.newSession()
        proc = subprocess.Popen(['sleep', '1000'])
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        s.ctl(f'load {proc.pid}')
        proc.kill()
        proc.wait()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()))
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid, queued=1))


class RealClockExitTest(MountTestCase):
    """Under the real clock the sim notices a reaped thread by itself."""

    manual_clock = False

    def test_exit_unloads(self):
        s = self.newSession()
        proc = subprocess.Popen(['sleep', '1000'])
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        s.pmc(0, A)
        s.ctl(f'load {proc.pid}')
        s.ctl('start')
        proc.kill()
        proc.wait()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()), s.state())
        self.assertEqual(s.state(), stateLine(queued=1, exited=True))
        self.assertEqual(s.readMessages(), 'type=end seq=1\n')


class StormTest(MountTestCase):
    """Six threads hammer three sessions with every operation for 1.5 s: the
    daemon answers each with a documented errno and keeps running. On perf
    `advance` is page faults of a Worker target instead of the sim's clock."""

    EXPECTED = {errno.ENOENT, errno.EEXIST, errno.EBUSY, errno.EINVAL, errno.EAGAIN, errno.ENOSPC}

    def test_storm(self):
        if SIM:
            pids = [self.sleeper() for _ in range(4)]
        else:
            workers = [self.worker() for _ in range(4)]
            locks = [threading.Lock() for _ in workers]
            pids = [w.pid for w in workers]
        deadline = time.monotonic() + 1.5
        unexpected = []
        done = []

        def worker(i):
            rnd = random.Random(i)
            s = self.m.session(f'storm{i % 3}')
            ops = ['mkdir', 'rmdir', 'load', 'start', 'stop', 'unload', 'restart', 'advance', 'read', 'pmc',
                   'pmd', 'mkset', 'rmset', 'msg', 'switch']
            n = 0
            while time.monotonic() < deadline:
                op = rnd.choice(ops)
                try:
                    if op == 'mkdir':
                        os.mkdir(s.dir)
                    elif op == 'rmdir':
                        os.rmdir(s.dir)
                    elif op == 'load':
                        s.ctl(f'load {rnd.choice(pids)}')
                    elif op in ('start', 'stop', 'unload', 'restart'):
                        s.ctl(op)
                    elif op == 'advance' and SIM:
                        self.m.advance(rnd.randint(1, 100_000))
                    elif op == 'advance':
                        k = rnd.randrange(len(workers))
                        with locks[k]:
                            workers[k].fault(rnd.randint(1, 3000))
                    elif op == 'read':
                        for rel in ('state', 'counts', 'sets/0/regs', 'sets/0/info', 'sets/0/pmd0'):
                            s.read(rel)
                    elif op == 'pmc':
                        s.pmc(rnd.choice((0, 1)), rnd.choice((A, B, '0')))
                    elif op == 'pmd':
                        s.pmd(0, rnd.choice(('-3000 notify long_reset=-3000', '-30 short_reset=-30', '0')))
                    elif op == 'mkset':
                        s.mkset(rnd.randint(1, 4))
                    elif op == 'rmset':
                        os.rmdir(s.path(f'sets/{rnd.randint(0, 4)}'))
                    elif op == 'msg':
                        s.readMessages()
                    elif op == 'switch':
                        s.write(f'sets/{rnd.randint(0, 2)}/switch', rnd.choice(('time 1000', 'none', 'ovfl')))
                except OSError as e:
                    if e.errno not in self.EXPECTED:
                        unexpected.append(f'{op}: {e}')
                n += 1
            done.append(n)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT_S)
        self.assertEqual(len(done), 6, 'a worker hung')
        self.assertEqual(unexpected, [])
        self.assertIsNone(self.m.proc.poll(), 'the daemon died')
        for i in range(3):
            s = self.m.session(f'storm{i}')
            if s.exists():
                self.assertRegex(s.state(), r'^state=(unloaded|loaded|active|masked) mode=thread target=\S+ '
                                            r'set=\d+ queued=\d+ lost=\d+( exited=1)?\n$')
                s.destroy()


class RmdirTest(MountTestCase):

    def states(self):
        """(name, setup) for each state a session can be in."""
        def unloaded(s, w):
            pass

        def loaded(s, w):
            s.ctl(f'load {w.pid}')

        def active(s, w):
            s.pmc(0, A)
            s.ctl(f'load {w.pid}')
            s.ctl('start')
            self.drive(w, 30)  # sim: 10 ns

        def masked(s, w):
            s.pmc(0, A)
            s.pmd(0, '-30 notify')
            s.ctl(f'load {w.pid}')
            s.ctl('start')
            self.drive(w, 30)
            self.assertEventually(s.state, stateLine('masked', target=w.pid, queued=1))

        def two_sets_switching(s, w):
            s.mkset(1)
            s.write('sets/0/switch', 'time 5')
            s.write('sets/1/switch', 'time 5')
            active(s, w)
            if not SIM:
                w.burn(3_000_000)  # 3 ms of the thread's time: switches at the 1 ms tick
        return [('unloaded', unloaded), ('loaded', loaded), ('active', active), ('masked', masked),
                ('switching', two_sets_switching)]

    def test_rmdir_in_every_state(self):
        w = self.worker()
        pid = w.pid
        for name, setup in self.states():
            with self.subTest(state=name):
                s = self.newSession(f'rm-{name}')
                setup(s, w)
                os.rmdir(s.dir)
                self.assertFalse(os.path.exists(s.dir))
                self.assertNotIn(s.name, os.listdir(self.m.path('sessions')))
                self.assertErrno(errno.ENOENT, os.stat, s.path('state'))
                # The thread is free and the name can be used again, fresh.
                again = self.m.mkdirSession(s.name)
                self.assertEqual(again.state(), stateLine())
                self.assertEqual(again.read('sets/0/pmc0'), '0x0\n')
                again.ctl(f'load {pid}')
                os.rmdir(again.dir)

    def test_rmdir_with_a_blocked_reader_and_open_files(self):
        pid = self.sleeper()
        s = self.newSession()
        s.ctl(f'load {pid}')
        s.ctl('start')
        fd = os.open(s.path('messages'), os.O_RDONLY)
        other = os.open(s.path('sets/0/pmd0'), os.O_RDONLY)
        try:
            reader = Reader(fd)
            reader.start()
            waitReading(reader)  # it waits in the kernel for the daemon's answer
            self.assertTrue(reader.is_alive())
            os.rmdir(s.dir)
            self.assertTrue(reader.finished())
            self.assertEqual(reader.result, b'')
            self.assertIsNone(reader.error)
            # What is still open refers to nothing: ENOENT, no stale session.
            self.assertErrno(errno.ENOENT, os.pread, other, 64, 0)
            self.assertEqual(os.read(fd, 4096), b'')  # messages: end of file from now on
        finally:
            os.close(fd)
            os.close(other)
        self.assertFalse(os.path.exists(s.dir))
        t = self.newSession()
        t.ctl(f'load {pid}')

    def test_rmdir_takes_every_set(self):
        s = self.newSession()
        s.mkset(4)
        s.mkset(9)
        os.rmdir(s.dir)  # a session goes with all its sets
        self.assertFalse(os.path.exists(s.dir))


class AutocloseTest(MountTestCase):
    """autoclose: the session lives as long as handles on its message files
    (msg, messages: libpfm-compat's descriptor); other files do not hold it,
    so that a library may keep ctl or regs open for speed."""

    def test_last_message_handle_destroys(self):
        s = self.newSession()
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        s.ctl('start')
        fd = os.open(s.path('msg'), os.O_RDONLY)
        self.assertErrno(errno.EBUSY, s.write, 'flags', 'autoclose\n')  # loaded: flags are fixed
        s.ctl('unload')
        s.write('flags', 'autoclose\n')
        self.assertTrue(s.exists())  # fd is still open
        other = os.open(s.path('messages'), os.O_RDONLY)
        os.close(fd)
        self.assertTrue(s.exists())  # another message file is open
        os.close(other)
        self.assertTrue(waitFor(lambda: not s.exists()), 'the last close did not destroy the session')
        self.assertNotIn(s.name, os.listdir(self.m.path('sessions')))

    def test_other_files_do_not_hold_it(self):
        s = self.newSession()
        fd = os.open(s.path('msg'), os.O_RDONLY)
        s.write('flags', 'autoclose\n')
        ctl = os.open(s.path('ctl'), os.O_WRONLY)
        regs = os.open(s.path('sets/0/regs'), os.O_RDWR)
        try:
            os.close(fd)
            self.assertTrue(waitFor(lambda: not s.exists()))
            # What is still open refers to nothing: ENOENT, no stale session.
            self.assertErrno(errno.ENOENT, os.write, ctl, b'stop')
            self.assertErrno(errno.ENOENT, os.pread, regs, 4096, 0)
        finally:
            os.close(ctl)
            os.close(regs)

    def test_autoclose_of_a_loaded_session_frees_its_thread(self):
        s = self.newSession()
        pid = self.sleeper()
        fd = os.open(s.path('msg'), os.O_RDONLY)
        s.write('flags', 'autoclose')
        s.ctl(f'load {pid}')
        s.ctl('start')
        os.close(fd)
        self.assertTrue(waitFor(lambda: not s.exists()))
        t = self.newSession()
        t.ctl(f'load {pid}')

    def test_shell_autoclose(self):
        s = self.newSession()
        status, out, err = self.m.sh(
            f'cd sessions/{s.name} && exec 3<messages && echo autoclose > flags && cat flags '
            f'&& test -d ../{s.name} && exec 3<&-')
        self.assertEqual((status, out, err), (0, 'autoclose\n', ''))
        self.assertTrue(waitFor(lambda: not s.exists()))

    def test_directories_do_not_hold_the_session(self):
        s = self.newSession()
        dfd = os.open(s.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fd = os.open(s.path('msg'), os.O_RDONLY)
            s.write('flags', 'autoclose\n')
            os.close(fd)
            self.assertTrue(waitFor(lambda: not os.path.exists(s.dir)))
        finally:
            os.close(dfd)

    def test_without_autoclose_closing_keeps_it(self):
        s = self.newSession()
        fd = os.open(s.path('msg'), os.O_RDONLY)
        # A marker: an autoclose session whose last handle closes after s's.
        # The kernel queues the two releases in the order of the closes, and
        # the daemon takes them in that order: once the marker is gone, it
        # has taken s's too (another of its threads could still be finishing
        # it: a wrong destroy could then come after the check, but a right
        # result never fails it).
        marker = self.newSession()
        mfd = os.open(marker.path('msg'), os.O_RDONLY)
        marker.write('flags', 'autoclose\n')
        os.close(fd)
        os.close(mfd)
        self.assertTrue(waitFor(lambda: not marker.exists()), 'the autoclose marker was not destroyed')
        self.assertTrue(s.exists())


class StickyMkdirTest(MountTestCase):
    """mkdir with the sticky bit (mode 01700): born autoclose and bound to the
    creating thread until a message file opens, so that a process killed
    between its mkdir and its open leaves nothing behind (libpfm-compat)."""

    def name(self):
        MountTestCase._counter += 1
        return f'sticky-{MountTestCase._counter}'

    def watcherBarrier(self):
        """Returns once the daemon has acted on every exit of a watched
        thread before this call: a process makes a sticky session and exits
        without opening it, and the daemon's thread watcher, which hears of
        exits in the order they came, destroys that session."""
        path = self.m.path('sessions', self.name())
        subprocess.run([sys.executable, '-c', f'import os; os.mkdir({path!r}, 0o1700)'], check=True)
        self.assertTrue(waitFor(lambda: not os.path.exists(path)), 'the barrier session was left behind')

    def test_born_with_autoclose(self):
        name = self.name()
        os.mkdir(self.m.path('sessions', name), 0o1700)
        fd = os.open(self.m.path('sessions', name, 'msg'), os.O_RDONLY)
        self.assertEqual(self.m.read(f'sessions/{name}/flags'), 'autoclose\n')
        self.assertEqual(os.stat(self.m.path('sessions', name)).st_mode & 0o7777, 0o700)
        os.close(fd)
        self.assertTrue(waitFor(lambda: not os.path.exists(self.m.path('sessions', name))))

    def test_creator_exit_before_open_destroys(self):
        name = self.name()
        path = self.m.path('sessions', name)
        # The creating process exits without opening anything.
        subprocess.run(['python3', '-c', f'import os; os.mkdir({path!r}, 0o1700)'], check=True)
        self.assertTrue(waitFor(lambda: not os.path.exists(path)),
                        'a session whose creator died before opening it was left behind')

    def test_creator_killed_before_open_destroys(self):
        name = self.name()
        path = self.m.path('sessions', name)
        p = subprocess.Popen(['python3', '-c', f'import os, sys; os.mkdir({path!r}, 0o1700); print(1, flush=True); '
                              'sys.stdin.read()'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline(), b'1\n')
            self.assertTrue(os.path.isdir(path))  # its creator lives: kept
            p.kill()
        finally:
            p.wait()
        self.assertTrue(waitFor(lambda: not os.path.exists(path)))

    def makerThread(self, path):
        """A thread of this process that makes the session at `path` (mkdir
        01700) and lives on until the returned function is called, which
        ends it and waits for it."""
        made, leave = threading.Event(), threading.Event()

        def maker():
            os.mkdir(path, 0o1700)
            made.set()
            leave.wait(WAIT_S)

        t = threading.Thread(target=maker)
        t.start()
        self.assertTrue(made.wait(WAIT_S))

        def end():
            leave.set()
            t.join()
        return end

    def test_an_open_message_file_outlives_the_creating_thread(self):
        # Another thread makes the session and waits; this one opens msg;
        # then the maker exits: the handle, not the maker, holds it now.
        name = self.name()
        path = self.m.path('sessions', name)
        end = self.makerThread(path)
        fd = os.open(os.path.join(path, 'msg'), os.O_RDONLY)
        end()
        self.watcherBarrier()  # whatever the maker's exit could do is done
        self.assertTrue(os.path.isdir(path))  # held by the handle, not by its creator
        os.close(fd)
        self.assertTrue(waitFor(lambda: not os.path.exists(path)))

    def test_a_thread_that_made_it_exits_while_its_process_lives(self):
        # Not the main thread, and alive a while after its mkdir: the daemon
        # watches it before it exits. Before Linux 6.9 (the QEMU guest's
        # Debian 6.1) there is no pidfd for it alone, and the session stayed
        # until the process ended.
        name = self.name()
        path = self.m.path('sessions', name)
        end = self.makerThread(path)
        time.sleep(0.2)  # the daemon has long had it watched
        self.assertTrue(os.path.isdir(path))
        end()
        self.assertTrue(waitFor(lambda: not os.path.exists(path)), 'the session outlived the thread that made it')

    def test_open_by_the_creator_binds_it_to_the_handle(self):
        name = self.name()
        path = self.m.path('sessions', name)
        p = subprocess.Popen(['python3', '-c', f'import os, sys; os.mkdir({path!r}, 0o1700); '
                              f'fd = os.open({path!r} + "/msg", os.O_RDONLY); print(1, flush=True); '
                              'sys.stdin.read()'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline(), b'1\n')
            self.assertTrue(os.path.isdir(path))
            p.kill()  # kill -9 with the handle open: the kernel's release destroys it
        finally:
            p.wait()
        self.assertTrue(waitFor(lambda: not os.path.exists(path)))

    def test_without_the_sticky_bit_the_creator_does_not_matter(self):
        name = self.name()
        path = self.m.path('sessions', name)
        self.addCleanup(lambda: os.path.isdir(path) and os.rmdir(path))
        subprocess.run(['python3', '-c', f'import os; os.mkdir({path!r}, 0o700)'], check=True)
        self.watcherBarrier()  # whatever its creator's exit could do is done
        self.assertTrue(os.path.isdir(path))
        self.assertEqual(self.m.read(f'sessions/{name}/flags'), '\n')


class LimitsTest(MountTestCase):
    mount_args = ['--max-sessions-per-user=3', '--max-sets=4', '--max-messages=1']

    def test_sessions_per_user(self):
        made = [self.newSession(f'lim-{i}') for i in range(3)]
        self.assertErrno(errno.ENOSPC, os.mkdir, self.m.path('sessions', 'lim-3'))
        self.assertFalse(os.path.exists(self.m.path('sessions', 'lim-3')))
        os.rmdir(made[0].dir)
        self.newSession('lim-3')
        self.assertErrno(errno.ENOSPC, os.mkdir, self.m.path('sessions', 'lim-4'))

    def test_sets_per_session(self):
        s = self.newSession()
        for n in (1, 2, 3):
            s.mkset(n)
        self.assertErrno(errno.ENOSPC, s.mkset, 4)
        self.assertNotEqual(s.error(), '')
        self.assertEqual(sorted(os.listdir(s.path('sets'))), ['0', '1', '2', '3'])
        os.rmdir(s.path('sets/2'))
        s.mkset(65535)
        self.assertEqual(sorted(os.listdir(s.path('sets')), key=int), ['0', '1', '3', '65535'])

    def test_messages_per_session(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        s.pmc(0, A)
        s.pmd(0, '-30 long_reset=-30 notify')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.drive(w, 30)  # sim: 10 ns
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        s.ctl('restart')
        d = self.driven(w)
        d.drive(30)
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1, lost=1))
        d.checkSince(s.readPmd(0), 0, 30)  # masked as the value wrapped: sim 0
        s.ctl('restart')
        self.assertEqual(s.readPmd(0), neg(30))


class DaemonTest(MountTestCase):
    """The daemon's own life: each test starts the daemons it needs."""

    @classmethod
    def setUpClass(cls):
        pass

    @classmethod
    def tearDownClass(cls):
        pass

    def runDaemon(self, args, timeout=WAIT_S):
        try:
            p = subprocess.run([daemonPath()] + args, capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            # It mounted instead of refusing: unmount what it left behind.
            subprocess.run(['fusermount3', '-u', '-z', args[-1]], stderr=subprocess.DEVNULL)
            self.fail(f'pfmfsd {args} did not exit within {timeout} s')
        return p.returncode, p.stdout, p.stderr

    def assertOneLineError(self, args):
        status, out, err = self.runDaemon(args)
        self.assertEqual(status, 2, f'{args}: {err!r}')
        self.assertEqual(err.count('\n'), 1, f'{args}: {err!r}')
        self.assertTrue(err.endswith('\n') and len(err.strip()) > 0, f'{args}: {err!r}')

    def test_bad_options_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            backend = backendArgs(manual_clock=False)
            for bad in (['--bogus'], ['--pmu=nope'], ['--sim-width=8'], ['--sim-width=65'], ['--sim-counters=0'],
                        ['--sim-counters=9'], ['--sim-clock=sometimes'], ['--max-sets=0'], ['--max-sets=x'],
                        ['--tick=1'], ['--system-group=no-such-group-pfmfs'], ['-z'],
                        ['--sim-events=/nonexistent/events']):
                if not SIM and bad[0].startswith('--sim-'):
                    continue  # the sim's options: with the sim
                with self.subTest(args=bad):
                    self.assertOneLineError(['-f'] + backend + bad + [tmp])
                    self.assertFalse(os.path.ismount(tmp))
            with self.subTest(args='a source and two mount points'):  # [SOURCE] MOUNTPOINT at most
                self.assertOneLineError(['-f'] + backend + ['pfmfs', tmp, tmp])
            with self.subTest(args='-o bogus'):  # libfuse's refusal, on our one line
                status, out, err = self.runDaemon(['-f'] + backend + ['-o', 'bogus', tmp])
                self.assertEqual(err, "pfmfsd: bad FUSE options -o bogus: fuse: unknown option(s): `-o bogus'\n")
                self.assertEqual(status, 2)

    def test_unusable_mount_points_exit_2(self):
        with tempfile.TemporaryDirectory() as tmp:
            regular = os.path.join(tmp, 'file')
            open(regular, 'w').close()
            for mnt in (regular, os.path.join(tmp, 'no', 'such', 'dir')):
                with self.subTest(mountpoint=mnt):
                    self.assertOneLineError(['-f'] + backendArgs() + [mnt])
                    self.assertFalse(os.path.ismount(mnt))

    def test_a_mount_point_already_mounted_is_refused(self):
        m = self.startMount()
        status, out, err = self.runDaemon(['-f'] + backendArgs(manual_clock=False) + [m.mnt])
        self.assertEqual(status, 2)
        self.assertEqual(err, f'pfmfsd: mount point {m.mnt} already has a FUSE filesystem mounted on it\n')
        self.assertEqual(m.read('version'), 'pfmfs 0.1.0\nabi 1\n')  # the first one still serves
        m.close()

    def test_help_and_version(self):
        status, out, err = self.runDaemon(['--version'])
        self.assertEqual((status, out), (0, 'pfmfsd 0.1.0\n'))
        status, out, err = self.runDaemon(['--help'])
        self.assertEqual(status, 0)
        for option in ('--pmu', '--sim-clock', '--max-sessions-per-user', '--allow-kernel', '--system-group'):
            self.assertIn(option, out)

    def test_auto_takes_x86_then_perf_then_sim(self):
        """--pmu=auto (the default) takes x86 where the helper's device
        opens, else perf where perf_event_open works, else the sim, and logs
        why it passed one over; --pmu=x86 without the module exits 2 saying
        to load it."""
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            mnt = os.path.join(tmp, 'mnt')
            os.mkdir(mnt)
            log = open(os.path.join(tmp, 'log'), 'w+')
            proc = subprocess.Popen([daemonPath(), '-f', mnt], stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT)
            try:
                self.assertTrue(waitFor(lambda: os.path.exists(os.path.join(mnt, 'version'))),
                                'pfmfsd did not mount')
                with open(os.path.join(mnt, 'pmu/info')) as f:
                    backend = f.read().split()[0]
            finally:
                proc.terminate()
                proc.wait(timeout=WAIT_S)
            log.seek(0)
            said = log.read()
            helper = os.path.exists(pfmfs_mount.HELPER_DEVICE)
            expected = 'x86' if helper else 'perf' if pfmfs_mount.perfEventsWork() else 'sim'
            self.assertEqual(backend, f'backend={expected}', said)
            if not helper:
                self.assertIn('not using x86: /dev/pfmfs_helper: no such device (is pfmfs_helper.ko loaded? '
                              'modprobe pfmfs_helper)', said)
                status, out, err = self.runDaemon(['-f', '--pmu=x86', mnt])
                self.assertEqual(status, 2)
                self.assertEqual(err, '--pmu=x86: /dev/pfmfs_helper: no such device (is pfmfs_helper.ko loaded? '
                                      'modprobe pfmfs_helper)\n'.join(['pfmfsd: ', '']))
                self.assertFalse(os.path.ismount(mnt))

    def test_in_the_background_it_still_hears_of_exits(self):
        """Without -f pfmfsd returns 0 once mounted and serves from the
        background with all its threads: a monitored thread's exit unloads
        its session (the thread watcher), the real clock ticks (set
        switches), and a bad mount point still exits 2 with the reason."""
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            mnt = os.path.join(tmp, 'mnt')
            os.mkdir(mnt)
            p = subprocess.run([daemonPath()] + backendArgs(manual_clock=False) + [mnt], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=WAIT_S)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertTrue(os.path.ismount(mnt))
            try:
                s = os.path.join(mnt, 'sessions', 'bg')
                os.mkdir(s)
                os.mkdir(os.path.join(s, 'sets', '1'))
                for set_id in (0, 1):
                    write(os.path.join(s, 'sets', str(set_id), 'pmc0'), f'{PMU.pmc_a}\n')
                    write(os.path.join(s, 'sets', str(set_id), 'switch'), 'time 1000000\n')
                # The target waits for a go, then burns 300 ms of its CPU time
                # and exits: alive at the load, running while counted.
                busy = subprocess.Popen([sys.executable, '-c', 'import sys, time\nsys.stdin.readline()\n'
                                         'end = time.thread_time_ns() + 300_000_000\n'
                                         'while time.thread_time_ns() < end: pass'], stdin=subprocess.PIPE, text=True)
                self.addCleanup(lambda: busy.poll() is None and (busy.kill(), busy.wait()))
                write(os.path.join(s, 'ctl'), f'load {busy.pid}\n')
                write(os.path.join(s, 'ctl'), 'start\n')
                busy.communicate('go\n', timeout=WAIT_S)
                self.assertEqual(busy.returncode, 0)
                self.assertTrue(waitFor(lambda: 'exited=1' in read(os.path.join(s, 'state'))),
                                read(os.path.join(s, 'state')))
                runs = int(parseKv(read(os.path.join(s, 'sets', '1', 'info')))['runs'])
                self.assertGreater(runs, 0)  # switched by the timer thread
                os.rmdir(s)
            finally:
                subprocess.run(['umount', mnt], check=False)
                self.assertTrue(waitFor(lambda: not os.path.ismount(mnt)))
            bad = subprocess.run([daemonPath()] + backendArgs() + [os.path.join(tmp, 'no', 'such')],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=WAIT_S)
            self.assertEqual(bad.returncode, 2)
            self.assertIn('cannot create mount point', bad.stderr)

    def startMount(self):
        m = Mount().start()
        self.addCleanup(m._cleanupAfterFailure)  # a no-op once close() ran
        return m

    def activeSession(self, m):
        s = m.mkdirSession('busy')
        w = self.worker()
        s.pmc(0, A)
        s.pmd(0, f'-{PMU.far(300)} notify')  # x86: beyond what its commands cost
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        self.drive(w, 30, m)  # sim: 10 ns
        t = m.mkdirSession('masked')
        w2 = self.worker()
        t.pmc(0, A)
        t.pmd(0, '-30 notify')
        t.ctl(f'load {w2.pid}')
        t.ctl('start')
        self.drive(w2, 30, m)
        self.assertEventually(t.state, stateLine('masked', target=w2.pid, queued=1))
        self.assertEqual(s.state(), stateLine('active', target=w.pid))
        return s

    def test_sigterm_with_active_sessions(self):
        m = self.startMount()
        self.activeSession(m)
        m.close(signal.SIGTERM)  # asserts exit 0 and unmounted

    @contextlib.contextmanager
    def blockedReader(self, m):
        """An active session of m and a Reader asleep in a read of its msg
        file, waiting in the kernel for the daemon's answer."""
        s = self.activeSession(m)
        fd = os.open(s.path('msg'), os.O_RDONLY)
        reader = Reader(fd, 64)
        reader.start()
        try:
            waitReading(reader)
            yield s, reader
        finally:
            try:
                os.close(fd)
            except OSError as e:  # the connection is gone: the kernel cannot flush
                self.assertEqual(e.errno, errno.ENOTCONN)

    def closeGivingEndOfFile(self, m, sig, reader):
        m.close(sig)  # asserts exit 0 and unmounted
        self.assertTrue(reader.finished(), 'a blocked read outlived the daemon')
        self.assertEqual((reader.result, reader.error), (b'', None))  # end of file

    def test_sigint_with_a_blocked_reader(self):
        m = self.startMount()
        with self.blockedReader(m) as (_, reader):
            self.closeGivingEndOfFile(m, signal.SIGINT, reader)

    def test_sigusr1_from_outside_changes_nothing(self):
        # SIGUSR1 ends the FUSE workers' wait when pfmfsd stops (pfmfsd(8)):
        # sent by anyone else it must neither stop pfmfsd nor fail a request.
        m = self.startMount()
        with self.blockedReader(m) as (s, reader):
            before = s.state()
            for _ in range(20):
                m.sendSignal(signal.SIGUSR1)
            self.assertEqual(s.state(), before)  # and it still answers
            self.assertTrue(reader.is_alive(), 'SIGUSR1 ended a blocked read')
            self.assertIsNone(m.proc.poll())
            self.closeGivingEndOfFile(m, signal.SIGTERM, reader)

    def test_sigkill_leaves_no_mount_behind(self):
        # auto_unmount: fusermount3 unmounts when the daemon dies, however.
        # It is a process of its own that must be scheduled: a busy machine
        # was seen to take over 5 s, so the wait is generous (it ends at once
        # when the mount goes).
        m = self.startMount()
        self.activeSession(m)
        m.sendSignal(signal.SIGKILL)
        self.assertEqual(m.waitExit(), -signal.SIGKILL)
        self.assertTrue(waitFor(lambda: not os.path.ismount(m.mnt)), 'the mount outlived a killed daemon')
        m._cleanupAfterFailure()
        m.proc = None

    def keeperPids(self, m):
        """The daemon's children named pfmfsd-unmount."""
        kids = []
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open(f'/proc/{pid}/stat') as f:
                    comm, rest = f.read().rsplit(')', 1)
            except OSError:
                continue
            if comm.endswith('(pfmfsd-unmount') and int(rest.split()[1]) == m.proc.pid:
                kids.append(int(pid))
        return kids

    def keeperOf(self, m):
        """The daemon's pfmfsd-unmount child (docs/pfmfsd.8.md), once it has
        set itself up. pfmfsd forks it as it mounts; the child names itself,
        drops its capabilities and closes what it inherited, the closing last,
        on its own time: a loaded machine may not have run it yet when the
        mount answers. So wait for it to hold two descriptors, then check."""
        def settled():
            kids = self.keeperPids(m)
            if len(kids) != 1:
                return None
            try:
                return kids[0] if len(os.listdir(f'/proc/{kids[0]}/fd')) == 2 else None
            except OSError:
                return None
        keeper = waitFor(settled)
        self.assertIsNotNone(keeper, f'pfmfsd-unmount children of {m.proc.pid}, none set up: {self.keeperPids(m)}')
        return keeper

    def test_the_unmount_keeper_holds_the_socket_alone_and_ends_with_the_daemon(self):
        m = self.startMount()
        keeper = self.keeperOf(m)
        fds = sorted(os.readlink(f'/proc/{keeper}/fd/{fd}').split(':')[0] for fd in os.listdir(f'/proc/{keeper}/fd'))
        self.assertEqual(fds, ['anon_inode', 'socket'], 'fusermount3\'s socket and a pidfd of the daemon, nothing else')
        self.assertIn('anon_inode:[pidfd]', [os.readlink(f'/proc/{keeper}/fd/{fd}') for fd in os.listdir(f'/proc/{keeper}/fd')])
        with open(f'/proc/{keeper}/status') as f:
            status = dict(line.rstrip('\n').split(':\t', 1) for line in f if ':\t' in line)
        for which in ('CapEff', 'CapPrm', 'CapInh', 'CapAmb'):
            self.assertEqual(int(status[which], 16), 0, which)
        # A terminal's ^C, a service's SIGTERM, a hang-up are the daemon's to
        # act on: the keeper ignores them, and outlives it.
        ignored = int(status['SigIgn'], 16)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self.assertTrue(ignored & (1 << (sig - 1)), f'{sig.name} not ignored')
        m.close()

        def gone():
            try:
                with open(f'/proc/{keeper}/stat') as f:
                    return f.read().rsplit(')', 1)[1].split()[0] == 'Z'  # exited, not reaped yet
            except (FileNotFoundError, ProcessLookupError):
                return True  # reaped: before the open, or between the open and the read
        self.assertTrue(waitFor(gone), 'the keeper outlived the daemon')

    def test_every_thread_blocks_the_stopping_signals_but_one_takes_them(self):
        # SIGINT, SIGTERM and SIGHUP end the daemon in its own order (every
        # session first, then the loop: docs/pfmfsd.8.md): no thread may be
        # interrupted by them at a random point. All block them; the thread
        # pfmfs-signals waits for them in sigwaitinfo (rt_sigtimedwait,
        # during which the kernel shows them unblocked there).
        m = self.startMount()
        self.activeSession(m)  # a session counting: the backends' threads run
        ending = (1 << (signal.SIGHUP - 1)) | (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
        blocks, waiter = {}, None
        for tid in os.listdir(f'/proc/{m.proc.pid}/task'):
            base = f'/proc/{m.proc.pid}/task/{tid}'
            with open(f'{base}/comm') as f:
                name = f.read().strip()
            with open(f'{base}/status') as f:
                blocked = int(next(line for line in f if line.startswith('SigBlk:')).split()[1], 16)
            if name == 'pfmfs-signals':
                waiter = tid
            else:
                blocks[f'{name} {tid}'] = blocked & ending
        self.assertIsNotNone(waiter, 'no thread pfmfs-signals')
        self.assertIn('pfmfs-watcher', {name.split()[0] for name in blocks})
        self.assertEqual({name: ending for name in blocks}, blocks)
        rt_sigtimedwait = 128  # x86-64
        self.assertTrue(waitFor(lambda: open(f'/proc/{m.proc.pid}/task/{waiter}/syscall').read().split()[0] ==
                                str(rt_sigtimedwait)), 'pfmfs-signals does not wait for the signals')
        m.close()

    def test_umount_ends_the_daemon(self):
        m = self.startMount()
        self.activeSession(m)
        subprocess.run(['umount', m.mnt], check=True)
        self.assertEqual(m.waitExit(), 0)
        self.assertFalse(os.path.ismount(m.mnt))
        m.close()

    def test_fusermount_unmount_ends_the_daemon(self):
        m = self.startMount()
        subprocess.run(['fusermount3', '-u', m.mnt], check=True)
        self.assertEqual(m.waitExit(), 0)
        m.close()

    def test_threads_are_free_after_the_daemon_exits(self):
        pid = self.sleeper()
        with Mount() as m:
            s = m.mkdirSession('first')
            s.ctl(f'load {pid}')
        with Mount() as m:
            s = m.mkdirSession('second')
            s.ctl(f'load {pid}')
            self.assertEqual(s.state(), stateLine('loaded', target=pid))


if __name__ == '__main__':
    pfmfs_mount.main()
