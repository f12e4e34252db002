#!/usr/bin/env python3
# Who may do what (pfmfs(5), OWNERSHIP AND PERMISSIONS) with real users: sessions belong to
# their creator, other users are refused everything inside them, loading on
# another uid's thread, system mode and kernel-level counting need privileges
# (or --system-group / --allow-kernel), pmu/sim/advance is root's (sim), and
# the per-user session limit counts each user apart.
import errno
import os
import stat
import subprocess

import pfmfs_mount
from pfmfs_mount import (PMU, SIM, TEST_GROUP, TEST_USER, TEST_USER2, MountTestCase, attempt, runAs, simOnly,
                         stateLine, userIds)

A = PMU.pmc_a  # a PMC value counting at user level
A_KERNEL = PMU.pmc(PMU.event_a, usr=False, kernel=True)
A_BOTH = PMU.pmc(PMU.event_a, kernel=True)

DENIED = (errno.EACCES, errno.EPERM)


class PermissionsTest(MountTestCase):

    def test_user_session_belongs_to_its_creator(self):
        s = self.userSession(TEST_USER)
        uid, gid = userIds(TEST_USER)
        st = os.stat(s.dir)
        self.assertEqual((st.st_uid, st.st_gid), (uid, gid))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        for rel in ('state', 'ctl', 'sets/0/pmc0', 'sets/0'):
            st = os.stat(s.path(rel))
            self.assertEqual((st.st_uid, st.st_gid), (uid, gid), rel)
        # The owner uses it.
        self.assertEqual(runAs(TEST_USER, s.read, 'state'), stateLine())
        runAs(TEST_USER, s.write, 'sets/0/pmc0', f'{A}\n')
        self.assertEqual(runAs(TEST_USER, s.read, 'sets/0/pmc0'), f'{A}\n')
        runAs(TEST_USER, s.mkset, 1)
        self.assertEqual(sorted(runAs(TEST_USER, os.listdir, s.path('sets'))), ['0', '1'])
        # Root too.
        self.assertEqual(s.read('sets/0/pmc0'), f'{A}\n')

    def test_other_user_is_refused_everything(self):
        for owner, other in ((None, TEST_USER), (TEST_USER, TEST_USER2)):
            with self.subTest(owner=owner or 'root', other=other):
                s = self.newSession() if owner is None else self.userSession(owner)
                checks = [
                    ('list session', os.listdir, s.dir),
                    ('list sets', os.listdir, s.path('sets')),
                    ('list set 0', os.listdir, s.path('sets/0')),
                    ('read state', s.read, 'state'),
                    ('read error', s.read, 'error'),
                    ('read pmd0', s.read, 'sets/0/pmd0'),
                    ('read messages', pfmfs_mount.readBytes, s.path('messages'), 4096, os.O_NONBLOCK),
                    ('read smpl_buf', pfmfs_mount.readBytes, s.path('smpl_buf')),
                    ('read samples', s.read, 'samples'),
                    ('write ctl', s.write, 'ctl', 'stop\n'),
                    ('write mode', s.write, 'mode', 'system\n'),
                    ('write smpl_fmt', s.write, 'smpl_fmt', 'default buf_size=4096\n'),
                    ('write pmc0', s.write, 'sets/0/pmc0', f'{A}\n'),
                    ('mkdir set', os.mkdir, s.path('sets/5')),
                    ('rmdir set 0', os.rmdir, s.path('sets/0')),
                ]
                for what, fn, *args in checks:
                    self.assertEqual(runAs(other, attempt, fn, *args), errno.EACCES, what)
                self.assertIn(runAs(other, attempt, os.rmdir, s.dir), DENIED)
                self.assertTrue(os.path.isdir(s.dir))
                self.assertEqual(s.read('sets/0/pmc0'), '0x0\n')
                self.assertEqual(s.read('smpl_fmt'), 'none\n')
                self.assertEqual(s.error(), '')  # nothing reached the session
                self.assertEqual(sorted(os.listdir(s.path('sets'))), ['0'])

    def test_root_removes_a_users_session(self):
        s = self.userSession(TEST_USER)
        os.rmdir(s.dir)
        self.assertFalse(os.path.exists(s.dir))

    def test_owner_removes_own_session(self):
        s = self.userSession(TEST_USER)
        runAs(TEST_USER, os.rmdir, s.dir)
        self.assertFalse(os.path.exists(s.dir))

    def test_everyone_reads_the_pmu_and_lists_their_own_sessions(self):
        s = self.newSession()
        mine = self.userSession(TEST_USER)
        self.assertEqual(runAs(TEST_USER, self.m.read, 'version'), 'pfmfs 0.1.0\nabi 1\n')
        self.assertEqual(runAs(TEST_USER, self.m.read, 'pmu/info'), self.m.read('pmu/info'))
        self.assertEqual(runAs(TEST_USER, self.m.read, 'pmu/desc/pmc0/name'), PMU.pmc_desc[0][0] + '\n')
        # Root's session is not listed to the user (test_security's VisibilityTest).
        self.assertEqual(runAs(TEST_USER, os.listdir, self.m.path('sessions')), [mine.name])
        self.assertIn(s.name, os.listdir(self.m.path('sessions')))

    @simOnly
    def test_user_may_not_advance_the_clock(self):
        self.assertEqual(runAs(TEST_USER, attempt, self.m.advance, 1000), errno.EACCES)

    def test_load_on_another_uids_thread_is_eperm(self):
        s = self.userSession(TEST_USER)
        root_pid = self.sleeper()
        other_pid = self.sleeper(TEST_USER2)
        for pid in (root_pid, other_pid):
            with self.subTest(pid=pid):
                self.assertEqual(runAs(TEST_USER, attempt, s.ctl, f'load {pid}'), errno.EPERM)
                self.assertNotEqual(runAs(TEST_USER, s.error), '')
                self.assertEqual(s.state(), stateLine())
        self.assertEqual(runAs(TEST_USER, attempt, s.ctl, f'load {pfmfs_mount.goneTid()}'), errno.ESRCH)

    def test_load_on_own_thread_counts(self):
        s = self.userSession(TEST_USER)
        w = self.worker(TEST_USER)
        pid = w.pid

        def experiment():
            s.pmc(0, f'{PMU.event_a[0]}:u')
            if SIM:
                s.pmc(16, '0x20')
            s.ctl(f'load {pid}')
            s.ctl('start')
        runAs(TEST_USER, experiment)
        d = self.driven(w)
        d.drive(3000)  # sim: 1000 ns
        d.check(runAs(TEST_USER, s.readPmd, 0))  # sim: 3000
        if SIM:
            self.assertEqual(runAs(TEST_USER, s.readPmd, 17), 3000)
        self.assertEqual(runAs(TEST_USER, s.state), stateLine('active', target=pid))

    def capShell(self, cap, script):
        """`sh -c script` as TEST_USER holding one capability (ambient)."""
        uid, gid = userIds(TEST_USER)
        p = subprocess.run(['setpriv', f'--reuid={uid}', f'--regid={gid}', '--clear-groups', f'--inh-caps=+{cap}',
                            f'--ambient-caps=+{cap}', 'sh', '-c', script], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def test_cap_sys_ptrace_monitors_any_thread(self):
        s = self.userSession(TEST_USER)
        pid = self.sleeper()  # root's
        status, out, err = self.capShell('sys_ptrace', f'echo "load {pid}" > {s.path("ctl")} && cat {s.path("state")}')
        self.assertEqual((status, out, err), (0, stateLine('loaded', target=pid), ''))
        s.ctl('unload')
        # Another capability is no substitute.
        status, out, err = self.capShell('sys_admin', f'/bin/echo "load {pid}" > {s.path("ctl")}')
        self.assertEqual(status, 1)
        self.assertIn('Operation not permitted', err)
        self.assertEqual(s.state(), stateLine())

    def test_root_loads_on_a_users_thread(self):
        s = self.newSession()
        pid = self.sleeper(TEST_USER)
        s.ctl(f'load {pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))

    def test_user_system_mode_is_eperm(self):
        s = self.userSession(TEST_USER2)
        runAs(TEST_USER2, s.write, 'mode', 'system\n')
        self.assertEqual(runAs(TEST_USER2, attempt, s.ctl, 'load 0'), errno.EPERM)
        self.assertEqual(s.state(), stateLine(mode='system'))
        self.assertNotEqual(s.error(), '')

    def test_user_kernel_level_counting_is_eperm(self):
        s = self.userSession(TEST_USER)
        cases = [(0, A_KERNEL), (0, A_BOTH), (1, f'{PMU.event_a[0]}:k'), (2, f'{PMU.event_b[0]}:u:k')]
        if SIM:
            cases += [(16, '0x1'), (16, '0x230')]
        for k, value in cases:
            with self.subTest(pmc=k, value=value):
                self.assertEqual(runAs(TEST_USER, attempt, s.pmc, k, value), errno.EPERM)
                self.assertEqual(s.read(f'sets/0/pmc{k}'), '0x0\n')
        self.assertEqual(runAs(TEST_USER, attempt, s.write, 'sets/0/regs', f'pmc0 {A}\npmc1 {A_KERNEL}\n'),
                         errno.EPERM)
        self.assertEqual(s.read('sets/0/regs'), '')
        self.assertNotEqual(s.error(), '')
        runAs(TEST_USER, s.pmc, 0, A)  # user level is fine
        self.assertEqual(s.read('sets/0/pmc0'), f'{A}\n')

    def test_root_counts_kernel_level(self):
        s = self.newSession()
        s.pmc(0, A_KERNEL)
        s.pmc(1, f'{PMU.event_a[0]}:k')
        self.assertEqual(s.read('sets/0/pmc0'), f'{A_KERNEL}\n')
        self.assertEqual(s.read('sets/0/pmc1'), f'{A_KERNEL}\n')


class AllowKernelTest(MountTestCase):
    mount_args = ['--allow-kernel']

    def test_user_may_count_kernel_level(self):
        s = self.m.session(f'{TEST_USER}-kernel')
        runAs(TEST_USER, os.mkdir, s.dir)
        self.addCleanup(s.destroy)
        runAs(TEST_USER, s.pmc, 0, A_KERNEL)
        runAs(TEST_USER, s.pmc, 1, f'{PMU.event_a[0]}:u:k')
        self.assertEqual(s.read('sets/0/pmc0'), f'{A_KERNEL}\n')
        self.assertEqual(s.read('sets/0/pmc1'), f'{A_BOTH}\n')
        if SIM:
            runAs(TEST_USER, s.pmc, 16, '0x333')
            self.assertEqual(s.read('sets/0/pmc16'), '0x333\n')
        # Other privileges stay: no system mode.
        runAs(TEST_USER, s.write, 'mode', 'system')
        self.assertEqual(runAs(TEST_USER, attempt, s.ctl, 'load 0'), errno.EPERM)


class SystemGroupTest(MountTestCase):
    mount_args = [f'--system-group={TEST_GROUP}']

    def test_group_member_may_load_system_mode(self):
        s = self.m.session(f'{TEST_USER}-system')
        runAs(TEST_USER, os.mkdir, s.dir)
        self.addCleanup(s.destroy)

        w = self.worker()
        os.sched_setaffinity(w.pid, {0})  # its work is cpu 0's

        def load():
            s.write('mode', 'system\n')
            s.pmc(0, A)
            s.ctl('load 0')
            s.ctl('start')
        runAs(TEST_USER, load)
        self.drive(w, 300)  # sim: 100 ns
        self.assertEqual(runAs(TEST_USER, s.state), stateLine('active', mode='system', target=0))
        if SIM:
            self.assertEqual(runAs(TEST_USER, s.readPmd, 0), 300)
        else:  # and whatever else faulted on cpu 0
            self.assertGreaterEqual(runAs(TEST_USER, s.readPmd, 0), 300)

    def test_non_member_may_not(self):
        s = self.m.session(f'{TEST_USER2}-system')
        runAs(TEST_USER2, os.mkdir, s.dir)
        self.addCleanup(s.destroy)
        runAs(TEST_USER2, s.write, 'mode', 'system\n')
        self.assertEqual(runAs(TEST_USER2, attempt, s.ctl, 'load 0'), errno.EPERM)
        self.assertEqual(s.state(), stateLine(mode='system'))

    def test_group_gives_no_kernel_counting(self):
        s = self.m.session(f'{TEST_USER}-nokernel')
        runAs(TEST_USER, os.mkdir, s.dir)
        self.addCleanup(s.destroy)
        self.assertEqual(runAs(TEST_USER, attempt, s.pmc, 0, A_KERNEL), errno.EPERM)


class SessionLimitTest(MountTestCase):
    mount_args = ['--max-sessions-per-user=3']

    def test_limit_counts_each_user_apart(self):
        mine = []
        for i in range(3):
            s = self.m.session(f'u1-{i}')
            runAs(TEST_USER, os.mkdir, s.dir)
            self.addCleanup(s.destroy)
            mine.append(s)
        extra = self.m.session('u1-3')
        self.assertEqual(runAs(TEST_USER, attempt, os.mkdir, extra.dir), errno.ENOSPC)
        self.assertFalse(os.path.exists(extra.dir))
        # Another user and root still create theirs.
        for i in range(3):
            s = self.m.session(f'u2-{i}')
            runAs(TEST_USER2, os.mkdir, s.dir)
            self.addCleanup(s.destroy)
        self.assertEqual(runAs(TEST_USER2, attempt, os.mkdir, self.m.path('sessions', 'u2-3')), errno.ENOSPC)
        self.newSession('root-0')
        # Removing one makes room again.
        runAs(TEST_USER, os.rmdir, mine[0].dir)
        runAs(TEST_USER, os.mkdir, extra.dir)
        self.addCleanup(extra.destroy)
        self.assertTrue(os.path.isdir(extra.dir))


if __name__ == '__main__':
    pfmfs_mount.main()
