#!/usr/bin/env python3
# pfmfsd as an admin starts it: mount(8) with `-t fuse.pfmfsd` and with an
# fstab line (both through mount.fuse3, which runs `pfmfsd SOURCE MOUNTPOINT
# -o OPTS`), and the systemd unit pfmfsd.service (systemd-analyze verify, and
# its ExecStart run as systemd runs it).
#
# mount(8) removes PATH from its helpers' environment (util-linux's
# sanitize_env), so mount.fuse3's /bin/sh looks for pfmfsd on its default
# PATH only, /usr/local/sbin first. These tests therefore run in a mount
# namespace of their own in which /usr/local/sbin is a directory holding the
# build's pfmfsd; neither that nor the test mounts is seen by the host or by
# the other mount tests. The test process is the child subreaper of what it
# starts, so that a pfmfsd that daemonized becomes its child and its exit
# status can be checked.
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import pfmfs_mount
from pfmfs_mount import (EXIT_TIMEOUT_S, MOUNT_TIMEOUT_S, TEST_USER, daemonPath, inCi, read, runAs, simOnly,
                         waitFor, write)

CLONE_NEWNS = 0x00020000
PR_SET_CHILD_SUBREAPER = 36
SH_PATH_DIR = '/usr/local/sbin'  # the first directory of dash's default PATH
_libc = ctypes.CDLL(None, use_errno=True)
_bin_dir = None


def setUpModule():
    """A private mount namespace with the build's pfmfsd in /usr/local/sbin;
    this process the subreaper of the daemons. unshare(CLONE_NEWNS) needs a
    process of one thread: nothing has started another yet."""
    global _bin_dir
    if _libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), 'unshare(CLONE_NEWNS)')
    subprocess.run(['mount', '--make-rprivate', '/'], check=True)
    _bin_dir = tempfile.mkdtemp(prefix='pfmfs-sbin.')
    os.chmod(_bin_dir, 0o755)
    os.symlink(os.path.abspath(daemonPath()), os.path.join(_bin_dir, 'pfmfsd'))
    subprocess.run(['mount', '--bind', _bin_dir, SH_PATH_DIR], check=True)
    if _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_CHILD_SUBREAPER)')


def tearDownModule():
    subprocess.run(['umount', SH_PATH_DIR], check=False)
    shutil.rmtree(_bin_dir, ignore_errors=True)


def daemonsOn(mnt):
    """The pids of our child pfmfsd processes whose command line names mnt."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                stat = f.read()
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        comm = stat[stat.index('(') + 1:stat.rindex(')')]
        ppid = int(stat[stat.rindex(')') + 2:].split()[1])
        if comm == 'pfmfsd' and ppid == os.getpid() and mnt.encode() in argv:
            pids.append(int(entry))
    return pids


def waitStatus(pid, timeout=EXIT_TIMEOUT_S):
    """pid's exit status as os.waitstatus_to_exitcode gives it; None if it
    is still running after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    return None


def mountLine(mnt):
    """mnt's line of /proc/mounts, split; None when nothing is mounted there."""
    with open('/proc/mounts') as f:
        for line in f:
            fields = line.split()
            if fields[1] == mnt:
                return fields
    return None


class MountDirTestCase(unittest.TestCase):
    """A temporary directory with an empty `mnt` in it; whatever is left
    mounted there and whatever daemon serves it are gone after the test."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-mount.')
        os.chmod(self.tmp, 0o755)
        self.mnt = os.path.join(self.tmp, 'mnt')
        os.mkdir(self.mnt)
        self.addCleanup(self._cleanUp)

    def _cleanUp(self):
        for pid in daemonsOn(self.mnt):
            os.kill(pid, signal.SIGKILL)
            waitStatus(pid)
        while mountLine(self.mnt):
            subprocess.run(['umount', '-l', self.mnt], check=False)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_(self, argv, timeout=MOUNT_TIMEOUT_S * 3):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr

    def daemon(self):
        """The one pfmfsd serving self.mnt."""
        pids = daemonsOn(self.mnt)
        self.assertEqual(len(pids), 1, f'pfmfsd processes on {self.mnt}: {pids}')
        return pids[0]

    def assertServes(self, backend='sim', info_has=()):
        """self.mnt is pfmfs (fuse.pfmfs in /proc/mounts, allow_other: another
        user reads it) on `backend` (None: any), and a session goes through
        its life."""
        fields = mountLine(self.mnt)
        self.assertIsNotNone(fields, f'nothing mounted on {self.mnt}')
        self.assertEqual(fields[:3], ['pfmfs', self.mnt, 'fuse.pfmfs'])
        self.assertIn('allow_other', fields[3].split(','))
        info = read(os.path.join(self.mnt, 'pmu/info'))
        if backend:
            self.assertTrue(info.startswith(f'backend={backend} '), info)
        for text in info_has:
            self.assertIn(text, info)
        self.assertEqual(runAs(TEST_USER, read, os.path.join(self.mnt, 'version')), 'pfmfs 0.1.0\nabi 1\n')
        s = os.path.join(self.mnt, 'sessions', 'admin')
        os.mkdir(s)
        self.assertEqual(read(os.path.join(s, 'state')), 'state=unloaded mode=thread target=- set=0 queued=0 lost=0\n')
        write(os.path.join(s, 'ctl'), f'load {os.getpid()}\n')
        self.assertTrue(read(os.path.join(s, 'state')).startswith('state=loaded '))
        os.rmdir(s)

    def assertUmountEndsIt(self, pid):
        status, out, err = self.run_(['umount', self.mnt])
        self.assertEqual(status, 0, err)
        self.assertEqual(waitStatus(pid), 0, 'pfmfsd did not exit 0 after umount')
        self.assertIsNone(mountLine(self.mnt))


@simOnly
class MountCommandTest(MountDirTestCase):

    def test_mount_t_fuse_pfmfsd(self):
        """mount -t fuse.pfmfsd pfmfs DIR -o OPTS: mount.fuse3 runs `pfmfsd
        pfmfs DIR -o rw,OPTS,dev,suid`, pfmfsd takes pmu= and tick=, returns
        once mounted and serves from the background; umount ends it."""
        status, out, err = self.run_(['mount', '-t', 'fuse.pfmfsd', 'pfmfs', self.mnt, '-o',
                                      'allow_other,pmu=sim,tick=500000'])
        self.assertEqual((status, err), (0, ''))
        self.assertServes('sim', ['tick_ns=500000'])
        self.assertUmountEndsIt(self.daemon())

    def test_fstab_line(self):
        """An fstab line with pfmfsd's options and mount(8)'s and systemd's
        (nofail, _netdev, x-systemd.*, defaults), mounted by its mount point."""
        fstab = os.path.join(self.tmp, 'fstab')
        with open(fstab, 'w') as f:
            f.write(f'pfmfs {self.mnt} fuse.pfmfsd defaults,allow_other,pmu=sim,sim_clock=manual,max-sets=3,'
                    f'nofail,_netdev,x-systemd.requires=pfmfs-test.service 0 0\n')
        status, out, err = self.run_(['mount', '-T', fstab, self.mnt])
        self.assertEqual((status, err), (0, ''))
        self.assertServes('sim')
        self.assertTrue(os.path.exists(os.path.join(self.mnt, 'pmu/sim/advance')))  # the manual clock
        pid = self.daemon()
        self.assertUmountEndsIt(pid)
        # mount -a of the same file, by type.
        status, out, err = self.run_(['mount', '--fstab', fstab, '-a', '-t', 'fuse.pfmfsd'])
        self.assertEqual((status, err), (0, ''))
        self.assertServes('sim')
        self.assertUmountEndsIt(self.daemon())

    def test_fuse_type_with_the_program_as_source(self):
        """mount.fuse3's older form: type fuse, the program as the source
        (no source reaches pfmfsd then)."""
        status, out, err = self.run_(['mount', '-t', 'fuse', 'pfmfsd', self.mnt, '-o', 'allow_other,pmu=sim'])
        self.assertEqual((status, err), (0, ''))
        self.assertServes('sim')
        self.assertUmountEndsIt(self.daemon())

    def test_a_bad_option_fails_with_the_reason(self):
        """An option neither pfmfsd nor libfuse knows, and a bad value of
        pfmfsd's own: mount fails with pfmfsd's status 2 and its one line,
        and nothing is mounted or left running."""
        for opts, said in (
                ('allow_other,pmu=sim,bogus',
                 "pfmfsd: bad FUSE options -o rw,allow_other,bogus,dev,suid: fuse: unknown option(s): `-o bogus'\n"),
                ('pmu=nope', "pfmfsd: --pmu: 'nope' is not auto, x86, perf or sim\n"),
                ('pmu=sim,tick', 'pfmfsd: -o tick: needs a value (tick=NS)\n')):
            with self.subTest(opts=opts):
                status, out, err = self.run_(['mount', '-t', 'fuse.pfmfsd', 'pfmfs', self.mnt, '-o', opts])
                self.assertEqual((status, err), (2, said))
                self.assertIsNone(mountLine(self.mnt))
                self.assertEqual(daemonsOn(self.mnt), [])

    def test_drop_privileges_is_refused(self):
        """With drop_privileges mount.fuse3 mounts by itself, without
        pfmfsd's default_permissions, and hands pfmfsd /dev/fd/N: pfmfsd
        refuses it with the reason; mount.fuse3's own mount stays, dead,
        for umount."""
        status, out, err = self.run_(['mount', '-t', 'fuse.pfmfsd', 'pfmfs', self.mnt, '-o',
                                      'allow_other,pmu=sim,drop_privileges'])
        self.assertEqual(status, 2)
        self.assertRegex(err, r'^pfmfsd: mount point /dev/fd/\d+: a FUSE descriptor mounted by someone else '
                              r"\(mount.fuse3's drop_privileges\) is not supported: pfmfsd mounts itself\n$")
        self.assertEqual(daemonsOn(self.mnt), [])
        fields = mountLine(self.mnt)
        if fields is not None:
            self.assertEqual(fields[2], 'fuse.pfmfsd')  # mount.fuse3's, not pfmfsd's (fuse.pfmfs)
            self.assertEqual(self.run_(['umount', self.mnt])[0], 0)


def unitEntries(path):
    """A unit file as [(section, key, value)], in order (keys repeat)."""
    entries, section = [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in '#;':
                continue
            if line.startswith('['):
                section = line.strip('[]')
                continue
            key, _, value = line.partition('=')
            entries.append((section, key.strip(), value.strip()))
    return entries


def unitValue(entries, key):
    values = [v for s, k, v in entries if s == 'Service' and k == key]
    assert len(values) == 1, f'{key}= {values}'
    return values[0]


@simOnly
class ServiceUnitTest(MountDirTestCase):
    """fs/pfmfsd.service.in as meson made it (beside the build's pfmfsd)."""

    unit = None

    @classmethod
    def setUpClass(cls):
        cls.unit = os.path.join(os.path.dirname(os.path.abspath(daemonPath())), 'pfmfsd.service')
        if not os.path.exists(cls.unit):
            if inCi():
                raise AssertionError(f'no {cls.unit}: fs/meson.build makes it')
            raise unittest.SkipTest(f'no {cls.unit} (a build without fs/meson.build\'s unit)')
        cls.entries = unitEntries(cls.unit)
        cls.exec_start = shlex.split(unitValue(cls.entries, 'ExecStart'))

    def test_systemd_analyze_verify(self):
        """No word about the unit from systemd-analyze verify: the path in
        ExecStart is the build's pfmfsd here (the namespace's
        /usr/local/sbin), and man finds the pages Documentation= names in
        the build."""
        if shutil.which('systemd-analyze') is None:
            if inCi():
                self.fail('no systemd-analyze (package systemd: scripts/install-deps.sh)')
            self.skipTest('no systemd-analyze (package systemd)')
        unit = self.unit
        if self.exec_start[0] != os.path.join(SH_PATH_DIR, 'pfmfsd'):
            # Another prefix: the same unit with the build's pfmfsd in it.
            unit = os.path.join(self.tmp, 'pfmfsd.service')
            with open(self.unit) as src, open(unit, 'w') as dst:
                dst.write(src.read().replace(f'ExecStart={self.exec_start[0]} ',
                                             f'ExecStart={os.path.abspath(daemonPath())} '))
        env = dict(os.environ)
        man = ['--man=no']
        docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(daemonPath()))), 'docs')
        if os.path.exists(os.path.join(docs, 'pfmfsd.8')) and os.path.exists(os.path.join(docs, 'pfmfs.5')):
            manpath = os.path.join(self.tmp, 'man')
            for page in ('pfmfsd.8', 'pfmfs.5'):
                os.makedirs(os.path.join(manpath, 'man' + page[-1]), exist_ok=True)
                os.symlink(os.path.join(docs, page), os.path.join(manpath, 'man' + page[-1], page))
            env['MANPATH'] = manpath
            man = []
        p = subprocess.run(['systemd-analyze', 'verify'] + man + [unit], capture_output=True, text=True,
                           timeout=60, env=env, cwd=self.tmp)
        said = [line for line in (p.stdout + p.stderr).splitlines() if 'pfmfsd' in line]
        self.assertEqual((p.returncode, said), (0, []), p.stdout + p.stderr)

    def test_sandbox_settings_leave_the_mount_on_the_host(self):
        """None of the settings that give a service a mount namespace of its
        own, in which the mount would stay (the unit's comment lists them)."""
        keys = {k for s, k, v in self.entries if s == 'Service'}
        for key in ('ProtectSystem', 'ProtectHome', 'PrivateTmp', 'PrivateDevices', 'PrivateMounts',
                    'ReadWritePaths', 'ReadOnlyPaths', 'InaccessiblePaths', 'TemporaryFileSystem', 'BindPaths',
                    'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs', 'ProtectControlGroups',
                    'ProtectProc', 'ProcSubset', 'PrivateIPC', 'PrivateNetwork', 'PrivateUsers', 'MountFlags',
                    'RootDirectory', 'RootImage'):
            self.assertNotIn(key, keys)

    def runExecStart(self, opts):
        """ExecStart as systemd runs it: $PFMFSD_OPTS split at blanks, within
        the unit's CapabilityBoundingSet and NoNewPrivileges, the build's
        pfmfsd for the installed one and self.mnt for /run/pfmfs. Type=forking:
        it returns once mounted; returns the daemon's pid."""
        argv = []
        for word in self.exec_start:
            if word == '$PFMFSD_OPTS':
                argv += opts.split()
            elif word == '/run/pfmfs':
                argv.append(self.mnt)
            else:
                argv.append(word)
        self.assertTrue(self.exec_start[0].endswith('/pfmfsd') and os.path.isabs(self.exec_start[0]),
                        self.exec_start)
        self.assertIn(self.mnt, argv)
        argv[0] = os.path.abspath(daemonPath())
        caps = unitValue(self.entries, 'CapabilityBoundingSet').split()
        bounding = ','.join(['-all'] + ['+' + c.lower().removeprefix('cap_') for c in caps])
        sandbox = ['setpriv', f'--bounding-set={bounding}']
        if unitValue(self.entries, 'NoNewPrivileges') == 'yes':
            sandbox.append('--no-new-privs')
        self.assertEqual(unitValue(self.entries, 'Type'), 'forking')
        status, out, err = self.run_(sandbox + ['--'] + argv)
        self.assertEqual(status, 0, err)
        self.assertIsNotNone(mountLine(self.mnt), 'ExecStart returned before the mount was there')
        return self.daemon()

    def assertStopEndsIt(self, pid):
        """systemctl stop (KillMode=mixed): SIGTERM to the main process, which
        unmounts and exits 0."""
        self.assertEqual(unitValue(self.entries, 'KillMode'), 'mixed')
        os.kill(pid, signal.SIGTERM)
        self.assertEqual(waitStatus(pid), 0)
        self.assertIsNone(mountLine(self.mnt))

    def test_exec_start_mounts_with_the_default_backend(self):
        """As shipped (no /etc/default/pfmfsd): the default backend, which
        the unit's capabilities must allow (perf where perf works for root)."""
        pid = self.runExecStart('')
        helper = os.path.exists(pfmfs_mount.HELPER_DEVICE)
        self.assertServes('x86' if helper else 'perf' if pfmfs_mount.perfEventsWork() else 'sim')
        self.assertStopEndsIt(pid)

    def test_exec_start_takes_pfmfsd_opts(self):
        """PFMFSD_OPTS from /etc/default/pfmfsd chooses the backend."""
        pid = self.runExecStart('--pmu=sim  -o tick=500000,max_sets=2')
        self.assertServes('sim', ['tick_ns=500000'])
        self.assertStopEndsIt(pid)


if __name__ == '__main__':
    pfmfs_mount.main()
