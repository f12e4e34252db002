#!/usr/bin/env python3
# Sampling through the mount (pfmfs(5), SAMPLING): smpl_fmt read back and
# every refusal with its reason in `error`, smpl_buf's binary layout and
# `samples`' lines, exact on the sim's manual clock (every field of every
# entry, a buffer that fills, masks and notifies, and the restart that
# empties it), `state`'s smpl_count= and smpl_overflows=, the owner's limit
# (--max-smpl-bytes-per-user) and that the files are the owner's alone.
import errno
import os
import re
import struct

import pfmfs_mount
from pfmfs_mount import (PMU, TEST_USER, TEST_USER2, MountTestCase, attempt, exactEvents, neg, onlineCpus, ovflLine,
                         parseKv, runAs, simIp, simOnly, stateLine, waitFor, X86)
from test_fastpath import askAndClose

# pfm_dfl_smpl_hdr_t and pfm_dfl_smpl_entry_t (<perfmon/perfmon_dfl_smpl.h>).
HDR = struct.Struct('<QQQQQII80s')
ENTRY = struct.Struct('<IHHQQQHHI')
assert HDR.size == 128 and ENTRY.size == 40

VERSION = 0x10000
# The room the largest entry needs (every PMD of the PMU recorded), and the
# least buf_size the default format takes: the header and one such entry.
MIN_SPACE = ENTRY.size + 8 * len(PMU.pmds)
MIN_SIZE = HDR.size + MIN_SPACE

# The sim's events (SIM_PMU.events): cycles 3/ns, instructions 2/ns, at user level.
CYCLES = '0x1003c'
INSTRUCTIONS = '0x100c0'


def withSampling(line, count, overflows):
    """A state line with the keys a sampling format adds at its end."""
    return line[:-1] + f' smpl_count={count} smpl_overflows={overflows}\n'


def sampleLine(k, pid, t, pmd1, last_reset=neg(300), set_id=0, eventid=0):
    """A `samples` line of pmd0 on sim at target time t, recording pmd1."""
    return (f'sample={k} set={set_id} pmd=0 tid={pid} pid={pid} cpu=0 ip={simIp(t):#x} tstamp={t} '
            f'last_reset={last_reset} eventid={eventid} pmd1={pmd1}\n')


class SmplFmtTest(MountTestCase):
    """smpl_fmt on every backend: what a write leaves, and what it refuses."""

    def test_new_session_has_none(self):
        s = self.newSession()
        self.assertEqual(s.read('smpl_fmt'), 'none\n')
        self.assertEqual(pfmfs_mount.readBytes(s.path('smpl_buf')), b'')
        self.assertEqual(s.read('samples'), '')
        self.assertEqual(s.state(), stateLine())

    def test_round_trip(self):
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=65536\n')
        self.assertEqual(s.read('smpl_fmt'), 'default buf_size=65536 buf_flags=0\n')
        self.assertEqual(s.state(), withSampling(stateLine(), 0, 0))
        # Numbers as in NUMBERS AND TEXT, blanks around words, keys in any order.
        s.write('smpl_fmt', f'  default\tbuf_flags=0x0   buf_size={MIN_SIZE:#x} \n')
        self.assertEqual(s.read('smpl_fmt'), f'default buf_size={MIN_SIZE} buf_flags=0\n')
        # A read writes back to itself.
        s.write('smpl_fmt', s.read('smpl_fmt'))
        self.assertEqual(s.read('smpl_fmt'), f'default buf_size={MIN_SIZE} buf_flags=0\n')
        # An empty buffer of buf_size bytes: the header alone says something.
        data = pfmfs_mount.readBytes(s.path('smpl_buf'))
        self.assertEqual(len(data), MIN_SIZE)
        self.assertEqual(HDR.unpack_from(data), (0, HDR.size, 0, MIN_SIZE, MIN_SPACE, VERSION, 0, bytes(80)))
        self.assertEqual(data[HDR.size:], bytes(MIN_SIZE - HDR.size))
        self.assertEqual(s.read('samples'), '')
        # none frees it.
        s.write('smpl_fmt', 'none\n')
        self.assertEqual(s.read('smpl_fmt'), 'none\n')
        self.assertEqual(pfmfs_mount.readBytes(s.path('smpl_buf')), b'')
        self.assertEqual(s.state(), stateLine())
        s.write('smpl_fmt', 'none')  # and again: nothing to free
        self.assertEqual(s.read('smpl_fmt'), 'none\n')
        self.assertEqual(s.error(), '')

    def test_refusals_are_einval_with_a_reason(self):
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=8192\n')
        files = ('state', 'smpl_fmt')
        reason = self.assertRefused(s, errno.EINVAL, 'smpl_fmt', 'pebs buf_size=8192\n', files)
        self.assertIn("no sampling format 'pebs': the formats are: default", reason)
        reason = self.assertRefused(s, errno.EINVAL, 'smpl_fmt', f'default buf_size={MIN_SIZE - 1}\n', files)
        self.assertIn('too small', reason)
        self.assertIn(str(MIN_SIZE), reason)
        reason = self.assertRefused(s, errno.EINVAL, 'smpl_fmt', 'default buf_size=8192 buf_flags=1\n', files)
        self.assertIn('no flags', reason)
        malformed = {
            'default buf_size=12x\n': 'buf_size',
            'default buf_size=\n': 'buf_size needs a value',
            'default buf_size\n': 'buf_size needs a value',
            'default buf_size=-8192\n': 'must not be negative',
            'default buf_size=+8192\n': 'buf_size',
            'default buf_size=18446744073709551616\n': 'buf_size',
            'default buf_size=8192 buf_flags=0x100000000\n': 'over 32 bits',
            'default\n': 'needs buf_size=N',
            'default buf_flags=0\n': 'needs buf_size=N',
            'default buf_size=8192 buf_size=8192\n': 'buf_size given twice',
            'default buf_size=8192 buf_flags=0 buf_flags=0\n': 'buf_flags given twice',
            'default size=8192\n': "unknown argument 'size=8192'",
            'default buf_size=8192 notify\n': "unknown argument 'notify'",
            'buf_size=8192\n': 'the format must come first',
            'none buf_size=8192\n': 'none takes no argument',
            '\n': 'no format',
            'default buf_size=8192\nnone\n': 'one line only',
        }
        for text, words in malformed.items():
            with self.subTest(text=text):
                reason = self.assertRefused(s, errno.EINVAL, 'smpl_fmt', text, files)
                self.assertIn(words, reason)
        self.assertEqual(s.read('smpl_fmt'), 'default buf_size=8192 buf_flags=0\n')
        s.write('smpl_fmt', f'default buf_size={MIN_SIZE}\n')  # the least it takes

    def test_ebusy_while_loaded(self):
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=8192\n')
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        loaded = withSampling(stateLine('loaded', target=pid), 0, 0)
        for text in ('default buf_size=4096\n', 'none\n'):
            with self.subTest(text=text):
                reason = self.assertRefused(s, errno.EBUSY, 'smpl_fmt', text, ('state', 'smpl_fmt'))
                self.assertIn('unload first', reason)
        s.ctl('start')
        self.assertRefused(s, errno.EBUSY, 'smpl_fmt', 'none\n', ('smpl_fmt',))
        self.assertEqual(s.read('smpl_fmt'), 'default buf_size=8192 buf_flags=0\n')
        s.ctl('stop')
        self.assertEqual(s.state(), loaded)
        s.ctl('unload')
        s.write('smpl_fmt', 'none\n')
        self.assertEqual(s.state(), stateLine())

    def test_reads_at_any_size_give_the_same_bytes(self):
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=10000\n')
        whole = pfmfs_mount.readBytes(s.path('smpl_buf'))
        self.assertEqual(len(whole), 10000)
        for size in (1, 127, 4096, 65536):
            with self.subTest(size=size):
                self.assertEqual(pfmfs_mount.readBytes(s.path('smpl_buf'), size), whole)


class DrivenSamplingTest(MountTestCase):
    """Samples on every backend: a period of event_a on a driven Worker,
    one entry per period, with the real thread, cpu and ip where the
    backend reports them."""

    @exactEvents
    def test_one_sample_per_period(self):
        s = self.newSession()
        w = self.worker()
        period = PMU.far(1500)  # sim: 500 ns, a whole number of them
        s.pmc(0, PMU.pmc_a)
        s.pmd(0, f'-{period} short_reset=-{period}')
        s.write('smpl_fmt', 'default buf_size=65536\n')
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(PMU.reach(3 * period))
        low, high = d.low // period, d.high() // period
        waitFor(lambda: len(s.read('samples').splitlines()) >= low)
        lines = [parseKv(line) for line in s.read('samples').splitlines()]
        self.assertTrue(low <= len(lines) <= high, f'{len(lines)} samples, expected {low}..{high}')
        last = 0
        for k, fields in enumerate(lines):
            with self.subTest(sample=k):
                self.assertEqual(list(fields), ['sample', 'set', 'pmd', 'tid', 'pid', 'cpu', 'ip', 'tstamp',
                                                'last_reset', 'eventid'])
                self.assertEqual((fields['sample'], fields['set'], fields['pmd'], fields['tid'], fields['pid']),
                                 (str(k), '0', '0', str(w.tid), str(w.pid)))
                self.assertEqual((fields['last_reset'], fields['eventid']), (str(neg(period)), '0'))
                self.assertIn(int(fields['cpu']), onlineCpus())
                self.assertRegex(fields['ip'], '^0x[0-9a-f]+$')
                self.assertNotEqual(int(fields['ip'], 16), 0)
                self.assertGreaterEqual(int(fields['tstamp']), last)
                last = int(fields['tstamp'])
        self.assertEqual(s.state(), withSampling(stateLine('active', target=w.pid), len(lines), 0))


@simOnly
class SimSamplingTest(MountTestCase):
    """Exact samples under the sim's manual clock: cycles count 3/ns, so a
    period of 300 ends every 100 ns of the target's time; instructions count
    2/ns and are never reset."""

    def program(self, s, pmd0='-300 short_reset=-300 smpl_pmds=1', buf_size=65536):
        s.pmc(0, CYCLES)
        s.pmc(1, INSTRUCTIONS)
        s.pmd(0, pmd0)
        s.write('smpl_fmt', f'default buf_size={buf_size}\n')
        pid = self.sleeper()
        s.ctl(f'load {pid}')
        s.ctl('start')
        return pid

    def test_every_overflow_writes_an_exact_sample(self):
        s = self.newSession()
        pid = self.program(s)
        self.assertEqual(s.state(), withSampling(stateLine('active', target=pid), 0, 0))
        self.m.advance(350)
        times = (100, 200, 300)
        self.assertEqual(s.read('samples'), ''.join(sampleLine(k, pid, t, 2 * t) for k, t in enumerate(times)))
        self.assertEqual(s.state(), withSampling(stateLine('active', target=pid), 3, 0))
        self.assertEqual(s.read('samples').splitlines()[0],
                         f'sample=0 set=0 pmd=0 tid={pid} pid={pid} cpu=0 ip=0x401004 tstamp=100 '
                         f'last_reset=18446744073709551316 eventid=0 pmd1=200')

        data = pfmfs_mount.readBytes(s.path('smpl_buf'))
        self.assertEqual(len(data), 65536)
        entry = ENTRY.size + 8  # pmd1's value after each entry
        cur = HDR.size + 3 * entry
        self.assertEqual(HDR.unpack_from(data), (3, cur, 0, 65536, MIN_SPACE, VERSION, 0, bytes(80)))
        self.assertEqual(struct.unpack_from('<QQQQQI', data), (3, cur, 0, 65536, MIN_SPACE, VERSION))
        for k, t in enumerate(times):
            with self.subTest(sample=k):
                at = HDR.size + k * entry
                self.assertEqual(ENTRY.unpack_from(data, at), (pid, 0, 0, neg(300), simIp(t), t, 0, 0, pid))
                self.assertEqual(struct.unpack_from('<Q', data, at + ENTRY.size), (2 * t,))
        self.assertEqual(data[cur:], bytes(65536 - cur))
        # The counter took its short reset at each overflow and counts on.
        self.assertEqual(s.readPmd(0), neg(300) + 150)
        self.assertEqual(s.readPmd(1), 700)

        # The samples stay after the unload (the last buffer is read after the end).
        s.ctl('unload')
        self.assertEqual(s.state(), withSampling(stateLine(), 3, 0))
        self.assertEqual(len(s.read('samples').splitlines()), 3)
        self.assertEqual(pfmfs_mount.readBytes(s.path('smpl_buf')), data)
        # A new format: a new, empty buffer.
        s.write('smpl_fmt', 'default buf_size=65536\n')
        self.assertEqual(s.read('samples'), '')
        self.assertEqual(s.state(), withSampling(stateLine(), 0, 0))

    def test_eventid_and_several_recorded_pmds(self):
        s = self.newSession()
        s.pmc(16, '0x2')  # FIXED_CTR_CTRL: fixed counter 0 (instructions) at user level
        pid = self.program(s, '-300 short_reset=-300 smpl_pmds=1,16 eventid=0x2a')
        self.m.advance(100)
        self.assertEqual(s.read('samples'),
                         f'sample=0 set=0 pmd=0 tid={pid} pid={pid} cpu=0 ip={simIp(100):#x} tstamp=100 '
                         f'last_reset={neg(300)} eventid=42 pmd1=200 pmd16=200\n')

    def test_a_full_buffer_masks_notifies_and_restart_empties_it(self):
        s = self.newSession()
        # Room for two entries of 48 bytes: after the second, less than the largest entry is left.
        size = MIN_SIZE + ENTRY.size + 8
        pid = self.program(s, '-300 short_reset=-300 long_reset=-600 smpl_pmds=1', buf_size=size)
        self.m.advance(150)
        self.assertEqual(s.state(), withSampling(stateLine('active', target=pid), 1, 0))
        self.m.advance(100)  # the second sample, at 200, fills it
        self.assertEqual(s.state(), withSampling(stateLine('masked', target=pid, queued=1), 2, 1))
        self.assertEqual(s.readMessages(), ovflLine(1, pid, pid, 200))
        self.assertEqual(s.read('samples'), sampleLine(0, pid, 100, 200) + sampleLine(1, pid, 200, 400))
        header = HDR.unpack_from(pfmfs_mount.readBytes(s.path('smpl_buf')))
        self.assertEqual(header[:3], (2, HDR.size + 2 * 48, 1))

        s.ctl('restart')  # empty again, and the long reset
        self.assertEqual(s.state(), withSampling(stateLine('active', target=pid), 0, 1))
        self.assertEqual(s.read('samples'), '')
        header = HDR.unpack_from(pfmfs_mount.readBytes(s.path('smpl_buf')))
        self.assertEqual(header[:3], (0, HDR.size, 1))
        # The target's time went on while masked (to 250); instructions did not count.
        self.m.advance(200)
        self.assertEqual(s.read('samples'), sampleLine(0, pid, 450, 800, last_reset=neg(600)))

    def test_load_empties_the_buffer(self):
        s = self.newSession()
        pid = self.program(s, buf_size=MIN_SIZE + ENTRY.size + 8)
        self.m.advance(200)  # full
        self.assertEqual(s.state(), withSampling(stateLine('masked', target=pid, queued=1), 2, 1))
        self.assertEqual(s.readMessages(), ovflLine(1, pid, pid, 200))
        s.ctl('unload')
        self.assertEqual(s.state(), withSampling(stateLine(), 2, 1))
        self.assertEqual(len(s.read('samples').splitlines()), 2)
        s.pmd(0, '-300 short_reset=-300 smpl_pmds=1')
        s.ctl(f'load {pid}')
        self.assertEqual(s.read('samples'), '')
        self.assertEqual(s.state(), withSampling(stateLine('loaded', target=pid), 0, 0))


class SamplingLimitTest(MountTestCase):
    """--max-smpl-bytes-per-user=8192: two pages of buffers per user."""

    mount_args = ['--max-smpl-bytes-per-user=8192']

    def test_the_owners_buffers_share_the_limit(self):
        a, b = self.newSession(), self.newSession()
        a.write('smpl_fmt', 'default buf_size=4097\n')  # two pages
        reason = self.assertRefused(b, errno.ENOMEM, 'smpl_fmt', 'default buf_size=4096\n', ('state', 'smpl_fmt'))
        self.assertIn('--max-smpl-bytes-per-user', reason)
        self.assertEqual(b.read('smpl_fmt'), 'none\n')
        a.write('smpl_fmt', 'default buf_size=4096\n')  # a's old buffer is given back
        b.write('smpl_fmt', 'default buf_size=4096\n')
        self.assertRefused(b, errno.ENOMEM, 'smpl_fmt', 'default buf_size=8192\n', ('smpl_fmt',))
        a.write('smpl_fmt', 'none\n')  # none gives back
        b.write('smpl_fmt', 'default buf_size=8192\n')
        # Another user's buffers are counted apart.
        u = self.userSession(TEST_USER)
        runAs(TEST_USER, u.write, 'smpl_fmt', 'default buf_size=8192\n')
        self.assertEqual(runAs(TEST_USER, u.read, 'smpl_fmt'), 'default buf_size=8192 buf_flags=0\n')
        # Destroying a session gives back.
        b.destroy()
        a.write('smpl_fmt', 'default buf_size=8192\n')


class SamplingPermissionsTest(MountTestCase):

    def test_the_files_are_the_owners_alone(self):
        s = self.userSession(TEST_USER)
        runAs(TEST_USER, s.write, 'smpl_fmt', 'default buf_size=4096\n')
        self.assertEqual(len(runAs(TEST_USER, pfmfs_mount.readBytes, s.path('smpl_buf'))), 4096)
        self.assertEqual(runAs(TEST_USER, s.read, 'samples'), '')
        for rel, mode in (('smpl_fmt', 0o600), ('smpl_buf', 0o400), ('samples', 0o400)):
            st = os.stat(s.path(rel))
            self.assertEqual(st.st_mode & 0o7777, mode, rel)
        checks = [
            ('read smpl_buf', pfmfs_mount.readBytes, s.path('smpl_buf')),
            ('read samples', s.read, 'samples'),
            ('read smpl_fmt', s.read, 'smpl_fmt'),
            ('write smpl_fmt', s.write, 'smpl_fmt', 'none\n'),
        ]
        for what, fn, *args in checks:
            self.assertEqual(runAs(TEST_USER2, attempt, fn, *args), errno.EACCES, what)
        # Nothing reached the session.
        self.assertEqual(s.read('smpl_fmt'), 'default buf_size=4096 buf_flags=0\n')
        self.assertEqual(s.error(), '')
        # Even the owner does not write the buffer or the samples.
        for rel in ('smpl_buf', 'samples'):
            self.assertEqual(runAs(TEST_USER, attempt, s.write, rel, 'x'), errno.EACCES, rel)

    def test_the_socket_maps_the_buffer_for_its_owner_on_every_backend(self):
        # libpfm-compat's mmap of a context takes the buffer from the fast
        # path's socket, which runs on every backend; on x86 it refuses the
        # mapped reads' page, which the backend cannot serve.
        sock = re.search(r' fastpath=@(\S+) fastpath_pid=\d+ fastpath_uid=\d+\n$', self.m.read('pmu/info')).group(1)
        s = self.userSession(TEST_USER)
        runAs(TEST_USER, s.write, 'smpl_fmt', 'default buf_size=4096\n')
        answer, got = runAs(TEST_USER, askAndClose, sock, f'smpl {s.name}')
        self.assertEqual((answer, got), ('ok', True))
        answer, got = runAs(TEST_USER2, askAndClose, sock, f'smpl {s.name}')
        self.assertEqual((answer, got), (f'err {errno.EACCES} session {s.name} is not yours', False))
        answer, got = runAs(TEST_USER, askAndClose, sock, f'page {s.name}')
        if X86:
            self.assertEqual((answer, got), (f'err {errno.EOPNOTSUPP} the x86 backend has no mapped reads: '
                                             'read the counts through the mount', False))
        else:
            self.assertEqual((answer, got), ('ok', True))


if __name__ == '__main__':
    pfmfs_mount.main()
