#!/usr/bin/env python3
# Sampling on the perf backend (pfmfs(5), SAMPLING): real programs sampled
# through perf's own sampling. Page faults are counted one by one, so their
# samples are exact in number, thread, PMD and period, and each ip is the
# faulting store in perf_worker's text; the time stamps are perf's and
# increase; a recorded PMD is what it was at the overflow (the sample's
# group read). Task-clock samples come one per period of
# CPU time: as many as the count divided by the period.
import errno
import os

import pfmfs_mount
from pfmfs_mount import TEST_USER, neg, parseKv, runAs
from kernel_setting import KernelSetting
from test_perf import MS, PerfTestCase, prog, requirePrograms, textMappings


def samplesOf(s):
    return [parseKv(line) for line in s.read('samples').splitlines()]


class SamplingTest(PerfTestCase):

    def test_page_fault_samples_are_one_per_period_in_the_program_text(self):
        p, n = 4, 40
        w = self.worker()
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=65536\n')
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, 'PAGE_FAULTS:u')
        s.pmd(0, f'-{p} short_reset=-{p} smpl_pmds=1 eventid=7')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        self.assertEqual(w.cmd(f't {n}')['minflt'], n)
        samples = samplesOf(s)
        self.assertEqual(len(samples), n // p, samples)
        spans = textMappings(w.pid, prog('perf_worker'))
        ncpu = os.cpu_count()
        last_t = 0
        for k, e in enumerate(samples):
            self.assertEqual(list(e)[:11], ['sample', 'set', 'pmd', 'tid', 'pid', 'cpu', 'ip', 'tstamp', 'last_reset',
                                            'eventid', 'pmd1'], e)
            self.assertEqual((int(e['sample']), e['set'], e['pmd'], int(e['tid']), int(e['pid'])),
                             (k, '0', '0', w.tid, w.pid), e)
            self.assertEqual((int(e['last_reset']), e['eventid']), (neg(p), '7'), e)
            self.assertLess(int(e['cpu']), ncpu, e)
            ip = int(e['ip'], 16)
            self.assertTrue(any(a <= ip < b for a, b in spans), f'ip {ip:#x} not in perf_worker text {spans}')
            t = int(e['tstamp'])
            self.assertGreater(t, last_t, e)
            last_t = t
            # The group's values at the overflow, in the sample
            # (PERF_SAMPLE_READ): pmd1 has counted the same faults as pmd0.
            self.assertEqual(int(e['pmd1']), p * (k + 1), e)
        state = self.stateOf(s)
        self.assertEqual((state['state'], state['smpl_count'], state['smpl_overflows']),
                         ('active', str(n // p), '0'))

    def test_a_full_buffer_masks_and_restart_empties_it(self):
        p = 2
        w = self.worker()
        s = self.newSession()
        # Room for three entries of 48 bytes after the header, with the
        # largest entry's room (40 + 8 per PMD) left after the last.
        pmds = len([x for x in os.listdir(self.m.path('pmu/desc')) if x.startswith('pmd')])
        s.write('smpl_fmt', f'default buf_size={128 + 3 * 48 + 40 + 8 * pmds - 1}\n')
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmc(1, 'PAGE_FAULTS:u')
        s.pmd(0, f'-{p} short_reset=-{p} long_reset=-{p} smpl_pmds=1 notify')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        for i in range(1, 7):
            self.assertEqual(w.cmd('t 1')['minflt'], 1)
            state = self.stateOf(s)
            self.assertEqual(state['state'], 'masked' if i == 6 else 'active', (i, state))
        self.assertEqual((state['smpl_count'], state['smpl_overflows']), ('3', '1'))
        message = parseKv(s.readMessages())
        self.assertEqual((message['type'], message['pmds'], int(message['tid'])), ('ovfl', '0x1', w.tid))
        self.assertEqual(len(samplesOf(s)), 3)
        s.ctl('restart')
        self.assertEqual(self.stateOf(s)['smpl_count'], '0')
        self.assertEqual(w.cmd('t 4')['minflt'], 4)
        self.assertEqual(len(samplesOf(s)), 2)

    def test_task_clock_samples_are_the_count_over_the_period(self):
        period = 2 * MS
        w = self.worker()
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=1048576\n')
        # At both levels: perf counts a clock's time in the kernel at either
        # level, but drops the samples whose timer fires at a level the
        # event excludes (the worker's burn reads its clock by syscall).
        s.pmc(0, 'TASK_CLOCK:u:k')
        s.pmd(0, f'-{period} short_reset=-{period}')
        s.pmc(1, 'TASK_CLOCK')
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        w.cmd('b 200')
        s.ctl('stop')
        count = int(self.countsOf(s)[(0, 1)]['value'])
        samples = samplesOf(s)
        # perf's clock events fire on a timer tick: a period may run a
        # little long, never short, so the samples fall a little short of
        # count / period, and not by more than a tenth.
        self.assertLessEqual(len(samples), count // period, (len(samples), count))
        self.assertGreaterEqual(len(samples), count // period * 9 // 10, (len(samples), count))
        self.assertTrue(all(int(e['tid']) == w.tid and e['pmd'] == '0' for e in samples))

    def test_throttling_is_reported(self):
        # 20 000 samples a second asked, 1000 allowed: perf throttles the
        # event, and `state` says how often, so nobody takes the profile
        # for complete.
        period = 50_000
        w = self.worker()
        s = self.newSession()
        s.write('smpl_fmt', 'default buf_size=1048576\n')
        s.pmc(0, 'TASK_CLOCK:u:k')
        s.pmd(0, f'-{period} short_reset=-{period}')
        with KernelSetting('/proc/sys/kernel/perf_event_max_sample_rate', '1000'):
            s.ctl(f'load {w.tid}')
            s.ctl('start')
            burn = w.cmd('b 100')
            state = self.stateOf(s)
        self.assertGreater(int(state.get('throttled', '0')), 0, state)
        self.assertEqual(list(state)[-1], 'throttled', state)
        periods = (burn['end_ns'] - burn['start_ns']) // period
        self.assertLess(int(state['smpl_count']), periods // 2, (periods, state))


PAGE = os.sysconf('SC_PAGESIZE')
RING = 17 * PAGE  # a sampling target's ring: 16 data pages and its header


def onlineCpus():
    """How many cpus /sys says are online ("0-1,3" is three)."""
    with open('/sys/devices/system/cpu/online') as f:
        spans = [part.split('-') for part in f.read().strip().split(',')]
    return sum(int(r[-1]) - int(r[0]) + 1 for r in spans)


class SamplingRingLimitTest(PerfTestCase):
    """The kernel's rings count with the buffers in --max-smpl-bytes-per-user:
    any user can have pfmfsd lock them."""

    mount_args = [f'--max-smpl-bytes-per-user={2 * PAGE + RING}']

    def sampler(self, buf=PAGE):
        s = self.newSession()
        s.write('smpl_fmt', f'default buf_size={buf}\n')
        s.pmc(0, 'PAGE_FAULTS:u')
        s.pmd(0, '-4 short_reset=-4')
        return s

    def test_a_load_that_would_pass_the_limit_is_refused(self):
        w = self.worker()
        a, b = self.sampler(), self.sampler()  # two buffers of one page
        a.ctl(f'load {w.tid}')  # and a's ring: the limit, exactly
        reason = self.assertRefused(b, errno.ENOMEM, 'ctl', f'load {w.tid}\n', ('state', 'smpl_fmt'))
        self.assertIn('ring pages', reason)
        self.assertIn('--max-smpl-bytes-per-user', reason)
        # A session that only counts locks no ring of samples.
        c = self.newSession()
        c.pmc(0, 'PAGE_FAULTS:u')
        c.ctl(f'load {w.tid}')
        # The unload gives a's ring back.
        a.ctl('unload')
        b.ctl(f'load {w.tid}')
        b.ctl('start')
        self.assertEqual(w.cmd('t 8')['minflt'], 8)
        self.assertEqual(len(samplesOf(b)), 2)
        b.ctl('unload')
        # Following children adds a ring per online cpu.
        b.write('flags', 'inherit\n')
        reason = self.assertRefused(b, errno.ENOMEM, 'ctl', f'load {w.tid}\n', ('state',))
        self.assertIn(f'({RING + onlineCpus() * RING} bytes)', reason)
        b.write('flags', 'none\n')
        b.ctl(f'load {w.tid}')
        # Destroying a loaded session gives its ring back too.
        b.destroy()
        a.ctl(f'load {w.tid}')

    def test_another_users_rings_are_counted_apart(self):
        w = self.worker()
        a = self.sampler(buf=2 * PAGE)
        a.ctl(f'load {w.tid}')  # root's limit, reached
        u = self.userSession(TEST_USER)
        mine = self.worker(user=TEST_USER)

        def load():
            u.write('smpl_fmt', f'default buf_size={2 * PAGE}\n')
            u.pmc(0, 'PAGE_FAULTS:u')
            u.ctl(f'load {mine.tid}')
            return u.state()

        self.assertTrue(runAs(TEST_USER, load).startswith('state=loaded '))


if __name__ == '__main__':
    pfmfs_mount.requireEnvironment()
    requirePrograms()
    pfmfs_mount.main()
