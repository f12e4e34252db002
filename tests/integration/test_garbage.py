#!/usr/bin/env python3
# Garbage writes through the mount: every writable file fed malformed input.
# Each write fails with its errno, leaves a new printable reason in `error`
# (naming the offending word where there is one), and changes nothing: every
# readable file of the session is byte-identical before and after.
import errno

import pfmfs_mount
from pfmfs_mount import INTEL, PMU, PRINTABLE, SIM, MountTestCase, neg

EINVAL = errno.EINVAL
A, B = PMU.pmc_a, PMU.pmc_b  # PMC values that count at user level
A_INT = int(A, 16)
A_NAME = PMU.event_a[0]
A_CODE = f'{PMU.event_a[1]:#x}'  # counts at no privilege level
LAST = PMU.last_pmd
FIRST = PMU.far(1000)  # pmd0's notification: beyond what the active test drives
if INTEL:  # sim and x86
    THIRD_PMC, THIRD_VALUE = 16, '0x222'  # the three fixed counters
    # (file, text, errno, word) of a reserved bit in the low 32 bits
    LOW_RESERVED = [('sets/0/pmc16', '0x1000\n', EINVAL, 'reserved')]
    LOW_RESERVED_ACTIVE = [('sets/0/pmc16', '0x10000\n', EINVAL, 'reserved')]
else:
    THIRD_PMC, THIRD_VALUE = PMU.pmcs[-1], PMU.pmc(('CONTEXT_SWITCHES', 0x3))
    LOW_RESERVED = [(f'sets/0/pmc{THIRD_PMC}', f'{A_INT | 0x100:#x}\n', EINVAL, 'reserved')]  # a umask
    LOW_RESERVED_ACTIVE = [(f'sets/0/pmc{THIRD_PMC}', f'{A_INT | 1 << 21:#x}\n', EINVAL, 'reserved')]

# (file relative to the session or 'advance', text, errno, a word the reason must contain)
UNLOADED_CASES = [
    ('mode', 'threads\n', EINVAL, 'threads'),
    ('mode', 'THREAD\n', EINVAL, None),
    ('mode', 'system thread\n', EINVAL, None),
    ('mode', '1\n', EINVAL, None),
    ('mode', '\n', EINVAL, None),
    ('mode', 'thread\nsystem\n', EINVAL, None),
    ('flags', 'bogusflag\n', EINVAL, 'bogusflag'),
    ('flags', 'autoclose bogusflag\n', EINVAL, 'bogusflag'),
    ('flags', 'NO_MSG\n', EINVAL, None),
    ('flags', 'autoclose=1\n', EINVAL, None),
    ('flags', 'notify_blocks\n', EINVAL, 'notify_blocks'),
    ('ctl', 'frobnicate\n', EINVAL, 'frobnicate'),
    ('ctl', 'load\n', EINVAL, None),
    ('ctl', 'load abc\n', EINVAL, 'abc'),
    ('ctl', 'load -5\n', EINVAL, None),
    ('ctl', 'load 12 13\n', EINVAL, None),
    ('ctl', 'load 12 set=\n', EINVAL, None),
    ('ctl', 'load 12 set=abc\n', EINVAL, None),
    ('ctl', 'load 12 set=70001\n', EINVAL, None),
    ('ctl', 'load 99999999999999999999\n', EINVAL, None),
    ('ctl', 'start abc\n', EINVAL, None),
    ('ctl', 'stop now\n', EINVAL, None),
    ('ctl', 'restart 1\n', EINVAL, None),
    ('ctl', 'unload x\n', EINVAL, None),
    ('ctl', 'unload\nload 12\n', EINVAL, None),
    ('ctl', 'LOAD 12\n', EINVAL, None),
    ('sets/0/pmc0', 'bogus\n', EINVAL, 'bogus'),
    ('sets/0/pmc0', f'{A} junk\n', EINVAL, 'junk'),
    ('sets/0/pmc0', f'{A_INT | PMU.reserved:#x}\n', EINVAL, 'reserved'),
    ('sets/0/pmc0', f'{A_CODE}\n', EINVAL, None),  # counts at no privilege level
    ('sets/0/pmc1', f'{A_NAME}:x\n', EINVAL, None),
    ('sets/0/pmc1', 'NO_SUCH_EVENT\n', EINVAL, 'NO_SUCH_EVENT'),
    ('sets/0/pmc1', '0x\n', EINVAL, None),
    ('sets/0/pmc1', '0x1ffffffffffffffff\n', EINVAL, None),
    ('sets/0/pmc1', '18446744073709551616\n', EINVAL, None),
    *LOW_RESERVED,
    ('sets/0/pmc0', f'{A} no_emul\n', EINVAL, 'no_emul'),
    ('sets/1/pmc2', '--1\n', EINVAL, None),
    ('sets/0/pmd0', 'abc\n', EINVAL, 'abc'),
    ('sets/0/pmd0', '5 long_reset=\n', EINVAL, None),
    ('sets/0/pmd0', '5 long_reset=x\n', EINVAL, None),
    ('sets/0/pmd0', '5 bogusattr\n', EINVAL, 'bogusattr'),
    ('sets/0/pmd0', 'notify\n', EINVAL, None),
    ('sets/0/pmd0', '5 long_reset=1 long_reset=2\n', EINVAL, None),
    ('sets/0/pmd0', '+5\n', EINVAL, None),
    ('sets/0/pmd0', '5 6\n', EINVAL, None),
    ('sets/0/pmd0', '5 reset_pmds=99\n', EINVAL, None),
    ('sets/0/pmd0', '5 reset_pmds=\n', EINVAL, None),
    ('sets/0/pmd0', '-18446744073709551617\n', EINVAL, None),
    ('sets/0/pmd1', '0x-5\n', EINVAL, None),
    (f'sets/1/pmd{LAST}', '\x01\x02\x7f\n', EINVAL, None),
    ('sets/0/regs', f'pmc0 {A}\npmd0 bogus\n', EINVAL, None),  # the last line is bad: nothing applied
    ('sets/0/regs', 'pmc99 0x1\n', EINVAL, None),
    ('sets/0/regs', 'foo 1\n', EINVAL, None),
    ('sets/0/regs', f'pmc1 {B}\npmc1 {B}\n', EINVAL, None),
    ('sets/0/regs', 'pmd1\n', EINVAL, None),
    ('sets/0/regs', '\n\n', EINVAL, None),
    ('sets/1/regs', f'pmc1 {A}\npmd1 7\npmc2 0x100000000\n', EINVAL, None),
    ('sets/0/switch', 'time 0\n', EINVAL, None),
    ('sets/0/switch', 'time\n', EINVAL, None),
    ('sets/0/switch', 'time abc\n', EINVAL, None),
    ('sets/0/switch', 'sometimes\n', EINVAL, 'sometimes'),
    ('sets/0/switch', 'ovfl 3\n', EINVAL, None),
    ('sets/0/switch', 'none x\n', EINVAL, None),
    ('sets/1/switch', 'TIME 100\n', EINVAL, None),
    ('smpl_fmt', 'pebs buf_size=4096\n', EINVAL, 'pebs'),
    ('smpl_fmt', 'default buf_size=4k\n', EINVAL, 'buf_size'),
    ('smpl_fmt', 'default buf_size=4096 bufsize=1\n', EINVAL, 'bufsize'),
    ('smpl_fmt', 'default\n', EINVAL, 'buf_size'),
    ('smpl_fmt', 'default buf_size=4096 buf_flags=1\n', EINVAL, 'buf_flags'),
    ('smpl_fmt', 'NONE\n', EINVAL, 'NONE'),
    ('smpl_fmt', '\n', EINVAL, None),
]
if SIM:  # pmu/sim/advance
    UNLOADED_CASES += [
        ('advance', 'abc\n', EINVAL, None),
        ('advance', '-5\n', EINVAL, None),
        ('advance', '1 2\n', EINVAL, None),
        ('advance', '0x\n', EINVAL, None),
    ]

# While the session counts: registers, ctl and the sim's clock (mode, flags
# and switch are EBUSY while loaded, see test_ctl).
ACTIVE_CASES = [
    ('ctl', 'frobnicate\n', EINVAL, 'frobnicate'),
    ('ctl', 'start 1 2\n', EINVAL, None),
    ('ctl', 'stop stop\n', EINVAL, None),
    ('ctl', 'start\nstop\n', EINVAL, None),
    ('sets/0/pmc0', 'NO_SUCH_EVENT\n', EINVAL, 'NO_SUCH_EVENT'),
    ('sets/0/pmc0', f'{A_INT | 0xffffffff00000000:#x}\n', EINVAL, 'reserved'),
    ('sets/0/pmc0', f'{A_CODE}\n', EINVAL, None),
    *LOW_RESERVED_ACTIVE,
    ('sets/0/pmd0', 'x5\n', EINVAL, None),
    ('sets/0/pmd0', '5 notify=2\n', EINVAL, None),
    ('sets/0/pmd0', '5 switch_cnt=\n', EINVAL, None),
    ('sets/1/pmd1', '5 smpl_pmds=1,,2\n', EINVAL, None),
    ('sets/0/regs', f'pmc1 {B}\npmd1 1\npmd0 5 bogus\n', EINVAL, 'bogus'),
    ('sets/1/regs', f'pmd1 7\npmc0 {A} extra\n', EINVAL, None),
]
if SIM:
    ACTIVE_CASES += [
        ('advance', 'ten\n', EINVAL, None),
        ('advance', '100ns\n', EINVAL, None),
    ]


class GarbageTest(MountTestCase):

    def prepare(self):
        """A session with two programmed sets, a switch policy and a flag."""
        s = self.newSession()
        s.mkset(1)
        s.pmc(0, A)
        s.pmc(THIRD_PMC, THIRD_VALUE)
        s.pmd(0, f'-{FIRST} long_reset=-2000 notify')
        s.pmc(1, B, 1)
        s.pmd(1, '77', 1)
        s.write('sets/1/switch', 'ovfl\n')
        s.write('flags', 'no_msg\n')
        return s

    def feed(self, s, cases):
        for rel, text, err, word in cases:
            with self.subTest(file=rel, text=text):
                path = self.m.path('pmu/sim/advance') if rel == 'advance' else s.path(rel)
                marker = self._markError(s, 'ctl', '')
                before = s.snapshot()
                self.assertErrno(err, pfmfs_mount.write, path, text)
                after = s.snapshot()
                for f in before:
                    self.assertEqual(after[f], before[f], f'{f} changed')
                if rel == 'advance':
                    continue  # not a session's file: its error stays
                reason = s.error()
                self.assertTrue(reason.strip(), 'no reason in error')
                self.assertNotEqual(reason, marker, 'error still holds the previous reason')
                self.assertRegex(reason, PRINTABLE)
                if word is not None:
                    self.assertIn(word.lower(), reason.lower())

    def test_garbage_while_unloaded(self):
        s = self.prepare()
        self.feed(s, UNLOADED_CASES)
        self.assertEqual(s.read('flags'), 'no_msg\n')
        self.assertEqual(s.read('sets/0/regs').splitlines()[:2], [f'pmc0 {A}', f'pmc{THIRD_PMC} {THIRD_VALUE}'])

    def test_garbage_while_active(self):
        s = self.prepare()
        w = self.worker()
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(300)  # sim: 100 ns
        self.feed(s, ACTIVE_CASES)
        if SIM:
            self.assertEqual(s.readPmd(17), 300)
        elif INTEL:  # x86: fixed counter 1 counts cycles, as pmd0 does
            d.check(s.readPmd(17))
        d.check(s.readPmd(0), start=neg(FIRST))
        self.assertEqual(s.state().split()[0], 'state=active')

    def test_there_are_enough_cases(self):
        distinct = {(rel, text) for rel, text, _, _ in UNLOADED_CASES + ACTIVE_CASES}
        self.assertGreaterEqual(len(distinct), 40)
        kinds = {rel.split('/')[-1].rstrip('0123456789') for rel, _, _, _ in UNLOADED_CASES}
        expected = ({'mode', 'flags', 'ctl', 'pmc', 'pmd', 'regs', 'switch', 'smpl_fmt'}
                    | ({'advance'} if SIM else set()))
        self.assertEqual(kinds, expected)

    def test_huge_and_binary_garbage(self):
        s = self.prepare()
        before = s.snapshot()
        for rel, text in (('ctl', 'x' * 100_000), ('sets/0/pmc0', '\x00' * 10), ('sets/0/regs', 'pmc0 ' * 20_000),
                          ('flags', '\xff\xfe'.encode('latin-1')), ('sets/0/pmd0', b'5\x00notify'),
                          ('smpl_fmt', b'def\x01ault buf_size=4096'), ('smpl_fmt', b'\xff\xfe buf_size=4096')):
            with self.subTest(file=rel, size=len(text)):
                self.assertErrno(EINVAL, pfmfs_mount.write, s.path(rel), text)
                reason = s.error()
                self.assertRegex(reason, PRINTABLE)  # control and non-ASCII bytes made printable
                self.assertLess(len(reason), 4096)  # a reason, not an echo of the input
                self.assertEqual(s.snapshot(), before)

    def test_a_good_write_after_garbage_works(self):
        s = self.prepare()
        self.assertErrno(EINVAL, s.write, 'sets/0/pmc0', 'bogus\n')
        s.pmc(0, B)
        self.assertEqual(s.read('sets/0/pmc0'), f'{B}\n')
        self.assertErrno(EINVAL, s.write, 'sets/0/regs', f'pmc1 {A}\npmd1 x\n')
        s.write('sets/0/regs', f'pmc1 {A}\npmd1 9\n')
        self.assertEqual(s.read('sets/0/pmc1'), f'{A}\n')
        self.assertEqual(s.readPmd(1), 9)


if __name__ == '__main__':
    pfmfs_mount.main()
