#!/usr/bin/env python3
# Fault injection, hostile names and paths (issue 14; test_faults_input.py
# has the volume): session and set names at and past every length limit,
# with every refused byte, `.` and `..`, set numbers out of range; and paths
# that try to leave the session tree: special files, renames and hard links
# out of place or onto another user's session, `..`, and a session's file
# reopened through /proc/self/fd by another user. Each: the exact errno
# (the daemon's, or the kernel's where it answers first), the reason in
# `error` where pfmfs(5) promises one, and nothing created, moved or changed.
# test_faults_input.py runs these tests too; alone:
#
#   PFMFSD=build/fs/pfmfsd PFMFS_BACKEND=sim|perf python3 tests/fuzz/test_faults_input_names.py
import ctypes
import errno
import os
import socket
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_faults_input import FaultTestCase  # noqa: E402  (also puts tests/integration on the path)

import pfmfs_mount as pm  # noqa: E402
from pfmfs_mount import PMU, PRINTABLE, TEST_USER, TEST_USER2, runAs  # noqa: E402

A = PMU.pmc_a
NAME_OK = set(b'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-')
PATH_MAX = os.pathconf('/', 'PC_PATH_MAX')  # 4096: a longer path never leaves the kernel
SYS_RENAMEAT2 = {'x86_64': 316, 'aarch64': 276, 'riscv64': 276}.get(os.uname().machine)
RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
AT_FDCWD, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH = -100, 0x400, 0x1000
libc = ctypes.CDLL(None, use_errno=True)


def check(rc):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def renameat2(old, new, flags):
    check(libc.syscall(SYS_RENAMEAT2, AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags))


def linkFd(fd, new, empty_path):
    """A hard link to an open descriptor: linkat(fd, "", AT_EMPTY_PATH), or
    linkat of /proc/self/fd/FD with AT_SYMLINK_FOLLOW (os.link follows no link)."""
    if empty_path:
        check(libc.linkat(fd, b'', AT_FDCWD, os.fsencode(new), AT_EMPTY_PATH))
    else:
        check(libc.linkat(AT_FDCWD, f'/proc/self/fd/{fd}'.encode(), AT_FDCWD, os.fsencode(new), AT_SYMLINK_FOLLOW))


class NamesTest(FaultTestCase):

    def sessions(self):
        return sorted(os.listdir(self.m.path('sessions')))

    def assertNotCreated(self, err, path, listing, before):
        """mkdir `path` fails with err and `listing()` stays `before`."""
        self.assertErrno(err, os.mkdir, path)
        self.assertEqual(listing(), before, f'{path!r} left something behind')

    def assertSetRefused(self, s, name, err=errno.EINVAL, reason=True):
        """mkdir sets/NAME fails with err; with `reason`, `error` names the
        rule (else the kernel refused and `error` is untouched); sets/ and
        a lookup of NAME are unchanged."""
        marker = self._markError(s, 'ctl', '')
        self.assertNotCreated(err, os.path.join(os.fsencode(s.path('sets')), name), lambda: os.listdir(s.path('sets')),
                              ['0'])
        if reason:
            self.assertRegex(s.error(), r"^set name '.*': sets are named 0\.\.65535 in plain decimal\n$")
            self.assertRegex(s.error(), PRINTABLE)
            self.assertErrno(errno.ENOENT, os.stat, os.path.join(os.fsencode(s.path('sets')), name))
        else:
            self.assertEqual(s.error(), marker)

    def test_session_names_at_length_limits(self):
        """NAME_MAX (255) and past it, FUSE's old name limit (1024): the
        64-character rule's EINVAL; a name longer than PATH_MAX: the kernel's
        ENAMETOOLONG."""
        before = self.sessions()
        for n in (65, 255, 256, 1024):
            with self.subTest(length=n):
                self.assertNotCreated(errno.EINVAL, self.m.path('sessions', 'a' * n), self.sessions, before)
                self.assertErrno(errno.ENOENT, os.stat, self.m.path('sessions', 'a' * n))
        self.assertNotCreated(errno.ENAMETOOLONG, self.m.path('sessions', 'a' * PATH_MAX), self.sessions, before)
        s = self.newSession('A-z.0_9' * 9 + 'x')  # 64: the longest, of every kind of character
        self.assertEqual(len(s.name), 64)
        self.assertEqual(s.state(), pm.stateLine())

    def test_set_names_at_length_limits_and_out_of_range(self):
        s = self.newSession()
        for name in ['1' * 255, '1' * 256, '1' * 1024, '0' * 255, '65536', '-1', '01', '1e3', '1E3', '0x10', '1.0',
                     '+0', '-0', '1 ', '\t1', '1\n', '4294967296', '4294967297', '18446744073709551617',
                     '9' * 40, '\uff11', '\u0663', '1\u200b']:
            with self.subTest(name=name):
                self.assertSetRefused(s, name.encode())
        self.assertSetRefused(s, b'1' * PATH_MAX, errno.ENAMETOOLONG, reason=False)
        for name in ('65536', '4294967296', '18446744073709551616'):  # lookups do not wrap to set 0
            self.assertErrno(errno.ENOENT, os.stat, s.path(f'sets/{name}/pmc0'))
        s.mkset(65535)  # the largest
        self.assertEqual(sorted(os.listdir(s.path('sets')), key=int), ['0', '65535'])

    def test_every_refused_byte(self):
        """Every byte but '/' and NUL that the rule refuses, alone and inside
        a name: a session EINVAL; a set EINVAL with a printable reason."""
        s = self.newSession()
        before = self.sessions()
        for b in range(1, 256):
            if b == ord('/'):
                continue
            byte = bytes([b])
            with self.subTest(byte=b):
                for name in [] if b in NAME_OK else [byte, b'a' + byte + b'b']:
                    self.assertNotCreated(errno.EINVAL, os.path.join(os.fsencode(self.m.path('sessions')), name),
                                          self.sessions, before)
                if not byte.isdigit():
                    for name in ([byte] if b != ord('.') else []) + [b'1' + byte + b'2']:
                        self.assertSetRefused(s, name)

    def test_dot_and_dotdot(self):
        """Never the daemon's: the kernel answers mkdir of `.`/`..` with
        EEXIST, rmdir with EINVAL and ENOTEMPTY. `...` is a name like any."""
        s = self.newSession()
        before = self.sessions()
        for parent, listing, was in ((self.m.path('sessions'), self.sessions, before),
                                     (s.path('sets'), lambda: os.listdir(s.path('sets')), ['0'])):
            with self.subTest(parent=parent):
                self.assertNotCreated(errno.EEXIST, os.path.join(parent, '.'), listing, was)
                self.assertNotCreated(errno.EEXIST, os.path.join(parent, '..'), listing, was)
                self.assertErrno(errno.EINVAL, os.rmdir, os.path.join(parent, '.'))
                self.assertErrno(errno.ENOTEMPTY, os.rmdir, os.path.join(parent, '..'))
                self.assertEqual(listing(), was)
        self.assertSetRefused(s, b'...')
        self.assertEqual(self.newSession('...').state(), pm.stateLine())


class PathsTest(FaultTestCase):

    def setUp(self):
        self.mine = self.newSession('mine')
        self.theirs = pm.Session(self.m, 'theirs')
        runAs(TEST_USER, os.mkdir, self.theirs.dir)
        self.addCleanup(self.theirs.destroy)
        self.outside = tempfile.mkdtemp(prefix='pfmfs-faults-')
        self.addCleanup(os.rmdir, self.outside)
        self.before = self.tree()

    def tree(self):
        """Every path of the mount's session tree, with its mode and owner."""
        out = {}
        for top, dirs, files in os.walk(self.m.path('sessions')):
            for name in dirs + files:
                st = os.lstat(os.path.join(top, name))
                out[os.path.relpath(os.path.join(top, name), self.m.mnt)] = (st.st_mode, st.st_uid)
        return out

    def assertUnchanged(self):
        self.assertEqual(self.tree(), self.before)
        self.assertEqual(os.listdir(self.outside), [])

    def places(self):
        return [self.m.path('sessions'), self.mine.dir, self.mine.path('sets'), self.mine.path('sets/0')]

    def test_no_special_files(self):
        """FIFOs, devices, sockets: EPERM as regular files are; O_TMPFILE and
        extended attributes, which the daemon does not implement: the
        kernel's EOPNOTSUPP."""
        for d in self.places():
            with self.subTest(dir=d):
                p = os.path.join(d, 'new')
                self.assertErrno(errno.EPERM, os.mkfifo, p)
                self.assertErrno(errno.EPERM, os.mknod, p, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
                self.assertErrno(errno.EPERM, os.mknod, p, 0o600 | stat.S_IFBLK, os.makedev(7, 0))
                self.assertErrno(errno.EPERM, os.open, p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with socket.socket(socket.AF_UNIX) as sock:
                    self.assertErrno(errno.EPERM, sock.bind, p)
                self.assertErrno(errno.EOPNOTSUPP, os.open, d, os.O_TMPFILE | os.O_WRONLY, 0o600)
        for p in (self.mine.dir, self.mine.path('ctl'), self.mine.path('sets/0/pmc0')):
            self.assertErrno(errno.EOPNOTSUPP, os.setxattr, p, 'user.x', b'1')
            self.assertErrno(errno.EOPNOTSUPP, os.getxattr, p, 'user.x')
        self.assertUnchanged()

    def test_renames_stay_put(self):
        m, mine, theirs = self.m, self.mine, self.theirs
        cases = [(mine.dir, theirs.dir), (mine.dir, m.path('sessions', 'new')), (mine.dir, m.path('mine')),
                 (mine.path('sets/0'), m.path('sessions', 'set0')), (mine.path('sets/0'), theirs.path('sets/1')),
                 (mine.path('ctl'), theirs.path('ctl')), (mine.path('ctl'), mine.path('sets/0/ctl')),
                 (mine.path('sets/0/pmc0'), mine.path('sets/0/pmc1'))]
        for old, new in cases:
            with self.subTest(old=old, new=new):
                self.assertErrno(errno.EPERM, os.rename, old, new)
                # The kernel answers first where the flag's own rule fails.
                exists = os.path.lexists(new)
                self.assertErrno(errno.EEXIST if exists else errno.EPERM, renameat2, old, new, RENAME_NOREPLACE)
                self.assertErrno(errno.EPERM if exists else errno.ENOENT, renameat2, old, new, RENAME_EXCHANGE)
                self.assertErrno(errno.EPERM, renameat2, old, new, RENAME_WHITEOUT)
        # Another user may not take, nor move, the test user's session (sticky sessions/).
        self.assertErrno(errno.EPERM, runAs, TEST_USER2, os.rename, theirs.dir, m.path('sessions', 'stolen'))
        # Out of the mount, or into it: the kernel's EXDEV.
        self.assertErrno(errno.EXDEV, os.rename, mine.dir, os.path.join(self.outside, 'mine'))
        self.assertErrno(errno.EXDEV, os.rename, self.outside, mine.path('sets/7'))
        self.assertUnchanged()
        self.assertEqual(os.stat(theirs.dir).st_uid, pm.userIds(TEST_USER)[0])

    def test_hard_links_to_ctl(self):
        m, mine, theirs = self.m, self.mine, self.theirs
        for new in (mine.path('ctl2'), mine.path('sets/0/ctl'), m.path('sessions', 'ctl'), theirs.path('ctl2'),
                    m.path('ctl')):
            with self.subTest(new=new):
                self.assertErrno(errno.EPERM, os.link, mine.path('ctl'), new)
        fd = os.open(mine.path('ctl'), os.O_WRONLY)
        try:
            for empty_path in (False, True):
                self.assertErrno(errno.EPERM, linkFd, fd, mine.path('ctl3'), empty_path)
                self.assertErrno(errno.EXDEV, linkFd, fd, os.path.join(self.outside, 'ctl'), empty_path)
        finally:
            os.close(fd)
        self.assertErrno(errno.EXDEV, os.link, mine.path('ctl'), os.path.join(self.outside, 'ctl'))
        self.assertErrno(errno.EPERM, os.symlink, mine.path('ctl'), mine.path('sets/0/ctl'))
        self.assertUnchanged()

    def test_dotdot_stays_in_the_mount(self):
        """`..` is the kernel's: inside the mount it names the mount's own
        directories; only the root's leaves it, to where it is mounted. No
        entry of the mount is a link, nor on another device."""
        m, mine = self.m, self.mine
        self.assertTrue(os.path.samefile(mine.path('sets/0/../../../../version'), m.path('version')))
        self.assertTrue(os.path.samefile(mine.path('sets/0/../../..'), m.path('sessions')))
        self.assertEqual(pm.read(mine.path('sets/../sets/0/../0/pmc0')), '0x0\n')
        dev = os.stat(m.mnt).st_dev
        self.assertNotEqual(os.stat(m.path('..')).st_dev, dev)
        self.assertTrue(os.path.samefile(m.path('..'), os.path.dirname(m.mnt)))
        for name in ('...', '..\\', '.. ', '%2e%2e', '..;'):
            self.assertErrno(errno.ENOENT, os.stat, mine.path(f'sets/0/{name}'))
        seen = 0
        for top, dirs, files in os.walk(m.mnt):
            for name in dirs + files:
                st = os.lstat(os.path.join(top, name))
                self.assertTrue(stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode), os.path.join(top, name))
                self.assertEqual(st.st_dev, dev, os.path.join(top, name))
                seen += 1
        self.assertGreater(seen, 40)

    def test_reopen_through_proc_fd(self):
        """The owner cannot widen a session's modes (chmod EPERM); another
        user given a descriptor of it cannot reopen it through /proc/self/fd
        (a fresh open, with EACCES), nor reach it through the opener's
        /proc/PID/fd; the descriptor itself reads, as any does."""
        theirs = self.theirs
        self.assertErrno(errno.EPERM, runAs, TEST_USER, os.chmod, theirs.dir, 0o777)
        self.assertErrno(errno.EPERM, runAs, TEST_USER, os.chmod, theirs.path('sets/0/pmc0'), 0o666)
        self.assertErrno(errno.EPERM, runAs, TEST_USER, os.chown, theirs.path('ctl'), pm.userIds(TEST_USER2)[0], -1)
        runAs(TEST_USER, pm.write, theirs.path('sets/0/pmc0'), f'{A}\n')
        fd = os.open(theirs.path('sets/0/pmc0'), os.O_RDONLY)
        try:
            def attempt():
                got = []
                for path, flags in ((f'/proc/self/fd/{fd}', os.O_WRONLY), (f'/proc/self/fd/{fd}', os.O_RDONLY),
                                    (f'/proc/{os.getppid()}/fd/{fd}', os.O_RDONLY), (theirs.path('ctl'), os.O_WRONLY)):
                    try:
                        os.close(os.open(path, flags))
                        got.append('opened')
                    except OSError as e:
                        got.append(errno.errorcode[e.errno])
                return got, os.pread(fd, 100, 0).decode()
            self.assertEqual(runAs(TEST_USER2, attempt), (['EACCES'] * 4, f'{A}\n'))
        finally:
            os.close(fd)
        self.assertEqual(stat.S_IMODE(os.stat(theirs.path('sets/0/pmc0')).st_mode), 0o600)
        self.assertEqual(theirs.read('sets/0/pmc0'), f'{A}\n')
        self.assertUnchanged()


if __name__ == '__main__':
    pm.main()
