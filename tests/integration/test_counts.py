#!/usr/bin/env python3
# Exact counts through the mount under the manual clock (SPEC §2.3, §3.2, §4):
# general and fixed counters, stop freezing counts, PMD writes (two's
# complement included), 64-bit emulation at width 16, the counts file, regs
# read and copy between sets, and fresh values from pread at offset 0.
import os
import subprocess
import sys
import time

import pfmfs_mount
from pfmfs_mount import MountTestCase, countsLine, neg, stateLine

AVAIL = 'avail_pmcs=0x1000f avail_pmds=0x7000f'


def program(s, set_id=0):
    """cycles on pmc0, instructions on pmc1, the three fixed counters at user level."""
    s.pmc(0, '0x1003c', set_id)
    s.pmc(1, 'INSTRUCTION_RETIRED:u', set_id)
    s.pmc(16, '0x222', set_id)


class CountsTest(MountTestCase):

    def test_exact_counts(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        self.assertEqual(s.read('sets/0/pmc0'), '0x1003c\n')
        self.assertEqual(s.read('sets/0/pmc1'), '0x100c0\n')
        self.assertEqual(s.read('sets/0/pmc16'), '0x222\n')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(1_000_000)
        self.assertEqual(s.readPmd(0), 3_000_000)
        self.assertEqual(s.readPmd(1), 2_000_000)
        self.assertEqual(s.readPmd(16), 2_000_000)
        self.assertEqual(s.readPmd(17), 3_000_000)
        self.assertEqual(s.readPmd(18), 2_500_000)
        self.assertEqual(s.readPmd(2), 0)  # unused counters stay 0
        self.assertEqual(s.read('sets/0/pmd3'), '0\n')
        self.assertEqual(s.read('sets/0/pmd0'), '3000000\n')
        self.assertEqual(s.state(), stateLine('active', target=pid))
        self.assertEqual(s.read('sets/0/info'),
                         f'runs=1 duration_ns=1000000 timeout_ns=0 ovfl_pmds=0x0 {AVAIL}\n')
        self.assertEqual(s.read('counts'),
                         countsLine(0, 0, 3_000_000, 1_000_000, 1_000_000)
                         + countsLine(0, 1, 2_000_000, 1_000_000, 1_000_000)
                         + countsLine(0, 16, 2_000_000, 1_000_000, 1_000_000)
                         + countsLine(0, 17, 3_000_000, 1_000_000, 1_000_000)
                         + countsLine(0, 18, 2_500_000, 1_000_000, 1_000_000))
        self.assertEqual(s.read('counts').splitlines()[0],
                         'set=0 pmd=0 value=3000000 enabled_ns=1000000 running_ns=1000000 scaled=3000000')

    def test_stop_freezes_and_start_resumes(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(1000)
        s.ctl('stop')
        self.assertEqual(s.state(), stateLine('loaded', target=pid))
        self.m.advance(500_000)
        self.assertEqual(s.readPmd(0), 3000)
        self.assertEqual(s.readPmd(18), 2500)
        self.assertEqual(s.read('counts').splitlines()[0],
                         'set=0 pmd=0 value=3000 enabled_ns=1000 running_ns=1000 scaled=3000')
        s.ctl('start')
        self.m.advance(1000)
        self.assertEqual(s.readPmd(0), 6000)
        self.assertEqual(s.readPmd(1), 4000)
        self.assertEqual(s.read('sets/0/info'), f'runs=2 duration_ns=2000 timeout_ns=0 ovfl_pmds=0x0 {AVAIL}\n')
        # unload folds the counts; they stay readable, and reload counts on.
        s.ctl('unload')
        self.m.advance(1000)
        self.assertEqual(s.readPmd(0), 6000)
        self.assertEqual(s.readPmd(17), 6000)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(10)
        self.assertEqual(s.readPmd(0), 6030)

    def test_pmd_writes_read_back(self):
        s = self.newSession()
        cases = [('-1000', neg(1000)), ('0x10', 16), ('12345', 12345), ('0', 0),
                 ('0xffffffffffffffff', 2**64 - 1), ('18446744073709551615', 2**64 - 1),
                 ('-1', 2**64 - 1), ('-9223372036854775808', 2**63), ('0XAB', 0xab)]
        for text, value in cases:
            with self.subTest(text=text):
                s.pmd(0, text)
                self.assertEqual(s.read('sets/0/pmd0'), f'{value}\n')
        s.write('sets/0/pmd17', '  42  \n')  # blanks around are fine
        self.assertEqual(s.readPmd(17), 42)

    def test_pmd_write_while_active_takes_effect_at_once(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(100)
        s.pmd(0, '100')
        self.assertEqual(s.readPmd(0), 100)
        self.m.advance(10)
        self.assertEqual(s.readPmd(0), 130)
        s.pmd(16, '-6')  # instructions, 2/ns: wraps to 0 after 3 ns
        self.m.advance(2)
        self.assertEqual(s.readPmd(16), neg(2))
        self.m.advance(1)
        self.assertEqual(s.readPmd(16), 0)  # a silent overflow: short reset 0
        self.m.advance(1)
        self.assertEqual(s.readPmd(16), 2)

    def test_pmc_writes_read_back(self):
        s = self.newSession()
        for k, text, shown in [(0, 'UNHALTED_CORE_CYCLES', '0x1003c'), (0, 'UNHALTED_CORE_CYCLES:u', '0x1003c'),
                               (1, 'LLC_MISSES:u', '0x1412e'), (2, '0x1003c no_emul64', '0x1003c no_emul64'),
                               (3, '65596', '0x1003c'), (0, '0', '0x0'), (16, '0x2', '0x2')]:
            with self.subTest(k=k, text=text):
                s.pmc(k, text)
                self.assertEqual(s.read(f'sets/0/pmc{k}'), shown + '\n')
        s.pmc(2, '0x1003c')  # a write without the word clears no_emul64
        self.assertEqual(s.read('sets/0/pmc2'), '0x1003c\n')

    def test_counts_lists_used_pmds_of_every_set(self):
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(3)
        s.pmc(1, 'BRANCH_INSTRUCTIONS_RETIRED')
        s.pmc(16, '0x20')  # fixed counter 1 only: cycles
        s.pmc(0, 'LLC_REFERENCES', 3)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(1000)
        self.assertEqual(s.read('counts'),
                         countsLine(0, 1, 400, 1000, 1000)
                         + countsLine(0, 17, 3000, 1000, 1000)
                         + countsLine(3, 0, 0, 1000, 0))
        self.assertIn('set=3 pmd=0 value=0 enabled_ns=1000 running_ns=0 scaled=-\n', s.read('counts'))
        # Freeing a counter (writing 0) takes it out of counts.
        s.ctl('stop')
        s.pmc(1, '0')
        self.assertEqual(s.read('counts'),
                         countsLine(0, 17, 3000, 1000, 1000) + countsLine(3, 0, 0, 1000, 0))

    def test_system_mode_counts(self):
        s = self.newSession()
        s.write('mode', 'system')
        program(s)
        s.ctl('load 0')
        s.ctl('start')
        self.m.advance(2000)
        self.assertEqual(s.readPmd(0), 6000)
        self.assertEqual(s.readPmd(18), 5000)
        self.assertEqual(s.state(), stateLine('active', mode='system', target=0))

    def test_pread_at_offset_zero_gives_fresh_values(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        fd = os.open(s.path('sets/0/pmd0'), os.O_RDONLY)
        cfd = os.open(s.path('counts'), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 64, 0), b'0\n')
            self.m.advance(1000)
            self.assertEqual(os.pread(fd, 64, 0), b'3000\n')
            self.m.advance(1000)
            self.assertEqual(os.pread(fd, 64, 0), b'6000\n')
            self.assertEqual(os.pread(cfd, 4096, 0).decode().splitlines()[0],
                             'set=0 pmd=0 value=6000 enabled_ns=2000 running_ns=2000 scaled=6000')
        finally:
            os.close(fd)
            os.close(cfd)

    def test_small_reads_see_one_snapshot(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(777)
        whole = s.read('counts')
        fd = os.open(s.path('counts'), os.O_RDONLY)
        try:
            first = os.read(fd, 10)
            self.m.advance(1000)  # after the first read: not in this snapshot
            rest = b''
            while True:
                chunk = os.read(fd, 10)
                if not chunk:
                    break
                rest += chunk
        finally:
            os.close(fd)
        self.assertEqual((first + rest).decode(), whole)

    def test_regs_read_and_copy(self):
        s = self.newSession()
        program(s)
        self.assertEqual(s.read('sets/0/regs'), 'pmc0 0x1003c\npmc1 0x100c0\npmc16 0x222\n')
        s.pmd(0, '-1000 long_reset=-2000 short_reset=-3000 notify')
        s.pmd(17, '77')
        regs = s.read('sets/0/regs')
        lines = regs.splitlines()
        self.assertEqual(lines[:3], ['pmc0 0x1003c', 'pmc1 0x100c0', 'pmc16 0x222'])
        self.assertEqual(len(lines), 5)
        self.assertEqual(lines[3].split()[0], 'pmd0')
        self.assertEqual(pfmfs_mount.parseNumber(lines[3].split()[1]), neg(1000))
        self.assertEqual(lines[4].split()[0], 'pmd17')
        self.assertEqual(pfmfs_mount.parseNumber(lines[4].split()[1]), 77)
        self.assertTrue(regs.endswith('\n'))
        s.mkset(1)
        status, out, err = self.m.sh(f'cat sessions/{s.name}/sets/0/regs > sessions/{s.name}/sets/1/regs')
        self.assertEqual((status, err), (0, ''))
        self.assertEqual(s.read('sets/1/regs'), regs)
        for f in ('pmc0', 'pmc1', 'pmc16', 'pmd0', 'pmd17', 'pmd1'):
            self.assertEqual(s.read(f'sets/1/{f}'), s.read(f'sets/0/{f}'), f)

    def test_regs_write_applies_every_line(self):
        s = self.newSession()
        pid = self.sleeper()
        s.write('sets/0/regs', 'pmc0 UNHALTED_CORE_CYCLES\npmd0 -3000 short_reset=-3000\n\npmc16 0x20\n')
        self.assertEqual(s.read('sets/0/pmc0'), '0x1003c\n')
        self.assertEqual(s.read('sets/0/pmc16'), '0x20\n')
        self.assertEqual(s.readPmd(0), neg(3000))
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(1500)  # overflow at 1000 ns: short reset, 500 ns more
        self.assertEqual(s.readPmd(0), neg(1500))
        self.assertEqual(s.readPmd(17), 4500)

    def test_regs_copy_keeps_the_counting_behaviour(self):
        s = self.newSession()
        pid = self.sleeper()
        s.write('sets/0/regs', 'pmc0 0x1003c\npmd0 -3000 short_reset=-3000\n')
        s.mkset(1)
        self.m.sh(f'cat sessions/{s.name}/sets/0/regs > sessions/{s.name}/sets/1/regs')
        s.ctl(f'load {pid} set=1')
        s.ctl('start')
        self.m.advance(1500)
        self.assertEqual(s.readPmd(0, 1), neg(1500))  # the short reset came along
        self.assertEqual(s.readPmd(0, 0), neg(3000))
        self.assertEqual(s.read('sets/1/info').split()[3], 'ovfl_pmds=0x1')


def cpuNs(pid):
    """A thread's CPU time, from the file the sim's real clock reads."""
    with open(f'/proc/{pid}/schedstat') as f:
        return int(f.read().split()[0])


class RealClockCountsTest(MountTestCase):
    """Without the manual clock a thread's time is its CPU time: cycles are
    3 per ns of it, within the CPU time measured around the experiment."""

    manual_clock = False

    def test_cycles_follow_cpu_time(self):
        burn = subprocess.Popen([sys.executable, '-c', 'import time\nt = time.time()\nwhile time.time() - t < 3: pass'])
        self.addCleanup(burn.wait)
        self.addCleanup(burn.kill)
        s = self.newSession()
        s.pmc(0, '0x1003c')
        s.pmc(16, '0x200')  # reference cycles, 2.5/ns
        c0 = cpuNs(burn.pid)
        s.ctl(f'load {burn.pid}')
        s.ctl('start')
        c1 = cpuNs(burn.pid)
        time.sleep(0.3)
        c2 = cpuNs(burn.pid)
        cycles = s.readPmd(0)
        c3 = cpuNs(burn.pid)
        self.assertGreater(c2 - c1, 50_000_000)  # the burner ran
        self.assertGreaterEqual(cycles, 3 * (c2 - c1))
        self.assertLessEqual(cycles, 3 * (c3 - c0))
        s.ctl('stop')
        c4 = cpuNs(burn.pid)
        ref = s.readPmd(18)
        self.assertGreaterEqual(ref, (5 * (c2 - c1)) // 2)
        self.assertLessEqual(ref, (5 * (c4 - c0)) // 2 + 1)
        self.assertEqual(s.readPmd(18), ref)  # stopped: frozen


class WidthSixteenTest(MountTestCase):
    """64-bit emulation with 16-bit counters: counts past 2^16 stay exact."""

    mount_args = ['--sim-width=16']

    def test_info_shows_the_width(self):
        self.assertIn(' width=16 ', self.m.read('pmu/info'))
        self.assertEqual(self.m.read('pmu/desc/pmd0/width'), '16\n')

    def test_counts_past_the_counter_width(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(100_000)
        self.assertEqual(s.readPmd(0), 300_000)
        self.assertEqual(s.readPmd(1), 200_000)
        self.assertEqual(s.readPmd(18), 250_000)
        for _ in range(7):
            self.m.advance(12_345)
        self.assertEqual(s.readPmd(0), 300_000 + 3 * 7 * 12_345)
        self.assertEqual(s.readPmd(17), 300_000 + 3 * 7 * 12_345)
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_written_upper_bits_survive(self):
        s = self.newSession()
        pid = self.sleeper()
        program(s)
        s.pmd(0, str(5 << 40))
        s.pmd(1, '70000')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(30_000)
        self.assertEqual(s.readPmd(0), (5 << 40) + 90_000)
        self.assertEqual(s.readPmd(1), 130_000)
        s.pmd(0, '-30')  # the 64-bit wrap at 10 ns: silent without notify, short reset 0
        self.m.advance(10)
        self.assertEqual(s.readPmd(0), 0)
        self.m.advance(5)
        self.assertEqual(s.readPmd(0), 15)
        self.assertEqual(s.state(), stateLine('active', target=pid))

    def test_no_emul64_makes_the_hardware_wrap_visible(self):
        s = self.newSession()
        pid = self.sleeper()
        s.pmc(0, '0x1003c no_emul64')
        s.pmd(0, f'{0x10000 - 300} notify long_reset={0x10000 - 600}')
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(100)  # 300 cycles wrap the 16-bit counter
        self.assertEqual(s.state(), stateLine('masked', target=pid, queued=1))
        s.ctl('restart')
        self.assertEqual(s.readPmd(0), 0x10000 - 600)


if __name__ == '__main__':
    pfmfs_mount.main()
