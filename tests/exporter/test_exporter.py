#!/usr/bin/env python3
# pfmfs-exporter on the sim's manual clock: exact counts and times in a
# scrape, the exposition's format, its errors and exit statuses (bad
# configuration, a port in use, the mount gone, SIGTERM), who may run it
# (system group, control groups), and its systemd unit.
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import unittest
import urllib.request

import exporter_support as es
from exporter_support import Exporter, one, parseExposition
import pfmfs_mount
from pfmfs_mount import (TEST_GROUP, TEST_USER, TEST_USER2, WAIT_S, Mount, MountTestCase, inCi, simOnly,
                         waitFor)

N = 10_000_000  # ns the manual clock moves: 10 ms


def civetwebHasIpv6():
    """civetweb's own answer (mg_check_feature, 8: USE_IPV6), from the
    library the exporter links."""
    return bool(ctypes.CDLL('libcivetweb.so.1').mg_check_feature(8))


def freePort6():
    with socket.socket(socket.AF_INET6) as s:
        s.bind(('::1', 0))
        return s.getsockname()[1]


@simOnly
class Exact(MountTestCase):
    """The sim's manual clock: a scrape holds exactly what the sim counted."""

    def exporter(self, config, **kw):
        e = Exporter(self.m.mnt, config, **kw)
        self.addCleanup(e.close)
        return e

    def sessions(self):
        return sorted(os.listdir(self.m.path('sessions')))

    def test_one_set_exact(self):
        e = self.exporter('events cycles,instructions\ncpus 0\n').start()
        before = parseExposition(e.scrape())
        self.m.advance(N)
        text = e.scrape()
        s = parseExposition(text)
        labels = {'cpu': '0', 'cgroup': '', 'set': '0'}
        delta = lambda name, **kw: one(s, name, **labels, **kw) - one(before, name, **labels, **kw)  # noqa: E731
        self.assertEqual(delta('pfmfs_event_count_total', event='cycles'), 3 * N)
        self.assertEqual(delta('pfmfs_event_count_total', event='instructions'), 2 * N)
        self.assertAlmostEqual(delta('pfmfs_set_enabled_seconds_total'), N / 1e9, delta=1e-15)
        self.assertAlmostEqual(delta('pfmfs_set_running_seconds_total'), N / 1e9, delta=1e-15)
        self.assertEqual(one(s, 'pfmfs_exporter_sessions'), 1)
        self.assertEqual(one(s, 'pfmfs_exporter_build_info', version='0.1.0'), 1)
        self.assertGreater(one(s, 'pfmfs_exporter_scrape_duration_seconds'), 0)
        # Every series of a family has the same label names.
        for name in ('pfmfs_event_count_total', 'pfmfs_set_enabled_seconds_total'):
            names = {frozenset(k for k, _ in ls) for (n, ls) in s if n == name}
            self.assertEqual(len(names), 1, names)
        self.assertIn('# TYPE pfmfs_event_count_total counter', text)
        self.assertIn('# TYPE pfmfs_exporter_scrape_duration_seconds gauge', text)
        status, out = es.promtoolCheckMetrics(text)
        self.assertIn(status, (0, 3), out)  # 3: lint advice on prometheus-cpp's own exposer_* names
        self.assertNotIn('error while linting', out)

    def test_the_mounts_own_counts(self):
        """A scrape is the mount's `counts` at that moment, value+children."""
        e = self.exporter('events cycles,instructions,branches\ncpus 0\n').start()
        self.m.advance(N)
        s = parseExposition(e.scrape())
        (name,) = [n for n in self.sessions() if n.startswith('pfmfs-exporter.')]
        counts = self.m.read(f'sessions/{name}/counts')
        total = sum(int(es_kv['value']) + int(es_kv.get('children', '0'))
                    for es_kv in (dict(w.split('=', 1) for w in line.split()) for line in counts.splitlines()))
        self.assertEqual(sum(es.series(s, 'pfmfs_event_count_total')), total)

    def test_multiplexed_sets_enabled_vs_running(self):
        e = self.exporter('events {cycles},{instructions}\ncpus 0\nswitch_ms 1\n').start()
        self.m.advance(N)
        s = parseExposition(e.scrape())
        for set_id, event, rate in (('0', 'cycles', 3), ('1', 'instructions', 2)):
            lab = {'cpu': '0', 'cgroup': '', 'set': set_id}
            self.assertEqual(one(s, 'pfmfs_set_enabled_seconds_total', **lab), N / 1e9)
            running = one(s, 'pfmfs_set_running_seconds_total', **lab)
            self.assertEqual(running, N / 2 / 1e9)  # 1-ms turns over 10 ms: half each
            self.assertEqual(one(s, 'pfmfs_event_count_total', event=event, **lab), rate * N / 2)

    def test_every_cpu_by_default(self):
        e = self.exporter('events cycles\n').start()
        s = parseExposition(e.scrape())
        cpus = sorted(int(dict(ls)['cpu']) for (n, ls) in s if n == 'pfmfs_event_count_total')
        self.assertEqual(cpus, pfmfs_mount.onlineCpus())
        self.assertEqual(one(s, 'pfmfs_exporter_sessions'), len(cpus))

    def test_metrics_add_their_events(self):
        """metrics ipc: cycles and instructions, in one set, without events."""
        e = self.exporter('metrics ipc\ncpus 0\n').start()
        self.m.advance(N)
        s = parseExposition(e.scrape())
        got = {dict(ls)['event']: (dict(ls)['set'], v) for (n, ls), v in s.items() if n == 'pfmfs_event_count_total'}
        self.assertEqual(len({st for st, _ in got.values()}), 1, got)
        self.assertEqual(sorted(v for _, v in got.values()), [2 * N, 3 * N])

    def test_sigterm_removes_every_session(self):
        e = self.exporter('events cycles\n').start()
        ours = [n for n in self.sessions() if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')]
        self.assertEqual(len(ours), len(pfmfs_mount.onlineCpus()))
        e.proc.send_signal(signal.SIGTERM)
        status, err = e.wait()
        self.assertEqual(status, 0, err)
        self.assertEqual([n for n in self.sessions() if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')], [])

    def test_sigkill_leaves_nothing(self):
        """autoclose: the sessions go with the process."""
        e = self.exporter('events cycles\ncpus 0\n').start()
        e.proc.kill()
        e.wait()
        self.assertTrue(waitFor(lambda: not [n for n in self.sessions()
                                             if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')]))

    def test_unknown_event_is_the_mounts_refusal(self):
        e = self.exporter('cpus 0\nevents cycles,nosuch\n')
        status, err = e.run()
        self.assertEqual(status, 2, err)
        self.assertRegex(err, r"^pfmfs-exporter: .*exporter\.conf:2: unknown event 'nosuch'")
        self.assertEqual(err.count('\n'), 1, err)

    def test_port_in_use(self):
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            s.listen()
            port = s.getsockname()[1]
            e = self.exporter('cpus 0\n', args=['--listen', f'127.0.0.1:{port}'])
            status, err = e.run()
        self.assertEqual(status, 1, err)
        self.assertIn(f'cannot listen on 127.0.0.1:{port}', err)
        self.assertEqual([n for n in self.sessions() if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')], [])


# Each garbage line, alone in a file after a good line: exit 2 and FILE:2.
GARBAGE = [
    ('bogus 1', "unknown key 'bogus'"),
    ('listen', 'listen needs a value'),
    ('listen 127.0.0.1', 'is not ADDR:PORT'),
    ('listen 127.0.0.1:0', 'the port is a number from 1 to 65535'),
    ('listen 127.0.0.1:65536', 'the port'),
    ('listen localhost:9464', 'numeric IPv4'),
    ('listen [::1', 'numeric IPv4'),
    ('listen [zz]:9464', 'is not an IPv6 address'),
    ('listen 0.0.0.0:9464 junk', 'port'),
    ('mount relative/dir', 'absolute'),
    ('events {cycles', "events '{cycles': a '{' without its '}'"),
    ('events ,', 'events names no event'),
    ('metrics IPC', 'not a metric or group name'),
    ('metrics ipc,', "a metric list does not end in ','"),
    ('cpus 3-1', 'cpus is'),
    ('cpus 1,1', 'cpus is'),
    ('cpus x', 'cpus is'),
    ('cpus 0,', 'cpus is'),
    ('cgroup sys/fs/cgroup/a', 'absolute'),
    ('cgroup /sys/fs/cgroup/../etc', "'.' or '..'"),
    ('cgroup /sys/fs/cgroup/a b', 'one word of printable ASCII'),
    ('cgroup /sys/fs/cgroup/\x7f', 'one word of printable ASCII'),
    ('cgroup /' + 'a' * 4095, 'at most 4095 bytes'),
    ('switch_ms 0', 'switch_ms is a number'),
    ('switch_ms 60001', 'switch_ms is a number'),
    ('switch_ms -5', 'switch_ms is a number'),
    ('switch_ms 1e3', 'switch_ms is a number'),
    ('cpus 0', 'cpus is already set at line 1'),
    ('\x01key', 'unknown key'),
]


class BadConfiguration(MountTestCase):
    def test_each_garbage_line(self):
        for line, reason in GARBAGE:
            with self.subTest(line=line):
                e = Exporter(self.m.mnt, 'cpus 0\n' + line + '\n')
                try:
                    status, err = e.run()
                finally:
                    e.close()
                self.assertEqual(status, 2, err)
                self.assertTrue(err.startswith(f'pfmfs-exporter: {e.config}:2: '), err)
                self.assertIn(reason, err)
                self.assertEqual(err.count('\n'), 1, err)

    def test_repeated_cgroup(self):
        e = Exporter(self.m.mnt, 'cgroup /sys/fs/cgroup/a\ncgroup /sys/fs/cgroup/a/\n')
        self.addCleanup(e.close)
        status, err = e.run()
        self.assertEqual(status, 2, err)
        self.assertIn(f'{e.config}:2: cgroup /sys/fs/cgroup/a is already at {e.config}:1', err)

    def test_bad_options(self):
        for args, reason in ((['--nope'], "unknown option '--nope'"), (['--listen', 'x'], '--listen'),
                             (['--config'], '--config needs a value'),
                             (['--config', '/nonexistent/exporter.conf'], 'cannot read the configuration')):
            with self.subTest(args=args):
                p = subprocess.run([es.exporterPath()] + args, capture_output=True, text=True, timeout=WAIT_S)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(reason, p.stderr)
                self.assertEqual(p.stderr.count('\n'), 1, p.stderr)

    def test_help_and_version(self):
        p = subprocess.run([es.exporterPath(), '--version'], capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual((p.returncode, p.stdout), (0, 'pfmfs-exporter 0.1.0\n'))
        p = subprocess.run([es.exporterPath(), '--help'], capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(p.returncode, 0)
        self.assertIn('--listen ADDR:PORT', p.stdout)

    def test_ipv6_loopback(self):
        """[::1] where civetweb (prometheus-cpp's server) has IPv6; a clear
        refusal, before any session, where it has not (Debian 12's)."""
        if not socket.has_ipv6 or not os.path.exists('/proc/net/if_inet6'):
            if inCi():
                self.fail('no IPv6 on this machine')
            self.skipTest('no IPv6 here')
        port = freePort6()
        e = Exporter(self.m.mnt, 'cpus 0\n', args=['--listen', f'[::1]:{port}'])
        self.addCleanup(e.close)
        if not civetwebHasIpv6():
            status, err = e.run()
            self.assertEqual((status, err), (2, f"pfmfs-exporter: --listen '[::1]:{port}': the HTTP server (civetweb) "
                                                 'was built without IPv6; listen on IPv4\n'))
            return
        e.start()
        with urllib.request.urlopen(f'http://[::1]:{port}/metrics', timeout=WAIT_S) as r:
            self.assertIn('pfmfs_exporter_sessions 1', r.read().decode())


class MountGoesAway(unittest.TestCase):
    def test_unmounted_under_it(self):
        with Mount() as m:
            e = Exporter(m.mnt, 'cpus 0\n').start()
            self.addCleanup(e.close)
            subprocess.run(['fusermount3', '-u', '-z', m.mnt], check=True)
            status, err = e.wait()
            m.proc.wait(WAIT_S)
            m.proc = None  # unmounted and gone: nothing for close() to check
            m._removeDirs()
        self.assertEqual(status, 1, err)
        self.assertIn(f'pfmfs-exporter: the mount {m.mnt} went away: ', err)

    def test_daemon_killed(self):
        """Noticed at the next scrape (or the periodic check)."""
        m = Mount().start()
        e = Exporter(m.mnt, 'cpus 0\n').start()
        self.addCleanup(e.close)
        m.proc.kill()
        m.proc.wait()
        try:
            e.scrape()
        except OSError:
            pass  # the scrape may fail as the exporter ends
        status, err = e.wait()
        m._cleanupAfterFailure()
        self.assertEqual(status, 1, err)
        self.assertIn(f'pfmfs-exporter: the mount {m.mnt} went away: ', err)
        self.assertEqual(err.count('went away'), 1, err)


class PlainUserWithoutSystemGroup(MountTestCase):
    def test_cpus_refused(self):
        e = Exporter(self.m.mnt, 'cpus 0\n', user=TEST_USER)
        self.addCleanup(e.close)
        status, err = e.run()
        self.assertEqual(status, 2, err)
        self.assertIn('Operation not permitted', err)
        self.assertIn("refused 'load 0'", err)


class PlainUserInSystemGroup(MountTestCase):
    mount_args = [f'--system-group={TEST_GROUP}']

    def test_member_counts_cpus(self):
        e = Exporter(self.m.mnt, 'cpus 0\n', user=TEST_USER).start()
        self.addCleanup(e.close)
        self.assertEqual(one(parseExposition(e.scrape()), 'pfmfs_exporter_sessions'), 1)
        owners = {os.stat(self.m.path('sessions', n)).st_uid for n in os.listdir(self.m.path('sessions'))
                  if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')}
        self.assertEqual(owners, {es.userIds(TEST_USER)[0]})

    def test_non_member_refused(self):
        """The mount's refusal, as one line; no session is left."""
        e = Exporter(self.m.mnt, 'cpus 0\n', user=TEST_USER2)
        self.addCleanup(e.close)
        status, err = e.run()
        self.assertEqual((status, err), (2, "pfmfs-exporter: ctl refused 'load 0' (Operation not permitted): "
                                            "system-wide sessions need CAP_PERFMON or the daemon's system group\n"))
        self.assertEqual([n for n in os.listdir(self.m.path('sessions'))
                          if n.startswith(f'pfmfs-exporter.{e.proc.pid}.')], [])


class ControlGroups(MountTestCase):
    """cgroup sessions; they need pfmfsd's cgroup mode (a failure under CI
    without it)."""

    mount_args = [f'--system-group={TEST_GROUP}']

    def setUp(self):
        es.requireCgroupMode(self, self.m)

    def test_root_counts_groups(self):
        a = es.makeCgroup(self, 'a')
        b = es.makeCgroup(self, 'b')
        e = Exporter(self.m.mnt, f'cpus none\nevents cycles\ncgroup {a}\ncgroup {b}\n').start()
        self.addCleanup(e.close)
        s = parseExposition(e.scrape())
        self.assertEqual(one(s, 'pfmfs_exporter_sessions'), 2)
        for g in (a, b):
            self.assertEqual(len(es.series(s, 'pfmfs_event_count_total', cgroup=g, cpu='')), 1)
            self.assertEqual(len(es.series(s, 'pfmfs_set_enabled_seconds_total', cgroup=g, cpu='')), 1)

    def test_delegated_group_only(self):
        """A plain user outside the system group counts the group it may
        write, and no other: the exporter has no right of its own."""
        mine = es.makeCgroup(self, 'mine', owner=TEST_USER2)
        foreign = es.makeCgroup(self, 'foreign', owner=TEST_USER)
        e = Exporter(self.m.mnt, f'cpus none\nevents cycles\ncgroup {mine}\n', user=TEST_USER2).start()
        self.addCleanup(e.close)
        self.assertEqual(len(es.series(parseExposition(e.scrape()), 'pfmfs_event_count_total', cgroup=mine)), 1)
        e = Exporter(self.m.mnt, f'cpus none\nevents cycles\ncgroup {foreign}\n', user=TEST_USER2)
        self.addCleanup(e.close)
        status, err = e.run()
        self.assertEqual(status, 2, err)
        self.assertRegex(err, rf"^pfmfs-exporter: {e.config}:3: ctl refused 'load {foreign}' \(Operation not "
                              r'permitted\): ')
        self.assertEqual(err.count('\n'), 1, err)

    def test_system_group_counts_any_group(self):
        """A member of pfmfsd's --system-group counts a group it may not
        write, and the cpus: the one grant the unit needs."""
        foreign = es.makeCgroup(self, 'other', owner=TEST_USER2)
        e = Exporter(self.m.mnt, f'cpus 0\nevents cycles\ncgroup {foreign}\n', user=TEST_USER).start()
        self.addCleanup(e.close)
        s = parseExposition(e.scrape())
        self.assertEqual(one(s, 'pfmfs_exporter_sessions'), 2)
        self.assertEqual(len(es.series(s, 'pfmfs_event_count_total', cgroup=foreign, cpu='')), 1)
        self.assertEqual(len(es.series(s, 'pfmfs_event_count_total', cgroup='', cpu='0')), 1)


class Unit(unittest.TestCase):
    """pfmfs-exporter.service: systemd-analyze verify, and the settings
    the unit's sandbox needs."""

    def setUp(self):
        self.unit = os.path.join(os.path.dirname(es.exporterPath()), 'pfmfs-exporter.service')
        if not os.path.exists(self.unit):
            self.fail(f'no {self.unit}: exporter/meson.build makes it')
        with open(self.unit) as f:
            self.text = f.read()

    def test_systemd_analyze_verify(self):
        if shutil.which('systemd-analyze') is None:
            if inCi():
                self.fail('no systemd-analyze (package systemd: scripts/install-deps.sh)')
            self.skipTest('no systemd-analyze (package systemd)')
        tmp = self.enterContext(__import__('tempfile').TemporaryDirectory())
        exec_start = [line for line in self.text.splitlines() if line.startswith('ExecStart=')][0]
        unit = os.path.join(tmp, 'pfmfs-exporter.service')
        # The build's program for the installed one, and pfmfsd.service
        # beside it for Requires=.
        with open(unit, 'w') as f:
            f.write(self.text.replace(exec_start.split()[0], 'ExecStart=' + os.path.abspath(es.exporterPath())))
        daemon_unit = os.path.join(os.path.dirname(os.path.dirname(es.exporterPath())), 'fs', 'pfmfsd.service')
        shutil.copy(daemon_unit, tmp)
        p = subprocess.run(['systemd-analyze', 'verify', '--man=no', unit], capture_output=True, text=True,
                           timeout=60, cwd=tmp, env=dict(os.environ, SYSTEMD_UNIT_PATH=tmp + ':'))
        said = [line for line in (p.stdout + p.stderr).splitlines() if 'pfmfs-exporter' in line]
        self.assertEqual((p.returncode, said), (0, []), p.stdout + p.stderr)

    def test_sandbox(self):
        for setting in ('User=pfmfs-exporter', 'CapabilityBoundingSet=\n', 'AmbientCapabilities=\n',
                        'NoNewPrivileges=yes', 'ProtectSystem=strict', 'ReadWritePaths=/run/pfmfs',
                        'ProtectHome=yes', 'PrivateTmp=yes', 'PrivateDevices=yes',
                        'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX', 'RestrictNamespaces=yes',
                        'MemoryDenyWriteExecute=yes', 'SystemCallFilter=@system-service',
                        'Requires=pfmfsd.service', 'RestartPreventExitStatus=2'):
            self.assertIn(setting, self.text)

    def test_sysusers(self):
        path = os.path.join(es.REPO, 'exporter', 'pfmfs-exporter.sysusers')
        with open(path) as f:
            lines = [line for line in f if line.strip() and not line.startswith('#')]
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0].split()[:2], ['u', 'pfmfs-exporter'])


if __name__ == '__main__':
    pfmfs_mount.main()
