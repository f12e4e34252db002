"""mount_fuzz.py's inputs and what it compares: the errno values pfmfs(5)
lists, valid, boundary and garbage values for every file, and the part of a
session a refused write must leave alone."""
import errno
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
import pfmfs_mount as pm  # noqa: E402

# errno values a user may see from the mount (pfmfs(5), ERRORS and the files).
ALLOWED = {errno.ENOENT, errno.EACCES, errno.EPERM, errno.EINVAL, errno.EBUSY, errno.ESRCH, errno.EEXIST,
           errno.ENOSPC, errno.EAGAIN, errno.ENOTEMPTY, errno.ENAMETOOLONG, errno.EISDIR, errno.ENOTDIR}
DENIED = {errno.EACCES, errno.EPERM, errno.ENOENT}  # another user's session


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
