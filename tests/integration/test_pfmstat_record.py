#!/usr/bin/env python3
# pfmstat record and pfmstat report (docs/pfmstat.1.md, RECORD and REPORT)
# through a real mount:
#   - on the sim's manual clock, a golden profile: progs/hot_text's
#     functions cover the sim's made-up ips (pfmfs(5), SAMPLING), so with a
#     sample every 1024 ns the share of each function is known exactly; the
#     buffer is small enough to fill twice, and each fill is drained and
#     restarted before the test moves the clock on
#   - the data file's sample lines, exact; report's refusals of what is
#     not pfmstat data, with the line; record's usage errors (status 2)
#   - on perf, a real program: progs/busy_functions' hot_spin has most of
#     its task-clock samples, by name, in its own shared object
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request

import pfmfs_mount
from pfmfs_mount import MountTestCase, perfOnly, simIp, simOnly, waitFor
from test_perf import prog
from test_pfmstat import pfmstatPath

PERIOD = 3072  # cycles: 1024 ns of the sim's 3 cycles/ns, an ip step of 64 bytes
# --buffer-bytes 4096: full when less than the largest entry (40 + 8 x 7
# PMDs) is left after an entry, i.e. after 97 entries of 40 bytes.
BUFFER = 4096
PER_FILL = 97


class RecordTestCase(MountTestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmstat-record-')
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.data = os.path.join(self.tmp, 'test.data')

    def record(self, *args):
        p = subprocess.Popen([pfmstatPath(), 'record', '--mount', self.m.mnt, '-o', self.data] + list(args),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, p)
        return p

    def reap(self, p):
        if p.poll() is None:
            p.kill()
        p.communicate(timeout=30)

    def report(self, *args, data=None):
        p = subprocess.run([pfmstatPath(), 'report', '-i', data or self.data] + list(args), capture_output=True,
                           text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def dataLines(self, kind):
        with open(self.data) as f:
            return [line.rstrip('\n') for line in f if line.startswith(kind + ' ')]


GOLDEN = '''\
# pfmstat report of {data}
# command: {command}
# event: cycles (UNHALTED_CORE_CYCLES), a sample every 3072 events (-c)
# backend: sim model=intel-arch-v2
# samples: 256
# buffer fills: 2 (counting paused while pfmstat read the buffer)
# dropped as the buffer filled: 0
# lost by the kernel: 0 (samples without an ip)
# throttled: 0
# lost notifications: 0
# lost map records: {lost}
# maps: {maps}
#
# by function
#
# overhead samples command  shared object symbol
# ........ ....... .......  ............. ......
    50.00%     128 hot_text hot_text      alpha
    25.00%      64 hot_text hot_text      beta
    12.50%      32 hot_text hot_text      [unknown]
    12.50%      32 hot_text hot_text      demo::Hotel::step(int)
#
# by shared object
#
# overhead samples shared object
# ........ ....... .............
   100.00%     256 hot_text
'''


@simOnly
class SimGoldenTest(RecordTestCase):

    def test_golden_profile(self):
        command = prog('hot_text')
        p = self.record('-c', str(PERIOD), '--buffer-bytes', str(BUFFER), command)
        self.assertEqual(p.stdout.readline(), 'ready\n')
        s = self.m.session(f'pfmstat.{p.pid}.0')
        self.assertTrue(waitFor(lambda: os.path.exists(s.path('state')) and s.state().startswith('state=active')))
        # Two fills of 97 samples, each drained and restarted by pfmstat
        # before the clock moves on (a masked session counts nothing), then
        # 62 more: 256 samples over 262144 ns, the sim's whole ip cycle.
        for fills, samples in ((1, PER_FILL), (2, PER_FILL)):
            self.m.advance(samples * 1024)
            self.assertTrue(waitFor(lambda: re.search(rf'^state=active .* smpl_count=0 smpl_overflows={fills}\b',
                                                      s.state())), s.state())
        self.m.advance(62 * 1024)
        p.stdin.write('go\n')
        p.stdin.flush()
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(f'pfmstat record: 256 samples of cycles (UNHALTED_CORE_CYCLES) (a sample every 3072 events) '
                      f'written to {self.data}\n', err)
        self.assertIn('the buffer filled 2 times', err)

        samples = self.dataLines('sample')
        pid = int(samples[0].split()[1][4:])
        self.assertEqual(samples, [f'sample pid={pid} tid={pid} cpu=0 ip={simIp(1024 * k):#x} tstamp={1024 * k}'
                                   for k in range(1, 257)])
        meta = dict(line[5:].split('=', 1) for line in self.dataLines('meta'))
        self.assertEqual(meta['samples'], '256')
        self.assertEqual(meta['buffer_fills'], '2')
        self.assertEqual(meta['period'], '3072')

        golden = GOLDEN.format(data=self.data, command=command, maps=meta['maps'], lost=meta['lost_map_records'])
        status, out, err = self.report()
        self.assertEqual((status, err), (0, ''))
        self.assertEqual(out, golden)
        # --sort dso: the header and the second table only.
        by_function = golden[golden.index('#\n# by function'):golden.index('#\n# by shared')]
        self.assertEqual(self.report('--sort', 'dso'), (0, golden.replace(by_function, ''), ''))

    def test_frequency_on_the_sim(self):
        # -F 1000 of 3e9 cycles/s: a sample every 3,000,000 cycles (1 ms).
        p = self.record('-F', '1000', prog('hot_text'))
        self.assertEqual(p.stdout.readline(), 'ready\n')
        s = self.m.session(f'pfmstat.{p.pid}.0')
        self.assertTrue(waitFor(lambda: os.path.exists(s.path('state')) and s.state().startswith('state=active')))
        self.m.advance(5_000_000)
        p.stdin.write('go\n')
        p.stdin.flush()
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual([line.split()[-1] for line in self.dataLines('sample')],
                         [f'tstamp={k * 1_000_000}' for k in range(1, 6)])


class UsageTest(RecordTestCase):

    def usage(self, *args):
        p = subprocess.run([pfmstatPath(), 'record', '--mount', self.m.mnt, '-o', self.data] + list(args),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, '')
        self.assertFalse(os.path.exists(self.data))
        self.assertEqual(os.listdir(self.m.path('sessions')), [])
        return p.stderr

    def test_usage_errors(self):
        self.assertEqual(self.usage('-c', '0', 'true'), "pfmstat record: -c '0' is out of range (1..4611686018427387904)\n")
        self.assertEqual(self.usage('-c', '10', '-F', '10', 'true'),
                         'pfmstat record: -c and -F do not go together: a period or a frequency\n')
        self.assertEqual(self.usage(), 'pfmstat record: nothing to record: give a command, -p, -a or -C '
                                       '(pfmstat record --help)\n')
        self.assertEqual(self.usage('-e', 'NO_SUCH', 'true'),
                         "pfmstat: unknown event 'NO_SUCH' (the mount's pmu/events lists them)\n")
        self.assertEqual(self.usage('-e', '{cycles,instructions}', 'true'),
                         "pfmstat: record samples one event, not '{cycles,instructions}'\n")
        self.assertEqual(self.usage('--buffer-bytes', '100', 'true'),
                         "pfmstat record: --buffer-bytes '100' is out of range (4096..1073741824)\n")
        # An event whose rate pfmstat does not know takes no -F.
        event = 'LLC_MISSES' if self.m.read('pmu/info').startswith('backend=sim') else 'PAGE_FAULTS'
        self.assertRegex(self.usage('-e', event, '-F', '100', 'true'),
                         rf'^pfmstat: -F needs the rate of {event}, .*: give a period with -c\n$')

    def test_report_refuses_what_is_not_pfmstat_data(self):
        cases = [
            ('not data\n', "x.data: not a pfmstat data file (its first line is not 'pfmstat-data 1')"),
            ('pfmstat-data 2\n', "x.data: pfmstat data version '2': this pfmstat reads version 1"),
            ('pfmstat-data 1\nsample pid=1 tid=1 cpu=0 ip=0x10\n', 'x.data:2: expected tstamp='),
            ('pfmstat-data 1\nmeta a=b\nmap pid=1 start=0x20 end=0x10 pgoff=0x0 path=/x\n',
             'x.data:3: end= is not above start='),
            ('pfmstat-data 1\n\x00\xff\n', "x.data:2: unknown line type '\\x00\\xc3\\xbf'"),
        ]
        path = os.path.join(self.tmp, 'x.data')
        for text, message in cases:
            with self.subTest(text=text):
                with open(path, 'w') as f:
                    f.write(text)
                p = subprocess.run([pfmstatPath(), 'report', '-i', 'x.data'], cwd=self.tmp, capture_output=True,
                                   text=True)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (2, '', f'pfmstat: {message}\n'))
        p = subprocess.run([pfmstatPath(), 'report', '-i', 'missing'], cwd=self.tmp, capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr), (2, 'pfmstat: cannot open missing: No such file or directory\n'))


@perfOnly
class PerfProgramTest(RecordTestCase):

    def test_hot_function_by_name(self):
        p = self.record('-e', 'task-clock', prog('busy_functions'), '400')
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        meta = dict(line[5:].split('=', 1) for line in self.dataLines('meta'))
        self.assertEqual(meta['period'], '250000')  # -F 4000 of a clock counting ns
        status, out, err = self.report('--sort', 'sym')
        self.assertEqual(status, 0, err)
        rows = [line.split() for line in out.splitlines() if not line.startswith('#')]
        total = int(re.search(r'^# samples: (\d+)$', out, re.M).group(1))
        # 440 ms of CPU time at a sample every 250 us: about 1760 samples.
        self.assertGreater(total, 1000, out)
        self.assertEqual(rows[0][2:], ['busy_functions', 'busy_functions', 'hot_spin'], out)
        self.assertGreater(int(rows[0][1]), total * 0.7, out)
        cold = [r for r in rows if r[4:] == ['cold_spin']]
        self.assertEqual(len(cold), 1, out)
        self.assertGreater(int(cold[0][1]), 0)
        self.assertLess(int(cold[0][1]), int(rows[0][1]))

    def test_children_are_sampled(self):
        # A shell that forks the program (`; true` keeps sh from exec'ing
        # it): the samples are the child's, through perf's inherited events.
        p = self.record('-e', 'task-clock', 'sh', '-c', f'{prog("busy_functions")} 300; true')
        out, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 0, err)
        status, out, err = self.report('--sort', 'sym')
        self.assertEqual(status, 0, err)
        rows = [line.split() for line in out.splitlines() if not line.startswith('#')]
        total = int(re.search(r'^# samples: (\d+)$', out, re.M).group(1))
        # 330 ms of the child's CPU time at a sample every 250 us: about 1320.
        self.assertGreater(total, 800, out)
        self.assertEqual(rows[0][2:], ['busy_functions', 'busy_functions', 'hot_spin'], out)
        self.assertGreater(int(rows[0][1]), total * 0.7, out)


# zlib's source as Debian ships it (bookworm's 1:1.2.13.dfsg-1), a real C
# project that builds in seconds: fetched from Debian's archive once and
# kept, checked against the .dsc's SHA-256.
ZLIB_URL = 'http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2'
ZLIB_SHA256 = '71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1'


def zlibTarball():
    cache = os.path.join(os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'pfmfs-tests')
    path = os.path.join(cache, os.path.basename(ZLIB_URL))
    if os.path.exists(path):
        with open(path, 'rb') as f:
            if hashlib.sha256(f.read()).hexdigest() == ZLIB_SHA256:
                return path
    os.makedirs(cache, exist_ok=True)
    with urllib.request.urlopen(ZLIB_URL, timeout=120) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != ZLIB_SHA256:
        raise AssertionError(f'{ZLIB_URL}: not the tarball of zlib 1.2.13.dfsg (SHA-256 differs)')
    with open(path + '.tmp', 'wb') as f:
        f.write(data)
    os.rename(path + '.tmp', path)
    return path


@perfOnly
class MakeTest(RecordTestCase):

    def test_a_make_shows_the_compilers_functions(self):
        # pfmstat record follows make into sh, gcc, cc1 and as: the
        # profile is the compiler's, by function (cc1 exports its functions
        # in .dynsym, stripped as Debian ships it).
        with tarfile.open(zlibTarball()) as t:
            t.extractall(self.tmp)  # the tarball whose SHA-256 is above
        src = os.path.join(self.tmp, 'zlib-1.2.13.dfsg')
        subprocess.run(['./configure'], cwd=src, check=True, capture_output=True, timeout=300)
        p = subprocess.run([pfmstatPath(), 'record', '--mount', self.m.mnt, '-o', self.data, '-e', 'task-clock',
                            '-c', '200000', 'make', '-j2'], cwd=src, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertTrue(os.path.exists(os.path.join(src, 'libz.a')))
        status, out, err = self.report()
        self.assertEqual(status, 0, err)
        by_function = out[out.index('# by function'):out.index('# by shared object')]
        by_dso = out[out.index('# by shared object'):]
        rows = [line.split(None, 4) for line in by_function.splitlines() if not line.startswith('#')]
        total = int(re.search(r'^# samples: (\d+)$', out, re.M).group(1))
        self.assertGreater(total, 1500, out[:3000])
        # cc1 is where a build's time goes: the first shared object.
        dsos = [line.split() for line in by_dso.splitlines() if not line.startswith('#')]
        self.assertEqual(dsos[0][2], 'cc1', by_dso)
        self.assertGreater(int(dsos[0][1]), total // 3, by_dso)
        # ... and its functions by name: many, the named ones most of its time.
        named = [r for r in rows if r[2] == 'cc1' and r[3] == 'cc1' and r[4] != '[unknown]']
        self.assertGreater(len(named), 50, by_function[:3000])
        self.assertGreater(sum(int(r[1]) for r in named), int(dsos[0][1]) // 3, by_function[:3000])


if __name__ == '__main__':
    pfmfs_mount.main()
