#!/usr/bin/env python3
# The experiments of the other tests driven only by shell commands (sh -c with
# mkdir, echo, cat, ls, rmdir), asserting their exact output and the exit
# status and message of every echo or mkdir that must fail. Under the sim's
# manual clock a whole experiment is one script; on every backend an
# experiment on a Worker target is two scripts around the target's work.

import pfmfs_mount
from pfmfs_mount import INTEL, PMU, SIM, TEST_USER, MountTestCase, neg, simOnly

A, B = PMU.pmc_a, PMU.pmc_b  # PMC values that count at user level
A_NAME, B_NAME = PMU.event_a[0], PMU.event_b[0]
RESERVED = f'{int(A, 16) | PMU.reserved:#x}'


class ShellTest(MountTestCase):

    def run_sh(self, script, pid=None, user=None, expect_status=0):
        env_prefix = f'PID={pid}; ' if pid is not None else ''
        status, out, err = self.m.sh(env_prefix + script, user=user)
        self.assertEqual(status, expect_status, f'stdout={out!r} stderr={err!r}')
        return out, err

    def cleanupSession(self, name):
        s = self.m.session(name)
        self.addCleanup(s.destroy)
        return s

    @simOnly
    def test_counting_experiment(self):
        pid = self.sleeper()
        self.cleanupSession('count')
        out, err = self.run_sh('''set -e
            mkdir sessions/count
            cd sessions/count
            ls
            ls sets sets/0
            echo 0x1003c > sets/0/pmc0
            echo INSTRUCTION_RETIRED:u > sets/0/pmc1
            echo 0x222 > sets/0/pmc16
            cat sets/0/regs
            echo "load $PID" > ctl
            echo start > ctl
            cat state
            echo 1000000 > "$MNT/pmu/sim/advance"
            cat sets/0/pmd0 sets/0/pmd1 sets/0/pmd16 sets/0/pmd17 sets/0/pmd18
            echo stop > ctl
            echo 1000000 > ../../pmu/sim/advance
            cat counts
            cat sets/0/info
            echo unload > ctl
            cat state
            cd ..
            rmdir count
            ls
            ''', pid)
        self.assertEqual(out, (
            'counts\nctl\nerror\nflags\nmessages\nmode\nmsg\nsamples\nsets\nsmpl_buf\nsmpl_fmt\nstate\n'
            'sets:\n0\n\nsets/0:\ninfo\npmc0\npmc1\npmc16\npmc2\npmc3\npmd0\npmd1\npmd16\npmd17\npmd18\npmd2\npmd3\n'
            'pmds\nregs\nswitch\n'
            'pmc0 0x1003c\npmc1 0x100c0\npmc16 0x222\n'
            f'state=active mode=thread target={pid} set=0 queued=0 lost=0\n'
            '3000000\n2000000\n2000000\n3000000\n2500000\n'
            'set=0 pmd=0 value=3000000 enabled_ns=1000000 running_ns=1000000 scaled=3000000\n'
            'set=0 pmd=1 value=2000000 enabled_ns=1000000 running_ns=1000000 scaled=2000000\n'
            'set=0 pmd=16 value=2000000 enabled_ns=1000000 running_ns=1000000 scaled=2000000\n'
            'set=0 pmd=17 value=3000000 enabled_ns=1000000 running_ns=1000000 scaled=3000000\n'
            'set=0 pmd=18 value=2500000 enabled_ns=1000000 running_ns=1000000 scaled=2500000\n'
            'runs=1 duration_ns=1000000 timeout_ns=0 ovfl_pmds=0x0 avail_pmcs=0x1000f avail_pmds=0x7000f\n'
            'state=unloaded mode=thread target=- set=0 queued=0 lost=0\n'))
        self.assertEqual(err, '')

    @simOnly
    def test_multiplexing_experiment(self):
        pid = self.sleeper()
        self.cleanupSession('mpx')
        out, err = self.run_sh('''set -e
            mkdir sessions/mpx && cd sessions/mpx
            mkdir sets/1
            echo UNHALTED_CORE_CYCLES > sets/0/pmc0
            echo INSTRUCTION_RETIRED > sets/1/pmc0
            echo "time 1000000" > sets/0/switch
            echo "time 1000000" > sets/1/switch
            cat sets/1/switch
            echo "load $PID" > ctl
            echo start > ctl
            echo 10500000 > "$MNT/pmu/sim/advance"
            cat counts
            cat sets/0/info sets/1/info
            cut -d' ' -f1,2 state
            ''', pid)
        self.assertEqual(out, (
            'time 1000000\n'
            'set=0 pmd=0 value=16500000 enabled_ns=10500000 running_ns=5500000 scaled=31500000\n'
            'set=1 pmd=0 value=10000000 enabled_ns=10500000 running_ns=5000000 scaled=21000000\n'
            'runs=6 duration_ns=5500000 timeout_ns=500000 ovfl_pmds=0x0 avail_pmcs=0x1000f avail_pmds=0x7000f\n'
            'runs=5 duration_ns=5000000 timeout_ns=1000000 ovfl_pmds=0x0 avail_pmcs=0x1000f avail_pmds=0x7000f\n'
            'state=active mode=thread\n'))

    @simOnly
    def test_overflow_experiment(self):
        pid = self.sleeper()
        self.cleanupSession('ovfl')
        ip = pfmfs_mount.simIp(1000)
        out, err = self.run_sh('''set -e
            mkdir sessions/ovfl && cd sessions/ovfl
            echo 0x1003c > sets/0/pmc0
            echo -3000 long_reset=-6000 notify > sets/0/pmd0
            cat sets/0/pmd0
            echo "load $PID" > ctl
            echo start > ctl
            echo 1000 > "$MNT/pmu/sim/advance"
            cat state
            dd if=messages bs=4096 count=1 2>/dev/null
            grep -c . state
            echo restart > ctl
            cat sets/0/pmd0
            cut -d' ' -f1 state
            ''', pid)
        self.assertEqual(out, (
            f'{neg(3000)}\n'
            f'state=masked mode=thread target={pid} set=0 queued=1 lost=0\n'
            f'type=ovfl seq=1 set=0 pmds=0x1 pid={pid} tid={pid} cpu=0 ip={ip:#x}\n'
            '1\n'
            f'{neg(6000)}\n'
            'state=active\n'))

    def test_counting_experiment_on_a_worker(self):
        w = self.worker()
        self.cleanupSession('count')
        out, err = self.run_sh(f'''set -e
            mkdir sessions/count
            cd sessions/count
            ls
            ls sets sets/0
            echo {A_NAME} > sets/0/pmc0
            echo {B_NAME}:u > sets/0/pmc1
            cat sets/0/regs
            echo "load $PID" > ctl
            echo start > ctl
            cat state
            ''', w.pid)
        self.assertEqual(out, (
            'counts\nctl\nerror\nflags\nmessages\nmode\nmsg\nsamples\nsets\nsmpl_buf\nsmpl_fmt\nstate\n'
            'sets:\n0\n\nsets/0:\n' + ''.join(f + '\n' for f in PMU.set_files)
            + f'pmc0 {A}\npmc1 {B}\n'
            f'state=active mode=thread target={w.pid} set=0 queued=0 lost=0\n'))
        self.assertEqual(err, '')
        d = self.driven(w)
        d.drive(3000)
        out, err = self.run_sh('''set -e
            cd sessions/count
            cat sets/0/pmd0
            echo stop > ctl
            cat sets/0/pmd0
            cut -d' ' -f1,2,3 counts
            cut -d' ' -f1 sets/0/info
            echo unload > ctl
            cat state
            cd ..
            rmdir count
            ls
            ''')
        value = d.check(int(out.split()[0]))
        self.assertEqual(out, (
            f'{value}\n{value}\n'
            f'set=0 pmd=0 value={value}\n'
            f'set=0 pmd=1 value={int(out.splitlines()[3].split("=")[-1])}\n'
            'runs=1\n'
            'state=unloaded mode=thread target=- set=0 queued=0 lost=0\n'))
        self.assertEqual(err, '')

    def test_overflow_experiment_on_a_worker(self):
        w = self.worker()
        pid = w.pid
        self.cleanupSession('ovfl')
        out, err = self.run_sh(f'''set -e
            mkdir sessions/ovfl && cd sessions/ovfl
            echo {A} > sets/0/pmc0
            echo -3000 long_reset=-6000 notify > sets/0/pmd0
            cat sets/0/pmd0
            echo "load $PID" > ctl
            echo start > ctl
            ''', pid)
        self.assertEqual((out, err), (f'{neg(3000)}\n', ''))
        self.drive(w, 3000)
        s = self.m.session('ovfl')
        self.assertEventually(s.state, f'state=masked mode=thread target={pid} set=0 queued=1 lost=0\n')
        out, err = self.run_sh('''set -e
            cd sessions/ovfl
            cat state
            dd if=messages bs=4096 count=1 2>/dev/null
            grep -c . state
            echo restart > ctl
            cat sets/0/pmd0
            cut -d' ' -f1 state
            ''')
        lines = out.splitlines(True)
        self.assertEqual(len(lines), 5, out)
        self.assertEqual(lines[0], f'state=masked mode=thread target={pid} set=0 queued=1 lost=0\n')
        self.assertOvflLines(lines[1], [(1, pid, pid, 1000)])
        self.assertEqual(lines[2:], ['1\n', f'{neg(6000)}\n', 'state=active\n'])

    def test_failing_commands(self):
        pid = self.sleeper()
        s = self.newSession('fail')
        s.ctl(f'load {pid}')
        cases = [
            # (command, exit status, text stderr must contain)
            (f'echo "load {pid}" > ctl', 1, 'I/O error'),  # dash's echo names no errno
            (f'/bin/echo "load {pid}" > ctl', 1, 'Device or resource busy'),
            ('/bin/echo bogus > ctl', 1, 'Invalid argument'),
            ('echo bogus > ctl', 1, ''),
            ('/bin/echo system > mode', 1, 'Device or resource busy'),
            (f'/bin/echo {RESERVED} > sets/0/pmc0', 1, 'Invalid argument'),
            ('/bin/echo x > sets/0/pmd0', 1, 'Invalid argument'),
            ('echo 5 > state', 2, 'Permission denied'),
            ('echo 5 > counts', 2, 'Permission denied'),
            ('echo x > newfile', 2, 'Operation not permitted'),
            ('mkdir sets/1', 1, 'Device or resource busy'),
            ('mkdir ../fail', 1, 'File exists'),
            ('mkdir ../bad:name', 1, 'Invalid argument'),
            ('rmdir sets/0', 1, 'Device or resource busy'),
            (f'cat sets/0/pmc{PMU.missing_pmc}', 1, 'No such file or directory'),
            ('cat nothing', 1, 'No such file or directory'),
            ('dd if=msg bs=63 count=1 iflag=nonblock', 1, 'Invalid argument'),
            ('dd if=messages bs=4096 count=1 iflag=nonblock', 1, 'Resource temporarily unavailable'),
        ]
        for command, status, text in cases:
            with self.subTest(command=command):
                rc, out, err = self.m.sh(command, cwd=s.dir)
                self.assertEqual(rc, status, f'stderr={err!r}')
                self.assertIn(text, err)
                self.assertNotEqual(err, '')
        rc, out, err = self.m.sh('cat error', cwd=s.dir)
        self.assertEqual(rc, 0)
        self.assertNotEqual(out.strip(), '')
        self.assertEqual(s.state(), f'state=loaded mode=thread target={pid} set=0 queued=0 lost=0\n')

    def test_error_after_each_refusal(self):
        self.cleanupSession('errs')
        out, err = self.run_sh('''
            mkdir sessions/errs && cd sessions/errs
            grep -q . error || echo empty
            echo stop > ctl 2>/dev/null; echo "status $?"
            grep -q . error && echo reason
            echo bogusflag > flags 2>/dev/null; echo "status $?"
            grep -c bogusflag error
            cat flags
            ''')
        self.assertEqual(out, 'empty\nstatus 1\nreason\nstatus 1\n1\n\n')

    def test_append_and_offsets_are_ignored(self):
        pid = self.sleeper()
        self.cleanupSession('app')
        out, err = self.run_sh('''set -e
            mkdir sessions/app && cd sessions/app
            echo "load $PID" >> ctl
            echo start >> ctl
            echo {A} >> sets/0/pmc0
            echo {B} >> sets/0/pmc0
            cat sets/0/pmc0
            printf 'stop' > ctl
            cut -d' ' -f1 state
            '''.replace('{A}', A).replace('{B}', B), pid)
        self.assertEqual(out, f'{B}\nstate=loaded\n')

    def test_regs_copy_with_cat(self):
        k, v = (16, '0x20') if INTEL else (PMU.pmcs[-1], B)
        self.cleanupSession('copy')
        out, err = self.run_sh('''set -e
            mkdir sessions/copy && cd sessions/copy
            mkdir sets/1 sets/2
            printf 'pmc0 {A}\\npmc{K} {V}\\n' > sets/0/regs
            cat sets/0/regs > sets/1/regs
            cat sets/1/regs > sets/2/regs
            cat sets/2/regs
            cat sets/2/pmc{K}
            cmp sets/0/regs sets/2/regs && echo same
            '''.replace('{A}', A).replace('{K}', str(k)).replace('{V}', v))
        self.assertEqual(out, f'pmc0 {A}\npmc{k} {v}\n{v}\nsame\n')

    def test_user_experiment(self):
        w = self.worker(TEST_USER)
        pid = w.pid
        self.cleanupSession('user')
        kernel = PMU.pmc(PMU.event_a, usr=False, kernel=True)
        advance = '/bin/echo 1 > "$MNT/pmu/sim/advance" || echo "advance refused"' if SIM else ''
        rc, out, err = self.m.sh(f'''set -e
            mkdir sessions/user && cd sessions/user
            stat -c '%U %a' .
            echo {A_NAME} > sets/0/pmc0
            /bin/echo {kernel} > sets/0/pmc1 || echo "kernel refused"
            echo "load {pid}" > ctl
            echo start > ctl
            {advance}
            ''', user=TEST_USER)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, f'{TEST_USER} 700\nkernel refused\n' + ('advance refused\n' if SIM else ''))
        self.assertIn('Operation not permitted', err)
        if SIM:
            self.assertIn('Permission denied', err)
        d = self.driven(w)
        d.drive(3000)  # sim: 1000 ns
        rc, out, err = self.m.sh('cat sessions/user/sets/0/pmd0', user=TEST_USER)
        self.assertEqual(rc, 0)
        d.check(int(out))  # sim: 3000
        self.assertEqual(out, f'{int(out)}\n')
        rc, out, err = self.m.sh('cat sessions/user/state', user=pfmfs_mount.TEST_USER2)
        self.assertEqual(rc, 1)
        self.assertIn('Permission denied', err)
        rc, out, err = self.m.sh('rmdir sessions/user', user=pfmfs_mount.TEST_USER2)
        self.assertEqual(rc, 1)
        self.assertTrue('Operation not permitted' in err or 'Permission denied' in err, err)
        rc, out, err = self.m.sh('rmdir sessions/user && ls sessions', user=TEST_USER)
        self.assertEqual(rc, 0, err)
        self.assertNotIn('user', out.split())

    def test_session_name_limits(self):
        long_name = 'n' * 64
        self.cleanupSession(long_name)
        out, err = self.run_sh(f'''
            mkdir sessions/{long_name} && echo ok64
            mkdir sessions/{long_name}x 2>/dev/null || echo "refused65 $?"
            rmdir sessions/{long_name} && echo gone
            rmdir sessions/{long_name} 2>/dev/null || echo "enoent $?"
            ''')
        self.assertEqual(out, 'ok64\nrefused65 1\ngone\nenoent 1\n')


if __name__ == '__main__':
    pfmfs_mount.main()
