#!/usr/bin/env python3
"""A state-machine fuzzer of a live mount: several clients at once (root and
the two test users, each a process of several threads) issue seeded random
sequences of real operations, and every reply and the sessions' files are
checked against what docs/pfmfs.5.md promises.

Each thread owns a few sessions, which only it changes, and a target process
to load them on; it also attacks sessions of other clients (another user's
must refuse it) and races opens against rmdir. After every operation on one
of its sessions it checks:
  - the reply is a value or an errno the docs list (ALLOWED);
  - a refused write changed nothing of the session's configuration;
  - a counting PMD written with a plain value never goes backwards;
  - with the sim's manual clock, `counts` and `sets/N/pmdK` agree;
  - rmdir leaves nothing behind.
The orchestrator kills clients with SIGKILL mid-call (their autoclose
sessions must go), checks that the daemon keeps answering, and at the end
that no session is left and the daemon's log has no sanitizer report.

  PFMFS_BACKEND=sim|perf python3 mount_fuzz.py [--seed S] [--ops N]
      [--clients C] [--threads T] [--real-clock] [--kill-every SEC]

A failing run prints its seed and each failing thread's last operations;
the same seed replays the same choices (the interleaving of threads and
clients is the machine's).
"""
import argparse
import errno
import fcntl
import json
import os
import random
import select
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
import pfmfs_mount as pm  # noqa: E402

# errno values a user may see from the mount (pfmfs(5), ERRORS and the files).
ALLOWED = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EINVAL, errno.EBUSY, errno.ESRCH, errno.EEXIST,
           errno.ENOSPC, errno.EAGAIN, errno.ENOTEMPTY, errno.ENAMETOOLONG, errno.EISDIR, errno.ENOTDIR}
DENIED = {errno.EACCES, errno.EPERM, errno.ENOENT}  # another user's session
LOG_TAIL = 40
SESSIONS_PER_THREAD = 3


class Violation(Exception):
    pass


# ---- inputs: valid, boundary and garbage values for every file --------------------------

EVENTS_SIM = ['UNHALTED_CORE_CYCLES', 'INSTRUCTION_RETIRED:u', 'LLC_MISSES:u:k', 'BRANCH_INSTRUCTIONS_RETIRED',
              'SIM_PHASE_A', 'INSTRUCTIONS_RETIRED']
EVENTS_PERF = ['TASK_CLOCK', 'PAGE_FAULTS', 'CONTEXT_SWITCHES:u', 'CPU_CLOCK']
GARBAGE = ['', '\n', '-', '0x', 'zz', '18446744073709551616', '-18446744073709551616', 'pmc0', '\x00', '\xff\xfe',
           'x' * 300, '1 2 3', 'notify=2', 'load', 'start 70000', 'time 0', 'time', 'system thread', '0x1ffffffffffffffff']


def numberText(rnd):
    return rnd.choice(['0', '1', '-1', '-1000', '-30', '0xffffffffffffffff', '18446744073709551615', str(rnd.randrange(1 << 48)),
                       '-' + str(rnd.randrange(1, 1 << 20))])


def pmcValue(rnd, events):
    r = rnd.random()
    if r < 0.55:
        return rnd.choice(events) + rnd.choice(['', '', ' no_emul64'])
    if r < 0.8:
        return hex(rnd.choice([0x13003c, 0x1300c0, 0x53003c, 0x222, 0, 1 << 63, rnd.randrange(1 << 64)]))
    return rnd.choice(GARBAGE)


def pmdValue(rnd):
    r = rnd.random()
    if r < 0.4:
        return '0', True  # plain: a counter whose count must not go back
    attrs = []
    for key in ('long_reset', 'short_reset'):
        if rnd.random() < 0.3:
            attrs.append(f'{key}={numberText(rnd)}')
    if rnd.random() < 0.3:
        attrs.append('notify')
    if rnd.random() < 0.15:
        attrs.append(f'switch_cnt={rnd.randrange(4)}')
    if rnd.random() < 0.15:
        attrs.append(f'reset_pmds={rnd.randrange(20)}')
    if rnd.random() < 0.1:
        attrs.append(rnd.choice(['random', 'random_mask=0xff', 'eventid=7', 'smpl_pmds=1,2']))
    if rnd.random() < 0.15:
        attrs.append(rnd.choice(GARBAGE))
    return ' '.join([numberText(rnd)] + attrs), False


# ---- the configuration a refused write must leave alone ---------------------------------

def configOf(sess):
    """flags, mode, the sets with their switch, PMCs and PMD attributes (not
    PMD values, which counting moves)."""
    out = [pm.read(os.path.join(sess, 'flags')), pm.read(os.path.join(sess, 'mode'))]
    for s in sorted(os.listdir(os.path.join(sess, 'sets')), key=int):
        d = os.path.join(sess, 'sets', s)
        out.append(f'set {s}: ' + pm.read(os.path.join(d, 'switch')).strip())
        for line in pm.read(os.path.join(d, 'regs')).splitlines():
            words = line.split()
            if words and words[0].startswith('pmd'):
                words = [words[0]] + words[2:]  # the value counts on
                if len(words) == 1:
                    continue
            out.append(' '.join(words))
    return '\n'.join(out)


class Stale(Exception):
    """The session went away under a check (its target's autoclose, say)."""


def snapshot(sess):
    try:
        return configOf(sess)
    except OSError as e:
        if e.errno == errno.ENOENT:
            raise Stale()
        raise


# ---- one client thread ---------------------------------------------------------------

class Worker:
    def __init__(self, cfg, client, thread, rnd, report):
        self.cfg = cfg
        self.client = client
        self.rnd = rnd
        self.report = report
        self.uid = os.getuid()
        self.prefix = f'c{client}t{thread}'
        self.log = []
        self.target = None
        self.held = {}  # session name -> open fd (autoclose sessions)
        self.tracked = {}  # (session, set, pmd) -> last count read
        self.resetting = set()  # (session, set): some PMD resets others when it overflows
        self.events = EVENTS_PERF if pm.PERF else EVENTS_SIM
        self.ops = 0

    # -- helpers

    def path(self, *parts):
        return os.path.join(self.cfg.mnt, *parts)

    def note(self, text):
        self.log.append(text)
        if len(self.log) > LOG_TAIL:
            del self.log[0]

    def fail(self, what):
        raise Violation(what)

    def call(self, what, fn, *args):
        """Runs one operation; returns (ok, value or errno) after checking
        that an error is one the docs allow."""
        try:
            v = fn(*args)
            self.note(f'{what} -> ok')
            return True, v
        except OSError as e:
            self.note(f'{what} -> {errno.errorcode.get(e.errno, e.errno)}')
            if e.errno not in ALLOWED:
                self.fail(f'{what}: errno {errno.errorcode.get(e.errno, e.errno)} is not one pfmfs(5) lists')
            return False, e.errno

    def mine(self):
        return [f'{self.prefix}s{k}' for k in range(SESSIONS_PER_THREAD)]

    def newTarget(self):
        if self.target is not None:
            self.target.kill()
            self.target.wait()
        import subprocess
        self.target = subprocess.Popen(['sleep', '1000'], stdin=subprocess.DEVNULL)

    # -- the operations

    def opMkdir(self, name):
        ok, _ = self.call(f'mkdir {name}', os.mkdir, self.path('sessions', name))
        if ok and self.rnd.random() < 0.3:
            # An autoclose session lives as long as a message file of it is
            # open (pfmfs(5), AUTOCLOSE): hold msg, then set the flag.
            fd = os.open(self.path('sessions', name, 'msg'), os.O_RDONLY | os.O_NONBLOCK)
            okf, _ = self.call(f'flags autoclose {name}', pm.write, self.path('sessions', name, 'flags'), 'autoclose\n')
            if okf:
                self.held[name] = fd
                self.journal('+', name)
            else:
                os.close(fd)

    def opRmdir(self, name):
        ok, _ = self.call(f'rmdir {name}', os.rmdir, self.path('sessions', name))
        if ok:
            if os.path.exists(self.path('sessions', name)):
                self.fail(f'{name} still there after rmdir succeeded')
            self.forget(name)

    def progress(self):
        """The thread's operation count so far, for a client killed before its
        report (one file per thread, rewritten whole)."""
        with open(f'{self.cfg.autoclose_file}.{self.prefix}.ops', 'w') as f:
            f.write(str(self.ops))

    def journal(self, sign, name):
        """+NAME: an autoclose session held open; -NAME: no more. The
        orchestrator replays it to know what a SIGKILL must take away."""
        with open(self.cfg.autoclose_file, 'a') as f:
            f.write(f'{sign}{name}\n')

    def release(self, name):
        fd = self.held.pop(name, None)
        if fd is not None:
            self.journal('-', name)
            os.close(fd)

    def forget(self, name):
        self.release(name)
        for key in [k for k in self.tracked if k[0] == name]:
            del self.tracked[key]
        self.resetting = {r for r in self.resetting if r[0] != name}

    def opWrite(self, name):
        sess = self.path('sessions', name)
        if not os.path.isdir(sess):
            return self.opMkdir(name)
        rnd = self.rnd
        sets = [s for s in os.listdir(os.path.join(sess, 'sets'))] if os.path.isdir(os.path.join(sess, 'sets')) else ['0']
        st = rnd.choice(sets + ['9'])
        k = rnd.choice([0, 1, 2, 3, 16, 17, 63, 64]) if not pm.PERF else rnd.choice([0, 1, 7, 8])
        plain = False
        kind = rnd.choice(['pmc', 'pmc', 'pmd', 'pmd', 'regs', 'switch', 'flags', 'mode', 'ctl', 'ctl', 'ctl', 'mkset',
                           'rmset'])
        if kind == 'pmc':
            rel, text = f'sets/{st}/pmc{k}', pmcValue(rnd, self.events)
        elif kind == 'pmd':
            value, plain = pmdValue(rnd)
            rel, text = f'sets/{st}/pmd{k}', value
        elif kind == 'regs':
            lines = [f'pmc{rnd.choice([0, 1, 2])} {pmcValue(rnd, self.events)}', f'pmd{rnd.choice([0, 1, 2])} {pmdValue(rnd)[0]}']
            rel, text = f'sets/{st}/regs', '\n'.join(rnd.sample(lines, rnd.randint(1, 2)))
        elif kind == 'switch':
            rel, text = f'sets/{st}/switch', rnd.choice(['none', 'ovfl', f'time {rnd.randint(1, 5000000)}', 'time 1000 ovfl',
                                                         rnd.choice(GARBAGE)])
        elif kind == 'flags':
            rel, text = 'flags', rnd.choice(['', 'no_msg', 'notify_block', 'inherit', 'no_msg inherit', rnd.choice(GARBAGE)])
        elif kind == 'mode':
            rel, text = 'mode', rnd.choice(['thread', 'system', rnd.choice(GARBAGE)])
        elif kind == 'ctl':
            tid = rnd.choice([self.target.pid, self.target.pid, 1, 999999999, -1, 0])
            rel, text = 'ctl', rnd.choice([f'load {tid}', f'load {tid} set={rnd.choice([0, 1, 9])}', 'start', 'start 1',
                                           'stop', 'restart', 'unload', 'unload', rnd.choice(GARBAGE)])
        elif kind == 'mkset':
            self.call(f'mkset {name}/{st}', os.mkdir, os.path.join(sess, 'sets', str(rnd.randrange(6))))
            return
        else:
            if len(sets) > 1:
                victim = rnd.choice(sets)
                ok, _ = self.call(f'rmset {name}/{victim}', os.rmdir, os.path.join(sess, 'sets', victim))
                if ok:
                    for key in [kk for kk in self.tracked if kk[0] == name and kk[1] == int(victim)]:
                        del self.tracked[key]
                    self.resetting.discard((name, int(victim)))
            return
        try:
            before = snapshot(sess)
        except Stale:
            self.forget(name)
            return
        ok, err = self.call(f'write {name}/{rel} {text!r}', pm.write, os.path.join(sess, rel), text + '\n')
        if not ok:
            try:
                after = snapshot(sess)
            except Stale:
                self.forget(name)
                return
            if after != before:
                self.fail(f'a refused write ({errno.errorcode.get(err)}) of {text!r} to {name}/{rel} changed the '
                          f'session:\nbefore:\n{before}\nafter:\n{after}')
            return
        if kind == 'flags' and 'autoclose' not in text.split():
            # The write replaced the flags: the session is not autoclose any
            # more, and its held msg is only a file.
            self.release(name)
        if kind in ('pmd', 'regs'):
            # A write moves the PMDs it names, and a reset_pmds= makes an
            # overflow move others: the set's counts start over.
            for key in [kk for kk in self.tracked if kk[0] == name and kk[1] == int(st)]:
                del self.tracked[key]
            if 'reset_pmds' in text:
                self.resetting.add((name, int(st)))
            if kind == 'pmd' and plain and (name, int(st)) not in self.resetting:
                self.tracked[(name, int(st), k)] = 0

    def opRead(self, name):
        sess = self.path('sessions', name)
        rel = self.rnd.choice(['state', 'counts', 'error', 'flags', 'mode', 'sets/0/info', 'sets/0/regs', 'sets/0/pmds',
                               'sets/0/pmd0', 'sets/1/pmc0', 'sets/0/switch', 'messages', 'msg', 'ctl'])
        flags = os.O_NONBLOCK if rel in ('messages', 'msg') else 0

        def readIt():
            return pm.readBytes(os.path.join(sess, rel), flags=flags)
        ok, v = self.call(f'read {name}/{rel}', readIt)
        if not ok:
            return
        if rel == 'msg':
            if len(v) % 64:
                self.fail(f'{name}/msg gave {len(v)} bytes, not whole 64-byte records')
        elif any(b < 0x20 and b not in (0x0a, 0x09) or b >= 0x7f for b in v):
            self.fail(f'{name}/{rel} is not printable text: {v[:200]!r}')

    def opPoll(self, name):
        try:
            fd = os.open(self.path('sessions', name, 'msg'), os.O_RDONLY | os.O_NONBLOCK)
        except OSError as e:
            self.note(f'open {name}/msg -> {errno.errorcode.get(e.errno)}')
            if e.errno not in ALLOWED:
                self.fail(f'open msg: errno {e.errno}')
            return
        try:
            p = select.poll()
            p.register(fd, select.POLLIN)
            p.poll(self.rnd.randint(0, 5))
            self.note(f'poll {name}/msg')
        finally:
            os.close(fd)

    def opRaceRmdir(self, name):
        """An open file of a session, its rmdir, then a use of the file."""
        sess = self.path('sessions', name)
        try:
            fd = os.open(os.path.join(sess, 'ctl'), os.O_WRONLY)
        except OSError:
            return
        try:
            ok, _ = self.call(f'rmdir {name} (ctl open)', os.rmdir, sess)
            if ok:
                self.forget(name)
            ok2, err = self.call(f'write ctl of {"removed " if ok else ""}{name}', os.write, fd, b'stop\n')
            if ok and ok2:
                self.fail(f'a write to ctl of the removed session {name} succeeded')
        finally:
            os.close(fd)

    def opForeign(self):
        """Operations on someone else's session: another user's must refuse."""
        try:
            names = [n for n in os.listdir(self.path('sessions')) if not n.startswith(self.prefix)]
        except OSError:
            return
        if not names:
            return
        name = self.rnd.choice(names)
        sess = self.path('sessions', name)
        try:
            owner = os.stat(sess).st_uid
        except OSError:
            return
        if owner == self.uid or self.uid == 0:
            # The same user, or root: reading is fine, and changing another
            # thread's session would break its checks.
            self.call(f'read foreign {name}/state', pm.read, os.path.join(sess, 'state'))
            return
        op = self.rnd.choice(['ctl', 'rmdir', 'pmc', 'read', 'mkset', 'flags'])
        try:
            if op == 'ctl':
                pm.write(os.path.join(sess, 'ctl'), 'stop\n')
            elif op == 'rmdir':
                os.rmdir(sess)
            elif op == 'pmc':
                pm.write(os.path.join(sess, 'sets/0/pmc0'), '0x13003c\n')
            elif op == 'read':
                pm.read(os.path.join(sess, 'counts'))
            elif op == 'mkset':
                os.mkdir(os.path.join(sess, 'sets', '5'))
            else:
                pm.write(os.path.join(sess, 'flags'), 'no_msg\n')
        except OSError as e:
            self.note(f'foreign {op} {name} (uid {owner}) -> {errno.errorcode.get(e.errno)}')
            if e.errno not in DENIED:
                self.fail(f'{op} on another user\'s session {name}: errno {e.errno}, not one of EACCES, EPERM, ENOENT')
            return
        self.fail(f'uid {self.uid} did {op} on session {name} of uid {owner}')

    def opAdvance(self):
        if not self.cfg.manual:
            return
        ns = self.rnd.choice([1, 10, 1000, 100000, 1000000])
        with self.cfg.clockLock(exclusive=True):
            self.call(f'advance {ns}', pm.write, self.path('pmu/sim/advance'), f'{ns}\n')

    def checkCounts(self, name):
        """Tracked PMDs never go back; under the manual clock, counts and the
        PMD files agree."""
        sess = self.path('sessions', name)
        with self.cfg.clockLock(exclusive=False):
            try:
                counts = pm.read(os.path.join(sess, 'counts'))
                pmdfiles = {}
                for (n, s, k) in [t for t in self.tracked if t[0] == name]:
                    pmdfiles[(s, k)] = int(pm.read(os.path.join(sess, f'sets/{s}/pmd{k}')))
            except OSError as e:
                if e.errno in (errno.ENOENT,):
                    self.forget(name)
                    return
                raise
        values = {}
        for line in counts.splitlines():
            f = dict(w.split('=', 1) for w in line.split())
            values[(int(f['set']), int(f['pmd']))] = int(f['value'])
        for (s, k), v in pmdfiles.items():
            if self.cfg.manual and (s, k) in values and values[(s, k)] != v:
                self.fail(f'{name}: counts says set {s} pmd {k} = {values[(s, k)]}, sets/{s}/pmd{k} says {v}')
            last = self.tracked.get((name, s, k))
            if last is not None and v < last:
                self.fail(f'{name}: set {s} pmd {k} went back from {last} to {v} without a write')
            self.tracked[(name, s, k)] = v

    # -- the loop

    def run(self):
        self.newTarget()
        try:
            for i in range(self.cfg.ops):
                name = self.rnd.choice(self.mine())
                r = self.rnd.random()
                if r < 0.08:
                    self.opMkdir(name)
                elif r < 0.12:
                    self.opRmdir(name)
                elif r < 0.55:
                    self.opWrite(name)
                elif r < 0.70:
                    self.opRead(name)
                elif r < 0.74:
                    self.opPoll(name)
                elif r < 0.77:
                    self.opRaceRmdir(name)
                elif r < 0.85:
                    self.opForeign()
                elif r < 0.93:
                    self.opAdvance()
                elif r < 0.96:
                    self.newTarget()
                    self.note('new target')
                else:
                    if name in self.held:
                        self.release(name)
                        self.note(f'close the last file of autoclose {name}')
                        pm.waitFor(lambda: not os.path.exists(self.path('sessions', name)), 5.0) or \
                            self.fail(f'autoclose {name} still there 5 s after its last file closed')
                        self.forget(name)
                if os.path.isdir(self.path('sessions', name)):
                    self.checkCounts(name)
                self.ops += 1
                if self.ops % 100 == 0:
                    self.progress()
        except Violation as v:
            self.report.append({'thread': self.prefix, 'violation': str(v), 'log': list(self.log)})
        except Exception as e:  # a bug of the fuzzer itself, or the mount gone
            self.report.append({'thread': self.prefix, 'violation': f'{type(e).__name__}: {e}', 'log': list(self.log)})
        finally:
            for name in self.mine():
                self.forget(name)
                try:
                    os.rmdir(self.path('sessions', name))
                except OSError:
                    pass
            if self.target is not None:
                self.target.kill()
                self.target.wait()


# ---- clients and the orchestrator ------------------------------------------------------

class Config:
    def __init__(self, args, mnt, tmp):
        self.mnt = mnt
        self.ops = args.ops
        self.manual = pm.SIM and not args.real_clock
        self.lock_path = os.path.join(tmp, 'clock.lock')
        self.autoclose_file = None

    class _Lock:
        def __init__(self, path, exclusive):
            self.path, self.exclusive = path, exclusive

        def __enter__(self):
            self.fd = os.open(self.path, os.O_RDONLY)
            fcntl.flock(self.fd, fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH)

        def __exit__(self, *exc):
            os.close(self.fd)  # releases the flock

    def clockLock(self, exclusive):
        return Config._Lock(self.lock_path, exclusive)


def clientMain(cfg, client, user, seed, threads, result_fd):
    """A client process: `threads` workers as `user`; writes its report."""
    if user != 'root':
        uid, gid = pm.userIds(user)
        os.setgroups(pm.userGroups(user))
        os.setgid(gid)
        os.setuid(uid)
    report = []
    workers = [Worker(cfg, client, t, random.Random(f'{seed}/{client}/{t}'), report) for t in range(threads)]
    ts = [threading.Thread(target=w.run) for w in workers]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    data = json.dumps({'ops': sum(w.ops for w in workers), 'violations': report}).encode()
    os.write(result_fd, data)
    os._exit(0)


def answers(mount):
    try:
        return pm.read(mount.path('version')).startswith('pfmfs')
    except OSError:  # ENOTCONN: the daemon is gone
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', default=str(int(time.time())))
    ap.add_argument('--ops', type=int, default=300, help='operations per thread')
    ap.add_argument('--clients', type=int, default=3)
    ap.add_argument('--threads', type=int, default=3)
    ap.add_argument('--rounds', type=int, default=1, help='generations of clients (each killed or finished)')
    ap.add_argument('--seconds', type=float, default=0, help='start new rounds until this much time has passed')
    ap.add_argument('--real-clock', action='store_true')
    ap.add_argument('--kill-every', type=float, default=2.0, help='seconds between SIGKILLs of a client (0: none)')
    ap.add_argument('--kills-per-round', type=int, default=1)
    args = ap.parse_args()
    pm.requireEnvironment()
    pm.ensureUsers()
    users = ['root', pm.TEST_USER, pm.TEST_USER2]
    mount = pm.Mount(manual_clock=not args.real_clock).start()
    failures = []
    total_ops = kills = rounds = 0
    live = {}  # pid -> (client, report pipe, autoclose journal)
    started = time.monotonic()
    try:
        work = os.path.join(mount.tmp, 'fuzz')  # every client's files: any user writes here
        os.mkdir(work)
        os.chmod(work, 0o1777)
        cfg = Config(args, mount.mnt, work)
        open(cfg.lock_path, 'w').close()
        os.chmod(cfg.lock_path, 0o644)
        rnd = random.Random(args.seed)
        next_client = 0
        while rounds < args.rounds or (args.seconds and time.monotonic() - started < args.seconds):
            rounds += 1
            live.clear()
            for c in range(args.clients):
                client = next_client
                next_client += 1
                cfg.autoclose_file = os.path.join(work, f'autoclose.{client}')
                open(cfg.autoclose_file, 'w').close()
                os.chmod(cfg.autoclose_file, 0o666)
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    os.setsid()  # its own group: SIGKILL reaches its targets too
                    try:
                        clientMain(cfg, client, users[client % len(users)], args.seed, args.threads, w)
                    finally:
                        os._exit(1)
                os.close(w)
                live[pid] = (client, r, cfg.autoclose_file)
            last_kill = time.monotonic()
            kills_this_round = 0
            while live:
                # The daemon answers, whatever the clients do.
                if not pm.waitFor(lambda: answers(mount), 5.0):
                    failures.append({'thread': 'orchestrator', 'violation': 'the daemon did not answer within 5 s',
                                     'log': []})
                    raise Violation('daemon')
                if mount.proc.poll() is not None:
                    failures.append({'thread': 'orchestrator', 'violation': f'pfmfsd exited: {mount.log()[-3000:]}',
                                     'log': []})
                    raise Violation('daemon')
                if (args.kill_every and kills_this_round < args.kills_per_round and
                        time.monotonic() - last_kill > args.kill_every and rnd.random() < 0.5):
                    pid = rnd.choice(list(live))
                    client, r, ac = live.pop(pid)
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    os.close(r)
                    kills += 1
                    kills_this_round += 1
                    last_kill = time.monotonic()
                    for t in range(args.threads):
                        try:
                            total_ops += int(open(f'{ac}.c{client}t{t}.ops').read())
                        except (OSError, ValueError):
                            pass
                    # Its autoclose sessions go with it (the kernel closes its files).
                    names = set()
                    for line in open(ac).read().split():
                        (names.add if line[0] == '+' else names.discard)(line[1:])
                    gone = lambda: not any(os.path.exists(mount.path('sessions', n)) for n in names)  # noqa: E731
                    if not pm.waitFor(gone, 5.0):
                        left = [n for n in names if os.path.exists(mount.path('sessions', n))]
                        failures.append({'thread': f'client {client}', 'violation':
                                         f'autoclose sessions {left} outlived their killed client by 5 s', 'log': []})
                    continue
                for pid in list(live):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if not done:
                        continue
                    client, r, _ = live.pop(pid)
                    data = b''
                    while True:
                        chunk = os.read(r, 1 << 20)
                        if not chunk:
                            break
                        data += chunk
                    os.close(r)
                    if not data:
                        failures.append({'thread': f'client {client}', 'violation': f'died with status {status}', 'log': []})
                        continue
                    rep = json.loads(data)
                    total_ops += rep['ops']
                    failures.extend(rep['violations'])
                time.sleep(0.05)
        # Nothing is left: every client removed its sessions or was killed
        # with autoclose ones only... the others are removed here, by root,
        # and must go.
        for n in os.listdir(mount.path('sessions')):
            try:
                os.rmdir(mount.path('sessions', n))
            except OSError as e:
                failures.append({'thread': 'orchestrator', 'violation': f'rmdir {n} at the end: {e}', 'log': []})
        if os.listdir(mount.path('sessions')):
            failures.append({'thread': 'orchestrator', 'violation': f'sessions left: {os.listdir(mount.path("sessions"))}',
                             'log': []})
    except Violation:
        pass
    finally:
        for pid in live:  # clients still running when the run stopped short
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        try:
            mount.close()
        except Exception as e:
            failures.append({'thread': 'orchestrator', 'violation': f'pfmfsd did not stop cleanly: {e}', 'log': []})
    log = mount.log()
    for marker in ('ERROR: AddressSanitizer', 'WARNING: ThreadSanitizer', 'runtime error:', 'ERROR: LeakSanitizer'):
        if marker in log:
            failures.append({'thread': 'pfmfsd', 'violation': f'sanitizer report in the daemon log:\n{log[-4000:]}',
                             'log': []})
            break
    took = time.monotonic() - started
    print(f'mount_fuzz: backend {pm.BACKEND}{" manual clock" if pm.SIM and not args.real_clock else ""}, seed {args.seed}: '
          f'{total_ops} operations by {args.clients} clients x {args.threads} threads x {rounds} rounds, '
          f'{kills} clients killed, {len(failures)} violations, {took:.1f} s')
    for f in failures:
        print(f'\nVIOLATION ({f["thread"]}): {f["violation"]}')
        if f['log']:
            print('  its last operations:\n    ' + '\n    '.join(f['log']))
    if failures:
        again = [a for i, a in enumerate(sys.argv[1:]) if a != '--seed' and (i == 0 or sys.argv[i] != '--seed')]
        print(f'\nreplay with: PFMFS_BACKEND={pm.BACKEND} {sys.argv[0]} --seed {args.seed} ' + ' '.join(again))
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
