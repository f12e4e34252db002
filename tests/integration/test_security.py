#!/usr/bin/env python3
# pfmfs(5), SECURITY, tried as an attacker with a shell account would on a
# shared mount, with a second plain user as the victim where there is one.
#
# Loads: a thread load succeeds only where the kernel would let the caller
# open a perf event on that thread (ptrace_may_access with
# PTRACE_MODE_READ_REALCREDS), checked beside the kernel's own verdict: a
# set-gid program of the user's own is refused, capabilities held in a user
# namespace of one's own count for nothing, and a thread that execs a set-id
# program while monitored stops being counted there.
#
# Descriptors: a write to ctl or a PMC is judged by the rights of whoever
# opened the file (a user's ctl written by root loads nothing the user could
# not). Names: sessions/ lists a user's own sessions only.
import errno
import grp
import os
import shutil
import signal
import socket
import subprocess

import pfmfs_mount
from kernel_setting import KernelSetting
from pfmfs_mount import (PMU, SIM, TEST_GROUP, TEST_USER, TEST_USER2, MountTestCase, attempt, cpuNs, perfOpenErrno,
                         runAs, setIdDir, stateLine, userIds, waitAsleep, waitFor)

PARANOID = '/proc/sys/kernel/perf_event_paranoid'


class LoadRuleTest(MountTestCase):
    """Thread loads by a plain user against the kernel's verdict."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # The kernel's verdict on one's own plain process is a yes only where
        # perf_event_paranoid lets plain users count their threads (2; Debian
        # ships 3). pfmfsd does not apply paranoid (pfmfsd(8)); the rule
        # compared here is the ptrace one.
        cls.enterClassContext(KernelSetting(PARANOID, lambda was: min(int(was), 2)))
        cls.dir = setIdDir()
        uid, _ = userIds(TEST_USER)
        sys_gid = grp.getgrnam(TEST_GROUP).gr_gid
        # The user's own set-gid programs: owned by them, in a group of theirs
        # that is not their primary one, as `chgrp pfmfs-sys; chmod g+s`
        # makes them. cat waits on its input; yes burns CPU. (Not a shell:
        # dash and bash give up set-id privileges unless run with -p.)
        cls.setgid = {}
        for name in ('cat', 'yes'):
            path = os.path.join(cls.dir, name)
            shutil.copy(os.path.realpath(shutil.which(name)), path)
            os.chown(path, uid, sys_gid)
            os.chmod(path, 0o2755)
            cls.setgid[name] = path

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)
        super().tearDownClass()

    def userProcess(self, argv):
        """argv as TEST_USER with its login groups, stdin a pipe; killed
        after the test. Returns the Popen once it waits in a read."""
        uid, gid = userIds(TEST_USER)
        p = subprocess.Popen(argv, user=uid, group=gid, extra_groups=pfmfs_mount.userGroups(TEST_USER),
                             stdin=subprocess.PIPE, close_fds=True)

        def end():
            if p.poll() is None:
                p.kill()
            p.wait()
            p.stdin.close()
        self.addCleanup(end)
        waitAsleep(p.pid, p.pid)
        return p

    def statusIds(self, pid, key):
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith(key + ':'):
                    return [int(x) for x in line.split()[1:4]]
        raise AssertionError(f'no {key} in /proc/{pid}/status')

    def test_setgid_program_is_refused_as_the_kernel_refuses(self):
        _, gid = userIds(TEST_USER)
        plain = self.userProcess(['cat'])
        setgid = self.userProcess([self.setgid['cat']])
        # The set-gid bit took: its effective gid is not the user's.
        self.assertEqual(self.statusIds(plain.pid, 'Gid'), [gid, gid, gid])
        self.assertEqual(self.statusIds(setgid.pid, 'Gid')[0], gid)
        self.assertNotEqual(self.statusIds(setgid.pid, 'Gid')[1], gid)
        # The kernel's verdict for this user: its plain process yes, the
        # set-gid one no.
        self.assertEqual(runAs(TEST_USER, perfOpenErrno, plain.pid), 0)
        self.assertIn(runAs(TEST_USER, perfOpenErrno, setgid.pid), (errno.EACCES, errno.EPERM))

        s = self.userSession()
        self.assertEqual(runAs(TEST_USER, attempt, s.ctl, f'load {setgid.pid}'), errno.EPERM)
        self.assertIn('gid', runAs(TEST_USER, s.error))
        self.assertEqual(s.state(), stateLine())
        runAs(TEST_USER, s.ctl, f'load {plain.pid}')
        self.assertEqual(s.state(), stateLine('loaded', target=plain.pid))

    def test_undumpable_process_is_refused(self):
        # The user's ids throughout, but made undumpable (prctl), as a
        # program that holds secrets does: the kernel refuses, so must pfmfs.
        p = self.userProcess([pfmfs_mount.userPython(), '-c',
                              'import ctypes, sys; ctypes.CDLL(None).prctl(4, 0); sys.stdin.read()'])
        _, gid = userIds(TEST_USER)
        self.assertTrue(waitFor(lambda: os.stat(f'/proc/{p.pid}/status').st_uid == 0), 'prctl(PR_SET_DUMPABLE, 0) did not take')
        self.assertEqual(self.statusIds(p.pid, 'Gid'), [gid, gid, gid])
        self.assertIn(runAs(TEST_USER, perfOpenErrno, p.pid), (errno.EACCES, errno.EPERM))
        s = self.userSession()
        self.assertEqual(runAs(TEST_USER, attempt, s.ctl, f'load {p.pid}'), errno.EPERM)
        self.assertIn('not dumpable', runAs(TEST_USER, s.error))
        self.assertEqual(s.state(), stateLine())

    def test_capabilities_of_ones_own_user_namespace_count_for_nothing(self):
        # Any user may make a user namespace and hold every capability in
        # it, CAP_SYS_PTRACE among them: that gives nothing on root's
        # threads, for the kernel nor for pfmfsd.
        root_pid = self.sleeper()
        s = self.userSession()
        uid, gid = userIds(TEST_USER)
        inside = subprocess.run(['unshare', '--user', '--map-root-user', 'sh', '-c',
                                 'grep CapEff /proc/self/status; '
                                 f'/bin/echo "load {root_pid}" > {s.path("ctl")}'],
                                user=uid, group=gid, extra_groups=[], capture_output=True, text=True)
        caps = int(inside.stdout.split()[1], 16) if inside.stdout.startswith('CapEff:') else 0
        self.assertTrue(caps & 1 << 19, f'unshare -r gave no CAP_SYS_PTRACE: {inside.stdout} {inside.stderr}')
        self.assertNotEqual(inside.returncode, 0)
        self.assertIn('Operation not permitted', inside.stderr)
        self.assertIn('CAP_SYS_PTRACE', runAs(TEST_USER, s.error))
        self.assertEqual(s.state(), stateLine())

    def test_root_without_capabilities_gets_what_a_user_gets(self):
        # The kernel's rules are capabilities, not uid 0: a root service
        # that dropped them may not count another user's thread, a CPU, or
        # the kernel, through pfmfs as with perf_event_open.
        user_pid = self.sleeper(TEST_USER)
        thread, system = self.newSession(), self.newSession()
        system.write('mode', 'system\n')
        verdict = (f'import sys; sys.path.insert(0, "{pfmfs_mount.HERE}"); from pfmfs_mount import perfOpenErrno; '
                   f'print("thread", perfOpenErrno({user_pid})); print("cpu", perfOpenErrno(-1, 0))')
        script = (f'grep CapEff /proc/self/status; {pfmfs_mount.userPython()} -c \'{verdict}\'; '
                  f'/bin/echo "load {user_pid}" > {thread.path("ctl")}; echo load=$?; cat {thread.path("error")}; '
                  f'/bin/echo "load 0" > {system.path("ctl")}; echo system=$?; '
                  f'/bin/echo "{PMU.pmc(PMU.event_a, usr=False, kernel=True)}" > {thread.path("sets/0/pmc0")}; echo os=$?')
        p = subprocess.run(['setpriv', '--bounding-set=-all', '--inh-caps=-all', 'sh', '-c', script],
                           capture_output=True, text=True)
        lines = p.stdout.split('\n')
        self.assertEqual(lines[0].split(), ['CapEff:', '0000000000000000'], p.stdout + p.stderr)
        self.assertEqual(lines[1:4], [f'thread {errno.EACCES}', f'cpu {errno.EACCES}', 'load=1'], p.stdout + p.stderr)
        self.assertIn('CAP_SYS_PTRACE', lines[4])
        self.assertEqual(lines[5:7], ['system=1', 'os=1'], p.stdout + p.stderr)
        self.assertIn('CAP_PERFMON', thread.error())  # the OS bit's refusal
        self.assertEqual(thread.read('sets/0/pmc0'), '0x0\n')
        self.assertEqual(thread.state(), stateLine())
        self.assertIn('CAP_PERFMON', system.error())
        self.assertEqual(system.state(), stateLine(mode='system'))

    def test_set_id_exec_ends_the_monitoring(self):
        # The user's own shell, loaded and counting, execs the user's set-gid
        # yes, which then burns CPU: the kernel ends perf's events
        # there, and pfmfs ends the session's counting as at an exit.
        p = self.userProcess(['sh', '-c', f'read x; exec {self.setgid["yes"]} > /dev/null'])
        s = self.userSession()

        def begin():
            s.pmc(0, PMU.pmc_a)
            s.ctl(f'load {p.pid}')
            s.ctl('start')
        runAs(TEST_USER, begin)
        if SIM:
            self.m.advance(1000)
            counted = runAs(TEST_USER, s.readPmd, 0)
            self.assertEqual(counted, PMU.rate_a * 1000)
        p.stdin.write(b'go\n')
        p.stdin.flush()
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state()), s.state())
        self.assertIsNone(p.poll())  # it runs on
        self.assertNotEqual(self.statusIds(p.pid, 'Gid')[1], userIds(TEST_USER)[1])
        self.assertEqual(s.state(), stateLine(queued=1, exited=True))  # the end message
        final = runAs(TEST_USER, s.readPmd, 0)
        if SIM:
            self.assertEqual(final, counted)
            self.m.advance(5000)
        else:
            cpu = cpuNs(p.pid)
            self.assertTrue(waitFor(lambda: cpuNs(p.pid) > cpu + 20_000_000), 'the set-gid loop did not run')
        self.assertEqual(runAs(TEST_USER, s.readPmd, 0), final)
        self.assertRegex(runAs(TEST_USER, s.readMessages), r'^type=end\b')
        os.kill(p.pid, signal.SIGKILL)


def openAs(user, path, flags):
    """A descriptor of `path` that `user` opened (in a child), handed to this
    process, as a user hands a descriptor to a program it runs (a set-uid
    program's stdout) or sends one over a socket."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # never returns
        status = 1
        try:
            uid, gid = userIds(user)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            socket.send_fds(b, [b'x'], [os.open(path, flags)])
            status = 0
        finally:
            os._exit(status)
    b.close()
    try:
        _, fds, _, _ = socket.recv_fds(a, 1, 1)
    finally:
        a.close()
        os.waitpid(pid, 0)
    if len(fds) != 1:
        raise AssertionError(f'{user} could not open {path}')
    return fds[0]


def writeFd(fd, text):
    """None, or the errno of one write of text to fd."""
    try:
        os.write(fd, text.encode())
        return None
    except OSError as e:
        return e.errno


class DeputyTest(MountTestCase):
    """A write is judged by the rights of whoever opened the file, taken at
    open (pfmfs(5), SECURITY, "Whose rights a write uses"): a user who hands
    their own ctl or pmcK to a privileged process gets no more through it
    than their own rights."""

    def test_a_users_ctl_written_by_root_loads_with_the_users_rights(self):
        s = self.userSession()
        runAs(TEST_USER, s.pmc, 0, PMU.pmc_a)
        victim = self.sleeper()  # root's
        fd = openAs(TEST_USER, s.path('ctl'), os.O_WRONLY)
        try:
            self.assertEqual(writeFd(fd, f'load {victim}\n'), errno.EPERM)
        finally:
            os.close(fd)
        self.assertEqual(s.state(), stateLine())
        self.assertIn('uid', runAs(TEST_USER, s.error))
        # Root's own descriptor carries root's rights.
        s.ctl(f'load {victim}')
        self.assertEqual(s.state(), stateLine('loaded', target=victim))

    def test_a_users_pmc_written_by_root_gets_no_os_bit(self):
        s = self.userSession()
        fd = openAs(TEST_USER, s.path('sets/0/pmc0'), os.O_WRONLY)
        try:
            self.assertEqual(writeFd(fd, PMU.pmc(PMU.event_a, kernel=True) + '\n'), errno.EPERM)
            self.assertIn('OS bit', runAs(TEST_USER, s.error))
            self.assertEqual(writeFd(fd, PMU.pmc_a + '\n'), None)  # the user's own rights do this
        finally:
            os.close(fd)
        self.assertEqual(runAs(TEST_USER, s.read, 'sets/0/pmc0'), PMU.pmc_a + '\n')


class VisibilityTest(MountTestCase):
    """sessions/ lists a user's own sessions, root every one (pfmfs(5),
    SECURITY, "What one user can learn of another")."""

    def test_a_user_lists_their_own_sessions_and_root_every_one(self):
        names = {}
        for user in (TEST_USER, TEST_USER2):
            MountTestCase._counter += 1
            s = self.m.session(f'seen-{MountTestCase._counter}')
            runAs(user, os.mkdir, s.dir)
            self.addCleanup(s.destroy)
            names[user] = s.name
        mine = self.newSession().name
        sessions = os.path.join(self.m.mnt, 'sessions')
        self.assertEqual(set(runAs(TEST_USER, os.listdir, sessions)), {names[TEST_USER]})
        self.assertEqual(set(runAs(TEST_USER2, os.listdir, sessions)), {names[TEST_USER2]})
        self.assertEqual(set(os.listdir(sessions)), {names[TEST_USER], names[TEST_USER2], mine})


if __name__ == '__main__':
    pfmfs_mount.main()
