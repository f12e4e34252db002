# What the exporter's tests share: running pfmfs-exporter on a test mount
# (tests/integration/pfmfs_mount.py's Mount), scraping it with a plain HTTP
# GET, parsing the exposition text, and whether the mount has cgroup mode.
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))

import pfmfs_mount  # noqa: E402
from pfmfs_mount import REPO, WAIT_S, inCi, userGroups, userIds  # noqa: E402


def exporterPath():
    path = os.environ.get('PFMFS_EXPORTER')
    if path:
        return path
    return os.path.join(REPO, 'build', 'exporter', 'pfmfs-exporter')


def freePort():
    """A loopback port nobody listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _asUser(user):
    """Popen's arguments that run a child as `user` with its login groups."""
    if user is None:
        return {}
    uid, gid = userIds(user)
    return {'user': uid, 'group': gid, 'extra_groups': userGroups(user)}


class Exporter:
    """pfmfs-exporter --config TMP/exporter.conf --mount MNT --listen
    127.0.0.1:PORT, as `user` (None: root)."""

    def __init__(self, mount_dir, config, user=None, args=()):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-exporter-')
        os.chmod(self.tmp, 0o755)
        self.config = os.path.join(self.tmp, 'exporter.conf')
        with open(self.config, 'w') as f:
            f.write(config)
        os.chmod(self.config, 0o644)
        self.port = freePort()
        self.address = f'127.0.0.1:{self.port}'
        self.args = [exporterPath(), '--config', self.config, '--mount', mount_dir,
                     '--listen', self.address] + list(args)
        self.user = user
        self.proc = None
        self.err_path = os.path.join(self.tmp, 'stderr')

    def start(self, wait=True):
        self._err = open(self.err_path, 'wb')
        self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=self._err, **_asUser(self.user))
        if wait:
            self.waitServing()
        return self

    def waitServing(self):
        """Until the exporter serves (its line on stderr) or exits."""
        deadline = time.monotonic() + WAIT_S
        while 'serving' not in self.stderr():
            if self.proc.poll() is not None:
                raise AssertionError(f'pfmfs-exporter exited with {self.proc.returncode}: {self.stderr()}')
            if time.monotonic() > deadline:
                raise AssertionError(f'pfmfs-exporter did not serve within {WAIT_S} s: {self.stderr()}')
            time.sleep(0.02)

    def stderr(self):
        with open(self.err_path, 'rb') as f:
            return f.read().decode(errors='replace')

    def wait(self, timeout=WAIT_S):
        """The exit status, and stderr."""
        status = self.proc.wait(timeout)
        return status, self.stderr()

    def run(self, timeout=WAIT_S):
        """Start and wait for the exit (a start that must fail)."""
        self.start(wait=False)
        return self.wait(timeout)

    def scrape(self):
        with urllib.request.urlopen(f'http://{self.address}/metrics', timeout=WAIT_S) as r:
            return r.read().decode()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, '_err', None):
            self._err.close()
            self._err = None

    def close(self):
        self.stop()
        subprocess.run(['rm', '-rf', self.tmp])


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parseExposition(text):
    """{(name, frozenset of (label, value)): float} of a Prometheus text
    exposition; AssertionError on a line that is not one."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise AssertionError(f'not an exposition line: {line!r}')
        labels = frozenset(LABEL.findall(m.group(3) or ''))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def series(samples, name, **labels):
    """The values of `name` whose labels include `labels`."""
    want = set(labels.items())
    return [v for (n, ls), v in samples.items() if n == name and want <= set(ls)]


def one(samples, name, **labels):
    found = series(samples, name, **labels)
    if len(found) != 1:
        raise AssertionError(f'{len(found)} series {name}{labels}, expected one: {sorted(samples)}')
    return found[0]


def promtoolCheckMetrics(text):
    """promtool check metrics on a scrape: (status, output). Its lint
    complaints (exit 3) are not format errors; only a parse failure (1)
    is."""
    p = subprocess.run(['promtool', 'check', 'metrics'], input=text, capture_output=True, text=True, timeout=WAIT_S)
    return p.returncode, p.stdout + p.stderr


def cgroupModeMissing(mount):
    """None when the mount's sessions take mode `cgroup`; else the mount's
    reason (the cgroup branch not merged)."""
    d = mount.path('sessions', f'cgroup-probe-{os.getpid()}')
    os.mkdir(d)
    try:
        try:
            with open(os.path.join(d, 'mode'), 'w') as f:
                f.write('cgroup\n')
            return None
        except OSError as e:
            with open(os.path.join(d, 'error')) as f:
                return f'{os.strerror(e.errno)}: {f.read().strip()}'
    finally:
        os.rmdir(d)


def requireCgroupMode(test, mount):
    """Fails the test when the mount refuses mode cgroup, which every
    pfmfsd of this tree has: a daemon without it is a broken one."""
    why = cgroupModeMissing(mount)
    if why is not None:
        test.fail(f'cgroup mode is missing from this pfmfsd (mode refused `cgroup`: {why})')


def cgroup2Root():
    """Where cgroup v2 is mounted (the first cgroup2 line of mountinfo, as
    pfmfsd looks for it): /sys/fs/cgroup, or /sys/fs/cgroup/unified on a
    hybrid system; None without one."""
    with open('/proc/self/mountinfo') as f:
        for line in f:
            fields = line.split()
            dash = fields.index('-')
            if fields[dash + 1] == 'cgroup2' and fields[3] == '/':
                return fields[4].replace('\\040', ' ')
    return None


CGROUP_ROOT = cgroup2Root()


def makeCgroup(test, name, owner=None):
    """A cgroup v2 directory under the root (removed after the test),
    delegated to `owner` (its directory and cgroup.procs chowned) if given."""
    if CGROUP_ROOT is None:
        message = 'no cgroup v2 hierarchy (no cgroup2 line in /proc/self/mountinfo)'
        if inCi():
            test.fail(message)
        test.skipTest(message)
    path = os.path.join(CGROUP_ROOT, f'pfmfs-exporter-test-{os.getpid()}-{name}')
    os.mkdir(path)
    test.addCleanup(os.rmdir, path)
    if owner is not None:
        uid, gid = userIds(owner)
        for f in ('', 'cgroup.procs', 'cgroup.threads', 'cgroup.subtree_control'):
            p = os.path.join(path, f)
            if os.path.exists(p):
                os.chown(p, uid, gid)
    return path
