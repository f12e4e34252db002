#!/usr/bin/env python3
# Control-group loads (pfmfs(5), CONTROL-GROUP LOADS): mode cgroup, `load
# PATH` and its refusals, who may load on a group (the delegation rule), a
# group removed while loaded; on the sim's manual clock exact counts, set
# multiplexing and an overflow message; on perf, two groups with different
# work counted alone and checked against `perf stat -G` over the same time.
import errno
import os
import shutil
import signal
import subprocess
import sys
import time

import pfmfs_mount
from pfmfs_mount import (PMU, SIM, TEST_GROUP, TEST_USER, TEST_USER2, MountTestCase, countsLine, neg, ovflLine,
                         perfOnly, runAs, simOnly, stateLine, userIds, waitFor)

MS = 1_000_000


def cgroup2Root():
    """Where cgroup v2 is mounted (the first cgroup2 line of mountinfo, as
    pfmfsd looks for it), or None."""
    with open('/proc/self/mountinfo') as f:
        for line in f:
            fields = line.split()
            dash = fields.index('-')
            if fields[dash + 1] == 'cgroup2' and fields[3] == '/':
                return fields[4].replace('\\040', ' ')
    return None


ROOT = cgroup2Root()


def cgroupLine(state='unloaded', target='-', set_id=0, queued=0, exited=False):
    return stateLine(state, mode='cgroup', target=target, set_id=set_id, queued=queued, exited=exited)


def procsOf(group_dir):
    with open(os.path.join(group_dir, 'cgroup.procs')) as f:
        return [int(p) for p in f.read().split()]


def moveTo(group_dir, pid):
    with open(os.path.join(group_dir, 'cgroup.procs'), 'w') as f:
        f.write(f'{pid}\n')


class CgroupCase(MountTestCase):
    """A mount test that makes control groups below the cgroup2 root and
    removes them after the test, whatever happened (their processes killed
    and the groups rmdir'ed)."""

    @classmethod
    def setUpClass(cls):
        if ROOT is None:
            raise AssertionError('no cgroup v2 hierarchy is mounted: control-group loads cannot be tested')
        super().setUpClass()

    def group(self, name):
        """A new control group pfmfs-test-NAME-PID; returns its path."""
        path = os.path.join(ROOT, f'pfmfs-test-{name}-{os.getpid()}')
        if os.path.isdir(path):
            self._remove(path)
        os.mkdir(path)
        self.addCleanup(self._remove, path)
        return path

    def _remove(self, path):
        if not os.path.isdir(path):
            return
        for sub in os.listdir(path):
            if os.path.isdir(os.path.join(path, sub)):
                self._remove(os.path.join(path, sub))
        for pid in procsOf(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        waitFor(lambda: procsOf(path) == [], 10)
        waitFor(lambda: pfmfs_mount.attempt(os.rmdir, path) is None or not os.path.isdir(path), 10)

    @staticmethod
    def delegate(path, uid, gid, mode=None):
        """Hands a group to uid:gid as systemd's Delegate= does: its
        directory and the files that manage it."""
        for f in ('', 'cgroup.procs', 'cgroup.threads', 'cgroup.subtree_control'):
            os.chown(os.path.join(path, f), uid, gid)
            if mode is not None:
                os.chmod(os.path.join(path, f), mode if f == '' else mode & 0o666)

    def spawn(self, group_dir, code):
        """A python process running `code`, moved into group_dir before it
        starts; killed after the test."""
        p = subprocess.Popen([sys.executable, '-c', code], preexec_fn=lambda: moveTo(group_dir, os.getpid()))
        self.addCleanup(lambda: (p.kill(), p.wait()))
        return p

    def cgroupSession(self, user=None):
        s = self.newSession() if user is None else self.userSession(user)
        (s.write if user is None else lambda rel, text: runAs(user, s.write, rel, text))('mode', 'cgroup\n')
        return s


class CgroupTest(CgroupCase):

    def test_mode_cgroup_and_its_flags(self):
        s = self.newSession()
        s.write('mode', 'cgroup\n')
        self.assertEqual(s.read('mode'), 'cgroup\n')
        self.assertEqual(s.state(), cgroupLine())
        self.assertRefused(s, errno.EINVAL, 'flags', 'inherit\n', ('state', 'flags'))
        self.assertRefused(s, errno.EINVAL, 'flags', 'notify_block\n', ('state', 'flags'))
        s.write('flags', 'no_msg\n')
        # The other way: a flag first, then the mode.
        t = self.newSession()
        t.write('flags', 'inherit\n')
        self.assertRefused(t, errno.EINVAL, 'mode', 'cgroup\n', ('state', 'mode', 'flags'))
        if PMU.holds_threads:  # perf refuses notify_block in any mode
            t.write('flags', 'notify_block\n')
            self.assertRefused(t, errno.EINVAL, 'mode', 'cgroup\n', ('state', 'mode', 'flags'))
        self.assertEqual(t.read('mode'), 'thread\n')

    def test_load_absolute_and_relative_paths(self):
        g = self.group('paths')
        name = os.path.basename(g)
        s = self.cgroupSession()
        for written in (g, name, f'{name}/', f'./{name}', g.replace('/', '//')):
            with self.subTest(path=written):
                s.ctl(f'load {written}')
                self.assertEqual(s.state(), cgroupLine('loaded', target=g))
                self.assertEqual(s.error(), '')
                s.ctl('unload')
                self.assertEqual(s.state(), cgroupLine())
        # The hierarchy's root is a group too.
        s.ctl(f'load {ROOT}')
        self.assertEqual(s.state(), cgroupLine('loaded', target=ROOT))
        self.assertRefused(s, errno.EBUSY, 'ctl', f'load {g}\n')
        s.ctl('unload')
        s.ctl(f'load {g} set=0')
        self.assertEqual(s.state(), cgroupLine('loaded', target=g))

    def test_garbage_paths_change_nothing(self):
        g = self.group('garbage')
        s = self.cgroupSession()
        s.pmc(0, PMU.pmc_a)
        bad = [
            (errno.EINVAL, f'load {g}/../{os.path.basename(g)}'),  # a '..' component
            (errno.EINVAL, 'load ..'),
            (errno.EINVAL, 'load /tmp'),  # not below the cgroup2 mount
            (errno.EINVAL, 'load /proc/self'),
            # Outside the hierarchy, what exists and what does not look alike.
            (errno.EINVAL, 'load /root'),
            (errno.EINVAL, 'load /root/pfmfs-no-such-dir'),
            (errno.ENOENT, f'load {g}/no-such-group'),
            (errno.ENOENT, 'load pfmfs-no-such-group-at-all'),
            (errno.ENOENT, 'load 123456789'),  # in mode cgroup a number is a path too
            (errno.ENOTDIR, f'load {g}/cgroup.procs'),
            (errno.EINVAL, 'load /' + 'a' * 5000),  # past PATH_MAX
            (errno.EINVAL, f'load {g}\x01x'),  # not printable
            (errno.EINVAL, f'load {g}\x7f'),
            (errno.EINVAL, f'load {g}/\xe9t\xe9'),
            (errno.EINVAL, f'load {g} x'),  # a blank: two words
            (errno.EINVAL, f'load {g}\nstart'),
            (errno.EINVAL, f'load {g} set=1'),  # no set 1
            # Every word is a path in mode cgroup, numbers' look-alikes too.
            (errno.ENOENT, 'load -1'),
            (errno.ENOENT, 'load 1x'),
            (errno.ENOENT, 'load 99999999999'),
        ]
        for err, command in bad:
            with self.subTest(command=command[:80]):
                before = s.snapshot()
                self.assertRefused(s, err, 'ctl', command + '\n')
                self.assertEqual(s.snapshot(), before)
        # A thread session takes no path, a cgroup session no thread's.
        t = self.newSession()
        self.assertRefused(t, errno.EINVAL, 'ctl', f'load {g}\n')
        self.assertRefused(t, errno.EINVAL, 'ctl', f'load {os.path.basename(g)}\n')
        self.assertEqual(t.state(), stateLine())

    def test_delegated_group_and_foreign_ones(self):
        uid, gid = userIds(TEST_USER)
        delegated = self.group('delegated')
        self.delegate(delegated, uid, gid)
        owned_by_root = self.group('root')
        mine = self.cgroupSession(TEST_USER)
        runAs(TEST_USER, mine.ctl, f'load {delegated}')
        self.assertEqual(mine.state(), cgroupLine('loaded', target=delegated))
        runAs(TEST_USER, mine.ctl, 'unload')
        # Root's group (mode 755) is not the user's.
        e = self.assertErrno(errno.EPERM, runAs, TEST_USER, mine.ctl, f'load {owned_by_root}')
        self.assertIn('not delegated', runAs(TEST_USER, mine.error), e)
        self.assertEqual(mine.state(), cgroupLine())
        # Nor is another user's group.
        other = self.cgroupSession(TEST_USER2)
        self.assertErrno(errno.EPERM, runAs, TEST_USER2, other.ctl, f'load {delegated}')
        self.assertEqual(other.state(), cgroupLine())
        # A group writable by a group of the user's: delegated to its members.
        shared = self.group('shared')
        self.delegate(shared, 0, pfmfs_mount.grp.getgrnam(TEST_GROUP).gr_gid, 0o775)
        runAs(TEST_USER, mine.ctl, f'load {shared}')
        runAs(TEST_USER, mine.ctl, 'unload')
        self.assertErrno(errno.EPERM, runAs, TEST_USER2, other.ctl, f'load {shared}')
        # Root loads on any, the user's included.
        s = self.cgroupSession()
        for g in (delegated, owned_by_root, shared):
            s.ctl(f'load {g}')
            s.ctl('unload')

    def test_half_delegated_and_hidden_groups(self):
        uid, gid = userIds(TEST_USER)
        mine = self.cgroupSession(TEST_USER)
        # The directory without its cgroup.procs: the user could not move a
        # process in, so it is not theirs to count.
        half = self.group('half')
        os.chown(half, uid, gid)
        e = self.assertErrno(errno.EPERM, runAs, TEST_USER, mine.ctl, f'load {half}')
        self.assertIn('cgroup.procs', runAs(TEST_USER, mine.error), e)
        # Below a group the user may not search, a group handed to them and
        # a name that is not there are refused alike: the load looks up
        # each name as the user would.
        private = self.group('private')
        os.chmod(private, 0o700)
        inner = os.path.join(private, 'mine')
        os.mkdir(inner)
        self.delegate(inner, uid, gid)
        for name in (inner, os.path.join(private, 'no-such-group'), os.path.join(private, 'mine', 'cgroup.procs')):
            with self.subTest(name=name):
                e = self.assertErrno(errno.EACCES, runAs, TEST_USER, mine.ctl, f'load {name}')
                self.assertIn(f'may not search {private}', runAs(TEST_USER, mine.error), e)
                self.assertEqual(mine.state(), cgroupLine())
        # Root goes everywhere.
        s = self.cgroupSession()
        s.ctl(f'load {inner}')
        self.assertEqual(s.state(), cgroupLine('loaded', target=inner))

    def test_several_sessions_on_one_group(self):
        g = self.group('shared-load')
        a, b = self.cgroupSession(), self.cgroupSession()
        a.ctl(f'load {g}')
        b.ctl(f'load {g}')
        self.assertEqual(a.state(), cgroupLine('loaded', target=g))
        self.assertEqual(b.state(), cgroupLine('loaded', target=g))

    def test_group_removed_while_loaded_unloads_the_session(self):
        g = self.group('removed')
        s = self.cgroupSession()
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {g}')
        s.ctl('start')
        self.assertEqual(s.state(), cgroupLine('active', target=g))
        os.rmdir(g)
        # The next tick or read sees it, as a thread's exit: unloaded, exited=1,
        # and the end message.
        self.assertEventually(s.state, cgroupLine(exited=True, queued=1))
        self.assertRegex(s.readMessages(), r'^type=end seq=1\n$')
        self.assertRefused(s, errno.ENOENT, 'ctl', f'load {g}\n')


class CgroupBudgetTest(CgroupCase):
    """--max-cgroup-events-per-user: one user's group loads hold at most so
    many counters (online cpus x (1 + sets x PMDs) a load), so that they
    cannot take every descriptor the daemon has; another user's are theirs."""

    @classmethod
    def setUpClass(cls):
        cls.per_load = len(pfmfs_mount.onlineCpus()) * (1 + len(PMU.pmds))
        cls.mount_args = [f'--max-cgroup-events-per-user={2 * cls.per_load}']
        super().setUpClass()

    def test_two_loads_fit_a_third_does_not(self):
        uid, gid = userIds(TEST_USER)
        g = self.group('budget')
        self.delegate(g, uid, gid)
        mine = [self.cgroupSession(TEST_USER) for _ in range(3)]
        for s in mine[:2]:
            runAs(TEST_USER, s.ctl, f'load {g}')
        e = self.assertErrno(errno.ENOSPC, runAs, TEST_USER, mine[2].ctl, f'load {g}')
        self.assertIn('--max-cgroup-events-per-user', runAs(TEST_USER, mine[2].error), e)
        self.assertEqual(mine[2].state(), cgroupLine())
        # Another user's budget is their own; root is not charged.
        theirs = self.group('budget-2')
        self.delegate(theirs, *userIds(TEST_USER2))
        other = self.cgroupSession(TEST_USER2)
        runAs(TEST_USER2, other.ctl, f'load {theirs}')
        root = self.cgroupSession()
        root.ctl(f'load {g}')
        # An unload gives its share back.
        runAs(TEST_USER, mine[0].ctl, 'unload')
        runAs(TEST_USER, mine[2].ctl, f'load {g}')
        self.assertEqual(mine[2].state(), cgroupLine('loaded', target=g))


class SystemGroupCgroupTest(CgroupCase):
    """pfmfsd's --system-group grants CPU-wide counting, and with it any
    group, as the kernel opens a cgroup event for whoever may count a CPU."""

    mount_args = [f'--system-group={TEST_GROUP}']

    def test_member_loads_any_group_non_member_none(self):
        owned_by_root = self.group('sysgroup')
        member = self.cgroupSession(TEST_USER)
        runAs(TEST_USER, member.ctl, f'load {owned_by_root}')
        self.assertEqual(runAs(TEST_USER, member.state), cgroupLine('loaded', target=owned_by_root))
        other = self.cgroupSession(TEST_USER2)
        e = self.assertErrno(errno.EPERM, runAs, TEST_USER2, other.ctl, f'load {owned_by_root}')
        self.assertIn('--system-group', runAs(TEST_USER2, other.error), e)
        self.assertEqual(other.state(), cgroupLine())


@simOnly
class SimCgroupTest(CgroupCase):
    """Under the manual clock a group's time is the advance, as any target's."""

    def test_counts_rate_times_advance(self):
        g = self.group('sim-count')
        s = self.cgroupSession()
        s.pmc(0, PMU.pmc_a)
        s.pmc(16, '0x2')  # FIXED_CTR0: instructions at user level
        s.ctl(f'load {g}')
        s.ctl('start')
        self.m.advance(1000)
        self.assertEqual(s.readPmd(0), PMU.rate_a * 1000)
        self.assertEqual(s.readPmd(16), 2 * 1000)
        s.ctl('stop')
        self.m.advance(5000)
        self.assertEqual(s.readPmd(0), PMU.rate_a * 1000)

    def test_sets_multiplex_on_the_advance(self):
        g = self.group('sim-sets')
        s = self.cgroupSession()
        s.mkset(1)
        s.write('sets/0/switch', 'time 1000000\n')
        s.write('sets/1/switch', 'time 1000000\n')
        s.pmc(0, '0x1003c', 0)  # cycles, 3/ns
        s.pmc(0, '0x100c0', 1)  # instructions, 2/ns
        s.ctl(f'load {g}')
        s.ctl('start')
        self.m.advance(10_500_000)
        # set0 (0,1] (2,3] ... (10,10.5] ms; set1 the other five.
        self.assertEqual(s.readPmd(0, 0), 16_500_000)
        self.assertEqual(s.readPmd(0, 1), 10_000_000)
        self.assertEqual(s.read('counts'), countsLine(0, 0, 16_500_000, 10_500_000, 5_500_000)
                         + countsLine(1, 0, 10_000_000, 10_500_000, 5_000_000))

    def test_overflow_notifies(self):
        g = self.group('sim-ovfl')
        s = self.cgroupSession()
        s.pmc(0, PMU.pmc_a)
        s.pmd(0, '-3000 long_reset=-6000 notify')
        s.ctl(f'load {g}')
        s.ctl('start')
        self.m.advance(999)
        self.assertEqual(s.state(), cgroupLine('active', target=g))
        self.m.advance(1)
        self.assertEqual(s.state(), cgroupLine('masked', target=g, queued=1))
        # No one thread took it: pid and tid 0, the sim's cpu 0.
        self.assertEqual(s.readMessages(), ovflLine(1, 0, 0, 1000))
        s.ctl('restart')
        self.assertEqual(s.readPmd(0), neg(6000))


@perfOnly
class PerfCgroupTest(CgroupCase):
    """perf's cgroup mode against perf stat -G over the same time."""

    manual_clock = False

    SPIN = 'while True: pass'
    IDLE = 'import time\ntime.sleep(3600)'

    def taskClockSession(self, group_dir):
        s = self.cgroupSession()
        s.pmc(0, 'TASK_CLOCK')
        s.ctl(f'load {group_dir}')
        return s

    def test_two_groups_against_perf_stat(self):
        perf = shutil.which('perf')
        self.assertIsNotNone(perf, 'perf(1) is needed to check the counts')
        busy, idle = self.group('busy'), self.group('idle')
        self.spawn(busy, self.SPIN)
        sleeper = self.spawn(idle, self.IDLE)
        # Python's start-up is work: count once the sleeper sleeps.
        pfmfs_mount.waitAsleep(sleeper.pid, sleeper.pid)
        a, b = self.taskClockSession(busy), self.taskClockSession(idle)
        t0 = time.monotonic()
        a.ctl('start')
        b.ctl('start')
        rel = [os.path.relpath(p, ROOT) for p in (busy, idle)]
        out = subprocess.run([perf, 'stat', '-a', '-x,', '-e', 'task-clock,task-clock', '-G', ','.join(rel),
                              'sleep', '1'], capture_output=True, text=True, check=True).stderr
        a.ctl('stop')
        b.ctl('stop')
        wall_ns = (time.monotonic() - t0) * 1e9
        perf_ns = {}
        for line in out.splitlines():
            f = line.split(',')
            if len(f) > 3 and f[2] == 'task-clock':
                # perf says <not counted> of a group that never ran on any cpu.
                perf_ns[f[3]] = 0 if f[0] == '<not counted>' else float(f[0]) * MS  # msec
        self.assertEqual(set(perf_ns), set(rel), out)
        busy_ns, idle_ns = a.readPmd(0), b.readPmd(0)
        # pfmfs counted from before perf started to after it ended: at least
        # what perf counted in its second, less 5% for the instants the two
        # do not share (perf opens and closes its events per cpu in turn); at
        # most one spinning thread's whole wall time over pfmfs's interval.
        self.assertGreater(perf_ns[rel[0]], 0.3e9, out)  # the spinner ran (on a busy 2-cpu machine: some)
        self.assertGreaterEqual(busy_ns, perf_ns[rel[0]] * 0.95, out)
        self.assertLessEqual(busy_ns, wall_ns * 1.05 + 20 * MS, out)
        # The sleeper's group counts next to nothing, as perf says.
        self.assertLess(idle_ns, 20 * MS, out)
        self.assertLess(perf_ns[rel[1]], 20 * MS, out)
        self.assertLess(idle_ns, busy_ns / 20)

    def test_descendant_groups_count_too(self):
        parent = self.group('parent')
        child = os.path.join(parent, 'child')
        os.mkdir(child)
        self.spawn(child, self.SPIN)
        s = self.taskClockSession(parent)
        s.ctl('start')
        time.sleep(0.5)
        s.ctl('stop')
        self.assertGreater(s.readPmd(0), 100 * MS)

    def test_overflow_message_names_the_cpu_and_thread(self):
        g = self.group('ovfl')
        p = self.spawn(g, self.SPIN)
        s = self.cgroupSession()
        s.pmc(0, 'TASK_CLOCK')
        s.pmd(0, f'-{20 * MS} long_reset=-{20 * MS} notify')  # 20 ms of the spinner's CPU time
        s.ctl(f'load {g}')
        s.ctl('start')
        waitFor(lambda: 'queued=1' in s.state(), 10)
        self.assertEqual(s.state(), cgroupLine('masked', target=g, queued=1))
        line = s.readMessages()
        m = pfmfs_mount.OVFL_RE.fullmatch(line.rstrip('\n'))
        self.assertIsNotNone(m, line)
        self.assertEqual((m.group(1), m.group(3), m.group(4), m.group(5)), ('1', '0x1', str(p.pid), str(p.pid)))
        self.assertIn(int(m.group(6)), pfmfs_mount.onlineCpus())
        s.ctl('restart')
        waitFor(lambda: 'queued=1' in s.state(), 10)
        self.assertEqual(s.state(), cgroupLine('masked', target=g, queued=1))

    def test_sets_switch_on_every_cpu_together(self):
        g = self.group('sets')
        self.spawn(g, self.SPIN)
        s = self.cgroupSession()
        s.mkset(1)
        s.write('sets/0/switch', 'time 10000000\n')
        s.write('sets/1/switch', 'time 10000000\n')
        s.pmc(0, 'TASK_CLOCK', 0)
        s.pmc(0, 'CPU_CLOCK', 1)
        s.ctl(f'load {g}')
        s.ctl('start')
        time.sleep(0.5)
        s.ctl('stop')
        runs = [int(pfmfs_mount.parseKv(s.read(f'sets/{i}/info'))['runs']) for i in (0, 1)]
        self.assertGreater(min(runs), 5, runs)
        # Each set counted the spinner for about its share of the time.
        a, b = s.readPmd(0, 0), s.readPmd(0, 1)
        self.assertGreater(a, 50 * MS)
        self.assertGreater(b, 50 * MS)


if __name__ == '__main__':
    pfmfs_mount.main()
