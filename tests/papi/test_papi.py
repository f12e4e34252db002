"""PAPI 7.0.0's perfmon2 component on a pfmfs mount.

build-papi.sh builds Debian 12's PAPI source twice against this build's
libpfm-compat: `plain` (unmodified) and `patched` (papi-7.0.0-perfmon2.patch:
the fix of PAPI's crash when it loads presets for a perfmon2 PMU, and the
architectural presets). This runs PAPI's utilities and its ctests that apply
to a counting PMU on a live mount, on the backend $PFMFS_BACKEND names (sim,
with the real clock, or perf), and checks each result against the table in
docs/libpfm-compat.md ("PAPI's tests on pfmfs"), which EXPECTED below is.

Usage: [PFMFS_BACKEND=perf] tests/papi/run.sh BUILD_DIR (which builds PAPI
first); as meson tests, papi and papi-perf.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
import pfmfs_mount as pm  # noqa: E402

CACHE = os.environ.get('PFMFS_PAPI_CACHE', '/var/cache/pfmfs-tests/papi')
PLAIN = os.path.join(CACHE, 'plain', 'src')
PATCHED = os.path.join(CACHE, 'patched', 'src')
RTSIG = signal.SIGRTMIN + 2  # the signal PAPI's perfmon2 component asks for (F_SETSIG)


def signalName(n):
    if signal.SIGRTMIN <= n <= signal.SIGRTMAX:
        return f'SIGRTMIN+{n - signal.SIGRTMIN}'
    return signal.Signals(n).name

PRESET_TESTS = ['zero', 'first', 'second', 'multiplex1', 'multiplex2', 'overflow', 'overflow_twoevents',
                'attach2', 'attach3']
OTHER_TESTS = ['fork', 'fork2', 'exec', 'exec2', 'forkexec', 'forkexec2', 'forkexec3', 'forkexec4',
               'all_native_events', 'cmpinfo', 'hwinfo']

# The presets the patched PAPI finds on the architectural PMU (the sim's model).
ARCH_PRESETS = {'PAPI_TOT_CYC', 'PAPI_TOT_INS', 'PAPI_REF_CYC', 'PAPI_L3_TCA', 'PAPI_L3_TCM', 'PAPI_BR_INS',
                'PAPI_BR_MSP'}


def expected(build):
    """What each ctest does on this backend with this build: PASSED, SKIPPED,
    FAILED or 'killed by SIGNAME', or a set of those where timing decides."""
    if pm.PERF or build == 'plain':
        # No preset: perf-sw has no cycle or instruction counter; the plain
        # PAPI runs on the sim under the default name, the model's, which
        # its preset table does not know (it crashes on the one it knows).
        table = {t: 'SKIPPED' for t in PRESET_TESTS}
    else:
        table = {t: 'PASSED' for t in PRESET_TESTS}
        table['second'] = 'FAILED'  # the sim counts at user level only: PAPI_DOM_KERNEL reads 0
        # perfmon2 sends an attached thread's end message with the program's
        # F_SETSIG signal; PAPI installs no handler for it outside overflow.
        # The signal comes from the library's thread once the daemon has seen
        # the exit: a program that finishes first passes. And PAPI's own race:
        # its attach checks that the child is traced with PTRACE_ATTACH, which
        # succeeds, stops the child and skips the test when the child has not
        # reached its PTRACE_TRACEME yet (a loaded machine).
        table['attach2'] = table['attach3'] = {f'killed by {signalName(RTSIG)}', 'PASSED', 'SKIPPED'}
    table.update({t: 'PASSED' for t in OTHER_TESTS})
    return table


def outcome(proc):
    if proc.returncode < 0:
        return f'killed by {signalName(-proc.returncode)}'
    out = proc.stdout + proc.stderr
    if 'SKIPPED' in out:
        return 'SKIPPED'
    if 'PASSED' in out and proc.returncode == 0:
        return 'PASSED'
    return 'FAILED'


# PAPI's ctests check counts against the work done (zero: instructions
# within 100 % of the loop's size; first: identical loops alike within 10 %
# and 20 %). The sim on the real clock counts a loop's CPU time, and a loaded
# machine (a host that takes the vCPU away in mid-loop, a neighbour sharing
# the core) can stretch it beyond those bounds. Such a failure of PAPI's own
# check, not of a PAPI call, is retried: a pass in three shows the library
# does what the test asks; three in a row are a real fault.
VALIDATION_ATTEMPTS = 3


def failedValidation(proc):
    """The check of its counts a FAILED ctest failed (test_fail prints
    `Error: CHECK`), or None when it was a PAPI call (`Error in CALL: why`)."""
    m = re.search(r'^Line # \d+ Error: (.*)$', proc.stdout, re.M)
    return m.group(1) if m and 'PAPI_' not in m.group(1) else None


class PapiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mount = pm.Mount(manual_clock=False).start()

    @classmethod
    def tearDownClass(cls):
        cls.mount.close()

    def env(self, build, **extra):
        env = dict(os.environ, PFMFS_MOUNT=self.mount.mnt)
        env.pop('PFMFS_PMU_NAME', None)
        # The unmodified PAPI runs with nothing set (the library's default
        # name is the model's); the patched one opts in to libpfm 3.10's
        # name for its presets (docs/libpfm-compat.md, "PAPI") where there
        # are some: not on perf-sw, which has no cycles or instructions.
        if build == 'patched' and not pm.PERF:
            env['PFMFS_PMU_NAME'] = 'Intel architectural PMU'
        env.update(extra)
        return env

    def run_papi(self, build, path, *args, preexec=None, **extra):
        """Runs one PAPI program in a process group of its own, its output
        into files, and kills what is left of the group when it ends: PAPI's
        attach tests can leave their child stopped for good (below)."""
        root = PLAIN if build == 'plain' else PATCHED
        exe = os.path.join(root, path)
        with tempfile.TemporaryFile('w+') as out, tempfile.TemporaryFile('w+') as err:
            proc = subprocess.Popen([exe, *args], cwd=os.path.dirname(exe), env=self.env(build, **extra),
                                    stdout=out, stderr=err, start_new_session=True, preexec_fn=preexec)
            try:
                proc.wait(timeout=300)
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
            out.seek(0)
            err.seek(0)
            return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), err.read())

    def util(self, build, name, *args):
        proc = self.run_papi(build, os.path.join('utils', name), *args)
        self.assertEqual(proc.returncode, 0, f'{name} {args}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}')
        return proc.stdout

    # ---- the utilities

    def test_component_avail_lists_perfmon_active(self):
        for build in ('plain', 'patched'):
            out = self.util(build, 'papi_component_avail')
            active = out.split('Active components:', 1)[1]
            self.assertRegex(active, r'Name:\s+perfmon\s+Linux perfmon2 CPU counters', build)

    def test_native_avail_lists_the_mounts_events(self):
        with open(os.path.join(self.mount.mnt, 'pmu', 'events')) as f:
            names = {re.match(r'name=(\S+)', line).group(1) for line in f}
        for build in ('plain', 'patched'):
            out = self.util(build, 'papi_native_avail')
            listed = set(re.findall(r'^\| ([A-Z][A-Z0-9_]+)\s+\|$', out, re.M))
            self.assertEqual(listed, names, build)

    def test_avail_finds_the_architectural_presets(self):
        # papi_avail lists every preset with Yes or No in its Avail column.
        out = self.util('patched', 'papi_avail')
        available = set(re.findall(r'^(PAPI_\w+)\s+0x[0-9a-f]+\s+Yes', out, re.M))
        self.assertIn('PAPI_TOT_CYC', out)
        self.assertEqual(available, set() if pm.PERF else ARCH_PRESETS)
        out = self.util('plain', 'papi_avail')
        self.assertIn('PAPI_TOT_CYC', out)
        self.assertEqual(set(re.findall(r'^(PAPI_\w+)\s+0x[0-9a-f]+\s+Yes', out, re.M)), set())

    def counts(self, out):
        return {m.group(1): int(m.group(2)) for m in re.finditer(r'^(\S+) : \s*(-?\d+)\s*$', out, re.M)}

    @pm.simOnly
    def test_command_line_counts_cycles_and_instructions_at_the_sims_rates(self):
        # Both counters cover the same stretch of the thread's CPU time: 3
        # cycles and 2 instructions per ns.
        for build in ('plain', 'patched'):
            c = self.counts(self.util(build, 'papi_command_line', 'perfmon:::UNHALTED_CORE_CYCLES',
                                      'perfmon:::INSTRUCTIONS_RETIRED'))
            cycles, instructions = c['perfmon:::UNHALTED_CORE_CYCLES'], c['perfmon:::INSTRUCTIONS_RETIRED']
            self.assertGreater(instructions, 1_000_000, build)
            self.assertAlmostEqual(cycles / instructions, 1.5, delta=0.01, msg=build)
        c = self.counts(self.util('patched', 'papi_command_line', 'PAPI_TOT_CYC', 'PAPI_TOT_INS'))
        self.assertAlmostEqual(c['PAPI_TOT_CYC'] / c['PAPI_TOT_INS'], 1.5, delta=0.01)

    @pm.perfOnly
    def test_command_line_counts_task_clock(self):
        for build in ('plain', 'patched'):
            c = self.counts(self.util(build, 'papi_command_line', 'perfmon:::TASK_CLOCK', 'perfmon:::PAGE_FAULTS'))
            self.assertGreater(c['perfmon:::TASK_CLOCK'], 1_000_000, build)  # ns: the loop runs for ms
            self.assertGreaterEqual(c['perfmon:::PAGE_FAULTS'], 0, build)

    @pm.simOnly
    def test_unpatched_papi_crashes_on_the_architectural_name(self):
        # The PAPI bug the patch fixes (docs/libpfm-compat.md, "PAPI"): with
        # libpfm 3.10's name, which its preset table knows, PAPI_library_init
        # crashes. Should Debian's PAPI fix it, this fails: update the docs.
        proc = self.run_papi('plain', os.path.join('utils', 'papi_avail'), PFMFS_PMU_NAME='Intel architectural PMU')
        self.assertEqual(outcome(proc), 'killed by SIGSEGV', proc.stdout[-1000:] + proc.stderr[-1000:])

    # ---- the ctests

    def check_ctests(self, build):
        want = expected(build)
        got = {}
        for name in PRESET_TESTS + OTHER_TESTS:
            for attempt in range(VALIDATION_ATTEMPTS):
                proc = self.run_papi(build, os.path.join('ctests', name), 'TESTS_QUIET')
                got[name] = outcome(proc)
                if not (got[name] == 'FAILED' and want[name] == 'PASSED' and failedValidation(proc)):
                    break
                print(f'{build} {name}: try {attempt + 1} failed its own check '
                      f'({failedValidation(proc)}); again', file=sys.stderr)
            if got[name] == 'PASSED':
                # PAPI prints its component's errors; a pass with one is not
                # clean, but for what a late overflow signal makes PAPI's
                # handler say (docs/libpfm-compat.md, "PAPI's tests on pfmfs").
                # No signal comes after PAPI_stop (pfm_stop waits for it,
                # docs/libpfm-compat.md): nothing for the handler to complain of.
                out = proc.stdout + proc.stderr
                self.assertNotIn('PAPI Error', out, f'{build} {name}')
        differ = {n: got[n] for n in got if got[n] != want[n] and not (isinstance(want[n], set) and got[n] in want[n])}
        self.assertEqual(differ, {}, f'{build}: these ctests did not do what docs/libpfm-compat.md says: '
                                     f'{ {n: want[n] for n in differ} }')

    def test_only_a_failed_count_check_is_tried_again(self):
        # test_fail's two shapes (PAPI's testlib/test_utils.c): a check of
        # the counts, and a PAPI call that returned an error.
        def failed(out):
            return subprocess.CompletedProcess([], 1, out, '')
        self.assertEqual(failedValidation(failed('FAILED!!!\nLine # 184 Error: Cycle Col1!=Col2\nSome tests')),
                         'Cycle Col1!=Col2')
        self.assertIsNone(failedValidation(failed('FAILED!!!\nLine # 82 Error in PAPI_start: Invalid argument\n')))
        self.assertIsNone(failedValidation(failed('FAILED!!!\nLine # 51 Error: PAPI_library_init\n')))
        self.assertIsNone(failedValidation(failed('PASSED\n')))

    def test_ctests_of_the_patched_papi(self):
        self.check_ctests('patched')

    def test_ctests_of_the_unmodified_papi(self):
        self.check_ctests('plain')

    @pm.simOnly
    def test_attach_tests_pass_when_the_end_signal_is_ignored(self):
        # What kills attach2 and attach3 is only the end message's signal:
        # with it ignored they count the child and pass.
        def ignore():
            signal.signal(RTSIG, signal.SIG_IGN)
        for name in ('attach2', 'attach3'):
            # PAPI's PTRACE_TRACEME race (expected()) skips a run when the
            # child is not scheduled before the parent's attach: 1 in 15 with
            # both cores busy here, more on a slower machine. A skip comes
            # early and costs little; a run that is not skipped must pass.
            for attempt in range(20):
                proc = self.run_papi('patched', os.path.join('ctests', name), 'TESTS_QUIET', preexec=ignore)
                if outcome(proc) != 'SKIPPED':
                    break
            self.assertEqual(outcome(proc), 'PASSED', f'{name}: {proc.stdout[-1500:]}{proc.stderr[-1500:]}')


if __name__ == '__main__':
    for build in (PLAIN, PATCHED):
        if not os.path.exists(os.path.join(build, 'ctests', 'zero')):
            print(f'FAIL: no PAPI build in {build}: run build-papi.sh first', file=sys.stderr)
            sys.exit(1)
    pm.main()
