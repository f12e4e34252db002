#!/usr/bin/env python3
# The ctl commands of pfmfs(5) (sessions/NAME/ctl) through the mount: every row of the table with
# its errno, the state rules for mode, flags and switch, and that each refused
# command leaves a reason in `error` and changes nothing.
import errno
import os

import pfmfs_mount
from pfmfs_mount import PMU, MountTestCase, onlineCpus, stateLine

WATCHED = ('state', 'mode', 'flags', 'counts', 'sets/0/info', 'sets/0/switch')


class CtlTest(MountTestCase):

    def refuse(self, s, err, command, files=WATCHED):
        return self.assertRefused(s, err, 'ctl', command + '\n', files)

    # ---- load

    def test_load_and_unload(self):
        s = self.newSession()
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('unload')
        self.assertEqual(s.state(), stateLine())
        s.ctl('unload')  # harmless on an unloaded session
        self.assertEqual(s.state(), stateLine())
        self.assertEqual(s.error(), '')
        # Loadable again.
        s.ctl(f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))

    def test_load_without_newline(self):
        s = self.newSession()
        pid = self.sleeper()
        s.write('ctl', f'load {pid}')
        s.write('ctl', 'start')
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_load_missing_thread_is_esrch(self):
        s = self.newSession()
        self.refuse(s, errno.ESRCH, f'load {pfmfs_mount.goneTid()}')
        self.assertEqual(s.state(), stateLine())

    def test_load_while_loaded_is_ebusy(self):
        s = self.newSession()
        pid, other = self.sleeper(), self.sleeper()
        s.ctl(f'load {pid}')
        self.refuse(s, errno.EBUSY, f'load {other}')
        self.refuse(s, errno.EBUSY, f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('start')
        self.refuse(s, errno.EBUSY, f'load {other}')
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_second_session_on_the_same_thread(self):
        if not PMU.exclusive_threads:
            return self.checkSessionsShareAThread()
        # EBUSY where a thread takes one loaded session at most (sim).
        s1, s2 = self.newSession(), self.newSession()
        pid = self.sleeper()
        s1.ctl(f'load {pid}')
        self.refuse(s2, errno.EBUSY, f'load {pid}')
        self.assertEqual(s2.state(), stateLine())
        s1.ctl('unload')
        s2.ctl(f'load {pid}')
        self.assertEqual(s2.state(), stateLine('loaded', target=pid))
        # rmdir of the holder frees the thread too.
        s2.destroy()
        s1.ctl(f'load {pid}')
        self.assertEqual(s1.state(), stateLine('loaded', target=pid))

    def checkSessionsShareAThread(self):
        """perf counts for any number of sessions on a thread: each its own."""
        s1, s2 = self.newSession(), self.newSession()
        w = self.worker()
        for s in (s1, s2):
            s.pmc(0, PMU.pmc_a)
            s.ctl(f'load {w.pid}')
            self.assertEqual(s.state(), stateLine('loaded', target=w.pid))
        s1.ctl('start')
        d = self.driven(w)
        d.drive(300)
        s2.ctl('start')
        d2 = self.driven(w)
        d2.drive(30)
        d.check(s1.readPmd(0))
        d2.check(s2.readPmd(0))
        s1.destroy()  # the other goes on
        self.drive(w, 30)
        d2.check(s2.readPmd(0))
        self.assertEqual(s2.state(), stateLine('active', target=w.pid))

    def test_load_set_n(self):
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(4)
        self.refuse(s, errno.EINVAL, f'load {pid} set=5')
        self.assertEqual(s.state(), stateLine())
        s.ctl(f'load {pid} set=4')
        self.assertEqual(s.state(), stateLine('loaded', target=pid, set_id=4))
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=4))

    # ---- start, stop

    def test_start_stop_unloaded_is_einval(self):
        s = self.newSession()
        self.refuse(s, errno.EINVAL, 'start')
        self.refuse(s, errno.EINVAL, 'start 0')
        self.refuse(s, errno.EINVAL, 'stop')
        self.assertEqual(s.state(), stateLine())

    def test_start_stop(self):
        s = self.newSession()
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        s.ctl('stop')  # stopping a stopped session is harmless
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', target=pid))
        s.ctl('start')  # so is starting an active one
        self.assertEqual(s.state(), stateLine('active', target=pid))
        s.ctl('stop')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('unload')
        self.assertEqual(s.state(), stateLine())
        self.assertEqual(s.error(), '')

    def test_start_missing_set_is_einval(self):
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(2)
        s.ctl(f'load {pid}')
        self.refuse(s, errno.EINVAL, 'start 7')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('start 2')
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=2))
        self.refuse(s, errno.EINVAL, 'start 1')
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=2))
        s.ctl('start 0')  # start N while active switches to N
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))

    def test_unload_from_every_state(self):
        s = self.newSession()
        pid = self.sleeper()
        for prep in ([], ['start'], ['start', 'stop']):
            with self.subTest(prep=prep):
                s.ctl(f'load {pid}')
                for c in prep:
                    s.ctl(c)
                s.ctl('unload')
                self.assertEqual(s.state(), stateLine())

    # ---- restart

    def test_restart_not_masked_is_ebusy(self):
        s = self.newSession()
        pid = self.sleeper()
        self.refuse(s, errno.EBUSY, 'restart')
        s.ctl(f'load {pid}')
        self.refuse(s, errno.EBUSY, 'restart')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        s.ctl('start')
        self.refuse(s, errno.EBUSY, 'restart')
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_restart_and_start_while_masked(self):
        s = self.newSession()
        w = self.worker()
        pid = w.pid
        s.pmc(0, PMU.pmc_a)
        s.pmd(0, '-300 notify')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.drive(w, 300)  # the 300th event overflows
        self.assertEventually(s.state, stateLine('masked', target=pid, queued=1))
        self.refuse(s, errno.EBUSY, 'start')  # masked: restart first
        self.refuse(s, errno.EBUSY, f'load {pid}')
        s.ctl('restart')
        self.assertEqual(s.state(), stateLine('active', target=pid, queued=1))
        self.refuse(s, errno.EBUSY, 'restart')

    # ---- system mode

    def test_system_mode(self):
        s = self.newSession()
        s.write('mode', 'system\n')
        self.assertEqual(s.read('mode'), 'system\n')
        self.assertEqual(s.state(), stateLine(mode='system'))
        self.refuse(s, errno.EINVAL, 'load 4096')
        self.refuse(s, errno.EINVAL, 'load 99999')
        self.assertEqual(s.state(), stateLine(mode='system'))
        cpu = onlineCpus()[0]
        s.ctl(f'load {cpu}')
        self.assertEqual(s.state(), stateLine('loaded', mode='system', target=cpu))
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', mode='system', target=cpu))

    def test_system_cpu_taken_is_ebusy(self):
        s1, s2 = self.newSession(), self.newSession()
        cpu = onlineCpus()[0]
        s1.write('mode', 'system')
        s2.write('mode', 'system')
        s1.ctl(f'load {cpu}')
        self.refuse(s2, errno.EBUSY, f'load {cpu}')
        self.assertEqual(s2.state(), stateLine(mode='system'))
        if len(onlineCpus()) > 1:
            other = onlineCpus()[1]
            s2.ctl(f'load {other}')
            self.assertEqual(s2.state(), stateLine('loaded', mode='system', target=other))
            s2.ctl('unload')
        s1.ctl('unload')
        s2.ctl(f'load {cpu}')
        self.assertEqual(s2.state(), stateLine('loaded', mode='system', target=cpu))

    def test_thread_and_system_sessions_coexist(self):
        """On sim and perf. On x86 one PMU cannot be a thread's and a cpu's
        at once (perfmon2's rule): the later load is EBUSY either way round,
        until the other unloads."""
        t, c = self.newSession(), self.newSession()
        pid = self.sleeper()
        cpu = onlineCpus()[0]
        c.write('mode', 'system')
        t.ctl(f'load {pid}')
        if PMU.thread_system_coexist:
            c.ctl(f'load {cpu}')
            self.assertEqual(t.state(), stateLine('loaded', target=pid))
            self.assertEqual(c.state(), stateLine('loaded', mode='system', target=cpu))
            return
        self.assertIn('exclude each other', self.refuse(c, errno.EBUSY, f'load {cpu}'))
        t.ctl('unload')
        c.ctl(f'load {cpu}')
        self.assertIn('exclude each other', self.refuse(t, errno.EBUSY, f'load {pid}'))
        c.ctl('unload')
        t.ctl(f'load {pid}')
        self.assertEqual(t.state(), stateLine('loaded', target=pid))

    # ---- mode, flags and switch follow the state

    def test_mode_and_flags_while_loaded_are_ebusy(self):
        s = self.newSession()
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        self.assertRefused(s, errno.EBUSY, 'mode', 'system\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'mode', 'thread\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'flags', 'no_msg\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'flags', 'none\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'sets/0/switch', 'time 1000\n', WATCHED)
        s.ctl('start')
        self.assertRefused(s, errno.EBUSY, 'mode', 'system\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'flags', 'autoclose\n', WATCHED)
        self.assertRefused(s, errno.EBUSY, 'sets/0/switch', 'ovfl\n', WATCHED)
        self.assertEqual(s.read('mode'), 'thread\n')
        self.assertEqual(s.read('flags'), '\n')

    def test_mode_only_before_the_first_load(self):
        s = self.newSession()
        pid = self.sleeper()
        s.write('mode', 'system\n')
        s.write('mode', 'thread\n')  # as often as wanted before the first load
        s.ctl(f'load {pid}')
        s.ctl('unload')
        self.assertRefused(s, errno.EBUSY, 'mode', 'system\n', WATCHED)
        self.assertEqual(s.read('mode'), 'thread\n')

    def test_flags_after_unload_are_writable(self):
        s = self.newSession()
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        s.ctl('unload')
        s.write('flags', 'no_msg\n')
        self.assertEqual(s.read('flags'), 'no_msg\n')
        s.write('sets/0/switch', 'time 5000\n')
        self.assertEqual(s.read('sets/0/switch'), 'time 5000\n')

    def test_flags_read_and_replace(self):
        s = self.newSession()
        # An open file keeps the session while autoclose is set (the write's
        # own close would otherwise be the last one and destroy it).
        fd = os.open(s.path('state'), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        words = ['notify_block'] * PMU.holds_threads + ['no_msg', 'autoclose'] + ['inherit'] * PMU.inherits
        s.write('flags', ' '.join(reversed(words)) + '\n')
        self.assertEqual(s.read('flags'), ' '.join(words) + '\n')
        s.write('flags', 'no_msg')
        self.assertEqual(s.read('flags'), 'no_msg\n')  # a write replaces every flag
        s.write('flags', 'none\n')
        self.assertEqual(s.read('flags'), '\n')
        s.write('flags', 'autoclose\n')
        s.write('flags', '\n')
        self.assertEqual(s.read('flags'), '\n')

    def test_inherit_needs_a_backend_that_follows_children(self):
        s = self.newSession()
        if PMU.inherits:
            s.write('flags', 'inherit\n')
            self.assertEqual(s.read('flags'), 'inherit\n')
            s.write('flags', '\n')
        else:
            self.assertRefused(s, errno.EOPNOTSUPP, 'flags', 'inherit\n', WATCHED)
            self.assertEqual(s.read('flags'), '\n')
        # A system-wide session follows no thread: refused, on every backend.
        s.write('mode', 'system\n')
        self.assertRefused(s, errno.EINVAL, 'flags', 'inherit\n', WATCHED)

    def test_notify_block_with_system_is_einval(self):
        s = self.newSession()
        s.write('mode', 'system\n')
        self.assertRefused(s, errno.EINVAL, 'flags', 'notify_block\n', WATCHED)
        self.assertEqual(s.read('flags'), '\n')
        s.write('flags', 'no_msg\n')  # the other flags are fine
        self.assertEqual(s.read('flags'), 'no_msg\n')

        t = self.newSession()
        if not PMU.holds_threads:  # notify_block is refused in mode thread too
            reason = self.assertRefused(t, errno.EINVAL, 'flags', 'notify_block\n', WATCHED)
            self.assertIn(PMU.backend, reason)
            self.assertEqual(t.read('flags'), '\n')
            return
        t.write('flags', 'notify_block\n')
        self.assertRefused(t, errno.EINVAL, 'mode', 'system\n', WATCHED)
        self.assertEqual(t.read('mode'), 'thread\n')

    def test_switch_read_back(self):
        s = self.newSession()
        s.write('sets/0/switch', 'time 1000000\n')
        self.assertEqual(s.read('sets/0/switch'), 'time 1000000\n')
        s.write('sets/0/switch', 'ovfl')
        self.assertEqual(s.read('sets/0/switch'), 'ovfl\n')
        s.write('sets/0/switch', 'none\n')
        self.assertEqual(s.read('sets/0/switch'), 'none\n')

    # ---- error

    def test_error_keeps_the_last_failure(self):
        s = self.newSession()
        self.assertEqual(s.error(), '')
        self.assertErrno(errno.EINVAL, s.ctl, 'stop')
        first = s.error()
        self.assertNotEqual(first, '')
        pid = self.sleeper()
        s.ctl(f'load {pid}')  # a success does not clear it
        self.assertEqual(s.error(), first)
        self.assertErrno(errno.EBUSY, s.ctl, f'load {pid}')
        second = s.error()
        self.assertNotEqual(second, first)
        self.assertIn(str(pid), second)

    def test_error_is_per_session(self):
        s1, s2 = self.newSession(), self.newSession()
        self.assertErrno(errno.EINVAL, s1.ctl, 'stop')
        self.assertNotEqual(s1.error(), '')
        self.assertEqual(s2.error(), '')


if __name__ == '__main__':
    pfmfs_mount.main()
