#!/usr/bin/env python3
"""A state-machine fuzzer of a live mount: several clients at once (root and
the two test users, each a process of several threads) issue seeded random
sequences of real operations, and every reply and the sessions' files are
checked against what docs/pfmfs.5.md promises.

Each thread (fuzz_worker.py) owns a few sessions, which only it changes, and
a target process to load them on; it also attacks sessions of other clients
(another user's must refuse it), races opens against rmdir, blocks in reads
and epoll_wait on msg until a target's exit or an rmdir wakes them, and runs
libpfm-compat clients making random calls (libpfm_fuzz.c). After every
operation on one of its sessions it checks:
  - the reply is a value or an errno the docs list (fuzz_inputs.ALLOWED);
  - a refused write changed nothing of the session's configuration;
  - a counting PMD written with a plain value never goes backwards;
  - with the sim's manual clock, `counts` and `sets/N/pmdK` agree;
  - rmdir leaves nothing behind; a blocked reader is woken.
The orchestrator kills clients with SIGKILL mid-call (their autoclose and
libpfm sessions must go), checks that the daemon keeps answering, and at the
end that no session is left and the daemon's log has no sanitizer report.

  PFMFS_BACKEND=sim|perf python3 mount_fuzz.py [--seed S] [--ops N]
      [--clients C] [--threads T] [--real-clock] [--kill-every SEC]

A failing run prints its seed and each failing thread's last operations,
then shrinks the first failure: its thread's operations are replayed alone
on a fresh mount, and dropped while the failure stays (ddmin), and the
shortest sequence is printed with the line that replays it (--replay). A
failure that needs other clients' interleaving does not replay alone: the
seed is then what reproduces it, in a few runs. Shrinking stops after
--shrink-seconds or --shrink-replays, whichever comes first; with
--expect-shrunk (a test of the shrinking itself) only the replays count, so
that the result does not depend on the machine's speed.

Waits for what must happen (the daemon answers, a killed client's sessions
go, a blocked reader wakes) are bounded by pfmfs_mount.WAIT_S: a failure is
what never happens, not what is slow on a loaded machine.
"""
import argparse
import fcntl
import json
import os
import random
import re
import signal
import sys
import threading
import time

from fuzz_inputs import pm
from fuzz_worker import Worker

USERS = ['root', pm.TEST_USER, pm.TEST_USER2]  # client k runs as USERS[k % 3]


class Config:
    def __init__(self, args, mnt, tmp):
        self.mnt = mnt
        self.tmp = tmp
        self.ops = args.ops
        self.manual = pm.SIM and not args.real_clock
        self.plant = args.plant
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


def prepare(mount, args):
    """The scratch directory every client (any user) writes to."""
    work = os.path.join(mount.tmp, 'fuzz')
    os.mkdir(work)
    os.chmod(work, 0o1777)
    cfg = Config(args, mount.mnt, work)
    open(cfg.lock_path, 'w').close()
    os.chmod(cfg.lock_path, 0o644)
    return cfg


def clientMain(cfg, client, seed, threads, report_path, replay=None):
    """A client process: `threads` workers as the client's user, or one
    replaying (thread, op seeds); writes its report to report_path."""
    user = USERS[client % len(USERS)]
    if user != 'root':
        uid, gid = pm.userIds(user)
        os.setgroups(pm.userGroups(user))
        os.setgid(gid)
        os.setuid(uid)
    report = []
    if replay is None:
        workers = [Worker(cfg, client, t, random.Random(f'{seed}/{client}/{t}'), report) for t in range(threads)]
    else:
        workers = [Worker(cfg, client, replay[0], None, report, replay=replay[1])]
    ts = [threading.Thread(target=w.run) for w in workers]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # A file, not a pipe: a long run's report (every op seed of a failing
    # thread) would not fit a pipe's buffer before the parent reads it.
    with open(report_path, 'w') as f:
        json.dump({'ops': sum(w.ops for w in workers), 'violations': report}, f)
    os._exit(0)


def startClient(cfg, client, seed, threads, replay=None):
    """Forks a client in a process group of its own (a SIGKILL of the group
    takes its targets and libpfm processes too); returns (pid, report path,
    autoclose journal)."""
    cfg.autoclose_file = os.path.join(cfg.tmp, f'autoclose.{client}')
    open(cfg.autoclose_file, 'w').close()
    os.chmod(cfg.autoclose_file, 0o666)
    report = os.path.join(cfg.tmp, f'report.{client}.json')
    pid = os.fork()
    if pid == 0:
        os.setsid()
        try:
            clientMain(cfg, client, seed, threads, report, replay)
        finally:
            os._exit(1)
    return pid, report, cfg.autoclose_file


def readReport(path, client, status):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {'ops': 0, 'violations': [{'thread': f'client {client}', 'violation': f'died with status {status}',
                                          'log': []}]}


def answers(mount):
    try:
        return pm.read(mount.path('version')).startswith('pfmfs')
    except OSError:  # ENOTCONN: the daemon is gone
        return False


def journalNames(path):
    """What a killed client must take with it: the autoclose sessions it
    held (NAME) and its libpfm processes' sessions (PREFIX*)."""
    names = set()
    for line in open(path).read().split():
        (names.add if line[0] == '+' else names.discard)(line[1:])
    return names


def leftOf(mount, names):
    present = os.listdir(mount.path('sessions'))
    return [p for n in names for p in present if (p.startswith(n[:-1]) if n.endswith('*') else p == n)]


def fuzz(args, mount, cfg):
    """The rounds of clients; returns (failures, operations, kills, rounds)."""
    failures = []
    total_ops = kills = rounds = 0
    live = {}  # pid -> (client, report path, autoclose journal)
    rnd = random.Random(args.seed)
    started = time.monotonic()
    next_client = 0
    try:
        while (rounds < args.rounds or (args.seconds and time.monotonic() - started < args.seconds) or
               total_ops < args.total_ops):
            rounds += 1
            for _ in range(args.clients):
                pid, report, ac = startClient(cfg, next_client, args.seed, args.threads)
                live[pid] = (next_client, report, ac)
                next_client += 1
            last_kill = time.monotonic()
            kills_this_round = 0
            while live:
                # The daemon answers, whatever the clients do.
                if not pm.waitFor(lambda: answers(mount), pm.WAIT_S) or mount.proc.poll() is not None:
                    failures.append({'thread': 'orchestrator', 'log': [],
                                     'violation': f'the daemon did not answer within {pm.WAIT_S:.0f} s: '
                                                  f'{mount.log()[-3000:]}'})
                    return failures, total_ops, kills, rounds
                if (args.kill_every and kills_this_round < args.kills_per_round and
                        time.monotonic() - last_kill > args.kill_every and rnd.random() < 0.5):
                    pid = rnd.choice(list(live))
                    client, _, ac = live.pop(pid)
                    os.killpg(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    kills += 1
                    kills_this_round += 1
                    last_kill = time.monotonic()
                    for t in range(args.threads):
                        try:
                            total_ops += int(open(f'{ac}.c{client}t{t}.ops').read())
                        except (OSError, ValueError):
                            pass
                    # Its autoclose sessions go with it (the kernel closes its files).
                    names = journalNames(ac)
                    if not pm.waitFor(lambda: not leftOf(mount, names), pm.WAIT_S):
                        failures.append({'thread': f'client {client}', 'log': [], 'violation':
                                         f'sessions {leftOf(mount, names)} outlived their killed client by '
                                         f'{pm.WAIT_S:.0f} s'})
                    continue
                for pid in list(live):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if not done:
                        continue
                    client, report, _ = live.pop(pid)
                    rep = readReport(report, client, status)
                    total_ops += rep['ops']
                    failures.extend(rep['violations'])
                time.sleep(0.05)
        # Every client removed its sessions or was killed with autoclose
        # ones only: the others are removed here, by root, and must go.
        for n in os.listdir(mount.path('sessions')):
            try:
                os.rmdir(mount.path('sessions', n))
            except OSError as e:
                failures.append({'thread': 'orchestrator', 'violation': f'rmdir {n} at the end: {e}', 'log': []})
        if os.listdir(mount.path('sessions')):
            failures.append({'thread': 'orchestrator', 'log': [],
                             'violation': f'sessions left: {os.listdir(mount.path("sessions"))}'})
    finally:
        for pid in live:  # clients still running when the run stopped short
            try:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
    return failures, total_ops, kills, rounds


# ---- shrinking ------------------------------------------------------------------------

def kindOf(violation):
    """A failure's kind: its first words, numbers and names blurred, so that
    a shorter sequence counts only when it fails the same way."""
    return re.sub(r'c\d+t\d+s\d|pfm\.\d+\.\d+|\d+', '#', violation.split('\n')[0])[:50]


def replay(cfg, client, thread, seeds, timeout=300):
    """Runs one thread's op seeds alone; returns its violation, or None."""
    pid, report, _ = startClient(cfg, client, None, 1, (thread, seeds))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            rep = readReport(report, client, status)
            return rep['violations'][0] if rep['violations'] else None
        time.sleep(0.02)
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return {'violation': f'the replay did not finish in {timeout} s', 'log': []}


def shrink(cfg, failure, budget_s, max_replays):
    """ddmin over the failing thread's op seeds, for up to budget_s seconds
    and max_replays replays (0: no bound of that kind). Returns (seeds,
    violation of the shortest replay) or None when the failure does not
    replay alone."""
    client, thread = failure['client'], int(failure['thread'].split('t')[1])
    want = kindOf(failure['violation'])
    tries = 0

    def fails(seeds):
        nonlocal tries
        tries += 1
        v = replay(cfg, client, thread, seeds)
        return v if v is not None and kindOf(v['violation']) == want else None

    seeds = failure['seeds']
    best = fails(seeds) or fails(seeds)  # twice: the machine's timing may decide
    if best is None:
        return None
    deadline = time.monotonic() + budget_s

    def budgetLeft():
        return ((budget_s <= 0 or time.monotonic() < deadline) and
                (max_replays <= 0 or tries < max_replays))
    n = 2
    minimal = len(seeds) < 2
    while not minimal and budgetLeft():
        chunk = -(-len(seeds) // n)
        for i in range(0, len(seeds), chunk):
            if not budgetLeft():
                break
            rest = seeds[:i] + seeds[i + chunk:]
            v = fails(rest)
            if v is not None:
                seeds, best, n = rest, v, max(n - 1, 2)
                minimal = len(seeds) < 2
                break
        else:
            if n >= len(seeds):
                minimal = True  # no single operation can go
            n = min(2 * n, len(seeds))
    bounds = ' and '.join(b for b in (f'{budget_s:g} s' if budget_s > 0 else '',
                                      f'{max_replays} replays' if max_replays > 0 else '') if b)
    print(f'mount_fuzz: shrinking took {tries} replays; '
          f'{"1-minimal" if minimal else f"stopped by its budget ({bounds}) before it was 1-minimal"}')
    return seeds, best


def replaySpec(client, thread, seeds):
    return f'{client}:{thread}:' + ','.join(map(str, seeds))


def report(args, failures, cfg_factory):
    for f in failures:
        print(f'\nVIOLATION ({f["thread"]}): {f["violation"]}')
        if f['log']:
            print('  its last operations:\n    ' + '\n    '.join(f['log']))
    again = [a for i, a in enumerate(sys.argv[1:]) if a != '--seed' and (i == 0 or sys.argv[i] != '--seed')]
    print(f'\nreplay the run with: PFMFS_BACKEND={pm.BACKEND} {sys.argv[0]} --seed {args.seed} ' + ' '.join(again))
    first = next((f for f in failures if f.get('seeds')), None)
    if first is None or args.shrink_seconds <= 0:
        return None
    print(f'\nmount_fuzz: shrinking the failure of {first["thread"]} ({len(first["seeds"])} operations) alone '
          f'on a fresh mount...')
    # A test of the shrinking (--expect-shrunk) bounds it by replays only: a
    # slow machine takes longer, not fewer steps.
    budget_s = 0 if args.expect_shrunk is not None else args.shrink_seconds
    with cfg_factory() as cfg:
        got = shrink(cfg, first, budget_s, args.shrink_replays)
    if got is None:
        print('mount_fuzz: it does not fail alone (it needs the other clients): the seed above reproduces it')
        return None
    seeds, v = got
    print(f'\nSHORTEST SEQUENCE: {len(seeds)} operations (of {len(first["seeds"])}), as user '
          f'{USERS[first["client"] % len(USERS)]}:\n    ' + '\n    '.join(v['log']) +
          f'\n  failing with: {v["violation"]}\n  replay it with: PFMFS_BACKEND={pm.BACKEND} {sys.argv[0]}'
          f'{" --real-clock" if args.real_clock else ""}{" --plant" if args.plant else ""} --replay {replaySpec(first["client"], int(first["thread"].split("t")[1]), seeds)}')
    return seeds


class FreshMount:
    """A mount of its own for replays, closed after."""

    def __init__(self, args):
        self.args = args

    def __enter__(self):
        self.mount = pm.Mount(manual_clock=not self.args.real_clock).start()
        return prepare(self.mount, self.args)

    def __exit__(self, *exc):
        self.mount.close()


def sanitizerReport(log):
    for marker in ('ERROR: AddressSanitizer', 'WARNING: ThreadSanitizer', 'runtime error:', 'ERROR: LeakSanitizer'):
        if marker in log:
            return f'sanitizer report in the daemon log:\n{log[-4000:]}'
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--seed', default=str(int(time.time())))
    ap.add_argument('--ops', type=int, default=300, help='operations per thread')
    ap.add_argument('--clients', type=int, default=3)
    ap.add_argument('--threads', type=int, default=3)
    ap.add_argument('--rounds', type=int, default=1, help='generations of clients (each killed or finished)')
    ap.add_argument('--seconds', type=float, default=0, help='start new rounds until this much time has passed')
    ap.add_argument('--total-ops', type=int, default=0, help='start new rounds until this many operations ran')
    ap.add_argument('--real-clock', action='store_true')
    ap.add_argument('--kill-every', type=float, default=2.0, help='seconds between SIGKILLs of a client (0: none)')
    ap.add_argument('--kills-per-round', type=int, default=1)
    ap.add_argument('--shrink-seconds', type=float, default=300, help='time for shrinking a failure (0: none); '
                    'not with --expect-shrunk, which bounds it by --shrink-replays alone')
    ap.add_argument('--shrink-replays', type=int, default=1000, help='the most replays shrinking makes (0: no bound)')
    ap.add_argument('--replay', metavar='CLIENT:THREAD:SEEDS', help='replay one thread\'s op seeds alone')
    ap.add_argument('--plant', action='store_true', help='check a made-up rule that some sequences break')
    ap.add_argument('--expect-shrunk', type=int, metavar='N',
                    help='with --plant: succeed only if the planted failure is found and shrunk to N operations')
    args = ap.parse_args()
    pm.requireEnvironment()
    pm.ensureUsers()
    started = time.monotonic()
    if args.replay:
        client, thread, seeds = args.replay.split(':')
        with FreshMount(args) as cfg:
            v = replay(cfg, int(client), int(thread), [int(s) for s in seeds.split(',')])
        print('\n'.join(v['log']) + f'\nVIOLATION: {v["violation"]}' if v else 'mount_fuzz: the sequence ran clean')
        sys.exit(1 if v else 0)
    mount = pm.Mount(manual_clock=not args.real_clock).start()
    failures, total_ops, kills, rounds = [], 0, 0, 0
    try:
        cfg = prepare(mount, args)
        failures, total_ops, kills, rounds = fuzz(args, mount, cfg)
    finally:
        try:
            mount.close()
        except Exception as e:
            failures.append({'thread': 'orchestrator', 'violation': f'pfmfsd did not stop cleanly: {e}', 'log': []})
    san = sanitizerReport(mount.log())
    if san:
        failures.append({'thread': 'pfmfsd', 'violation': san, 'log': []})
    took = time.monotonic() - started
    print(f'mount_fuzz: backend {pm.BACKEND}{" manual clock" if cfg.manual else ""}, seed {args.seed}: '
          f'{total_ops} operations by {args.clients} clients x {args.threads} threads x {rounds} rounds, '
          f'{kills} clients killed, {len(failures)} violations, {took:.1f} s')
    shrunk = report(args, failures, lambda: FreshMount(args)) if failures else None
    if args.expect_shrunk is not None:
        planted = [f for f in failures if f['violation'].startswith('planted')]
        ok = len(planted) == len(failures) and planted and shrunk is not None and len(shrunk) == args.expect_shrunk
        print(f'mount_fuzz: planted failure {"found and shrunk to " + str(len(shrunk)) if shrunk else "not shrunk"}; '
              f'{"as expected" if ok else f"expected {args.expect_shrunk} operations"}')
        sys.exit(0 if ok else 1)
    sys.exit(1 if failures else 0)


if __name__ == '__main__':
    main()
