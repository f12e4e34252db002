#!/usr/bin/env python3
# What pfmfsd keeps of a removed session (pfmfs(5), SECURITY): sessions made
# and autoclosed the way libpfm-compat makes and closes a context, 2,000 of
# them, while the kernel keeps the files they opened in its dentry cache.
import os
import re

import pfmfs_mount
from pfmfs_mount import PMU, Mount, MountTestCase
from test_fastpath import PATIENT, ask

SESSIONS = 2000
# The bound pfmfs(5) promises per removed session the kernel still holds
# files of: its nodes and what a new session has. Measured: 5.1 KiB (14.8
# before a destroyed session let go of its state).
BOUND_KB = 8
# The sanitizers' allocators add their own to every block kept: ASan its
# redzones, TSan its shadow and meta data. Measured per session, before and
# after: ASan 23 and 10 KiB, TSan 97 and 38.
SANITIZER_FACTOR = {'libasan': 2, 'libtsan': 8}


def vmRssKb(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    raise AssertionError(f'no VmRSS for {pid}')


def sanitizerFactor(pid):
    with open(f'/proc/{pid}/maps') as f:
        maps = f.read()
    return max([f for lib, f in SANITIZER_FACTOR.items() if lib in maps], default=1)


class RemovedSessionTest(MountTestCase):

    mount_args = PATIENT

    @classmethod
    def setUpClass(cls):
        # Under ASan freed blocks would wait in its quarantine (256 MiB by
        # default) and count as kept: this daemon runs without one.
        quarantine = os.environ.get('ASAN_OPTIONS', '') + ':quarantine_size_mb=0'
        cls.m = Mount(cls.mount_args, manual_clock=cls.manual_clock,
                      env={'ASAN_OPTIONS': quarantine.lstrip(':')}).start()

    def setUp(self):
        self.sock = re.search(r' fastpath=@(\S+) ', self.m.read('pmu/info')).group(1)

    def context(self, name):
        """As libpfm-compat: mkdir 01700 (born autoclose), the directory and
        its message file opened, a PMC written and a PMD read through
        descriptors kept open, the fast path's page asked for, and the
        message file closed: the session is autoclosed while the kernel
        still has its files in use, and keeps them cached once they are
        closed."""
        path = self.m.path('sessions', name)
        os.mkdir(path, 0o1700)
        fds = [os.open(path, os.O_PATH | os.O_DIRECTORY)]
        msg = os.open(os.path.join(path, 'msg'), os.O_RDONLY)
        try:
            fds.append(os.open(os.path.join(path, 'ctl'), os.O_WRONLY))
            fds.append(os.open(os.path.join(path, 'sets', '0', 'pmc0'), os.O_WRONLY))
            os.write(fds[-1], f'{PMU.pmc_a}\n'.encode())
            fds.append(os.open(os.path.join(path, 'sets', '0', 'pmd0'), os.O_RDONLY))
            self.assertEqual(os.read(fds[-1], 64), b'0\n')
            answer, page = ask(self.sock, f'page {name}')
            self.assertEqual(answer, 'ok')
            fds.append(page)
        finally:
            os.close(msg)
        # Gone from the kernel's view (autoclosed, the kernel told) while
        # the rest is open.
        self.assertTrue(pfmfs_mount.waitFor(lambda: not os.path.exists(path), interval=0.0005),
                        f'{name} was not autoclosed')
        for fd in fds:
            os.close(fd)

    def test_a_removed_session_keeps_at_most_the_bound(self):
        pid = self.m.proc.pid
        for i in range(100):  # the allocator's first arenas and the daemon's threads
            self.context(f'warm-{i}')
        before = vmRssKb(pid)
        for i in range(SESSIONS):
            self.context(f'ctx-{i}')
        self.assertEqual(os.listdir(self.m.path('sessions')), [])
        bound = BOUND_KB * sanitizerFactor(pid) * SESSIONS
        # The bound is on what stays. A clean-clone CI run, beside three
        # other lanes, once read 8.6 KiB a session at the first look where
        # quiet runs read 5.4: likely what the daemon had yet to let go of
        # (the kernel's releases and forgets come after the client's close).
        # So the figure may settle for up to 10 s before it is judged.
        pfmfs_mount.waitFor(lambda: vmRssKb(pid) - before < bound, 10, interval=0.1)
        grown = vmRssKb(pid) - before
        self.assertLess(grown, bound, f'pfmfsd grew by {grown} KiB for {SESSIONS} removed sessions, '
                                      f'{grown / SESSIONS:.1f} KiB each')


if __name__ == '__main__':
    pfmfs_mount.main()
