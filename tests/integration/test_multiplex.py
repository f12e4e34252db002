#!/usr/bin/env python3
# Multiplexing through the mount (pfmfs(5), sets/N/switch and counts): under the sim's manual clock,
# time-based switching with exact runs, duration_ns, timeout_ns and scaled
# counts, overflow-based switching with switch_cnt, start N, phased events
# showing multiplexing bias, and overflow switching with interrupt skid
# (--sim-skid); on every backend, only the active set counts, start N switches
# by hand, and overflow switching on a driven count.
import errno
import os

import pfmfs_mount
from pfmfs_mount import PMU, MountTestCase, countsLine, neg, ovflLine, parseKv, simOnly, stateLine

AVAIL = PMU.avail
MS = 1_000_000


def info(runs, duration, timeout, ovfl='0x0'):
    return f'runs={runs} duration_ns={duration} timeout_ns={timeout} ovfl_pmds={ovfl} {AVAIL}\n'


class MultiplexTest(MountTestCase):

    def twoTimeSets(self):
        """set0: cycles; set1: instructions and branch misses; 1 ms each."""
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        s.write('sets/0/switch', 'time 1000000\n')
        s.write('sets/1/switch', 'time 1000000\n')
        s.pmc(0, '0x1003c', 0)
        s.pmc(0, '0x100c0', 1)
        s.pmc(1, 'BRANCH_MISSES_RETIRED', 1)
        s.ctl(f'load {pid}')
        s.ctl('start')
        return s, pid

    def checkTwoTimeSets(self, s, pid):
        # set0 (0,1] (2,3] (4,5] (6,7] (8,9] (10,10.5] ms; set1 the other five.
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.assertEqual(s.read('sets/0/info'), info(6, 5_500_000, 500_000))
        self.assertEqual(s.read('sets/1/info'), info(5, 5_000_000, MS))
        self.assertEqual(s.readPmd(0, 0), 16_500_000)
        self.assertEqual(s.readPmd(0, 1), 10_000_000)
        self.assertEqual(s.readPmd(1, 1), 20_000)  # 0.004/ns over 5 ms
        self.assertEqual(s.read('counts'),
                         countsLine(0, 0, 16_500_000, 10_500_000, 5_500_000)
                         + countsLine(1, 0, 10_000_000, 10_500_000, 5_000_000)
                         + countsLine(1, 1, 20_000, 10_500_000, 5_000_000))
        self.assertEqual(s.read('counts').splitlines(), [
            'set=0 pmd=0 value=16500000 enabled_ns=10500000 running_ns=5500000 scaled=31500000',
            'set=1 pmd=0 value=10000000 enabled_ns=10500000 running_ns=5000000 scaled=21000000',
            'set=1 pmd=1 value=20000 enabled_ns=10500000 running_ns=5000000 scaled=42000'])

    @simOnly
    def test_time_switching_one_advance(self):
        s, pid = self.twoTimeSets()
        self.assertEqual(s.read('sets/0/switch'), 'time 1000000\n')
        self.m.advance(10_500_000)
        self.checkTwoTimeSets(s, pid)
        # 0.5 ms more ends exactly on set0's timeout: the switch happens.
        self.m.advance(500_000)
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.read('sets/0/info'), info(6, 6_000_000, MS))
        self.assertEqual(s.read('sets/1/info'), info(6, 5_000_000, MS))
        self.m.advance(1)
        self.assertEqual(s.read('sets/1/info'), info(6, 5_000_001, MS - 1))

    @simOnly
    def test_time_switching_many_small_advances(self):
        s, pid = self.twoTimeSets()
        for _ in range(15):
            self.m.advance(700_000)
        self.checkTwoTimeSets(s, pid)

    @simOnly
    def test_stop_keeps_the_set_and_its_timeout(self):
        s, pid = self.twoTimeSets()
        self.m.advance(1_250_000)  # set1 for 0.25 ms
        self.assertEqual(s.read('sets/1/info'), info(1, 250_000, 750_000))  # active: what is left
        s.ctl('stop')
        self.m.advance(5 * MS)  # stopped: nothing switches
        self.assertEqual(s.state(), stateLine('loaded', target=pid, set_id=1))
        self.assertEqual(s.read('sets/1/info'), info(1, 250_000, MS))  # stopped: the whole timeout
        s.ctl('start')  # resumes the last active set with a fresh activation
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.read('sets/1/info'), info(2, 250_000, MS))

    @simOnly
    def test_never_run_set_has_no_scaled_value(self):
        s = self.newSession()
        pid = self.sleeper()
        for n in (1, 2):
            s.mkset(n)
        for n in (0, 1, 2):
            s.write(f'sets/{n}/switch', 'time 1000000')
            s.pmc(0, 'UNHALTED_CORE_CYCLES', n)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(1_500_000)
        self.assertEqual(s.read('counts'),
                         countsLine(0, 0, 3_000_000, 1_500_000, MS)
                         + countsLine(1, 0, 1_500_000, 1_500_000, 500_000)
                         + 'set=2 pmd=0 value=0 enabled_ns=1500000 running_ns=0 scaled=-\n')
        self.assertEqual(s.read('sets/2/info'), info(0, 0, MS))

    @simOnly
    def test_start_n_and_round_robin_order(self):
        s = self.newSession()
        pid = self.sleeper()
        for n in (7, 3):  # created out of order: switching goes by id
            s.mkset(n)
        for n in (0, 3, 7):
            s.write(f'sets/{n}/switch', f'time {1000 * (n + 1)}')
            s.pmc(0, '0x1003c', n)
        s.ctl(f'load {pid}')
        s.ctl('start 3')  # the first start runs set 3, not the lowest
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=3))
        self.m.advance(4000)  # set3 (0,4000]: then set 7
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=7))
        self.m.advance(8000)  # set7 (4000,12000]: then set 0 (wraps to the lowest)
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.m.advance(1000)  # set0 (12000,13000]: then set 3
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=3))
        self.assertEqual(s.read('sets/0/info'), info(1, 1000, 1000))
        self.assertEqual(s.read('sets/3/info'), info(2, 4000, 4000))
        self.assertEqual(s.read('sets/7/info'), info(1, 8000, 8000))
        self.assertEqual(s.readPmd(0, 7), 24_000)
        s.ctl('start 0')  # start N on an active session switches to N
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.assertEqual(s.read('sets/0/info'), info(2, 1000, 1000))
        self.m.advance(500)
        self.assertEqual(s.readPmd(0, 0), 4500)
        self.assertEqual(s.read('sets/0/info'), info(2, 1500, 500))

    @simOnly
    def test_overflow_switching_with_switch_cnt(self):
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        s.write('sets/0/switch', 'ovfl\n')
        self.assertEqual(s.read('sets/0/switch'), 'ovfl\n')
        s.write('sets/1/switch', 'time 1000000\n')
        s.pmc(0, '0x1003c', 0)
        s.pmd(0, '-3000 short_reset=-3000 switch_cnt=2', 0)  # overflows every 1000 ns
        s.pmc(0, '0x100c0', 1)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.assertEqual(s.read('sets/0/pmds'), f'pmd=0 value={neg(3000)} long_reset=0 short_reset={neg(3000)} '
                         'last_reset=0 switch_cnt=2 switch_left=2\n')
        self.m.advance(1999)  # one overflow: one left before the switch
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.assertEqual(s.readPmd(0, 0), neg(3))
        # pmds: the live value, the reset used and what is left of switch_cnt (libpfm's pfm_read_pmds).
        self.assertEqual(s.read('sets/0/pmds'), f'pmd=0 value={neg(3)} long_reset=0 short_reset={neg(3000)} '
                         f'last_reset={neg(3000)} switch_cnt=2 switch_left=1\n')
        self.assertEqual(s.read('sets/1/pmds'), 'pmd=0 value=0 long_reset=0 short_reset=0 last_reset=0 '
                         'switch_cnt=0 switch_left=0\n')  # used, never written
        self.m.advance(1)  # the second overflow switches to set 1
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.read('sets/0/info'), info(1, 2000, 0, '0x1'))
        self.assertEqual(s.read('sets/1/info'), info(1, 0, MS))
        self.assertEqual(s.readPmd(0, 0), neg(3000))
        self.m.advance(MS)  # set1's time is up: back to set 0, switch count reloaded
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.assertEqual(s.readPmd(0, 1), 2_000_000)
        self.assertEqual(s.read('sets/0/info'), info(2, 2000, 0, '0x1'))
        self.m.advance(1000)
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.m.advance(1000)
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.read('sets/0/info'), info(2, 4000, 0, '0x1'))
        self.assertEqual(s.read('sets/1/info'), info(2, MS, MS))
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))

    @simOnly
    def test_time_and_overflow_switching_together(self):
        # perfmon2's PFM_SETFL_TIME_SWITCH | PFM_SETFL_OVFL_SWITCH: whichever comes first.
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        s.write('sets/0/switch', 'time 5000 ovfl\n')
        self.assertEqual(s.read('sets/0/switch'), 'time 5000 ovfl\n')
        s.write('sets/1/switch', 'time 1000000\n')
        s.pmc(0, '0x1003c', 0)
        s.pmd(0, '-3000 short_reset=-3000 switch_cnt=2', 0)  # overflows every 1000 ns
        s.pmc(0, '0x100c0', 1)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(2000)  # the second overflow comes before the timeout
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.m.advance(MS)
        s.pmd(0, '-30000 short_reset=-30000', 0)  # set 0's next overflow is 10000 ns away: time wins
        self.m.advance(5000)
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.read('sets/0/info').split()[:2], ['runs=2', 'duration_ns=7000'])
        self.assertErrno(errno.EINVAL, s.write, 'sets/0/switch', 'time 5000 ovfl ovfl\n')
        self.assertErrno(errno.EINVAL, s.write, 'sets/0/switch', 'time 0 ovfl\n')

    @simOnly
    def test_phased_events_show_multiplexing_bias(self):
        # SIM_PHASE_A runs at 4/ns in the first ms of every 2 ms: set 0, which
        # is active exactly then, sees it all; set 1 sees nothing.
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        for n in (0, 1):
            s.write(f'sets/{n}/switch', 'time 1000000')
            s.pmc(0, 'SIM_PHASE_A', n)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(4 * MS)
        self.assertEqual(s.read('counts'),
                         countsLine(0, 0, 8_000_000, 4 * MS, 2 * MS) + countsLine(1, 0, 0, 4 * MS, 2 * MS))

    # ---- every backend

    def test_only_the_active_set_counts(self):
        s = self.newSession()
        w = self.worker()
        s.mkset(1)
        s.pmc(0, PMU.pmc_a, 0)
        s.pmc(0, PMU.pmc_a, 1)
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(300)
        first = d.check(s.readPmd(0, 0))
        self.assertEqual(s.readPmd(0, 1), 0)
        s.ctl('start 1')  # by hand: set 0 stops counting, set 1 starts
        self.assertEqual(s.state(), stateLine('active', target=w.pid, set_id=1))
        d = self.driven(w)
        d.drive(600)
        second = d.check(s.readPmd(0, 1))
        self.assertEqual(s.readPmd(0, 0), first)
        s.ctl('stop')
        self.assertEqual(s.state(), stateLine('loaded', target=w.pid, set_id=1))
        self.assertEqual(s.read('sets/0/info').split()[0], 'runs=1')
        self.assertEqual(s.read('sets/1/info').split()[0], 'runs=1')
        lines = [parseKv(line) for line in s.read('counts').splitlines()]
        self.assertEqual([(x['set'], x['pmd'], x['value']) for x in lines],
                         [('0', '0', str(first)), ('1', '0', str(second))])
        enabled = int(lines[0]['enabled_ns'])
        running0, running1 = int(lines[0]['running_ns']), int(lines[1]['running_ns'])
        self.assertEqual(lines[1]['enabled_ns'], str(enabled))
        self.assertGreater(running0, 0)
        self.assertGreater(running1, 0)
        self.assertEqual(running0 + running1, enabled)  # one set at a time, always one
        for x in lines:
            self.assertEqual(x['scaled'], str(int(x['value']) * enabled // int(x['running_ns'])))
        # duration_ns is the set's running time.
        self.assertEqual(s.read('sets/0/info').split()[1], f'duration_ns={running0}')
        self.assertEqual(s.read('sets/1/info').split()[1], f'duration_ns={running1}')
        s.ctl('start')  # the last active set again
        self.assertEqual(s.state(), stateLine('active', target=w.pid, set_id=1))

    def test_a_stopped_time_set_shows_its_whole_timeout(self):
        s = self.newSession()
        pid = self.sleeper()  # no CPU time: no switch
        s.mkset(1)
        s.write('sets/0/switch', 'time 1000000\n')
        s.write('sets/1/switch', 'time 2000000\n')
        s.ctl(f'load {pid}')
        self.assertEqual(s.read('sets/1/info'), f'runs=0 duration_ns=0 timeout_ns=2000000 ovfl_pmds=0x0 {AVAIL}\n')
        s.ctl('start')
        info = parseKv(s.read('sets/0/info'))
        self.assertEqual(info['runs'], '1')
        self.assertLessEqual(int(info['timeout_ns']), 1_000_000)  # active: what is left
        s.ctl('stop')
        self.assertEqual(s.read('sets/0/info').split()[2], 'timeout_ns=1000000')
        self.assertEqual(s.state(), stateLine('loaded', target=pid, set_id=0))

    def test_overflow_switching_on_a_driven_count(self):
        s = self.newSession()
        w = self.worker()
        s.mkset(1)
        s.write('sets/0/switch', 'ovfl\n')
        n = PMU.far(3000)  # overflows of what the test drives only
        s.pmc(0, PMU.pmc_a, 0)
        s.pmd(0, f'-{n} short_reset=-{n} switch_cnt=2', 0)
        s.pmc(0, PMU.pmc_a, 1)
        s.ctl(f'load {w.pid}')
        s.ctl('start')
        d = self.driven(w)
        d.drive(PMU.reach(n))  # one overflow: one left before the switch
        self.assertEventually(lambda: s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        self.assertEqual(s.state(), stateLine('active', target=w.pid, set_id=0))
        d.drive(PMU.reach(n))  # the second overflow switches to set 1
        self.assertEventually(s.state, stateLine('active', target=w.pid, set_id=1))
        d.checkSince(s.readPmd(0, 0), neg(n), 2 * n)  # sim: neg(3000), the short reset
        self.assertEqual(s.read('sets/0/info').split()[0], 'runs=1')
        self.assertEqual(s.read('sets/1/info').split()[0], 'runs=1')
        d.drive(300)
        d.checkSince(s.readPmd(0, 1), 0, 2 * n)  # set 1 counts from the switch: sim 300
        s.ctl('start 0')  # back by hand: its switch count is reloaded
        self.assertEqual(s.read('sets/0/info').split()[0], 'runs=2')
        self.drive(w, PMU.reach(n))
        self.assertEventually(lambda: s.read('sets/0/info').split()[3], 'ovfl_pmds=0x1')
        self.assertEqual(s.state(), stateLine('active', target=w.pid, set_id=0))
        self.drive(w, PMU.reach(n))
        self.assertEventually(s.state, stateLine('active', target=w.pid, set_id=1))
        self.assertEqual(s.read('sets/1/info').split()[0], 'runs=2')
        self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path('messages'), 4096, os.O_NONBLOCK)


@simOnly
class SkidTest(MountTestCase):
    """--sim-skid=11: an overflow interrupt comes 11 events of the counter's
    own stream after its wrap."""

    mount_args = ['--sim-skid=11']

    def test_pmu_info_says_so(self):
        self.assertEqual(pfmfs_mount.baseInfo(self.m.read('pmu/info')), PMU.info.replace(' tick_ns=', ',ovfl_skid tick_ns='))

    def test_a_counter_at_minus_one_lets_its_neighbours_count_the_skid(self):
        # perfmon2's idiom: in each set a counter at -1 that switches on its
        # overflow. Instructions (2/ns) wrap at the first one and interrupt at
        # the 12th, 6 ns into each visit: set 0's cycles (3/ns) count 18 a
        # visit, set 1's reference cycles (2.5/ns) 15. Without skid a visit
        # would last 1 ns.
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        for n in (0, 1):
            s.write(f'sets/{n}/switch', 'ovfl\n')
            s.pmc(0, 'INSTRUCTION_RETIRED', n)
            s.pmd(0, '-1 short_reset=-1 switch_cnt=1', n)
        s.pmc(1, 'UNHALTED_CORE_CYCLES', 0)
        s.pmc(1, 'UNHALTED_REFERENCE_CYCLES', 1)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(3)
        self.assertEqual(s.readPmd(0, 0), 5)  # -1 and 6 instructions: wrapped, in skid
        self.assertEqual(s.readPmd(1, 0), 9)
        self.assertEqual(s.read('sets/0/info'), info(1, 3, 0))
        self.m.advance(3)  # the 12th instruction: the overflow resets pmd0 and switches
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=1))
        self.assertEqual(s.readPmd(0, 0), neg(1))  # the reset overwrites the skid
        self.assertEqual(s.readPmd(1, 0), 18)
        self.assertEqual(s.read('sets/0/info'), info(1, 6, 0, '0x1'))
        self.m.advance(114)  # 20 visits of 6 ns: back in set 0 at 120 ns
        self.assertEqual(s.state(), stateLine('active', target=pid, set_id=0))
        self.assertEqual(s.read('sets/0/info'), info(11, 60, 0, '0x1'))
        self.assertEqual(s.read('sets/1/info'), info(10, 60, 0, '0x1'))
        counts = s.read('counts').splitlines(keepends=True)
        self.assertEqual([counts[1], counts[3]], [countsLine(0, 1, 180, 120, 60), countsLine(1, 1, 150, 120, 60)])
        self.assertErrno(errno.EAGAIN, pfmfs_mount.readBytes, s.path('messages'), 4096, os.O_NONBLOCK)

    def test_stop_in_skid_takes_the_overflow(self):
        # Cycles with a period of 300 wrap at 100 ns; the interrupt would come
        # at the 311th cycle (104 ns). Stopped at 102 ns, the set takes its
        # overflow then: the notification, with the skid counted so far, and
        # the session stopped and masked until restart (pfmfs(5), ctl).
        s = self.newSession()
        pid = self.sleeper()
        s.pmc(0, 'UNHALTED_CORE_CYCLES')
        s.pmd(0, '-300 long_reset=-300 notify')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(102)
        self.assertEqual(s.readPmd(0), 6)
        self.assertEqual(s.state(), stateLine('active', target=pid))
        s.ctl('stop')
        self.assertEqual(s.state(), stateLine('masked', target=pid, queued=1))
        self.assertEqual(s.readPmd(0), 6)
        self.assertEqual(s.readMessages(), ovflLine(1, pid, pid, 102))
        self.m.advance(10)  # no late interrupt, nothing counts
        self.assertEqual(s.state(), stateLine('masked', target=pid))
        self.assertEqual(s.readPmd(0), 6)
        s.ctl('restart')  # the long reset, and still stopped
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        self.assertEqual(s.readPmd(0), neg(300))
        self.m.advance(10)
        self.assertEqual(s.readPmd(0), neg(300))


if __name__ == '__main__':
    pfmfs_mount.main()
