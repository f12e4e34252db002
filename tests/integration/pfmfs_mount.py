# Shared helpers of the integration tests: start pfmfsd on a temporary mount
# point (sim backend, manual clock), read and write its files with real
# syscalls, run code as unprivileged test users, and run shell commands.
import atexit
import contextlib
import errno
import grp
import os
import pickle
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

MOUNT_TIMEOUT_S = 10.0
EXIT_TIMEOUT_S = 10.0
SKIP_STATUS = 77  # meson's "skipped"

TEST_USER = 'pfmfs-test'
TEST_USER2 = 'pfmfs-test2'
TEST_GROUP = 'pfmfs-sys'  # the --system-group of test_permissions

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

U64 = 1 << 64


def neg(n):
    """The 64-bit two's complement of -n, as a PMD reads after writing -n."""
    return (U64 - n) % U64


def parseNumber(text):
    """A number in the syntax of a write: decimal, 0x hex or -decimal."""
    if text.startswith('-'):
        return neg(int(text[1:], 10))
    if text.lower().startswith('0x'):
        return int(text[2:], 16)
    return int(text, 10)


def simIp(t_ns):
    """The instruction pointer the sim backend reports for an overflow at
    target time t_ns (pmu/sim/sim_backend.cpp: a made-up but stable ip)."""
    return 0x401000 + ((t_ns // 64) % 0x1000) * 4


def inCi():
    return os.environ.get('CI', '') == 'true'


def daemonPath():
    path = os.environ.get('PFMFSD')
    if path:
        return path
    for build in ('build-it', 'build'):
        candidate = os.path.join(REPO, build, 'fs', 'pfmfsd')
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def requireEnvironment():
    """Exit 77 (skip) when the tests cannot run here: not root, no /dev/fuse,
    no daemon. Under CI=true a missing requirement is a failure instead."""
    missing = []
    if os.geteuid() != 0:
        missing.append('not root')
    if not os.path.exists('/dev/fuse'):
        missing.append('no /dev/fuse')
    if daemonPath() is None:
        missing.append('no pfmfsd (set PFMFSD)')
    if not missing:
        return
    reason = ', '.join(missing)
    if inCi():
        print(f'FAIL: CI=true and the mount tests cannot run: {reason}', file=sys.stderr)
        sys.exit(1)
    print(f'SKIP: {reason}', file=sys.stderr)
    sys.exit(SKIP_STATUS)


def main():
    """The entry point of every test module."""
    requireEnvironment()
    ensureUsers()
    unittest.main(verbosity=2)


# ---- users ----------------------------------------------------------------------

_users_ready = False


def ensureUsers():
    """Creates the test users and the system group when they are missing."""
    global _users_ready
    if _users_ready:
        return
    for user in (TEST_USER, TEST_USER2):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(['useradd', '-M', '-r', '-s', '/usr/sbin/nologin', user], check=True)
    try:
        grp.getgrnam(TEST_GROUP)
    except KeyError:
        subprocess.run(['groupadd', '-r', TEST_GROUP], check=True)
    if TEST_USER not in grp.getgrnam(TEST_GROUP).gr_mem:
        subprocess.run(['usermod', '-a', '-G', TEST_GROUP, TEST_USER], check=True)
    _users_ready = True


def userIds(user):
    pw = pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid


def userGroups(user):
    """The supplementary groups the user gets at login (/etc/group)."""
    pw = pwd.getpwnam(user)
    return os.getgrouplist(user, pw.pw_gid)


def runAs(user, fn, *args, groups=None):
    """Runs fn(*args) in a forked child with the user's uid, gid and
    supplementary groups (the login ones unless `groups` is given); returns its
    result or raises its exception (OSError keeps its errno)."""
    uid, gid = userIds(user)
    if groups is None:
        groups = userGroups(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(r)
            try:
                os.setgroups(groups)
                os.setgid(gid)
                os.setuid(uid)
                result = ('ok', fn(*args))
            except BaseException as e:  # everything goes back to the parent
                result = ('exc', e)
            try:
                data = pickle.dumps(result)
            except Exception:
                data = pickle.dumps(('exc', RuntimeError(repr(result))))
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError(f'runAs({user}) child died with status {status}')
    kind, value = pickle.loads(b''.join(chunks))
    if kind == 'exc':
        raise value
    return value


# ---- file access ----------------------------------------------------------------

def readBytes(path, size=1 << 20, flags=0):
    """Every byte of a file, read with reads of `size` bytes until EOF."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, size)
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def read(path):
    return readBytes(path).decode()


def write(path, text):
    """One write(2) of the whole text, as `echo` does; raises OSError with the
    errno of a refused open or write."""
    data = text.encode() if isinstance(text, str) else text
    fd = os.open(path, os.O_WRONLY)
    try:
        n = os.write(fd, data)
        if n != len(data):
            raise AssertionError(f'short write to {path}: {n} of {len(data)} bytes')
    finally:
        os.close(fd)


def readOnce(path, size, flags=0):
    """One read(2) of `size` bytes."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def errnoName(e):
    return errno.errorcode.get(e, str(e)) if e is not None else 'no error'


# ---- processes ------------------------------------------------------------------

@contextlib.contextmanager
def sleeper(user=None):
    """A `sleep 1000` process (its pid is a tid to load on), as `user` if
    given; killed and reaped on exit."""
    kwargs = {}
    if user is not None:
        uid, gid = userIds(user)
        kwargs = dict(user=uid, group=gid, extra_groups=[])
    proc = subprocess.Popen(['sleep', '1000'], **kwargs)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


_THREADED_SCRIPT = r'''
import sys, threading, time
def worker():
    print(threading.get_native_id(), flush=True)
    sys.stdin.readline()  # a line on stdin ends the thread
t = threading.Thread(target=worker, daemon=True)
t.start()
t.join()
print("thread-ended", flush=True)
time.sleep(1000)
'''


class ThreadedTarget:
    """A process whose second thread is the target: pid != tid. Writing a
    line to its stdin (endThread) ends that thread while the process lives."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, '-c', _THREADED_SCRIPT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self.tid = int(self.proc.stdout.readline())

    def endThread(self):
        self.proc.stdin.write('\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line == 'thread-ended\n', line

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def goneTid():
    """A tid that no longer exists: a process that ran and was reaped."""
    proc = subprocess.Popen(['true'])
    proc.wait()
    return proc.pid


def waitFor(predicate, timeout=5.0, interval=0.01):
    """Polls predicate() until it is true; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class Reader(threading.Thread):
    """A read(2) on a file descriptor in a thread of its own: the test checks
    it blocks, then that an event elsewhere ends it."""

    def __init__(self, fd, size=4096):
        super().__init__(daemon=True)
        self.fd = fd
        self.size = size
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = os.read(self.fd, self.size)
        except OSError as e:
            self.error = e

    def finished(self, timeout=5.0):
        self.join(timeout)
        return not self.is_alive()


# ---- the mount ------------------------------------------------------------------

class DaemonFailed(AssertionError):
    pass


class Mount:
    """pfmfsd -f --pmu=sim --sim-clock=manual -o allow_other [extra] TMP/mnt."""

    def __init__(self, extra_args=(), manual_clock=True):
        self.extra_args = list(extra_args)
        self.manual_clock = manual_clock
        self.tmp = None
        self.mnt = None
        self.proc = None
        self.log_path = None
        self._log = None

    # -- lifetime

    def command(self):
        args = [daemonPath(), '-f', '--pmu=sim']
        if self.manual_clock:
            args.append('--sim-clock=manual')
        return args + ['-o', 'allow_other'] + self.extra_args + [self.mnt]

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-it-')
        os.chmod(self.tmp, 0o755)  # the test users reach the mount through it
        self.mnt = os.path.join(self.tmp, 'mnt')
        os.mkdir(self.mnt)
        os.chmod(self.mnt, 0o755)
        self.log_path = os.path.join(self.tmp, 'pfmfsd.log')
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while not os.path.exists(os.path.join(self.mnt, 'version')):
            if self.proc.poll() is not None:
                log = self.log()
                self._cleanupAfterFailure()
                raise DaemonFailed(f'pfmfsd exited with {self.proc.returncode} before mounting: {log}')
            if time.monotonic() > deadline:
                log = self.log()
                self._cleanupAfterFailure()
                raise DaemonFailed(f'pfmfsd did not mount within {MOUNT_TIMEOUT_S} s: {log}')
            time.sleep(0.02)
        _live_mounts.add(self)
        return self

    def log(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode(errors='replace')
        except OSError:
            return ''

    def sendSignal(self, sig):
        self.proc.send_signal(sig)

    def waitExit(self, timeout=EXIT_TIMEOUT_S):
        """The daemon's exit status; DaemonFailed if it does not exit."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log = self.log()
            self._cleanupAfterFailure()
            raise DaemonFailed(f'pfmfsd did not exit within {timeout} s: {log}')

    def close(self, sig=signal.SIGTERM):
        """Stops the daemon with `sig`; asserts it exits 0 and unmounted."""
        if self.proc is None:
            return
        _live_mounts.discard(self)
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.waitExit()
        mounted = os.path.ismount(self.mnt)
        log = self.log()
        if mounted:
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], stderr=subprocess.DEVNULL)
        self._removeDirs()
        self.proc = None
        if status != 0:
            raise DaemonFailed(f'pfmfsd exited with {status} (expected 0): {log}')
        if mounted:
            raise DaemonFailed(f'{self.mnt} still mounted after pfmfsd exited: {log}')

    def _cleanupAfterFailure(self):
        _live_mounts.discard(self)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.mnt and os.path.ismount(self.mnt):
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], stderr=subprocess.DEVNULL)
        self._removeDirs()

    def _removeDirs(self):
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._cleanupAfterFailure()

    # -- files

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def read(self, rel):
        return read(self.path(rel))

    def write(self, rel, text):
        write(self.path(rel), text)

    def advance(self, ns):
        self.write('pmu/sim/advance', f'{ns}\n')

    def session(self, name):
        return Session(self, name)

    def mkdirSession(self, name):
        os.mkdir(self.path('sessions', name))
        return Session(self, name)

    def sh(self, cmd, user=None, cwd=None):
        return sh(cmd, user=user, cwd=cwd or self.mnt, env={'MNT': self.mnt})


_live_mounts = set()


def _atExit():
    for m in list(_live_mounts):
        m._cleanupAfterFailure()


atexit.register(_atExit)


def sh(cmd, user=None, cwd=None, env=None, timeout=30):
    """`sh -c cmd`: (exit status, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env['LC_ALL'] = 'C'
    if env:
        full_env.update(env)
    kwargs = {}
    if user is not None:
        uid, gid = userIds(user)
        kwargs = dict(user=uid, group=gid, extra_groups=userGroups(user))
    p = subprocess.run(['sh', '-c', cmd], cwd=cwd, env=full_env, capture_output=True, text=True,
                       timeout=timeout, **kwargs)
    return p.returncode, p.stdout, p.stderr


class Session:
    """sessions/NAME of a mount: paths and the files a test reads and writes."""

    def __init__(self, mount, name):
        self.mount = mount
        self.name = name
        self.dir = mount.path('sessions', name)

    def path(self, rel=''):
        return os.path.join(self.dir, rel) if rel else self.dir

    def read(self, rel):
        return read(self.path(rel))

    def write(self, rel, text):
        write(self.path(rel), text)

    def ctl(self, command):
        self.write('ctl', command + '\n')

    def state(self):
        return self.read('state')

    def error(self):
        return self.read('error')

    def readMessages(self, size=65536):
        """One read(2) of `messages` (cat would block once the queue is
        empty); O_NONBLOCK, so an empty queue is EAGAIN, not a hang."""
        return readOnce(self.path('messages'), size, os.O_NONBLOCK).decode()

    def readMsg(self, size=64):
        """One read(2) of `msg`, O_NONBLOCK."""
        return readOnce(self.path('msg'), size, os.O_NONBLOCK)

    def pmc(self, k, value, set_id=0):
        self.write(f'sets/{set_id}/pmc{k}', f'{value}\n')

    def pmd(self, k, value, set_id=0):
        self.write(f'sets/{set_id}/pmd{k}', f'{value}\n')

    def readPmd(self, k, set_id=0):
        return int(self.read(f'sets/{set_id}/pmd{k}'))

    def mkset(self, set_id):
        os.mkdir(self.path(f'sets/{set_id}'))

    def exists(self):
        return os.path.isdir(self.dir)

    def destroy(self):
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def stateLine(state='unloaded', mode='thread', target='-', set_id=0, queued=0, lost=0, exited=False):
    line = f'state={state} mode={mode} target={target} set={set_id} queued={queued} lost={lost}'
    if exited:
        line += ' exited=1'
    return line + '\n'


def parseKv(line):
    """'a=1 b=x' -> {'a': '1', 'b': 'x'}."""
    return dict(field.split('=', 1) for field in line.split())


def countsLine(set_id, pmd, value, enabled, running):
    scaled = '-' if running == 0 else str(value * enabled // running)
    return (f'set={set_id} pmd={pmd} value={value} enabled_ns={enabled} running_ns={running} '
            f'scaled={scaled}\n')


PRINTABLE = re.compile(r'^[\x20-\x7e]*\n?$')


class MountTestCase(unittest.TestCase):
    """One daemon for the whole class (mount_args are its extra options);
    sessions and target processes made by a test are removed after it."""

    mount_args = ()
    manual_clock = True
    m = None

    @classmethod
    def setUpClass(cls):
        cls.m = Mount(cls.mount_args, manual_clock=cls.manual_clock).start()

    @classmethod
    def tearDownClass(cls):
        if cls.m is not None:
            m, cls.m = cls.m, None
            m.close()

    _counter = 0

    def newSession(self, name=None):
        """mkdir sessions/NAME; rmdir'ed (if still there) after the test."""
        if name is None:
            MountTestCase._counter += 1
            name = f'{self._testMethodName[:40]}-{MountTestCase._counter}'
        s = self.m.mkdirSession(name)
        self.addCleanup(s.destroy)
        return s

    def sleeper(self, user=None):
        """A sleep process, killed after the test; returns its pid."""
        cm = sleeper(user)
        proc = cm.__enter__()
        self.addCleanup(cm.__exit__, None, None, None)
        return proc.pid

    def threaded(self):
        t = ThreadedTarget()
        self.addCleanup(t.close)
        return t

    def assertErrno(self, err, fn, *args, **kwargs):
        """fn(*args) fails with OSError `err`."""
        try:
            fn(*args, **kwargs)
        except OSError as e:
            if e.errno != err:
                self.fail(f'expected {errnoName(err)}, got {errnoName(e.errno)} ({e})')
            return e
        self.fail(f'expected {errnoName(err)}, but the call succeeded')

    def assertErrnoIn(self, errs, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except OSError as e:
            if e.errno not in errs:
                self.fail(f'expected one of {[errnoName(x) for x in errs]}, got {errnoName(e.errno)} ({e})')
            return e
        self.fail(f'expected one of {[errnoName(x) for x in errs]}, but the call succeeded')

    def assertRefused(self, s, err, rel, text, files=('state',)):
        """A write to s/rel fails with err, leaves a new non-empty reason in
        `error`, and leaves `files` as they were."""
        before = {f: s.read(f) for f in files}
        marker = self._markError(s, rel, text)
        self.assertErrno(err, s.write, rel, text)
        reason = s.error()
        self.assertTrue(reason.strip(), f'error empty after a refused write of {text!r} to {rel}')
        self.assertTrue(reason.endswith('\n'), f'error {reason!r} does not end with a newline')
        self.assertRegex(reason, PRINTABLE)
        if marker is not None:
            self.assertNotEqual(reason, marker, f'error unchanged by the refused write of {text!r} to {rel}')
        for f, content in before.items():
            self.assertEqual(s.read(f), content, f'{f} changed by the refused write of {text!r} to {rel}')
        return reason

    def _markError(self, s, rel, text):
        """Leaves a known reason in `error` (a bad set number in `ctl`) so the
        next failure must replace it; None when the next write is that one."""
        marker_cmd = 'start 70000'
        if rel == 'ctl' and text.strip() == marker_cmd:
            return None
        try:
            s.write('ctl', marker_cmd + '\n')
        except OSError:
            pass
        return s.error()
