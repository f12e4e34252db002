#!/usr/bin/env python3
# The shape of the mount (pfmfs(5), THE TREE): version, pmu/ description files, the
# listings of a session and a set, mkdir/rmdir of sessions and sets with
# every errno, ENOENT, EPERM for new files, EACCES for read-only files, modes.
import errno
import os
import re
import stat

import pfmfs_mount
from pfmfs_mount import PMU, SIM, X86, MountTestCase, simOnly

SESSION_FILES = ['counts', 'ctl', 'error', 'flags', 'messages', 'mode', 'msg', 'samples', 'sets', 'smpl_buf',
                 'smpl_fmt', 'state']
SET_FILES = PMU.set_files
MISSING_PMC, MISSING_PMD = PMU.missing_pmc, PMU.missing_pmd


class TreeTest(MountTestCase):

    # ---- top level and pmu/

    def test_root_listing(self):
        self.assertEqual(sorted(os.listdir(self.m.mnt)), ['pmu', 'sessions', 'version'])

    def test_version(self):
        self.assertEqual(self.m.read('version'), 'pfmfs 0.1.0\nabi 1\n')

    def test_pmu_listing(self):
        if SIM:  # under the manual clock
            self.assertEqual(sorted(os.listdir(self.m.path('pmu'))), ['desc', 'events', 'info', 'sim'])
            self.assertEqual(os.listdir(self.m.path('pmu/sim')), ['advance'])
        else:
            self.assertEqual(sorted(os.listdir(self.m.path('pmu'))), ['desc', 'events', 'info'])
            self.assertErrno(errno.ENOENT, os.stat, self.m.path('pmu/sim'))

    def test_pmu_info(self):
        info = self.m.read('pmu/info')
        self.assertEqual(pfmfs_mount.baseInfo(info), PMU.info)
        if X86:  # the socket, for sampling buffers, but no mapped reads (docs/libpfm-compat.md)
            self.assertNotIn('fastpath', info.split(' features=')[1].split()[0])
            self.assertRegex(info, pfmfs_mount.SOCKET_INFO)
        else:
            self.assertRegex(info, pfmfs_mount.FASTPATH_INFO)

    def test_pmu_events(self):
        self.assertEqual(self.m.read('pmu/events'), '\n'.join(PMU.events) + '\n')

    def test_event_names_and_aliases_program_a_pmc(self):
        """Every name and alias pmu/events lists can be written to a PMC
        (with :u and any case); it reads back as the event's code."""
        s = self.newSession()
        for line in PMU.events:
            name0, code = re.match(r'name=(\S+) code=(0x[0-9a-f]+) ', line).groups()
            code = int(code, 16)
            aliases = re.search(r' aliases=(\S+)$', line)
            for name in [name0] + (aliases.group(1).split(',') if aliases else []):
                with self.subTest(name=name):
                    s.pmc(0, f'{name.lower()}:u')
                    self.assertEqual(int(s.read('sets/0/pmc0').split()[0], 16), code | 0x10000)
        if PMU.model == 'intel-arch-v2':
            s.pmc(1, 'MISPREDICTED_BRANCH_RETIRED:u')  # libpfm 3.10's name
            self.assertEqual(s.read('sets/0/pmc1'), '0x100c5\n')

    def test_pmu_desc_tree(self):
        desc = self.m.path('pmu/desc')
        self.assertEqual(sorted(PMU.pmc_desc), PMU.pmcs)
        self.assertEqual(sorted(PMU.pmd_desc), PMU.pmds)
        expected = ['model'] + [f'pmc{k}' for k in PMU.pmcs] + [f'pmd{k}' for k in PMU.pmds]
        self.assertEqual(sorted(os.listdir(desc)), sorted(expected))
        self.assertEqual(self.m.read('pmu/desc/model'), PMU.model + '\n')
        for k, (name, addr, dfl, rsvd) in PMU.pmc_desc.items():
            with self.subTest(pmc=k):
                self.assertEqual(sorted(os.listdir(f'{desc}/pmc{k}')), ['addr', 'dfl_val', 'name', 'pmds', 'rsvd_msk'])
                self.assertEqual(self.m.read(f'pmu/desc/pmc{k}/pmds'), PMU.pmc_pmds[k] + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmc{k}/name'), name + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmc{k}/addr'), addr + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmc{k}/dfl_val'), dfl + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmc{k}/rsvd_msk'), rsvd + '\n')
        for k, (name, addr, width) in PMU.pmd_desc.items():
            with self.subTest(pmd=k):
                self.assertEqual(sorted(os.listdir(f'{desc}/pmd{k}')), ['addr', 'name', 'rsvd_msk', 'width'])
                self.assertEqual(self.m.read(f'pmu/desc/pmd{k}/name'), name + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmd{k}/addr'), addr + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmd{k}/width'), width + '\n')
                self.assertEqual(self.m.read(f'pmu/desc/pmd{k}/rsvd_msk'), '0x0\n')

    def test_pmu_files_are_world_readable_and_not_writable(self):
        for rel in ['version', 'pmu/info', 'pmu/events', 'pmu/desc/model', 'pmu/desc/pmc0/name',
                    f'pmu/desc/pmd{PMU.last_pmd}/width']:
            with self.subTest(rel=rel):
                st = os.stat(self.m.path(rel))
                self.assertTrue(stat.S_ISREG(st.st_mode))
                self.assertEqual(st.st_mode & 0o444, 0o444)
                self.assertEqual(st.st_mode & 0o222, 0)

    @simOnly
    def test_advance_is_root_only_write_only(self):
        st = os.stat(self.m.path('pmu/sim/advance'))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o200)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual((st.st_uid, st.st_gid), (0, 0))

    def test_sessions_dir_is_sticky_world_writable(self):
        st = os.stat(self.m.path('sessions'))
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o1777)

    def test_reads_at_any_size_give_the_same_text(self):
        whole = self.m.read('pmu/events')
        for size in (1, 7, 64, 4096):
            with self.subTest(size=size):
                self.assertEqual(pfmfs_mount.readBytes(self.m.path('pmu/events'), size).decode(), whole)

    # ---- a session

    def test_session_listing(self):
        s = self.newSession()
        self.assertEqual(sorted(os.listdir(s.dir)), SESSION_FILES)
        self.assertEqual(os.listdir(s.path('sets')), ['0'])
        self.assertEqual(sorted(os.listdir(s.path('sets/0'))), SET_FILES)

    def test_new_session_contents(self):
        s = self.newSession()
        self.assertEqual(s.read('mode'), 'thread\n')
        self.assertEqual(s.read('flags'), '\n')
        self.assertEqual(s.state(), 'state=unloaded mode=thread target=- set=0 queued=0 lost=0\n')
        self.assertEqual(s.error(), '')
        self.assertEqual(s.read('counts'), '')
        self.assertEqual(s.read('smpl_fmt'), 'none\n')
        self.assertEqual(s.read('smpl_buf'), '')
        self.assertEqual(s.read('samples'), '')
        self.assertEqual(s.read('sets/0/switch'), 'none\n')
        self.assertEqual(s.read('sets/0/regs'), '')
        self.assertEqual(s.read('sets/0/pmds'), '')
        self.assertEqual(s.read('sets/0/info'), f'runs=0 duration_ns=0 timeout_ns=0 ovfl_pmds=0x0 {PMU.avail}\n')
        for k in PMU.pmcs:
            self.assertEqual(s.read(f'sets/0/pmc{k}'), '0x0\n')
        for k in PMU.pmds:
            self.assertEqual(s.read(f'sets/0/pmd{k}'), '0\n')

    def test_session_dir_mode_and_owner(self):
        s = self.newSession()
        st = os.stat(s.dir)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o700)
        self.assertEqual((st.st_uid, st.st_gid), (os.getuid(), os.getgid()))

    def test_session_file_modes(self):
        s = self.newSession()
        read_only = ['state', 'error', 'counts', 'messages', 'msg', 'smpl_buf', 'samples', 'sets/0/info',
                     'sets/0/pmds']
        read_write = ['mode', 'flags', 'smpl_fmt', 'sets/0/pmc0', 'sets/0/pmd0', 'sets/0/regs', 'sets/0/switch']
        for rel in read_only + read_write + ['ctl']:
            st = os.stat(s.path(rel))
            with self.subTest(rel=rel):
                self.assertTrue(stat.S_ISREG(st.st_mode))
                self.assertEqual((st.st_uid, st.st_gid), (os.getuid(), os.getgid()))
                writable = bool(st.st_mode & stat.S_IWUSR)
                readable = bool(st.st_mode & stat.S_IRUSR)
                self.assertEqual(writable, rel not in read_only)
                self.assertEqual(readable, rel != 'ctl')
        for rel in ['sets', 'sets/0']:
            st = os.stat(s.path(rel))
            self.assertTrue(stat.S_ISDIR(st.st_mode), rel)

    def test_mkdir_rmdir_session(self):
        path = self.m.path('sessions', 'plain')
        os.mkdir(path)
        self.assertIn('plain', os.listdir(self.m.path('sessions')))
        self.assertErrno(errno.EEXIST, os.mkdir, path)
        os.rmdir(path)
        self.assertNotIn('plain', os.listdir(self.m.path('sessions')))
        self.assertErrno(errno.ENOENT, os.rmdir, path)
        self.assertErrno(errno.ENOENT, os.stat, path)
        # The name is free again, and the new session starts fresh.
        os.mkdir(path)
        self.assertEqual(pfmfs_mount.read(os.path.join(path, 'state')),
                         'state=unloaded mode=thread target=- set=0 queued=0 lost=0\n')
        os.rmdir(path)

    def test_session_names(self):
        good = ['a' * 64, 'x', 'A.b_c-9', '-dash', '.dot', '0', '__']
        for name in good:
            with self.subTest(name=name):
                path = self.m.path('sessions', name)
                os.mkdir(path)
                self.assertTrue(os.path.isdir(path))
                self.assertIn(name, os.listdir(self.m.path('sessions')))
                os.rmdir(path)
        bad = ['a' * 65, 'a b', 'a:b', 'caf\u00e9', 'tab\there', 'star*', 'a\\b', 'q?', 'new\nline']
        for name in bad:
            with self.subTest(name=name):
                self.assertErrno(errno.EINVAL, os.mkdir, self.m.path('sessions', name))
                self.assertNotIn(name, os.listdir(self.m.path('sessions')))

    def test_mkdir_outside_sessions_and_sets_is_refused(self):
        s = self.newSession()
        for rel in ['newdir', 'pmu/newdir', 'pmu/desc/newdir', f'sessions/{s.name}/newdir',
                    f'sessions/{s.name}/sets/0/newdir']:
            with self.subTest(rel=rel):
                self.assertErrno(errno.EPERM, os.mkdir, self.m.path(rel))
                self.assertFalse(os.path.exists(self.m.path(rel)))

    def test_mkdir_rmdir_sets(self):
        s = self.newSession()
        s.mkset(1)
        s.mkset(65535)
        self.assertEqual(sorted(os.listdir(s.path('sets')), key=int), ['0', '1', '65535'])
        self.assertEqual(sorted(os.listdir(s.path('sets/65535'))), SET_FILES)
        self.assertErrno(errno.EEXIST, s.mkset, 1)
        self.assertErrno(errno.EEXIST, s.mkset, 0)
        for bad in ['65536', '01', '00', '-1', 'abc', '1a', '+1', '0x1', ' 1', '99999999999999999999']:
            with self.subTest(name=bad):
                self.assertErrno(errno.EINVAL, os.mkdir, s.path(f'sets/{bad}'))
        self.assertEqual(sorted(os.listdir(s.path('sets')), key=int), ['0', '1', '65535'])
        os.rmdir(s.path('sets/65535'))
        self.assertErrno(errno.ENOENT, os.rmdir, s.path('sets/65535'))
        self.assertErrno(errno.ENOENT, os.rmdir, s.path('sets/7'))
        # Set 0 is not special: it goes if another set stays; the last one stays.
        os.rmdir(s.path('sets/0'))
        self.assertEqual(os.listdir(s.path('sets')), ['1'])
        self.assertErrno(errno.EBUSY, os.rmdir, s.path('sets/1'))
        self.assertEqual(os.listdir(s.path('sets')), ['1'])
        self.assertEqual(s.state(), 'state=unloaded mode=thread target=- set=1 queued=0 lost=0\n')

    def test_sets_while_loaded_are_busy(self):
        s = self.newSession()
        s.mkset(2)
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        self.assertErrno(errno.EBUSY, s.mkset, 3)
        self.assertErrno(errno.EBUSY, os.rmdir, s.path('sets/2'))
        self.assertEqual(sorted(os.listdir(s.path('sets'))), ['0', '2'])
        s.ctl('start')
        self.assertErrno(errno.EBUSY, s.mkset, 3)
        self.assertErrno(errno.EBUSY, os.rmdir, s.path('sets/2'))
        s.ctl('unload')
        s.mkset(3)
        os.rmdir(s.path('sets/2'))
        self.assertEqual(sorted(os.listdir(s.path('sets'))), ['0', '3'])

    def test_enoent_for_paths_that_do_not_exist(self):
        s = self.newSession()
        missing = ['nope', 'pmu/nope', f'pmu/desc/pmc{MISSING_PMC}', f'pmu/desc/pmd{MISSING_PMD}',
                   'pmu/desc/pmc0/nope', 'sessions/nope', 'sessions/nope/state', f'sessions/{s.name}/nope',
                   f'sessions/{s.name}/sets/1', f'sessions/{s.name}/sets/0/pmc{MISSING_PMC}',
                   f'sessions/{s.name}/sets/0/pmc17', f'sessions/{s.name}/sets/0/pmd{MISSING_PMC}',
                   f'sessions/{s.name}/sets/0/pmd{MISSING_PMD}', f'sessions/{s.name}/sets/0/nope',
                   f'sessions/{s.name}/sets/0/pmc00']
        if not SIM:
            missing += ['pmu/sim', 'pmu/sim/advance']
        for rel in missing:
            with self.subTest(rel=rel):
                self.assertErrno(errno.ENOENT, os.stat, self.m.path(rel))
                self.assertErrno(errno.ENOENT, os.open, self.m.path(rel), os.O_RDONLY)

    def test_creating_files_is_eperm(self):
        s = self.newSession()
        for rel in ['newfile', 'sessions/newfile', 'pmu/newfile', 'pmu/sim/newfile' if SIM else 'pmu/desc/newfile',
                    f'sessions/{s.name}/newfile', f'sessions/{s.name}/sets/newfile',
                    f'sessions/{s.name}/sets/0/newfile', f'sessions/{s.name}/sets/0/pmc{MISSING_PMC}']:
            with self.subTest(rel=rel):
                path = self.m.path(rel)
                self.assertErrno(errno.EPERM, os.open, path, os.O_WRONLY | os.O_CREAT, 0o644)
                self.assertErrno(errno.EPERM, os.mknod, path, 0o644 | stat.S_IFREG)
                self.assertFalse(os.path.exists(path))

    def test_writing_read_only_files_is_eacces(self):
        s = self.newSession()
        for rel in ['version', 'pmu/info', 'pmu/events', 'pmu/desc/model', 'pmu/desc/pmc0/addr',
                    'pmu/desc/pmd0/width', f'sessions/{s.name}/state', f'sessions/{s.name}/error',
                    f'sessions/{s.name}/counts', f'sessions/{s.name}/messages', f'sessions/{s.name}/msg',
                    f'sessions/{s.name}/smpl_buf', f'sessions/{s.name}/samples', f'sessions/{s.name}/sets/0/info']:
            with self.subTest(rel=rel):
                before = self.m.read(rel) if not rel.endswith(('messages', 'msg')) else None
                self.assertErrno(errno.EACCES, self.m.write, rel, '1\n')
                if before is not None:
                    self.assertEqual(self.m.read(rel), before)

    def test_rmdir_of_non_session_dirs_is_refused(self):
        s = self.newSession()
        dirs = ['sessions', 'pmu', 'pmu/desc', 'pmu/desc/pmc0', f'sessions/{s.name}/sets'] + (['pmu/sim'] if SIM else [])
        for rel in dirs:
            with self.subTest(rel=rel):
                self.assertErrno(errno.EPERM, os.rmdir, self.m.path(rel))
                self.assertTrue(os.path.isdir(self.m.path(rel)))

    def test_links_and_renames_are_eperm(self):
        s = self.newSession()
        for rel in ['link', 'sessions/link', f'sessions/{s.name}/link', f'sessions/{s.name}/sets/0/link']:
            with self.subTest(rel=rel):
                self.assertErrno(errno.EPERM, os.symlink, '/tmp', self.m.path(rel))
                self.assertFalse(os.path.lexists(self.m.path(rel)))
        self.assertErrno(errno.EPERM, os.rename, s.dir, self.m.path('sessions', 'renamed'))
        self.assertErrno(errno.EPERM, os.rename, s.path('sets/0'), s.path('sets/1'))
        self.assertErrno(errno.EPERM, os.link, s.path('state'), s.path('state2'))
        self.assertEqual(os.listdir(s.path('sets')), ['0'])
        self.assertTrue(s.exists())

    def test_reading_ctl_is_eacces(self):
        s = self.newSession()
        self.assertErrno(errno.EACCES, pfmfs_mount.readOnce, s.path('ctl'), 100)
        if SIM:
            self.assertErrno(errno.EACCES, pfmfs_mount.readOnce, self.m.path('pmu/sim/advance'), 100)

    def test_files_report_size_zero(self):
        # Contents change with every read (direct_io): st_size is 0, as in /proc.
        s = self.newSession()
        self.assertErrno(errno.EINVAL, s.ctl, 'stop')
        for rel in ('state', 'error', 'sets/0/pmc0'):
            self.assertEqual(os.stat(s.path(rel)).st_size, 0, rel)

    def test_sixty_four_long_names_fill_the_listing(self):
        # 64 names of 64 characters need several READDIR replies.
        names = [f'{i:02d}' + 'x' * 62 for i in range(64)]
        for name in names:
            self.newSession(name)
        self.assertEqual(sorted(os.listdir(self.m.path('sessions'))), names)
        status, out, err = self.m.sh('ls sessions')
        self.assertEqual((status, out.split(), err), (0, names, ''))
        # 64 is the default limit per user.
        self.assertErrno(errno.ENOSPC, os.mkdir, self.m.path('sessions', 'one-more'))

    def test_session_listing_shows_every_session(self):
        names = [self.newSession(f'list-{i}').name for i in range(5)]
        listed = os.listdir(self.m.path('sessions'))
        for n in names:
            self.assertIn(n, listed)


@simOnly
class SmallPmuTreeTest(MountTestCase):
    """--sim-counters and --sim-width change the shape the tree shows; --tick
    is told in pmu/info's tick_ns."""

    mount_args = ['--sim-counters=2', '--sim-width=40', '--tick=250000']

    def test_pmu_info(self):
        self.assertEqual(pfmfs_mount.baseInfo(self.m.read('pmu/info')),
                         'backend=sim model=intel-arch-v2 pmcs=0x10003 pmds=0x70003 counters=2 fixed=3 '
                         'width=40 features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup tick_ns=250000\n')

    def test_listings(self):
        self.assertEqual(sorted(os.listdir(self.m.path('pmu/desc'))),
                         sorted(['model', 'pmc0', 'pmc1', 'pmc16', 'pmd0', 'pmd1', 'pmd16', 'pmd17', 'pmd18']))
        self.assertEqual(self.m.read('pmu/desc/pmd1/width'), '40\n')
        s = self.newSession()
        self.assertEqual(sorted(os.listdir(s.path('sets/0'))),
                         sorted(['info', 'pmds', 'regs', 'switch', 'pmc0', 'pmc1', 'pmc16', 'pmd0', 'pmd1', 'pmd16',
                                 'pmd17', 'pmd18']))
        self.assertEqual(s.read('sets/0/info'),
                         'runs=0 duration_ns=0 timeout_ns=0 ovfl_pmds=0x0 avail_pmcs=0x10003 avail_pmds=0x70003\n')
        self.assertErrno(errno.ENOENT, os.stat, s.path('sets/0/pmc2'))

    def test_events_fit_the_counters(self):
        lines = self.m.read('pmu/events').splitlines()
        self.assertEqual(len(lines), 9)
        self.assertIn('name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x10003 '
                      'desc="Core cycles while the thread is not halted" pmds=0x20003', lines)
        self.assertIn('name=LLC_MISSES code=0x412e pmcs=0x3 desc="Last-level cache misses" pmds=0x3 '
                      'aliases=LAST_LEVEL_CACHE_MISSES', lines)


class RealClockTreeTest(MountTestCase):
    """Without --sim-clock=manual (and on perf, whose clock is real) there is
    no pmu/sim/advance."""

    manual_clock = False

    def test_no_advance(self):
        self.assertEqual(sorted(os.listdir(self.m.path('pmu'))), ['desc', 'events', 'info'])
        self.assertErrno(errno.ENOENT, os.stat, self.m.path('pmu/sim/advance'))
        self.assertEqual(self.m.read('version'), 'pfmfs 0.1.0\nabi 1\n')


if __name__ == '__main__':
    pfmfs_mount.main()
