"""One client thread of mount_fuzz.py: its operations on a live mount and
the checks after each (the module docstring of mount_fuzz.py lists them).

Every operation draws its choices from a generator seeded for it alone (its
*op seed*), so a thread's run is a list of op seeds: the same list replayed
on a fresh mount makes the same choices, and a shorter list makes the same
choices for the operations it keeps. That is what lets mount_fuzz.py shrink a
failing run to the shortest sequence that still fails.
"""
import errno
import os
import random
import select
import signal
import subprocess
import threading

from fuzz_inputs import (ALLOWED, DENIED, EVENTS_PERF, EVENTS_SIM, GARBAGE, Stale, Violation, pm, pmcValue,
                         pmdValue, snapshot)

LOG_TAIL = 40
SESSIONS_PER_THREAD = 3
# A blocked reader must be woken by what wakes it (milliseconds); the bound
# is for one never woken, not a measure of speed on a loaded machine.
WAKE_S = pm.WAIT_S


class Worker:
    """replay: the op seeds to run instead of drawing cfg.ops of them from
    `seeds` (a replay keeps every line of its log, for the shrunk report)."""

    def __init__(self, cfg, client, thread, seeds, report, replay=None):
        self.cfg = cfg
        self.client = client
        self.seeds = seeds
        self.replay = replay
        self.rnd = None  # the current operation's generator
        self.history = []  # the op seeds run so far
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
        if len(self.log) > LOG_TAIL and self.replay is None:
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
            rel, text = 'mode', rnd.choice(['thread', 'system', 'cgroup', rnd.choice(GARBAGE)])
        elif kind == 'ctl':
            tid = rnd.choice([self.target.pid, self.target.pid, 1, 999999999, -1, 0])
            # Control groups (mode cgroup): the hierarchy's root, a relative
            # path below it, and paths that are refused.
            group = rnd.choice(['/sys/fs/cgroup', '/sys/fs/cgroup/unified', 'init.scope', '.', '..', '/tmp',
                                'no-such-group', '/sys/fs/cgroup/unified/cgroup.procs'])
            rel, text = 'ctl', rnd.choice([f'load {tid}', f'load {tid} set={rnd.choice([0, 1, 9])}', f'load {group}',
                                           f'load {group} set=1', 'start', 'start 1', 'stop', 'restart', 'unload',
                                           'unload', rnd.choice(GARBAGE)])
        elif kind == 'mkset':
            new = rnd.randrange(6)
            self.call(f'mkset {name}/{new}', os.mkdir, os.path.join(sess, 'sets', str(new)))
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

    def opBlockedRead(self, name):
        """A read of msg that blocks, an epoll_wait (edge-triggered), or both
        at once, then what must wake them: the target's exit (its end
        message) when the session is loaded on it, else the session's rmdir
        (the read: end of file; epoll: POLLIN|POLLHUP, for good). With both
        waiting, the reader may take the end message before epoll looks, as
        with any file two consumers wait on: then the record is in the read."""
        sess = self.path('sessions', name)
        try:
            state = pm.read(os.path.join(sess, 'state'))
            fd = os.open(os.path.join(sess, 'msg'), os.O_RDONLY)
        except OSError as e:
            self.note(f'blocked read of {name}: {errno.errorcode.get(e.errno)} before it')
            return
        on_target = f'target={self.target.pid} ' in state + ' '
        waiters = self.rnd.choice(['read', 'epoll', 'read+epoll'])
        got = {}

        def reader():
            try:
                got['data'] = os.read(fd, 64 * 4)
            except OSError as e:
                got['errno'] = e.errno

        # The epoll set also holds a pipe, written at the end: it releases an
        # epoll_wait that nothing needed to wake (below) without a timeout.
        release_r, release_w = os.pipe()

        def poller(ep):
            got['events'] = ep.poll()

        threads = {}
        ep = None
        if 'read' in waiters:
            threads['read'] = threading.Thread(target=reader, daemon=True)
        if 'epoll' in waiters:
            ep = select.epoll()
            ep.register(fd, select.EPOLLIN | select.EPOLLET)
            ep.register(release_r, select.EPOLLIN)
            threads['epoll_wait'] = threading.Thread(target=poller, args=(ep,), daemon=True)
        try:
            for t in threads.values():
                t.start()
            pm.waitFor(lambda: False, self.rnd.choice([0, 0.01, 0.05]))  # let them block, or not
            if on_target and self.rnd.random() < 0.7:
                action = 'the target exits'
                self.newTarget()
            else:
                action = 'rmdir'
                ok, err = self.call(f'rmdir {name} (a {waiters} of msg waiting)', os.rmdir, sess)
                if ok or err == errno.ENOENT:  # ENOENT: gone already (autoclose), as good
                    self.forget(name)
                else:
                    self.fail(f'rmdir of {name} by its owner refused ({errno.errorcode.get(err)}): pfmfs(5) says '
                              f'it destroys a session in any state')
            self.note(f'{waiters} of {name}/msg waiting; {action}')
            if 'read' in threads:
                threads['read'].join(WAKE_S)
            # The reader may take the end message before epoll looks, as with
            # any file two consumers wait on: then epoll_wait need not wake.
            excused = action != 'rmdir' and got.get('data')
            if 'epoll_wait' in threads and not excused:
                threads['epoll_wait'].join(WAKE_S)
            stuck = [w for w, t in threads.items() if t.is_alive() and not (w == 'epoll_wait' and excused)]
            if stuck:
                self.fail(f'a waiting {stuck[0]} on {name}/msg was not woken {WAKE_S:.0f} s after: {action}')
            if 'errno' in got:
                self.fail(f'a blocked read of {name}/msg failed with errno {got["errno"]}')
            data = got.get('data')
            if data is not None and len(data) % 64:
                self.fail(f'a blocked read of {name}/msg gave {len(data)} bytes, not whole records')
            if data == b'' and action != 'rmdir' and os.path.isdir(sess):
                self.fail(f'a blocked read of {name}/msg returned end of file, and the session still exists')
            events = 0
            for efd, ev in got.get('events', []):
                events |= ev if efd == fd else 0
            if action == 'rmdir' and ep is not None and not events & (select.EPOLLIN | select.EPOLLHUP):
                self.fail(f'epoll_wait on {name}/msg reported {got["events"]} after the rmdir')
        finally:
            os.write(release_w, b'x')
            if 'epoll_wait' in threads:
                threads['epoll_wait'].join(WAKE_S)
            if ep is not None:
                ep.close()
            os.close(release_r)
            os.close(release_w)
            os.close(fd)

    def opLibpfm(self):
        """A libpfm-compat client (libpfm_fuzz.c) making 40 seeded random
        calls, as this thread's user, on this thread's target; its contexts
        must go with it."""
        exe = os.environ.get('PFMFS_LIBPFM_FUZZ')
        if not exe:
            return
        seed = self.rnd.getrandbits(32)
        env = dict(os.environ, PFMFS_MOUNT=self.cfg.mnt)
        p = subprocess.Popen([exe, str(seed), '40', str(self.target.pid)], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.journal('+', f'pfm.{p.pid}.*')  # a kill of this client must take them too
        try:
            _, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail(f'libpfm_fuzz {seed} did not finish 40 calls in 60 s (replay: PFMFS_MOUNT=MNT {exe} {seed} 40 PID)')
        self.note(f'libpfm_fuzz {seed} 40 calls -> exit {p.returncode}')
        if p.returncode < 0:
            self.fail(f'libpfm_fuzz {seed} was killed by {signal.Signals(-p.returncode).name}: '
                      f'{err.decode(errors="replace")[-3000:]}')
        if p.returncode != 0:
            self.fail(err.decode(errors='replace')[-6000:])
        prefix = f'pfm.{p.pid}.'

        def gone():
            return not any(n.startswith(prefix) for n in os.listdir(self.path('sessions')))
        if not pm.waitFor(gone, pm.WAIT_S):
            self.fail(f'sessions {prefix}* outlived their libpfm process by {pm.WAIT_S:.0f} s')
        self.journal('-', f'pfm.{p.pid}.*')

    def checkPlanted(self, name):
        """--plant: a made-up rule ("no session in system mode has a set 3")
        that a few operations break, to prove the shrinking on a known
        answer: the shortest sequence is mkdir, mode system, mkdir sets/3."""
        sess = self.path('sessions', name)
        try:
            if pm.read(os.path.join(sess, 'mode')).strip() == 'system' and os.path.isdir(os.path.join(sess, 'sets/3')):
                self.fail(f'planted: {name} is in system mode with a set 3')
        except OSError:
            pass

    def checkCounts(self, name):
        """Tracked PMDs never go back; `counts` computes `scaled` from its
        own fields; under the manual clock, `counts`, `sets/N/pmds` and the
        PMD files give the same values, and `running_ns` is the set's
        `info` duration_ns."""
        sess = self.path('sessions', name)
        tracked = [(s, k) for (n, s, k) in self.tracked if n == name]
        with self.cfg.clockLock(exclusive=False):
            try:
                counts = pm.read(os.path.join(sess, 'counts'))
                pmdfiles = {(s, k): int(pm.read(os.path.join(sess, f'sets/{s}/pmd{k}'))) for s, k in tracked}
                sets = {s for s, _ in tracked}
                pmds = {s: pm.read(os.path.join(sess, f'sets/{s}/pmds')) for s in sets}
                infos = {s: pm.read(os.path.join(sess, f'sets/{s}/info')) for s in sets}
            except OSError as e:
                if e.errno in (errno.ENOENT,):
                    self.forget(name)
                    return
                raise

        def fields(line):
            return dict(w.split('=', 1) for w in line.split())
        values, running = {}, {}
        for line in counts.splitlines():
            f = fields(line)
            key = (int(f['set']), int(f['pmd']))
            values[key], running[key] = int(f['value']), int(f['running_ns'])
            v, en, run = int(f['value']), int(f['enabled_ns']), int(f['running_ns'])
            if f['scaled'] != ('-' if run == 0 else str(v * en // run)):
                self.fail(f'{name}: counts line "{line}" has scaled={f["scaled"]}, not value x enabled_ns / running_ns')
        listed = {(s, int(fields(line)['pmd'])): int(fields(line)['value'])
                  for s, text in pmds.items() for line in text.splitlines()}
        for (s, k), v in pmdfiles.items():
            if self.cfg.manual:
                if (s, k) in values and values[(s, k)] != v:
                    self.fail(f'{name}: counts says set {s} pmd {k} = {values[(s, k)]}, sets/{s}/pmd{k} says {v}')
                if (s, k) in listed and listed[(s, k)] != v:
                    self.fail(f'{name}: sets/{s}/pmds says pmd {k} = {listed[(s, k)]}, sets/{s}/pmd{k} says {v}')
                duration = int(fields(infos[s])['duration_ns'])
                if (s, k) in running and running[(s, k)] != duration:
                    self.fail(f'{name}: counts says set {s} ran {running[(s, k)]} ns, sets/{s}/info {duration} ns')
            last = self.tracked.get((name, s, k))
            if last is not None and v < last:
                self.fail(f'{name}: set {s} pmd {k} went back from {last} to {v} without a write')
            self.tracked[(name, s, k)] = v

    # -- the loop

    def failed(self, what):
        self.report.append({'thread': self.prefix, 'client': self.client, 'uid': self.uid, 'violation': what,
                            'log': list(self.log), 'seeds': list(self.history)})

    def step(self, opseed):
        """One operation, all of whose choices come from opseed."""
        self.rnd = random.Random(opseed)
        self.history.append(opseed)
        name = self.rnd.choice(self.mine())
        r = self.rnd.random()
        if r < 0.08:
            self.opMkdir(name)
        elif r < 0.12:
            self.opRmdir(name)
        elif r < 0.50:
            self.opWrite(name)
        elif r < 0.64:
            self.opRead(name)
        elif r < 0.67:
            self.opPoll(name)
        elif r < 0.70:
            self.opBlockedRead(name)
        elif r < 0.73:
            self.opRaceRmdir(name)
        elif r < 0.80:
            self.opForeign()
        elif r < 0.88:
            self.opAdvance()
        elif r < 0.91:
            self.opLibpfm()
        elif r < 0.94:
            self.newTarget()
            self.note('new target')
        elif name in self.held:
            self.release(name)
            self.note(f'close the last file of autoclose {name}')
            pm.waitFor(lambda: not os.path.exists(self.path('sessions', name)), pm.WAIT_S) or \
                self.fail(f'autoclose {name} still there {pm.WAIT_S:.0f} s after its last file closed')
            self.forget(name)
        if self.cfg.plant:
            self.checkPlanted(name)
        if os.path.isdir(self.path('sessions', name)):
            self.checkCounts(name)

    def run(self):
        self.newTarget()
        try:
            plan = self.replay if self.replay is not None else (self.seeds.getrandbits(32) for _ in range(self.cfg.ops))
            for opseed in plan:
                self.step(opseed)
                self.ops += 1
                if self.ops % 100 == 0:
                    self.progress()
        except Violation as v:
            self.failed(str(v))
        except Exception as e:  # a bug of the fuzzer itself, or the mount gone
            self.failed(f'{type(e).__name__}: {e}')
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
