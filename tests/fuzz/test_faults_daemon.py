#!/usr/bin/env python3
# Faults of the daemon itself (issue 14), as a user meets them: pfmfsd killed
# with SIGKILL under blocked clients (read, poll, select, epoll_wait on msg,
# and a libpfm-compat program blocked in read of its context), a daemon out
# of file descriptors, out of locked memory for perf's ring buffers, and at
# its session, set and message limits. Each test asserts the exact errno and
# the reason in `error`, that the refused operation changed nothing, and that
# everyone else is still served; no daemon's log may hold a sanitizer report.
#
#   PFMFSD=build/fs/pfmfsd PFMFS_BACKEND=sim|perf python3 tests/fuzz/test_faults_daemon.py
#
# PFMFS_FAULTS_CLIENT names a built faults_libpfm_client.c; without it the
# test compiles one against the libpfm.so.3 next to PFMFSD (or $PFMFS_LIBPFM).
import atexit
import errno
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))

import pfmfs_mount as pm  # noqa: E402  (after the path above)
from kernel_setting import KernelSetting  # noqa: E402
from pfmfs_mount import (MSG, PERF, PMU, SIM, TEST_USER2, Mount, MountTestCase, daemonPath,  # noqa: E402
                         inCi, parseKv, perfOnly, runAs, stateLine, waitAsleep, waitFor)

A = PMU.pmc_a
WAIT_S = pm.WAIT_S  # how long what must happen may take on a loaded machine before a test fails
SANITIZER_MARKERS = ('ERROR: AddressSanitizer', 'WARNING: ThreadSanitizer', 'runtime error:', 'ERROR: LeakSanitizer')
MLOCK_KB = '/proc/sys/kernel/perf_event_mlock_kb'
CAP_IPC_LOCK = 14


def assertCleanLog(log):
    for marker in SANITIZER_MARKERS:
        if marker in log:
            raise AssertionError(f'sanitizer report in the daemon log:\n{log[-4000:]}')


# One line of an "invalid vptr" report after its first two: the object's
# memory (or "<memory cannot be printed>" when that pipe failed too), the
# caret under the vptr, and the stack. The daemon's own log lines may fall
# between them (another thread); they are kept.
VPTR_REPORT_TAIL = re.compile(r'<memory cannot be printed>|[ \t]*(?:[0-9a-f]{2}[ \t]+)+[0-9a-f]{2}[ \t]*'
                              r'|[ \t]*\^~*[ \t]*|[ \t]*invalid vptr|[ \t]+#\d+ .*|')


def withoutVptrArtifacts(log):
    """The log without UBSan's "invalid vptr" reports (DescriptorTest says
    why they are artifacts there); every other line kept."""
    lines, kept, i = log.split('\n'), [], 0
    while i < len(lines):
        if ('runtime error: ' in lines[i] and 'which does not point to an object of type' in lines[i]
                and i + 1 < len(lines) and lines[i + 1].endswith('note: object has invalid vptr')):
            i += 2
            while i < len(lines) and (VPTR_REPORT_TAIL.fullmatch(lines[i]) or lines[i].startswith('pfmfsd: ')):
                if lines[i].startswith('pfmfsd: '):
                    kept.append(lines[i])
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    return '\n'.join(kept)


def need(test, ok, why):
    """A requirement of the machine: a skip, or under CI=true a failure."""
    if not ok:
        if inCi():
            test.fail(f'CI=true and {why}')
        test.skipTest(why)


def procStatus(pid):
    with open(f'/proc/{pid}/status') as f:
        return dict(line.rstrip('\n').split(':\t', 1) for line in f if ':\t' in line)


def procGone(pid):
    try:
        return procStatus(pid)['State'].startswith(('Z', 'X'))
    except OSError:
        return True


def quietly(fn, *args):
    """fn(*args), whatever OSError it meets (cleanups of what may be gone)."""
    try:
        fn(*args)
    except OSError:
        pass


def limitSoft(test, pid, which, n):
    """Lowers process pid's soft limit to n until the test ends (the kernel
    checks the soft one; the hard one stays, for raising it again needs
    CAP_SYS_RESOURCE, which a container's root may lack)."""
    old = resource.prlimit(pid, which)
    test.addCleanup(resource.prlimit, pid, which, old)
    resource.prlimit(pid, which, (n, old[1]))
    return n


def fdCount(pid):
    return len(os.listdir(f'/proc/{pid}/fd'))


def mountsAt(path):
    """The mounts stacked on path, bottom first: (mount id, fstype) each."""
    with open('/proc/self/mountinfo') as f:
        fields = [line.split() for line in f]
    return [(x[0], x[x.index('-') + 1]) for x in fields if x[4] == path]


def serving(path):
    """statfs asks the daemon each time (stat may answer from the cache)."""
    try:
        os.statvfs(path)
        return True
    except OSError:
        return False


def helperOf(daemon_pid):
    """The fusermount3 that pfmfsd started to mount, which stays as the
    auto_unmount helper: it unmounts once the daemon is gone."""
    with open(f'/proc/{daemon_pid}/task/{daemon_pid}/children') as f:  # libfuse forks it from the main thread
        kids = [int(k) for k in f.read().split()]
    helpers = [k for k in kids if procStatus(k)['Name'] == 'fusermount3']
    assert len(helpers) == 1, f'pfmfsd {daemon_pid} has children {kids}, expected one fusermount3'
    return helpers[0]


def waitBlocked(pid, tid):
    """Thread tid sleeps in its system call, not on a lock of its own;
    returns the kernel function it sleeps in (its wchan)."""
    def blocked():
        waitAsleep(pid, tid, WAIT_S)
        with open(f'/proc/{pid}/task/{tid}/wchan') as f:
            wchan = f.read()
        return wchan not in ('', '0') and 'futex' not in wchan and wchan
    wchan = waitFor(blocked, WAIT_S)
    assert wchan, f'thread {tid} of {pid} never blocked'
    return wchan


def stillBlocked(pid, tid, wchan):
    """Thread tid still sleeps where waitBlocked saw it (not woken: a
    woken thread is runnable, or sleeps elsewhere, on the GIL say, or is gone)."""
    try:
        with open(f'/proc/{pid}/task/{tid}/stat') as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        with open(f'/proc/{pid}/task/{tid}/wchan') as f:
            return state in ('S', 'D') and f.read() == wchan
    except OSError:
        return False


def pollOn(fd, poller, events):
    poller.register(fd, events)
    return poller.poll()


BLOCKING = {  # the calls a client blocks in on a msg descriptor
    'read': lambda fd: os.read(fd, 64),
    'poll': lambda fd: pollOn(fd, select.poll(), select.POLLIN | select.POLLPRI),
    'select': lambda fd: select.select([fd], [], [fd]),
    'epoll': lambda fd: pollOn(fd, select.epoll(), select.EPOLLIN | select.EPOLLPRI),
}


class Blocked(threading.Thread):
    """A client blocked on a msg descriptor in one of BLOCKING."""

    def __init__(self, how, fd):
        super().__init__(daemon=True)
        self.how, self.fd = how, fd
        self.outcome = self.ended = None
        self.started_in = threading.Event()

    def run(self):
        self.tid = threading.get_native_id()
        self.started_in.set()
        try:
            self.outcome = ('returned', BLOCKING[self.how](self.fd))
        except OSError as e:
            self.outcome = ('failed', errno.errorcode.get(e.errno, e.errno))
        self.ended = time.monotonic()

    def waitBlocked(self):
        assert self.started_in.wait(WAIT_S)
        self.wchan = waitBlocked(os.getpid(), self.tid)

    def stillBlocked(self):
        return self.ended is None and stillBlocked(os.getpid(), self.tid, self.wchan)


_client = None


def libpfmClient(test):
    """faults_libpfm_client.c built against libpfm-compat, with the library's
    own sanitizers (a sanitized library needs its program built so)."""
    global _client
    exe = os.environ.get('PFMFS_FAULTS_CLIENT')
    if exe or _client:
        return exe or _client
    lib = os.environ.get('PFMFS_LIBPFM') or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(daemonPath()))), 'libpfm-compat', 'libpfm.so.3')
    need(test, os.path.exists(lib), f'no {lib} to build faults_libpfm_client.c with (set PFMFS_FAULTS_CLIENT)')
    about = subprocess.run(['readelf', '-W', '--dyn-syms', '-p', '.comment', lib], capture_output=True, text=True).stdout
    kinds = [k for k, sym in (('address', '__asan_init'), ('undefined', '__ubsan_handle'), ('thread', '__tsan_init'))
             if sym in about]
    tmp = tempfile.mkdtemp(prefix='pfmfs-faults-')
    atexit.register(shutil.rmtree, tmp, True)
    out = os.path.join(tmp, 'faults_libpfm_client')
    cc = 'clang' if 'clang version' in about else os.environ.get('CC', 'cc')
    cmd = [cc, '-std=gnu11', '-Wall', '-Wextra', '-Werror', '-pthread', os.path.join(HERE, 'faults_libpfm_client.c'),
           '-I', os.path.join(pm.REPO, 'libpfm-compat', 'include'), lib, f'-Wl,-rpath,{os.path.dirname(lib)}',
           '-o', out] + ([f'-fsanitize={",".join(kinds)}'] if kinds else [])
    if kinds and cc == 'clang':  # the library is C++: clang's C link leaves out the sanitizers' C++ parts
        cmd += ['-fsanitize-link-c++-runtime', '-lstdc++']
    p = subprocess.run(cmd, capture_output=True, text=True)
    test.assertEqual(p.returncode, 0, f'{" ".join(cmd)}:\n{p.stdout}{p.stderr}')
    _client = out
    return out


class FaultTestCase(MountTestCase):
    """One Mount for the class (unless `own_mounts`: each test starts its
    own); its log is checked once it has exited."""
    own_mounts = False

    @classmethod
    def setUpClass(cls):
        if not cls.own_mounts:
            cls.m = Mount(cls.mount_args, manual_clock=cls.manual_clock).start()

    @classmethod
    def tearDownClass(cls):
        if not cls.own_mounts:
            m, cls.m = cls.m, None
            m.close()
            assertCleanLog(m.log())

    def files(self, s, names=('state', 'counts', 'flags', 'sets/0/pmc0', 'sets/0/pmd0')):
        return {f: s.read(f) for f in names}


class KillTest(FaultTestCase):
    """pfmfsd killed with SIGKILL under its clients. fusermount3's
    auto_unmount helper is stopped meanwhile, so the dead mount stays, as on
    a busy machine where the helper comes seconds late (test_lifecycle saw
    over 5 s): a new pfmfsd must detach it and serve at once."""
    own_mounts = True

    def doomed(self):
        m = Mount().start()
        self.addCleanup(self.unmountAll, m)
        helper = helperOf(m.proc.pid)
        os.kill(helper, signal.SIGSTOP)
        self.addCleanup(quietly, os.kill, helper, signal.SIGCONT)  # runs before unmountAll
        return m, helper

    def unmountAll(self, m):
        for _ in range(8):
            if not mountsAt(m.mnt):
                break
            subprocess.run(['umount', '-l', m.mnt], stderr=subprocess.DEVNULL)
        m._cleanupAfterFailure()

    def kill(self, m, blocked=()):
        """SIGKILL. Once the daemon is reaped, none of `blocked` (what, still
        blocked?) may still wait: the kernel aborted the connection at the
        daemon's exit, before it could be reaped, and woke every waiter
        (pfmfs(5): at once). That holds whatever the machine's speed: a
        woken client need not have run yet, only have left its wait."""
        m.proc.kill()
        self.assertEqual(m.waitExit(), -signal.SIGKILL)
        asleep = [what for what, still in blocked if still()]
        self.assertEqual(asleep, [], 'clients still asleep in their call once the killed daemon was reaped')
        assertCleanLog(m.log())
        self.assertFalse(serving(m.mnt), 'the mount still answers with its daemon killed')
        self.assertEqual([t for _, t in mountsAt(m.mnt)], ['fuse.pfmfs'])  # dead but there

    def test_sigkill_wakes_every_blocked_client_and_a_new_daemon_serves_at_once(self):
        m, helper = self.doomed()
        s = m.mkdirSession('blocked')
        w = self.worker()
        s.pmc(0, A)
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        fds = {how: os.open(s.path('msg'), os.O_RDONLY) for how in BLOCKING}
        self.addCleanup(lambda: [quietly(os.close, fd) for fd in fds.values()])
        clients = {how: Blocked(how, fd) for how, fd in fds.items()}
        for c in clients.values():
            c.start()
        for c in clients.values():
            c.waitBlocked()
        self.kill(m, [(how, c.stillBlocked) for how, c in clients.items()])
        for how, c in clients.items():
            c.join(WAIT_S)
            self.assertFalse(c.is_alive(), f'a client blocked in {how} outlived the daemon by {WAIT_S:.0f} s')
        # The read in progress is aborted; a poller is told POLLERR (select:
        # readable), and what it then reads fails: the connection is gone.
        self.assertEqual(clients['read'].outcome, ('failed', 'ECONNABORTED'))
        self.assertEqual(clients['poll'].outcome, ('returned', [(fds['poll'], select.POLLERR)]))
        self.assertEqual(clients['select'].outcome, ('returned', ([fds['select']], [], [])))
        self.assertEqual(clients['epoll'].outcome, ('returned', [(fds['epoll'], select.EPOLLERR)]))
        for how in list(fds):
            self.assertErrno(errno.ENOTCONN, os.read, fds[how], 64)
            self.assertErrno(errno.ENOTCONN, os.close, fds.pop(how))  # closed all the same
        # The target was not left traced or stopped, and runs on.
        status = procStatus(w.pid)
        self.assertEqual(status['TracerPid'], '0')
        self.assertNotIn(status['State'][0], 'tT')
        self.assertGreaterEqual(w.fault(5), 5)
        # The kernel closed the daemon's perf events with it; nothing it
        # started (the helper) holds one.
        self.assertNotIn('anon_inode:[perf_event]', [os.readlink(f'/proc/{helper}/fd/{fd}')
                                                     for fd in os.listdir(f'/proc/{helper}/fd')])

        m2 = Mount(mountpoint=m.mnt)
        began = time.monotonic()
        m2.start()  # may return early: `version` stays in the dead mount's cache
        self.addCleanup(m2._cleanupAfterFailure)
        # One mount that answers: the dead one is gone, not stacked under it.
        live = lambda: serving(m.mnt) and len(mountsAt(m.mnt)) == 1  # noqa: E731
        self.assertTrue(waitFor(live, WAIT_S), f'mounts {mountsAt(m.mnt)}, log: {m2.log()}')
        self.assertLess(time.monotonic() - began, pm.MOUNT_TIMEOUT_S)
        self.assertIn(f'pfmfsd: warning: mount point {m.mnt}: detached a dead FUSE mount '
                      '(its daemon is gone: Transport endpoint is not connected)\n', m2.log())
        new = mountsAt(m.mnt)
        s2 = m2.mkdirSession('again')
        s2.pmc(0, A)
        s2.ctl(f'load {w.pid}')  # the target is free: no claim outlived the old daemon
        s2.ctl('start')
        d = self.driven(w, m2)
        d.drive(30)
        d.check(s2.readPmd(0))
        # The old helper, resumed, leaves the live mount alone.
        os.kill(helper, signal.SIGCONT)
        self.assertTrue(waitFor(lambda: procGone(helper), WAIT_S), 'the old auto_unmount helper did not finish')
        self.assertEqual(mountsAt(m.mnt), new)
        self.assertEqual(s2.state(), stateLine('active', target=w.pid))
        m2.close()
        assertCleanLog(m2.log())
        # Nothing dead is left under it.
        self.assertEqual(mountsAt(m.mnt), [])
        self.assertEqual(os.listdir(m.mnt), [])

    def test_sigkill_under_a_libpfm_program_blocked_in_read(self):
        exe = libpfmClient(self)
        m, _ = self.doomed()
        p = subprocess.Popen([exe, A], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ, PFMFS_MOUNT=m.mnt))
        self.addCleanup(lambda: p.poll() is None and (p.kill(), p.communicate()))
        self.assertTrue(select.select([p.stdout], [], [], WAIT_S)[0], 'the libpfm program never got ready')
        line = p.stdout.readline()
        self.assertRegex(line, r'^ready \d+\n$', p.stderr.read() if not line else '')
        tid = int(line.split()[1])
        self.assertEqual(os.listdir(m.path('sessions')), [f'pfm.{p.pid}.0'])
        wchan = waitBlocked(p.pid, tid)
        self.kill(m, [('the libpfm program\'s read', lambda: stillBlocked(p.pid, tid, wchan))])
        out, err = p.communicate(timeout=WAIT_S)
        # The read perfmon2 programs wait in is aborted. libpfm-compat then
        # finds the descriptor no context (its fstat fails: EBADF, as for a
        # closed one); what goes to the mount fails with ENOTCONN.
        self.assertEqual(out, 'read -1 ECONNABORTED\npfm_read_pmds -1 EBADF\npfm_stop -1 EBADF\n'
                              'pfm_create_context -1 ENOTCONN\nclose -1 ENOTCONN\n', err)
        self.assertEqual(p.returncode, 0, err)


def makeSessions(sessions, names):
    """As a user: mkdir each name; 0 or the errno of each."""
    results = []
    for name in names:
        try:
            os.mkdir(os.path.join(sessions, name))
            results.append(0)
        except OSError as e:
            results.append(e.errno)
    return results


class DescriptorTest(FaultTestCase):
    """The daemon out of file descriptors (RLIMIT_NOFILE lowered under it
    with prlimit to what it holds, plus `headroom`). A FUSE request needs
    none; a load needs one to read /proc/TID/status and keeps a pidfd per
    target thread (the exit watcher), and on perf one per target and one per
    counter of every set loaded."""

    # UBSan's vptr check reads a vtable only after asking the kernel, with a
    # pipe(2), whether its memory is mapped; with no descriptor left the
    # pipe fails and it reports an "invalid vptr" on a sound object. This
    # daemon runs those reports without halting, and tearDownClass lets
    # exactly that artifact through (withoutVptrArtifacts): any other report
    # still fails (ASan would catch a real use after free at the call
    # itself). Ignored by builds without UBSan.

    @classmethod
    def setUpClass(cls):
        ubsan = os.environ.get('UBSAN_OPTIONS', '') + ':halt_on_error=0'
        cls.m = Mount(cls.mount_args, manual_clock=cls.manual_clock, env={'UBSAN_OPTIONS': ubsan.lstrip(':')}).start()

    @classmethod
    def tearDownClass(cls):
        m, cls.m = cls.m, None
        m.close()
        assertCleanLog(withoutVptrArtifacts(m.log()))

    def limitFds(self, headroom):
        return limitSoft(self, self.m.proc.pid, resource.RLIMIT_NOFILE, fdCount(self.m.proc.pid) + headroom)

    def test_load_refused_and_everyone_else_served(self):
        pid = self.m.proc.pid
        version, info = self.m.read('version'), self.m.read('pmu/info')
        other = self.newSession()
        w = self.worker()
        other.pmc(0, A)
        other.ctl(f'load {w.pid}')
        other.ctl('start')
        s = self.newSession()
        s.pmc(0, A)
        target = self.sleeper()
        self.limitFds(0)
        held = fdCount(pid)
        before = self.files(s)
        self.assertErrno(errno.EMFILE, s.ctl, f'load {target}')
        self.assertEqual(s.error(), f'cannot read /proc/{target}/status: Too many open files: '
                                    'the daemon is out of file descriptors\n')
        self.assertEqual(self.files(s), before)
        self.assertEqual(fdCount(pid), held)
        # Everyone else is served meanwhile: reads, opens, counting sessions,
        # new sessions, another user.
        self.assertEqual(self.m.read('version'), version)
        handles = [os.open(self.m.path('pmu/info'), os.O_RDONLY) for _ in range(32)]
        try:
            self.assertEqual({os.read(fd, 4096).decode() for fd in handles}, {info})
        finally:
            for fd in handles:
                os.close(fd)
        start = other.readPmd(0)
        d = self.driven(w)
        d.drive(30)
        d.check(other.readPmd(0), start)
        t = self.newSession()
        t.pmc(0, A)
        self.assertEqual(t.read('sets/0/pmc0'), f'{A}\n')
        self.addCleanup(self.m.session('other-user').destroy)
        self.assertEqual(runAs(TEST_USER2, makeSessions, self.m.path('sessions'), ['other-user']), [0])
        self.assertEqual(self.m.session('other-user').state(), stateLine())
        # Removing a session frees what it held: the refused load goes through,
        # and its target's exit is noticed (its watcher got its descriptor).
        other.destroy()
        self.assertTrue(waitFor(lambda: fdCount(pid) < held, WAIT_S))
        s.ctl(f'load {target}')
        self.assertEqual(s.state(), stateLine('loaded', target=target))
        os.kill(target, signal.SIGKILL)
        self.assertTrue(waitFor(lambda: 'exited=1' in s.state(), WAIT_S), s.state())
        self.assertEqual(s.state(), stateLine(queued=1, exited=True))

    @perfOnly
    def test_start_refused_when_its_counters_find_no_descriptor(self):
        pid = self.m.proc.pid
        s = self.newSession()
        w = self.worker()
        for k in range(4):
            s.pmc(k, A)
        s.ctl(f'load {w.pid}')
        n = self.limitFds(2)  # pmd0 and pmd1 get one, pmd2 none
        held = fdCount(pid)
        before = self.files(s, ('state', 'counts', 'sets/0/regs', 'sets/0/pmds'))
        self.assertErrno(errno.EMFILE, s.ctl, 'start')
        self.assertEqual(s.error(), f'pmd2: perf_event_open(type=1 config={PMU.event_a[1]:#x}, pid={w.tid}, cpu=-1): '
                                    'Too many open files\n')
        self.assertEqual(self.files(s, tuple(before)), before)
        self.assertEqual(fdCount(pid), held)  # the two opened were closed again
        # Room for exactly its four counters: the same start goes through.
        limitSoft(self, pid, resource.RLIMIT_NOFILE, n + 2)
        s.ctl('start')
        self.assertEqual(s.state(), stateLine('active', target=w.pid))
        d = self.driven(w)
        d.drive(30)
        for k in range(4):
            d.check(s.readPmd(k))


class LockedMemoryTest(FaultTestCase):
    """perf's ring buffers are locked memory: the kernel charges them to the
    daemon's user up to perf_event_mlock_kb per CPU (set to 0 here, restored
    after, under kernel_setting's machine-wide lock), then to the daemon's RLIMIT_MEMLOCK (lowered with prlimit); the
    daemon has no CAP_IPC_LOCK to exceed both. perf maps one per target, the
    sim one per target with flags inherit (its children's task records)
    beside the control page of the dummy event that watches every loaded
    thread (without which it watches /proc instead: pfmfs(5), SECURITY)."""

    ring_kb = 36 if SIM else 8  # the control page and 8 data pages (sim), 1 (perf)
    pinned_kb = ring_kb + 4 if SIM else ring_kb  # per loaded target

    def session(self):
        s = self.newSession()
        s.write('flags', 'inherit\n' if SIM else 'none\n')
        s.pmc(0, A)
        return s, self.worker()

    def test_load_refused_past_the_locked_memory_limit(self):
        need(self, os.access(MLOCK_KB, os.W_OK), f'{MLOCK_KB} is not writable')
        pid = self.m.proc.pid
        self.assertFalse(int(procStatus(pid)['CapEff'], 16) >> CAP_IPC_LOCK & 1, 'the daemon kept CAP_IPC_LOCK')
        self.enterContext(KernelSetting(MLOCK_KB, 0))
        pinned = lambda: int(procStatus(pid)['VmPin'].split()[0])  # noqa: E731  (kB)
        a, wa = self.session()
        a.ctl(f'load {wa.pid}')
        a.ctl('start')
        self.assertEqual(pinned(), self.pinned_kb)
        limitSoft(self, pid, resource.RLIMIT_MEMLOCK, self.pinned_kb * 1024)
        b, wb = self.session()
        held = fdCount(pid)
        before = self.files(b)
        self.assertErrno(errno.EPERM, b.ctl, f'load {wb.pid}')
        with open('/proc/sys/kernel/perf_event_paranoid') as f:
            hint = '' if PERF else f' (perf_event_paranoid={int(f.read())})'
        self.assertEqual(b.error(), f'mapping a perf ring buffer of {self.ring_kb} KiB: Operation not permitted{hint}\n')
        self.assertEqual(self.files(b), before)
        self.assertEqual((fdCount(pid), pinned()), (held, self.pinned_kb))
        # The loaded session counts on.
        start = a.readPmd(0)
        d = self.driven(wa)
        d.drive(30)
        d.check(a.readPmd(0), start)
        # Its unload gives the buffer back: the refused load goes through.
        a.ctl('unload')
        self.assertEqual(pinned(), 0)
        b.ctl(f'load {wb.pid}')
        b.ctl('start')
        self.assertEqual(pinned(), self.pinned_kb)
        d = self.driven(wb)
        d.drive(30)
        d.check(b.readPmd(0))


class LimitsTest(FaultTestCase):
    """What test_lifecycle's LimitsTest leaves out: the limits are per user
    and per session (others are served), a refusal changes nothing and says
    why, and what frees room lets the next one through."""

    mount_args = ['--max-sessions-per-user=2', '--max-sets=3', '--max-messages=2']

    def test_sessions_per_user_bind_each_user_alone(self):
        sessions = self.m.path('sessions')
        mine = [self.newSession(f'mine-{i}') for i in range(2)]
        mine[0].ctl(f'load {self.sleeper()}')
        before = (sorted(os.listdir(sessions)), [self.files(s) for s in mine])
        self.assertErrno(errno.ENOSPC, os.mkdir, os.path.join(sessions, 'mine-2'))
        self.assertEqual((sorted(os.listdir(sessions)), [self.files(s) for s in mine]), before)
        # No session holds an `error` for a refused session mkdir: the errno
        # is all pfmfs(5) promises. Another user has a limit of their own.
        for name in ('theirs-0', 'theirs-1', 'theirs-2', 'theirs-3'):
            self.addCleanup(self.m.session(name).destroy)
        self.assertEqual(runAs(TEST_USER2, makeSessions, sessions, ['theirs-0', 'theirs-1', 'theirs-2']),
                         [0, 0, errno.ENOSPC])
        self.assertEqual([self.files(s) for s in mine], before[1])
        # Freeing one of root's lets root's next through, and only root's.
        mine[0].destroy()
        self.newSession('mine-2')
        self.assertEqual(runAs(TEST_USER2, makeSessions, sessions, ['theirs-3']), [errno.ENOSPC])
        self.assertErrno(errno.ENOSPC, os.mkdir, os.path.join(sessions, 'mine-3'))

    def test_sets_per_session_say_why_and_bind_each_session_alone(self):
        s = self.newSession()
        for n in (1, 2):
            s.mkset(n)
        s.pmc(0, A, set_id=1)
        self.assertErrno(errno.EINVAL, s.ctl, 'start 70000')  # a reason the refusal must replace
        names = ('state', 'counts', 'sets/1/pmc0', 'sets/1/switch', 'sets/2/regs')
        before = (sorted(os.listdir(s.path('sets'))), self.files(s, names))
        self.assertErrno(errno.ENOSPC, s.mkset, 3)
        self.assertEqual(s.error(), 'a session has at most 3 sets\n')
        self.assertEqual((sorted(os.listdir(s.path('sets'))), self.files(s, names)), before)
        t = self.newSession()
        t.mkset(7)
        t.mkset(8)
        self.assertErrno(errno.ENOSPC, t.mkset, 9)
        os.rmdir(s.path('sets/2'))
        s.mkset(3)
        self.assertEqual(sorted(os.listdir(s.path('sets'))), ['0', '1', '3'])

    def test_message_queue_full_loses_and_reading_frees_room(self):
        s, w = self.newSession(), self.worker()
        u, wu = self.newSession(), self.worker()
        for session, target in ((s, w), (u, wu)):
            session.pmc(0, A)
            session.pmd(0, '-30 long_reset=-30 notify')
            session.ctl(f'load {target.pid}')
            session.ctl('start')

        def overflow(queued, lost):
            self.drive(w, 30)
            self.assertEventually(s.state, stateLine('masked', target=w.pid, queued=queued, lost=lost))

        overflow(1, 0)
        s.ctl('restart')
        overflow(2, 0)
        s.ctl('restart')
        overflow(2, 1)  # the queue holds 2: the third is lost and counted
        # Another session's queue is its own.
        self.drive(wu, 30)
        self.assertEventually(u.state, stateLine('masked', target=wu.pid, queued=1))
        # Reading one message frees its place: the next is queued, numbered
        # on from the last queued (a lost message takes no number).
        self.assertEqual(MSG.unpack(s.readMsg())[0], 1)  # PFM_MSG_OVFL
        self.assertEqual(s.state(), stateLine('masked', target=w.pid, queued=1, lost=1))
        s.ctl('restart')
        overflow(2, 1)
        lines = s.readMessages().splitlines()
        self.assertEqual([(parseKv(x)['type'], parseKv(x)['seq']) for x in lines], [('ovfl', '2'), ('ovfl', '3')])


if __name__ == '__main__':
    pm.main()
