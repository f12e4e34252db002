# Shared helpers of the integration tests: start pfmfsd on a temporary mount
# point, read and write its files with real syscalls, run code as
# unprivileged test users, drive target processes, and run shell commands.
#
# The suite runs on the backend named by $PFMFS_BACKEND: `sim` (the default:
# the sim backend, manual clock), `perf` (pfmfsd --pmu=perf, the real clock)
# or `x86` (pfmfsd --pmu=x86 over helper-kmod's pfmfs_helper.ko: in the QEMU
# guest of tests/vm/, on the module's test PMU).
# PMU gives each test what it needs of the backend in neutral terms (events
# that count, register indices, pmu/info); a test that needs the sim itself
# (manual clock, exact counts, --sim-* options) is marked @simOnly and is not
# collected at all in a perf or x86 run; one that needs events driven one at
# a time (the sim's clock, perf's page faults) is marked @exactEvents and is
# not collected in an x86 run, where the test PMU counts CPU time.
import atexit
import contextlib
import ctypes
import errno
import grp
import os
import pickle
import pwd
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

# How long a test waits for something that must happen (a mount, a daemon's
# exit, a thread asleep, a state reached): a poll, so a passing test never
# waits that long, and a machine many times slower than ours, busy and under
# TSan, still gets there. Checks that something does NOT happen pass their
# own, short, limits.
WAIT_S = 60.0
MOUNT_TIMEOUT_S = WAIT_S
EXIT_TIMEOUT_S = WAIT_S
SKIP_STATUS = 77  # meson's "skipped"

TEST_USER = 'pfmfs-test'
TEST_USER2 = 'pfmfs-test2'
TEST_GROUP = 'pfmfs-sys'  # the --system-group of test_permissions

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

U64 = 1 << 64
MSG = struct.Struct('<IIHHIQ5Q')  # pfarg_msg_t: 64 bytes


def neg(n):
    """The 64-bit two's complement of -n, as a PMD reads after writing -n."""
    return (U64 - n) % U64


def parseNumber(text):
    """A number in the syntax of a write: decimal, 0x hex or -decimal."""
    if text.startswith('-'):
        return neg(int(text[1:], 10))
    if text.lower().startswith('0x'):
        return int(text[2:], 16)
    return int(text, 10)


def simIp(t_ns):
    """The instruction pointer the sim backend reports for an overflow at
    target time t_ns (pmu/sim/sim_backend.cpp: a made-up but stable ip)."""
    return 0x401000 + ((t_ns // 64) % 0x1000) * 4


# ---- the backend ----------------------------------------------------------------

BACKEND = os.environ.get('PFMFS_BACKEND', 'sim')
if BACKEND not in ('sim', 'perf', 'x86'):
    raise SystemExit(f'PFMFS_BACKEND={BACKEND!r}: expected sim, perf or x86')
SIM = BACKEND == 'sim'
PERF = BACKEND == 'perf'
X86 = BACKEND == 'x86'
HELPER_DEVICE = '/dev/pfmfs_helper'

USR = 1 << 16  # PERFEVTSEL's privilege bits, the same on every backend's PMCs
OS = 1 << 17


class PmuTable:
    """What a backend's PMU looks like through the mount, and the names a
    backend-neutral test uses.

    event_a: (name, code) of the event a test drives on a Worker target
        (MountTestCase.drive): every unit of work counts `rate_a` of it.
    event_b: (name, code) of a second event that counts on the same target.
    reserved: a bit every PMC reserves (EINVAL with it set).
    exclusive_threads: a thread takes one loaded session at most (EBUSY).
    holds_threads: the backend can hold a thread (flags notify_block).
    inherits: the backend follows a thread's children (flags inherit).
    thread_system_coexist: thread and system sessions load at once.
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.pmc_mask = sum(1 << k for k in self.pmcs)
        self.pmd_mask = sum(1 << k for k in self.pmds)
        self.avail = f'avail_pmcs={self.pmc_mask:#x} avail_pmds={self.pmd_mask:#x}'
        self.set_files = sorted(['info', 'pmds', 'regs', 'switch'] + [f'pmc{k}' for k in self.pmcs]
                                + [f'pmd{k}' for k in self.pmds])
        self.last_pmd = self.pmds[-1]
        self.reserved = 1 << 32
        self.__dict__.setdefault('thread_system_coexist', True)

    def pmc(self, event, usr=True, kernel=False):
        """The PMC value selecting `event` ((name, code)) at those levels, 0x hex
        as a read shows it."""
        return f'{event[1] | (USR if usr else 0) | (OS if kernel else 0):#x}'

    def far(self, n):
        """A threshold of n events of event_a that a test's own overhead
        cannot reach: n on sim and perf, where only what a test drives counts;
        on x86 at least X86_FAR_NS of the target's CPU time, for there every
        command a Worker handles counts too (tens to hundreds of us of CPU in
        the QEMU guest, a few ms at worst: 10^5..10^7 cycles)."""
        return max(n, self.rate_a * X86_FAR_NS) if self.backend == 'x86' else n

    def below(self, n):
        """What a test may drive from 0 and still be below a threshold of n
        events (n from far()): all but 3 where events are driven one at a time
        (sim, perf); on x86 half of n, which leaves half of X86_FAR_NS of CPU
        time for what the test's commands cost on top."""
        return n // 2 if self.backend == 'x86' else n - 3

    def reach(self, n):
        """What a test drives from 0 to reach a threshold of n events: n on
        sim and perf; on x86 n // 10 more, a margin well over X86_TOLERANCE
        between the target's CPU time, by which the Worker burns, and the
        PMU's count of it."""
        return n + n // 10 if self.backend == 'x86' else n

    def past(self, n):
        """What a test drives after below(n) to reach n: the last 3 events on
        sim and perf."""
        return self.reach(n) - self.below(n)

    @property
    def pmc_a(self):
        return self.pmc(self.event_a)

    @property
    def pmc_b(self):
        return self.pmc(self.event_b)


# pmu/info's end when pfmfsd offers libpfm-compat's fast path: the feature
# (mapped reads: not on x86), the socket's name, which differs from one
# daemon to the next, and who listens on it (every backend: the sampling
# buffers).
FASTPATH_INFO = re.compile(r',fastpath( tick_ns=\d+) fastpath=@pfmfs-fastpath\.\d+\.[0-9a-f]{16} fastpath_pid=\d+ fastpath_uid=\d+\n$')
SOCKET_INFO = re.compile(r'( tick_ns=\d+) fastpath=@pfmfs-fastpath\.\d+\.[0-9a-f]{16} fastpath_pid=\d+ fastpath_uid=\d+\n$')


def baseInfo(text):
    """pmu/info without the fast path's feature and socket name."""
    return SOCKET_INFO.sub(r'\1\n', FASTPATH_INFO.sub(r'\1\n', text))


SIM_PMU = PmuTable(
    backend='sim', model='intel-arch-v2',
    info='backend=sim model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 '
         'features=fixed_counters,global_ctrl,ovfl_intr,inherit,cgroup tick_ns=1000000\n',
    pmcs=[0, 1, 2, 3, 16], pmds=[0, 1, 2, 3, 16, 17, 18],
    # Indices the description does not list (ENOENT as paths, EINVAL in regs).
    missing_pmc=4, missing_pmd=19,
    exclusive_threads=True, holds_threads=True, inherits=True,
    event_a=('UNHALTED_CORE_CYCLES', 0x3c), rate_a=3,
    event_b=('INSTRUCTION_RETIRED', 0xc0),
    events=[
        'name=UNHALTED_CORE_CYCLES code=0x3c pmcs=0x1000f desc="Core cycles while the thread is not halted" pmds=0x2000f',
        'name=INSTRUCTION_RETIRED code=0xc0 pmcs=0x1000f desc="Instructions retired" pmds=0x1000f '
        'aliases=INSTRUCTIONS_RETIRED',
        'name=UNHALTED_REFERENCE_CYCLES code=0x13c pmcs=0x1000f '
        'desc="Reference cycles at the TSC rate while the thread is not halted" pmds=0x4000f',
        'name=LLC_REFERENCES code=0x4f2e pmcs=0xf desc="Last-level cache references" pmds=0xf '
        'aliases=LAST_LEVEL_CACHE_REFERENCES',
        'name=LLC_MISSES code=0x412e pmcs=0xf desc="Last-level cache misses" pmds=0xf '
        'aliases=LAST_LEVEL_CACHE_MISSES',
        'name=BRANCH_INSTRUCTIONS_RETIRED code=0xc4 pmcs=0xf desc="Branch instructions retired" pmds=0xf',
        'name=BRANCH_MISSES_RETIRED code=0xc5 pmcs=0xf desc="Mispredicted branch instructions retired" pmds=0xf '
        'aliases=MISPREDICTED_BRANCH_RETIRED,RETIRED_MISPREDICTED_BRANCH_INSTRUCTIONS',
        'name=SIM_PHASE_A code=0x1f0 pmcs=0xf desc="Simulated event at 4/ns in the first half of every 2 ms" pmds=0xf',
        'name=SIM_PHASE_B code=0x2f0 pmcs=0xf desc="Simulated event at 4/ns in the second half of every 2 ms" pmds=0xf',
    ],
    # pmu/desc: name, addr, dfl_val, rsvd_msk of every PMC; name, addr, width of every PMD.
    # The PMDs each PMC configures (pmu/desc/pmcN/pmds).
    pmc_pmds={0: '0x1', 1: '0x2', 2: '0x4', 3: '0x8', 16: '0x70000'},
    pmc_desc={
        0: ('PERFEVTSEL0', '0x186', '0x0', '0xffffffffff8c0000'),
        1: ('PERFEVTSEL1', '0x187', '0x0', '0xffffffffff8c0000'),
        2: ('PERFEVTSEL2', '0x188', '0x0', '0xffffffffff8c0000'),
        3: ('PERFEVTSEL3', '0x189', '0x0', '0xffffffffff8c0000'),
        16: ('FIXED_CTR_CTRL', '0x38d', '0x0', '0xfffffffffffff000'),
    },
    pmd_desc={
        0: ('PMC0', '0xc1', '48'),
        1: ('PMC1', '0xc2', '48'),
        2: ('PMC2', '0xc3', '48'),
        3: ('PMC3', '0xc4', '48'),
        16: ('FIXED_CTR0', '0x309', '48'),
        17: ('FIXED_CTR1', '0x30a', '48'),
        18: ('FIXED_CTR2', '0x30b', '48'),
    },
)

# perf-sw: perf's software events, (name, code, desc).
PERF_SW_EVENTS = [
    ('CPU_CLOCK', 0x0, 'wall-clock time on a CPU, in ns (cpu-clock)'),
    ('TASK_CLOCK', 0x1, 'CPU time of the target, in ns (task-clock)'),
    ('PAGE_FAULTS', 0x2, 'page faults, minor and major (page-faults)'),
    ('CONTEXT_SWITCHES', 0x3, 'context switches (context-switches)'),
    ('CPU_MIGRATIONS', 0x4, 'moves of a thread to another CPU (cpu-migrations)'),
    ('MINOR_FAULTS', 0x5, 'page faults served without I/O (minor-faults)'),
    ('MAJOR_FAULTS', 0x6, 'page faults that needed I/O (major-faults)'),
    ('ALIGNMENT_FAULTS', 0x7, 'unaligned accesses fixed up by the kernel (alignment-faults)'),
    ('EMULATION_FAULTS', 0x8, 'instructions emulated by the kernel (emulation-faults)'),
]

PERF_PMU = PmuTable(
    backend='perf', model='perf-sw',
    info='backend=perf model=perf-sw pmcs=0xff pmds=0xff counters=8 fixed=0 width=64 '
         'features=perf_events,software_events,ovfl_intr,inherit,cgroup tick_ns=1000000\n',
    pmcs=list(range(8)), pmds=list(range(8)),
    missing_pmc=8, missing_pmd=8,
    exclusive_threads=False, holds_threads=False,  # perf counts for any number of sessions; holds no thread
    inherits=True,
    # Page faults are what a Worker makes exactly (a fresh page each), at user level.
    event_a=('PAGE_FAULTS', 0x2), rate_a=1,
    event_b=('TASK_CLOCK', 0x1),
    events=[f'name={name} code={code:#x} pmcs=0xff desc="{desc}" pmds=0xff' for name, code, desc in PERF_SW_EVENTS],
    # Event 7:0, USR 16, OS 17, INT 20 and EN 22 are the only bits that are not reserved.
    pmc_desc={k: (f'SWEVTSEL{k}', '0x0', '0x0', '0xffffffffffacff00') for k in range(8)},
    pmc_pmds={k: f'{1 << k:#x}' for k in range(8)},
    pmd_desc={k: (f'SWCTR{k}', '0x0', '64') for k in range(8)},
)

# x86 on the helper module's test PMU (emulate=1 with its defaults): the
# sim's registers, the seven architectural events, counts at the sim's rates
# per ns that the target spends on a cpu, user and kernel time alike.
X86_PMU = PmuTable(**dict(
    SIM_PMU.__dict__,
    backend='x86', thread_system_coexist=False, inherits=True,
    info='backend=x86 model=intel-arch-v2 pmcs=0x1000f pmds=0x7000f counters=4 fixed=3 width=48 '
         'features=fixed_counters,global_ctrl,ovfl_intr,inherit,emulated tick_ns=1000000\n',
    events=[e for e in SIM_PMU.events if 'SIM_PHASE' not in e],
    # The test PMU is version 2: AnyThread (PERFEVTSEL bit 21, bit 2 of each
    # fixed counter's field) is reserved too.
    pmc_desc={k: (v[0], v[1], v[2], '0xffffffffffac0000' if k < 16 else '0xfffffffffffff444')
              for k, v in SIM_PMU.pmc_desc.items()}))

PMU = SIM_PMU if SIM else PERF_PMU if PERF else X86_PMU

# The Intel architectural register model (PERFEVTSELx, FIXED_CTR_CTRL at
# pmc16, the fixed counters at pmd16..18, the architectural events): the
# sim's and x86's. A branch about registers asks INTEL; one about exact
# counts or the manual clock asks SIM.
INTEL = PMU.model == 'intel-arch-v2'

# On x86 a count comes from time on a cpu, which the scheduler and the
# clocks measure a little apart: what counted is within this fraction of
# rate × CPU time, give or take X86_SLACK_NS of it.
X86_TOLERANCE = 0.03
X86_SLACK_NS = 300_000
# Above, more: when the host takes the VM's cpu away in the middle of the
# module's switch-in or switch-out, the test PMU counts that time and the
# guest's scheduler does not (tests/kmod/t_count.c allows 20 ms for it over
# seconds). 0.8 ms over a 3.5 ms drive was seen with a second VM running.
X86_SLACK_HIGH_NS = 5_000_000
# Above, in proportion: the test PMU counts every ns a thread is on a cpu by
# the module's clock, which under TCG runs ahead of the scheduler's CPU
# time by a share that grows with the host's load (up to 8% seen: a
# thread's interrupts, or the two clocks' drift). An upper bound against
# CPU time allows this share of it; the lower bounds stay tight.
X86_AHEAD = 0.25
# PMU.far(): a threshold no test's own commands reach on x86. 0.5 s of CPU
# time is over 100 times what the costliest Worker command was seen to take
# in the guest, and half of it is what PMU.below() drives.
X86_FAR_NS = 500_000_000
# A drive on x86 burns at least this much CPU time: then the least a check
# asks for (the drive less X86_TOLERANCE and X86_SLACK_NS) is well above 0,
# and a count that stayed 0 fails it.
X86_MIN_BURN_NS = 2_000_000


def x86BurnNs(n):
    """The CPU time a drive of n events of event_a burns on x86."""
    return max(-(-n // PMU.rate_a), X86_MIN_BURN_NS)


def simOnly(obj):
    """Marks a test method or a whole TestCase class that needs the sim
    backend: the manual clock, pmu/sim/advance, exact sim counts or a --sim-*
    option. On another backend it is not collected at all (not skipped)."""
    obj._pfmfs_sim_only = True
    return obj


def isSimOnly(obj):
    return bool(getattr(obj, '_pfmfs_sim_only', False))


def exactEvents(obj):
    """Marks a test method or class that needs an event the test drives one
    at a time: the manual clock on sim, page faults on perf. The x86 test PMU
    counts CPU time, and every command the test's Worker handles costs some
    (10^5..10^6 cycles in the guest): such a test is not collected on x86."""
    obj._pfmfs_exact_events = True
    return obj


def needsExactEvents(obj):
    return bool(getattr(obj, '_pfmfs_exact_events', False))


def perfOnly(obj):
    """Marks a test method or class about the perf backend itself (real
    programs against perf stat): collected on perf only."""
    obj._pfmfs_perf_only = True
    return obj


def isPerfOnly(obj):
    return bool(getattr(obj, '_pfmfs_perf_only', False))


def x86Only(obj):
    """Marks a test method or class about the x86 backend itself (real
    counts of the helper module's test PMU): collected on x86 only."""
    obj._pfmfs_x86_only = True
    return obj


def isX86Only(obj):
    return bool(getattr(obj, '_pfmfs_x86_only', False))


def leftOut(obj):
    """Whether BACKEND leaves this test (method or class) out."""
    return ((not SIM and isSimOnly(obj)) or (X86 and needsExactEvents(obj))
            or (BACKEND != 'perf' and isPerfOnly(obj)) or (not X86 and isX86Only(obj)))


class BackendLoader(unittest.TestLoader):
    """Collects what runs on BACKEND: the @simOnly, @perfOnly and @x86Only
    tests on their backend only, the @exactEvents tests everywhere but x86,
    every other test everywhere; counts what it left out of each kind."""

    def __init__(self):
        super().__init__()
        self.left_out = 0
        self.sim_only = 0
        self.perf_only = 0
        self.x86_only = 0
        self.exact_events = 0

    def getTestCaseNames(self, testCaseClass):
        names = super().getTestCaseNames(testCaseClass)
        kept = []
        for n in names:
            method = getattr(testCaseClass, n)
            if not leftOut(testCaseClass) and not leftOut(method):
                kept.append(n)
            elif not SIM and (isSimOnly(testCaseClass) or isSimOnly(method)):
                self.sim_only += 1
            elif isPerfOnly(testCaseClass) or isPerfOnly(method):
                self.perf_only += 1
            elif isX86Only(testCaseClass) or isX86Only(method):
                self.x86_only += 1
            else:
                self.exact_events += 1
        self.left_out += len(names) - len(kept)
        return kept

    def leftOutText(self):
        parts = []
        if self.sim_only:
            parts.append(f'{self.sim_only} sim-only tests')
        if self.perf_only:
            parts.append(f'{self.perf_only} perf-only tests')
        if self.x86_only:
            parts.append(f'{self.x86_only} x86-only tests')
        if self.exact_events:
            parts.append(f'{self.exact_events} exact-events tests')
        return ', '.join(parts) + ' not collected' if parts else ''


def cpuNs(pid):
    """A single-threaded process's CPU time: on sim from the file the sim's
    real clock reads; elsewhere from its CPU-time clock, which is up to date
    to the ns (schedstat lags by up to a tick while it runs), as the perf
    backend's task-clock is."""
    if SIM:
        with open(f'/proc/{pid}/schedstat') as f:
            return int(f.read().split()[0])
    return time.clock_gettime_ns(((~pid) << 3) | 2)  # CPUCLOCK_SCHED of process pid


class HiddenTime:
    """Time a cpu spent on interrupts and, on a VM, taken by the host (steal),
    from /proc/stat. perf's task-clock runs on while a thread is current, so
    it includes that time; the thread's own CPU time
    (CLOCK_THREAD_CPUTIME_ID) leaves it out. A comparison of the two allows
    what a cpu saw of it between two points, and only that."""

    TICK_NS = 1_000_000_000 // os.sysconf('SC_CLK_TCK')

    def __init__(self, cpu=None):
        """One cpu's time, or with cpu=None every cpu's: a bound for a thread
        that may run anywhere."""
        self.cpu = cpu
        self.start = self._read()

    def _read(self):
        with open('/proc/stat') as f:
            for line in f:
                fields = line.split()
                if fields[0] == ('cpu' if self.cpu is None else f'cpu{self.cpu}'):
                    irq, softirq, steal = (int(x) for x in fields[6:9])
                    return irq + softirq + steal
        raise AssertionError(f'no line for cpu {self.cpu} in /proc/stat')

    def ns(self):
        """Since construction, rounded up to whole ticks. /proc/stat shows
        each of the three counts in ns cut down to whole ticks, so up to a
        tick more than its difference may have passed in each, also when
        that is 0: three ticks in all. (With one, CI's load made perf's
        task-clock exceed the bound by 2.5 and 8.8 ms in 2 of 15 runs.)"""
        ticks = self._read() - self.start
        return (ticks + 3) * self.TICK_NS


def onlineCpus():
    """The online cpus, from /sys (the same source the daemon uses)."""
    with open('/sys/devices/system/cpu/online') as f:
        text = f.read().strip()
    cpus = []
    for part in text.split(','):
        lo, _, hi = part.partition('-')
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


OVFL_RE = re.compile(r'type=ovfl seq=(\d+) set=(\d+) pmds=(0x[0-9a-f]+) pid=(\d+) tid=(\d+) cpu=(\d+) ip=(0x[0-9a-f]+)')


def ovflLine(seq, pid, tid, t_ns, set_id=0, pmds=0x1, cpu=0):
    """The `messages` line of an overflow on sim at target time t_ns."""
    return f'type=ovfl seq={seq} set={set_id} pmds={pmds:#x} pid={pid} tid={tid} cpu={cpu} ip={simIp(t_ns):#x}\n'


def ovflLineLengths(seq, pid, tid, set_id=0, pmds=0x1):
    """The shortest and longest an overflow line can be where cpu and ip are
    not known (perf: the real ones)."""
    short = ovflLine(seq, pid, tid, 0, set_id, pmds)
    fixed = len(short) - len(f'{simIp(0):#x}') - 1  # without the ip's digits and the cpu
    return fixed + 1 + 3, fixed + len(str(max(onlineCpus()))) + 2 + 16


def inCi():
    return os.environ.get('CI', '') == 'true'


def daemonPath():
    path = os.environ.get('PFMFSD')
    if path:
        return path
    for build in ('build-it', 'build'):
        candidate = os.path.join(REPO, build, 'fs', 'pfmfsd')
        if os.access(candidate, os.X_OK):
            return candidate
    return None


PERF_EVENT_OPEN = {'x86_64': 298, 'aarch64': 241, 'riscv64': 241}.get(os.uname().machine)


def perfOpenErrno(pid=0, cpu=-1):
    """The kernel's answer to perf_event_open of a user-level task-clock
    event on thread `pid` (0: this one; -1 with a cpu: the whole cpu) by
    this process: 0, or the errno. None where the syscall's number is not
    known here."""
    if PERF_EVENT_OPEN is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = bytearray(128)  # struct perf_event_attr
    struct.pack_into('<IIQ', attr, 0, 1, len(attr), 1)  # PERF_TYPE_SOFTWARE, size, PERF_COUNT_SW_TASK_CLOCK
    struct.pack_into('<Q', attr, 40, 1 | 1 << 5 | 1 << 6)  # disabled, exclude_kernel, exclude_hv
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    fd = libc.syscall(PERF_EVENT_OPEN, buf, pid, cpu, -1, 0)  # no group, no flags
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def perfEventsWork():
    """Whether this process may open a perf software event on itself."""
    return perfOpenErrno() in (0, None)  # not known here: let pfmfsd --pmu=perf say


def attempt(fn, *args):
    """Runs fn(*args); returns None on success, else the errno."""
    try:
        fn(*args)
        return None
    except OSError as e:
        return e.errno


def requireEnvironment():
    """Exit 77 (skip) when the tests cannot run here: not root, no /dev/fuse,
    no daemon. Under CI=true a missing requirement is a failure instead."""
    missing = []
    if os.geteuid() != 0:
        missing.append('not root')
    if not os.path.exists('/dev/fuse'):
        missing.append('no /dev/fuse')
    if daemonPath() is None:
        missing.append('no pfmfsd (set PFMFSD)')
    if PERF and not perfEventsWork():
        missing.append('perf_event_open does not work here (PFMFS_BACKEND=perf)')
    if X86 and not os.path.exists(HELPER_DEVICE):
        missing.append(f'no {HELPER_DEVICE}: pfmfs_helper.ko is not loaded (PFMFS_BACKEND=x86)')
    if not missing:
        return
    reason = ', '.join(missing)
    if inCi():
        print(f'FAIL: CI=true and the mount tests cannot run: {reason}', file=sys.stderr)
        sys.exit(1)
    print(f'SKIP: {reason}', file=sys.stderr)
    sys.exit(SKIP_STATUS)


def main():
    """The entry point of every test module."""
    requireEnvironment()
    ensureUsers()
    loader = BackendLoader()
    program = unittest.main(testLoader=loader, verbosity=2, exit=False)
    print(f'backend {BACKEND}: {program.result.testsRun} tests run'
          + (f', {loader.leftOutText()}' if loader.left_out else ''), file=sys.stderr)
    sys.exit(0 if program.result.wasSuccessful() else 1)


# ---- users ----------------------------------------------------------------------

_users_ready = False


def ensureUsers():
    """Creates the test users and the system group when they are missing."""
    global _users_ready
    if _users_ready:
        return
    for user in (TEST_USER, TEST_USER2):
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(['useradd', '-M', '-r', '-s', '/usr/sbin/nologin', user], check=True)
    try:
        grp.getgrnam(TEST_GROUP)
    except KeyError:
        subprocess.run(['groupadd', '-r', TEST_GROUP], check=True)
    if TEST_USER not in grp.getgrnam(TEST_GROUP).gr_mem:
        subprocess.run(['usermod', '-a', '-G', TEST_GROUP, TEST_USER], check=True)
    _users_ready = True


def setIdDir():
    """A directory where set-id bits take effect (not mounted nosuid), which
    plain users may enter."""
    for base in (tempfile.gettempdir(), '/var/tmp', REPO):
        if os.path.isdir(base) and not os.statvfs(base).f_flag & os.ST_NOSUID:
            d = tempfile.mkdtemp(prefix='pfmfs-setid-', dir=base)
            os.chmod(d, 0o755)
            return d
    raise AssertionError('no directory here honours set-id bits')


def userIds(user):
    pw = pwd.getpwnam(user)
    return pw.pw_uid, pw.pw_gid


def userGroups(user):
    """The supplementary groups the user gets at login (/etc/group)."""
    pw = pwd.getpwnam(user)
    return os.getgrouplist(user, pw.pw_gid)


def runAs(user, fn, *args, groups=None):
    """Runs fn(*args) in a forked child with the user's uid, gid and
    supplementary groups (the login ones unless `groups` is given); returns its
    result or raises its exception (OSError keeps its errno)."""
    uid, gid = userIds(user)
    if groups is None:
        groups = userGroups(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(r)
            try:
                os.setgroups(groups)
                os.setgid(gid)
                os.setuid(uid)
                result = ('ok', fn(*args))
            except BaseException as e:  # everything goes back to the parent
                result = ('exc', e)
            try:
                data = pickle.dumps(result)
            except Exception:
                data = pickle.dumps(('exc', RuntimeError(repr(result))))
            view = memoryview(data)
            while view:
                n = os.write(w, view)
                view = view[n:]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:
        raise RuntimeError(f'runAs({user}) child died with status {status}')
    kind, value = pickle.loads(b''.join(chunks))
    if kind == 'exc':
        raise value
    return value


# ---- file access ----------------------------------------------------------------

def readBytes(path, size=1 << 20, flags=0):
    """Every byte of a file, read with reads of `size` bytes until EOF."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, size)
            if not chunk:
                break
            chunks.append(chunk)
        return b''.join(chunks)
    finally:
        os.close(fd)


def read(path):
    return readBytes(path).decode()


def write(path, text):
    """One write(2) of the whole text, as `echo` does; raises OSError with the
    errno of a refused open or write."""
    data = text.encode() if isinstance(text, str) else text
    fd = os.open(path, os.O_WRONLY)
    try:
        n = os.write(fd, data)
        if n != len(data):
            raise AssertionError(f'short write to {path}: {n} of {len(data)} bytes')
    finally:
        os.close(fd)


def readOnce(path, size, flags=0):
    """One read(2) of `size` bytes."""
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def errnoName(e):
    return errno.errorcode.get(e, str(e)) if e is not None else 'no error'


# ---- processes ------------------------------------------------------------------

def waitAsleep(pid, tid, timeout=WAIT_S):
    """Returns once thread tid of process pid sleeps: state S and no CPU
    time for 1 ms (at once if it is gone: nothing more can move)."""
    base = f'/proc/{pid}/task/{tid}'
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with open(f'{base}/stat') as f:
                state = f.read().rsplit(')', 1)[1].split()[0]
            with open(f'{base}/schedstat') as f:
                ran = f.read().split()[0]
            if state == 'S':
                time.sleep(0.001)
                with open(f'{base}/schedstat') as f:
                    if f.read().split()[0] == ran:
                        return
            else:
                time.sleep(0.0002)
    except OSError:
        return
    raise AssertionError(f'process {pid} thread {tid} still running after {timeout} s')


@contextlib.contextmanager
def sleeper(user=None):
    """A `sleep 1000` process (its pid is a tid to load on), as `user` if
    given, asleep when it is given (its start-up takes CPU time, which a
    test that compares two snapshots would see move); killed and reaped on
    exit."""
    kwargs = {}
    if user is not None:
        uid, gid = userIds(user)
        kwargs = dict(user=uid, group=gid, extra_groups=[])
    proc = subprocess.Popen(['sleep', '1000'], **kwargs)
    try:
        waitAsleep(proc.pid, proc.pid)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


_WORKER_SCRIPT = r'''
import mmap, sys, threading, time
PAGE = mmap.PAGESIZE

def serve():
    # One command a line, answered "ok": "fault N" touches N fresh pages (N
    # page faults at user level, no more: no huge pages), "burn NS" spins for
    # NS ns of the thread's CPU time. An empty line (or EOF) ends the thread.
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            return
        if cmd[0] == 'fault':
            n = int(cmd[1])
            m = mmap.mmap(-1, n * PAGE)
            m.madvise(mmap.MADV_NOHUGEPAGE)
            for i in range(0, n * PAGE, PAGE):
                m[i] = 1
            m.close()
        elif cmd[0] == 'burn':
            end = time.thread_time_ns() + int(cmd[1])
            while time.thread_time_ns() < end:
                pass
        print('ok', flush=True)

if sys.argv[1] == 'threaded':
    def worker():
        print(threading.get_native_id(), flush=True)
        serve()
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    t.join()
    print('thread-ended', flush=True)
    time.sleep(1000)
else:
    print(threading.get_native_id(), flush=True)
    serve()
'''


def userPython():
    """A python3 every user may run (this one may live in root's home)."""
    for candidate in (sys.executable, '/usr/bin/python3', shutil.which('python3') or ''):
        path = os.path.realpath(candidate) if candidate else ''
        if path and os.stat(path).st_mode & 0o001 and all(
                os.stat(d).st_mode & 0o001 for d in _parents(path)):
            return candidate
    raise AssertionError('no python3 that other users may run')


def _parents(path):
    d = os.path.dirname(path)
    while d and d != '/':
        yield d
        d = os.path.dirname(d)


class Worker:
    """A target process that sleeps on its stdin (as `sleep` would) and works
    on command: fault(n) makes its thread take n page faults, burn(ns) spends
    CPU time. threaded=True puts the commands in a second thread, the target
    (pid != tid); endThread() ends that thread while the process lives. With
    `user` it runs as that user."""

    def __init__(self, threaded=False, user=None):
        kwargs = {}
        python = sys.executable
        if user is not None:
            uid, gid = userIds(user)
            kwargs = dict(user=uid, group=gid, extra_groups=[])
            python = userPython()
        self.proc = subprocess.Popen([python, '-c', _WORKER_SCRIPT, 'threaded' if threaded else 'plain'],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, **kwargs)
        self.pid = self.proc.pid
        self.tid = int(self.proc.stdout.readline())
        self._command('fault 1')  # the first command's own faults happen here, not in a test's count

    def _command(self, line):
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer == 'ok\n', f'worker {self.pid} answered {answer!r} to {line!r}'
        self._waitAsleep()

    def _waitAsleep(self, timeout=WAIT_S):
        """Returns once the target thread sleeps on its stdin again. After
        its "ok" it still runs a little on its way back to the read, and on
        a busy machine that can come late; on perf its time (enabled_ns,
        running_ns) moves meanwhile, which a test comparing two snapshots
        would take for a change."""
        waitAsleep(self.pid, self.tid, timeout)

    def faults(self, process=False):
        """The page faults (minor and major) the target thread took so far;
        with `process`, those of the whole process, its exited threads' too."""
        path = f'/proc/{self.pid}/stat' if process else f'/proc/{self.pid}/task/{self.tid}/stat'
        with open(path) as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return int(fields[7]) + int(fields[9])

    def cpuNs(self, process=False):
        """The CPU time of the target thread (or, with `process`, of all
        the process's threads, exited ones too) so far, in ns."""
        if not process:
            with open(f'/proc/{self.pid}/task/{self.tid}/schedstat') as f:
                return int(f.read().split()[0])
        # The process's CPU-time clock (CPUCLOCK_SCHED of pid): its threads'
        # time, the exited ones' included, to the ns.
        return time.clock_gettime_ns(((~self.pid) << 3) | 2)

    def work(self, process=False):
        """What PMU.event_a has counted on the target so far by the
        kernel's own accounting: page faults on perf, rate_a × CPU time on
        x86 (and on sim, where nothing reads it)."""
        return PMU.rate_a * self.cpuNs(process) if X86 else self.faults(process)

    def fault(self, n):
        """The thread touches n fresh pages; returns the page faults it took
        meanwhile, kernel-level ones included (n, unless something else faulted)."""
        before = self.faults()
        self._command(f'fault {n}')
        return self.faults() - before

    def burn(self, ns):
        self._command(f'burn {ns}')

    def endThread(self):
        self.proc.stdin.write('\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line == 'thread-ended\n', line

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def ThreadedTarget():
    """A process whose second thread is the target: pid != tid."""
    return Worker(threaded=True)


def goneTid():
    """A tid that no longer exists: a process that ran and was reaped."""
    proc = subprocess.Popen(['true'])
    proc.wait()
    return proc.pid


def threadsOf(pid):
    """Where each thread of a process is, from /proc: its name, state, the
    kernel function it sleeps in, its system call and its kernel stack (as
    root), to say what a process that did not finish waited for."""
    lines = []
    try:
        tids = sorted(os.listdir(f'/proc/{pid}/task'), key=int)
    except OSError:
        return f'  (process {pid} is gone)'
    for tid in tids:
        fields = {}
        for name in ('comm', 'stat', 'wchan', 'syscall', 'stack'):
            try:
                with open(f'/proc/{pid}/task/{tid}/{name}') as f:
                    fields[name] = f.read().strip()
            except OSError as e:
                fields[name] = f'({e.strerror})'
        state = fields['stat'].rsplit(')', 1)[-1].split()[:1] or ['?']
        stack = ' < '.join(line.split()[-1] for line in fields['stack'].splitlines()[:6])
        lines.append(f'  thread {tid} ({fields["comm"]}): state {state[0]}, in {fields["wchan"] or "-"}, '
                     f'syscall {fields["syscall"]}, stack {stack}')
    return '\n'.join(lines)


def descendantsOf(pid):
    """The processes pid started and those they started, from /proc's
    children lists (taken as they are: a process may end meanwhile)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tids = os.listdir(f'/proc/{parent}/task')
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f'/proc/{parent}/task/{tid}/children') as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            for k in kids:
                if k not in found:
                    found.append(k)
                    todo.append(k)
    return found


def processTreeOf(pid):
    """threadsOf for pid and every process below it: a program stuck in
    waitpid says nothing about the child it waits for."""
    parts = [f' process {pid}:\n{threadsOf(pid)}']
    parts += [f' its descendant {kid}:\n{threadsOf(kid)}' for kid in descendantsOf(pid)]
    return '\n'.join(parts)


def waitFor(predicate, timeout=WAIT_S, interval=0.01):
    """Polls predicate() until it is true; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


class Reader(threading.Thread):
    """A read(2) on a file descriptor in a thread of its own: the test checks
    it blocks, then that an event elsewhere ends it."""

    def __init__(self, fd, size=4096):
        super().__init__(daemon=True)
        self.fd = fd
        self.size = size
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = os.read(self.fd, self.size)
        except OSError as e:
            self.error = e

    def finished(self, timeout=WAIT_S):
        self.join(timeout)
        return not self.is_alive()


# ---- the mount ------------------------------------------------------------------

class DaemonFailed(AssertionError):
    pass


class Mount:
    """pfmfsd -f --pmu=sim --sim-clock=manual -o allow_other [extra] TMP/mnt
    (without --sim-clock=manual if not manual_clock); on the perf backend
    pfmfsd -f --pmu=perf -o allow_other [extra] TMP/mnt, whatever manual_clock.
    `mountpoint`: mount there instead of on a fresh TMP/mnt (the caller owns
    the directory). `env`: variables for the daemon, over the test's own
    (say, sanitizer options)."""

    def __init__(self, extra_args=(), manual_clock=True, mountpoint=None, env=None):
        self.extra_args = list(extra_args)
        self.manual_clock = manual_clock
        self.mountpoint = mountpoint
        self.env = dict(os.environ, **env) if env else None
        self.tmp = None
        self.mnt = None
        self.proc = None
        self.log_path = None
        self._log = None

    # -- lifetime

    def command(self):
        args = [daemonPath(), '-f'] + backendArgs(self.manual_clock)
        return args + ['-o', 'allow_other'] + self.extra_args + [self.mnt]

    def start(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-it-')
        os.chmod(self.tmp, 0o755)  # the test users reach the mount through it
        if self.mountpoint is None:
            self.mnt = os.path.join(self.tmp, 'mnt')
            os.mkdir(self.mnt)
            os.chmod(self.mnt, 0o755)
        else:
            self.mnt = self.mountpoint
        self.log_path = os.path.join(self.tmp, 'pfmfsd.log')
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log, env=self.env,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        while not os.path.exists(os.path.join(self.mnt, 'version')):
            if self.proc.poll() is not None:
                log = self.log()
                self._cleanupAfterFailure()
                raise DaemonFailed(f'pfmfsd exited with {self.proc.returncode} before mounting: {log}')
            if time.monotonic() > deadline:
                log = self.log()
                self._cleanupAfterFailure()
                raise DaemonFailed(f'pfmfsd did not mount within {MOUNT_TIMEOUT_S} s: {log}')
            time.sleep(0.02)
        _live_mounts.add(self)
        return self

    def log(self):
        """The daemon's output so far; after close(), all of it (kept when
        the directory goes, for the sanitizer checks made after the exit)."""
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode(errors='replace')
        except (OSError, TypeError):
            return getattr(self, '_final_log', '')

    def sendSignal(self, sig):
        self.proc.send_signal(sig)

    def waitExit(self, timeout=EXIT_TIMEOUT_S):
        """The daemon's exit status; DaemonFailed if it does not exit, with
        where each of its threads was."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log = self.log()
            where = threadsOf(self.proc.pid)
            self._cleanupAfterFailure()
            raise DaemonFailed(f'pfmfsd did not exit within {timeout} s; its threads:\n{where}\nits log: {log}')

    def close(self, sig=signal.SIGTERM):
        """Stops the daemon with `sig`; asserts it exits 0 and unmounted."""
        if self.proc is None:
            return
        _live_mounts.discard(self)
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        status = self.waitExit()
        mounted = os.path.ismount(self.mnt)
        log = self.log()
        if mounted:
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], stderr=subprocess.DEVNULL)
        self._removeDirs()
        self.proc = None
        if status != 0:
            raise DaemonFailed(f'pfmfsd exited with {status} (expected 0): {log}')
        if mounted:
            raise DaemonFailed(f'{self.mnt} still mounted after pfmfsd exited: {log}')

    def _cleanupAfterFailure(self):
        _live_mounts.discard(self)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.mnt and os.path.ismount(self.mnt):
            subprocess.run(['fusermount3', '-u', '-z', self.mnt], stderr=subprocess.DEVNULL)
        self._removeDirs()

    def _removeDirs(self):
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.tmp is not None:
            self._final_log = self.log()
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self._cleanupAfterFailure()

    # -- files

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def read(self, rel):
        return read(self.path(rel))

    def write(self, rel, text):
        write(self.path(rel), text)

    def advance(self, ns):
        """Moves the sim's manual clock (sim only: a @simOnly test's tool)."""
        assert SIM and self.manual_clock, 'advance() needs the sim backend with the manual clock'
        self.write('pmu/sim/advance', f'{ns}\n')

    def session(self, name):
        return Session(self, name)

    def mkdirSession(self, name):
        os.mkdir(self.path('sessions', name))
        return Session(self, name)

    def sh(self, cmd, user=None, cwd=None):
        return sh(cmd, user=user, cwd=cwd or self.mnt, env={'MNT': self.mnt})


def backendArgs(manual_clock=True):
    """pfmfsd's options that select BACKEND (and the sim's manual clock)."""
    if PERF:
        # perf-sw everywhere, even where a hardware PMU would make auto pick
        # perf-x86: the expectations below are perf-sw's.
        return ['--pmu=perf', '--perf-model=sw']
    if X86:
        return ['--pmu=x86']
    return ['--pmu=sim'] + (['--sim-clock=manual'] if manual_clock else [])


_live_mounts = set()


def _atExit():
    for m in list(_live_mounts):
        m._cleanupAfterFailure()


atexit.register(_atExit)


def sh(cmd, user=None, cwd=None, env=None, timeout=WAIT_S):
    """`sh -c cmd`: (exit status, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env['LC_ALL'] = 'C'
    if env:
        full_env.update(env)
    kwargs = {}
    if user is not None:
        uid, gid = userIds(user)
        kwargs = dict(user=uid, group=gid, extra_groups=userGroups(user))
    p = subprocess.run(['sh', '-c', cmd], cwd=cwd, env=full_env, capture_output=True, text=True,
                       timeout=timeout, **kwargs)
    return p.returncode, p.stdout, p.stderr


class Session:
    """sessions/NAME of a mount: paths and the files a test reads and writes."""

    def __init__(self, mount, name):
        self.mount = mount
        self.name = name
        self.dir = mount.path('sessions', name)

    def path(self, rel=''):
        return os.path.join(self.dir, rel) if rel else self.dir

    def read(self, rel):
        return read(self.path(rel))

    def write(self, rel, text):
        write(self.path(rel), text)

    def ctl(self, command):
        self.write('ctl', command + '\n')

    def state(self):
        return self.read('state')

    def error(self):
        return self.read('error')

    def snapshot(self):
        """What a refused write must leave as it was: the session's state,
        mode, flags, counts and sampling format, and every file of every set."""
        files = ['state', 'mode', 'flags', 'counts', 'smpl_fmt']
        for set_id in sorted(os.listdir(self.path('sets'))):
            files += [f'sets/{set_id}/{name}' for name in sorted(os.listdir(self.path(f'sets/{set_id}')))]
        return {f: self.read(f) for f in files}

    def readMessages(self, size=65536):
        """One read(2) of `messages` (cat would block once the queue is
        empty); O_NONBLOCK, so an empty queue is EAGAIN, not a hang."""
        return readOnce(self.path('messages'), size, os.O_NONBLOCK).decode()

    def readMsg(self, size=64):
        """One read(2) of `msg`, O_NONBLOCK."""
        return readOnce(self.path('msg'), size, os.O_NONBLOCK)

    def pmc(self, k, value, set_id=0):
        self.write(f'sets/{set_id}/pmc{k}', f'{value}\n')

    def pmd(self, k, value, set_id=0):
        self.write(f'sets/{set_id}/pmd{k}', f'{value}\n')

    def readPmd(self, k, set_id=0):
        return int(self.read(f'sets/{set_id}/pmd{k}'))

    def mkset(self, set_id):
        os.mkdir(self.path(f'sets/{set_id}'))

    def exists(self):
        return os.path.isdir(self.dir)

    def destroy(self):
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def stateLine(state='unloaded', mode='thread', target='-', set_id=0, queued=0, lost=0, exited=False):
    line = f'state={state} mode={mode} target={target} set={set_id} queued={queued} lost={lost}'
    if exited:
        line += ' exited=1'
    return line + '\n'


def parseKv(line):
    """'a=1 b=x' -> {'a': '1', 'b': 'x'}."""
    return dict(field.split('=', 1) for field in line.split())


def countsLine(set_id, pmd, value, enabled, running):
    scaled = '-' if running == 0 else str(value * enabled // running)
    return (f'set={set_id} pmd={pmd} value={value} enabled_ns={enabled} running_ns={running} '
            f'scaled={scaled}\n')


class Driven:
    """What a test made PMU.event_a count on a Worker, from here on: low is
    what it asked for (drive), high what may have counted: on sim the same
    (counts are exact), on perf every page fault the thread took since,
    kernel-level ones and any stray ones included, on x86 rate_a per ns of
    the thread's CPU time since."""

    def __init__(self, test, w, mount=None, process=False):
        self.test = test
        self.w = w
        self.mount = mount
        self.process = process
        self.low = 0
        self.base = w.work(process)

    def drive(self, n):
        self.test.drive(self.w, n, self.mount)
        self.low += PMU.rate_a * x86BurnNs(n) if X86 else n

    def restart(self):
        """Tallies from zero again (after writing the PMD)."""
        self.low = 0
        self.base = self.w.work(self.process)
        self.frozen = None

    frozen = None

    def freeze(self):
        """Takes high now, before the worker's thread exits (its faults are
        not readable after)."""
        self.frozen = self.high()

    def high(self):
        if self.frozen is not None:
            return self.frozen
        return self.low if SIM else self.w.work(self.process) - self.base

    def check(self, value, start=0, minus=0):
        """value is start plus what counted since the tally began, less
        `minus` (mod 2^64): exactly low - minus on sim, within
        [low - minus, high - minus] elsewhere (widened by X86_TOLERANCE,
        X86_SLACK_NS below and X86_AHEAD and X86_SLACK_HIGH_NS above on x86)."""
        got = (value - start) % U64
        low, high = self.low - minus, self.high() - minus
        if X86:
            low = int(self.low * (1 - X86_TOLERANCE)) - PMU.rate_a * X86_SLACK_NS - minus
            high = int(self.high() * (1 + X86_TOLERANCE + X86_AHEAD)) + PMU.rate_a * X86_SLACK_HIGH_NS - minus
        if SIM:
            self.test.assertEqual(got, low, f'{value} is start {start} + {got}, expected + {low}')
        else:
            self.test.assertTrue(low <= got <= high,
                                 f'{value} is start {start} + {got}, expected + [{low}, {high}]')
        return got

    def checkSince(self, value, start, threshold):
        """value is start plus what counted since the tally reached
        `threshold`, where a PMD's overflow reset or masked it: as
        check(value, start, minus=threshold) on sim and perf, where the
        daemon acts on the event that wraps; on x86 the interrupt comes a
        little after the wrap and counting goes on until the daemon resets
        or masks, and the module freezes every counter from the interrupt
        until the daemon has reset: at least start, at most start + high -
        threshold (widened as check does)."""
        if not X86:
            return self.check(value, start, minus=threshold)
        got = (value - start) % U64
        high = int(self.high() * (1 + X86_TOLERANCE + X86_AHEAD)) + PMU.rate_a * X86_SLACK_HIGH_NS - threshold
        self.test.assertTrue(0 <= got <= high, f'{value} is start {start} + {got}, expected + [0, {high}]')
        return got


PRINTABLE = re.compile(r'^[\x20-\x7e]*\n?$')


class MountTestCase(unittest.TestCase):
    """One daemon for the whole class (mount_args are its extra options);
    sessions and target processes made by a test are removed after it."""

    mount_args = ()
    manual_clock = True
    m = None

    @classmethod
    def setUpClass(cls):
        cls.m = Mount(cls.mount_args, manual_clock=cls.manual_clock).start()

    @classmethod
    def tearDownClass(cls):
        if cls.m is not None:
            m, cls.m = cls.m, None
            m.close()

    _counter = 0

    def newSession(self, name=None):
        """mkdir sessions/NAME; rmdir'ed (if still there) after the test."""
        if name is None:
            MountTestCase._counter += 1
            name = f'{self._testMethodName[:40]}-{MountTestCase._counter}'
        s = self.m.mkdirSession(name)
        self.addCleanup(s.destroy)
        return s

    def userSession(self, user=TEST_USER, name=None):
        """A session `user` made (mkdir as that user); rmdir'ed by root
        after the test whatever happens."""
        if name is None:
            MountTestCase._counter += 1
            name = f'{user}-{self._testMethodName[:30]}-{MountTestCase._counter}'
        s = self.m.session(name)
        runAs(user, os.mkdir, s.dir)
        self.addCleanup(s.destroy)
        return s

    def sleeper(self, user=None):
        """A sleep process, killed after the test; returns its pid."""
        cm = sleeper(user)
        proc = cm.__enter__()
        self.addCleanup(cm.__exit__, None, None, None)
        return proc.pid

    def threaded(self):
        t = ThreadedTarget()
        self.addCleanup(t.close)
        return t

    def worker(self, user=None, threaded=False):
        """A Worker target, killed after the test."""
        w = Worker(threaded=threaded, user=user)
        self.addCleanup(w.close)
        return w

    def drive(self, w, n, mount=None):
        """PMU.event_a counts n more on Worker w. On sim the manual clock moves
        n / rate_a ns (every loaded target moves on with it: the count is
        exact and everything due is done when this returns); on perf w's thread
        takes n page faults and this returns how many it took in all (n, or a
        few more, kernel-level ones included); on x86 w's thread burns n /
        rate_a ns of CPU time (X86_MIN_BURN_NS at least) and this returns
        rate_a times the CPU time it took in all; what the daemon does about
        them (overflows) may come a little later: see assertEventually."""
        m = mount or self.m
        if SIM:
            self.assertEqual(n % PMU.rate_a, 0, f'{n} events of {PMU.event_a[0]} are no whole ns')
            m.advance(n // PMU.rate_a)
            return n
        if X86:
            before = w.work()
            w.burn(x86BurnNs(n))
            return w.work() - before
        return w.fault(n)

    def driven(self, w, mount=None, process=False):
        """A Driven tally of what this test makes event_a count on w (with
        `process`, its high counts every fault of w's process: for a thread
        that exits, whose own faults cannot be read after)."""
        return Driven(self, w, mount, process)

    def assertOvflLines(self, text, expected):
        """`text` is the overflow lines `expected` lists as (seq, pid, tid,
        t_ns[, set_id[, pmds]]): exactly on sim (cpu 0 and the sim's ip at
        t_ns); elsewhere with any online cpu and a non-zero ip."""
        if SIM:
            self.assertEqual(text, ''.join(ovflLine(*e) for e in expected))
            return
        self.assertTrue(text.endswith('\n'), repr(text))
        lines = text[:-1].split('\n')
        self.assertEqual(len(lines), len(expected), repr(text))
        for line, e in zip(lines, expected):
            seq, pid, tid, _t_ns, set_id, pmds = (tuple(e) + (0, 0x1))[:6]
            m = OVFL_RE.fullmatch(line)
            self.assertIsNotNone(m, repr(line))
            self.assertEqual(m.groups()[:5], (str(seq), str(set_id), f'{pmds:#x}', str(pid), str(tid)), line)
            self.assertIn(int(m.group(6)), onlineCpus(), line)
            self.assertNotEqual(int(m.group(7), 16), 0, line)

    def assertOvflRecord(self, record, pid, tid, t_ns, set_id=0, pmds=0x1):
        """A 64-byte pfarg_msg_t overflow record, as assertOvflLines checks a
        line (msg_ovfl_pid holds the thread, msg_ovfl_tid the process)."""
        self.assertEqual(len(record), 64)
        fields = MSG.unpack(record)
        if SIM:
            self.assertEqual(fields, (1, tid, set_id, 0, pid, simIp(t_ns), pmds, 0, 0, 0, 0))
            return
        self.assertEqual(fields[:3] + fields[4:5] + fields[6:], (1, tid, set_id, pid, pmds, 0, 0, 0, 0))
        self.assertIn(fields[3], onlineCpus())
        self.assertNotEqual(fields[5], 0)

    def assertEventually(self, fn, expected, timeout=WAIT_S):
        """fn() == expected: at once on sim, where everything is done when the
        write that caused it returns; within `timeout` on perf, where the
        daemon learns of overflows and exits from the kernel asynchronously."""
        if not SIM:
            waitFor(lambda: fn() == expected, timeout)
        self.assertEqual(fn(), expected)
        return expected

    def assertErrno(self, err, fn, *args, **kwargs):
        """fn(*args) fails with OSError `err`."""
        try:
            fn(*args, **kwargs)
        except OSError as e:
            if e.errno != err:
                self.fail(f'expected {errnoName(err)}, got {errnoName(e.errno)} ({e})')
            return e
        self.fail(f'expected {errnoName(err)}, but the call succeeded')

    def assertErrnoIn(self, errs, fn, *args, **kwargs):
        try:
            fn(*args, **kwargs)
        except OSError as e:
            if e.errno not in errs:
                self.fail(f'expected one of {[errnoName(x) for x in errs]}, got {errnoName(e.errno)} ({e})')
            return e
        self.fail(f'expected one of {[errnoName(x) for x in errs]}, but the call succeeded')

    def assertRefused(self, s, err, rel, text, files=('state',)):
        """A write to s/rel fails with err, leaves a new non-empty reason in
        `error`, and leaves `files` as they were."""
        before = {f: s.read(f) for f in files}
        marker = self._markError(s, rel, text)
        self.assertErrno(err, s.write, rel, text)
        reason = s.error()
        self.assertTrue(reason.strip(), f'error empty after a refused write of {text!r} to {rel}')
        self.assertTrue(reason.endswith('\n'), f'error {reason!r} does not end with a newline')
        self.assertRegex(reason, PRINTABLE)
        if marker is not None:
            self.assertNotEqual(reason, marker, f'error unchanged by the refused write of {text!r} to {rel}')
        for f, content in before.items():
            self.assertEqual(s.read(f), content, f'{f} changed by the refused write of {text!r} to {rel}')
        return reason

    def _markError(self, s, rel, text):
        """Leaves a known reason in `error` (a bad set number in `ctl`) so the
        next failure must replace it; None when the next write is that one."""
        marker_cmd = 'start 70000'
        if rel == 'ctl' and text.strip() == marker_cmd:
            return None
        try:
            s.write('ctl', marker_cmd + '\n')
        except OSError:
            pass
        return s.error()
