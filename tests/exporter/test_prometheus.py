#!/usr/bin/env python3
# pfmfs-exporter scraped by a real Prometheus (/usr/bin/prometheus, started
# here on the loopback, 1-s scrapes) on a sim mount with the real clock: a
# PromQL rate() agrees with the sim's rates (cycles 3/ns, instructions 2/ns
# of a cpu session's wall time) and with the mount's own counts over the
# same interval; every query of docs/examples/prometheus/pfmfs-dashboard.json
# returns series; docs/examples/prometheus/prometheus.yml passes promtool.
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import exporter_support as es
from exporter_support import Exporter
import pfmfs_mount
from pfmfs_mount import REPO, WAIT_S, MountTestCase, inCi, simOnly

EXAMPLES = os.path.join(REPO, 'docs', 'examples', 'prometheus')
DASHBOARD = os.path.join(EXAMPLES, 'pfmfs-dashboard.json')
JOB = 'pfmfs'
SCRAPE_S = 1
# The sets of the run: set 0 and set 1 take turns every 10 ms, so that the
# scaling query has multiplexed counts to scale.
CONFIG = 'events {cycles,instructions},{cycles,branches}\ncpus 0\nswitch_ms 10\n'
RATES = {'cycles': 3e9, 'instructions': 2e9}  # the sim's, per second of wall time
# PromQL's timestamps are the scrapes' starts and the counts are read a
# little later, on a slow machine maybe much later: over WINDOW_S, 5 % is a
# second of that delay's change between the window's ends.
WINDOW_S = 20
CLOSE = 0.05
# Prometheus may move a scrape's timestamp by a few ms towards its schedule.
ALIGN_S = 0.1


def requireTool(test, name):
    if shutil.which(name) is None:
        message = f'no {name} (package prometheus: scripts/install-deps.sh)'
        if inCi():
            test.fail(message)
        test.skipTest(message)


class Prometheus:
    """prometheus on 127.0.0.1:PORT scraping `targets` every SCRAPE_S, its
    storage in a temporary directory."""

    def __init__(self, targets):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-prometheus-')
        self.port = es.freePort()
        config = os.path.join(self.tmp, 'prometheus.yml')
        with open(config, 'w') as f:
            f.write(f'global:\n  scrape_interval: {SCRAPE_S}s\n  scrape_timeout: {SCRAPE_S}s\n'
                    f'scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n'
                    f'      - targets: {json.dumps(targets)}\n')
        self.log_path = os.path.join(self.tmp, 'log')
        self._log = open(self.log_path, 'wb')
        self.proc = subprocess.Popen(
            ['prometheus', f'--config.file={config}', f'--storage.tsdb.path={self.tmp}/data',
             f'--web.listen-address=127.0.0.1:{self.port}'],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + WAIT_S
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f'prometheus did not become ready: {self.log()}')
            time.sleep(0.1)

    def _ready(self):
        try:
            with urllib.request.urlopen(f'http://127.0.0.1:{self.port}/-/ready', timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def log(self):
        with open(self.log_path, 'rb') as f:
            return f.read().decode(errors='replace')[-4000:]

    def query(self, expr, at=None):
        """/api/v1/query: the result list; AssertionError on an error."""
        params = {'query': expr}
        if at is not None:
            params['time'] = f'{at:.3f}'
        url = f'http://127.0.0.1:{self.port}/api/v1/query?' + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=WAIT_S) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:  # a bad query: Prometheus says why in the body
            raise AssertionError(f'{expr}: {e}: {e.read().decode(errors="replace")}') from None
        if body.get('status') != 'success':
            raise AssertionError(f'{expr}: {body}')
        return body['data']['result']

    def waitSamples(self, selector, count, after=0.0):
        """Until `selector` has `count` samples scraped after `after` (a
        Unix time); returns the newest sample's time."""
        deadline = time.monotonic() + WAIT_S + count * SCRAPE_S
        while True:
            result = self.query(f'{selector}[5m]')
            times = [float(t) for t, _ in result[0]['values']] if result else []
            later = [t for t in times if t > after]
            if len(later) >= count:
                return later[-1]
            if time.monotonic() > deadline:
                raise AssertionError(f'{selector}: {len(later)} samples after {after}, not {count}: {self.log()}')
            time.sleep(0.2)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def value(result):
    (only,) = result
    return float(only['value'][1])


def countsOf(text):
    """The mount's `counts` as {(set, pmd): {key: int}}."""
    out = {}
    for line in text.splitlines():
        kv = dict(w.split('=', 1) for w in line.split())
        out[(int(kv['set']), int(kv['pmd']))] = {k: int(v) for k, v in kv.items() if v.isdigit()}
    return out


class PrometheusConfig(unittest.TestCase):
    def test_promtool_check_config(self):
        requireTool(self, 'promtool')
        p = subprocess.run(['promtool', 'check', 'config', os.path.join(EXAMPLES, 'prometheus.yml')],
                           capture_output=True, text=True, timeout=WAIT_S)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn('SUCCESS', p.stdout + p.stderr)


@simOnly
class Scraped(MountTestCase):
    """One exporter, one Prometheus, for the class: the rate checks and the
    dashboard's queries read the same scrapes."""

    manual_clock = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cleanups = []
        try:
            cls._start()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _start(cls):
        cls.missing = None
        if shutil.which('prometheus') is None:
            cls.missing = 'no prometheus (package prometheus: scripts/install-deps.sh)'
            return
        if es.CGROUP_ROOT is None:
            cls.missing = 'no cgroup v2 hierarchy (no cgroup2 line in /proc/self/mountinfo)'
            return
        # A control group, so that the dashboard's per-group panels have a
        # series (an idle group: its counts stay 0).
        cls.cgroup = os.path.join(es.CGROUP_ROOT, f'pfmfs-exporter-prom-{os.getpid()}')
        os.mkdir(cls.cgroup)
        cls.cleanups.append(lambda: os.rmdir(cls.cgroup))
        cls.exporter = Exporter(cls.m.mnt, CONFIG + f'cgroup {cls.cgroup}\n')
        cls.cleanups.append(cls.exporter.close)
        cls.exporter.start()
        cls.prom = Prometheus([cls.exporter.address])
        cls.cleanups.append(cls.prom.close)

    @classmethod
    def _stop(cls):
        while cls.cleanups:
            cls.cleanups.pop()()

    @classmethod
    def tearDownClass(cls):
        cls._stop()
        super().tearDownClass()

    def setUp(self):
        # setUpClass found it missing: a failure under CI, a skip elsewhere.
        if self.missing:
            if inCi():
                self.fail(self.missing)
            self.skipTest(self.missing)

    def sel(self, name, **labels):
        labels = dict({'job': JOB, 'cpu': '0'}, **labels)
        return name + '{' + ','.join(f'{k}="{v}"' for k, v in sorted(labels.items())) + '}'

    def mountCounts(self):
        """cpu 0's session's counts, and the Unix times before and after
        the read."""
        name = f'pfmfs-exporter.{self.exporter.proc.pid}.cpu0'
        before = time.time()
        counts = countsOf(self.m.read(f'sessions/{name}/counts'))
        return counts, before, time.time()

    def test_rate_is_the_sims_and_the_mounts(self):
        cycles0 = self.sel('pfmfs_event_count_total', set='0', event='cycles')
        before, _, t_a = self.mountCounts()
        # A window of scrapes after the first reading, then the second.
        self.prom.waitSamples(cycles0, WINDOW_S + 3, after=t_a)
        after, t_b, _ = self.mountCounts()
        # A sample's time is its scrape's start, and the exporter read the
        # counts before the scrape's timeout: the samples from t_a to
        # t_b - timeout were read between the two readings.
        t_start, t_end = t_a + ALIGN_S, t_b - SCRAPE_S - ALIGN_S
        window = f'[{int((t_end - t_start) * 1000)}ms]'
        for set_id, event in (('0', 'cycles'), ('0', 'instructions'), ('1', 'cycles')):
            with self.subTest(set=set_id, event=event):
                sel = self.sel('pfmfs_event_count_total', set=set_id, event=event)
                enabled = self.sel('pfmfs_set_enabled_seconds_total', set=set_id)
                running = self.sel('pfmfs_set_running_seconds_total', set=set_id)

                def query(expr):
                    return value(self.prom.query(expr, at=t_end))

                # Counts and times of one `counts` line: each scrape's ratio
                # is the sim's rate per second of the set's running time.
                per_running = query(f'rate({sel}{window}) / ignoring(event) rate({running}{window})')
                self.assertAlmostEqual(per_running / RATES[event], 1, delta=1e-6)
                # Scaled for multiplexing: the rate per second of wall time.
                scaled = query(f'rate({sel}{window}) * ignoring(event) '
                               f'(rate({enabled}{window}) / rate({running}{window}))')
                self.assertAlmostEqual(scaled / RATES[event], 1, delta=CLOSE)
                self.assertAlmostEqual(query(f'rate({running}{window}) / rate({enabled}{window})'), 0.5,
                                       delta=CLOSE)
                self.assertAlmostEqual(query(f'rate({enabled}{window})'), 1, delta=CLOSE)
                # The mount's counts over the same interval: every sample
                # Prometheus took lies between the two readings, and the
                # rates agree.
                samples = [float(v) for _, v in self.prom.query(f'{sel}{window}', at=t_end)[0]['values']]
                self.assertGreaterEqual(len(samples), WINDOW_S - 1)
                key = self._pmdOf(after, int(set_id), event)
                c_a, c_b = before[key]['value'], after[key]['value']
                self.assertTrue(all(c_a <= v <= c_b for v in samples), (c_a, samples, c_b))
                mount_rate = (c_b - c_a) / (t_b - t_a)
                self.assertAlmostEqual(query(f'rate({sel}{window})') / mount_rate, 1, delta=CLOSE)
                self.assertAlmostEqual(mount_rate / (RATES[event] / 2), 1, delta=CLOSE)

    def _pmdOf(self, counts, set_id, event):
        """The PMD the exporter's plan put `event` on in `set_id`: the one
        whose count is that event's rate times the running time."""
        rate = RATES[event] / 1e9
        found = [k for k, c in counts.items() if k[0] == set_id and c['running_ns'] > 0
                 and abs(c['value'] / (rate * c['running_ns']) - 1) < 1e-6]
        self.assertEqual(len(found), 1, (set_id, event, counts))
        return found[0]

    def test_dashboard_queries_return_series(self):
        # Enough scrapes for the widest window the queries use.
        self.prom.waitSamples(self.sel('pfmfs_event_count_total', set='0', event='cycles'), WINDOW_S + 2)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = list(_exprs(dashboard))
        self.assertGreaterEqual(len(exprs), 5)
        for expr in exprs:
            with self.subTest(expr=expr):
                # Grafana's variables as a dashboard showing every machine
                # of the job would set them.
                query = (expr.replace('$__rate_interval', f'{WINDOW_S}s').replace('$job', JOB)
                         .replace('$instance', '.+').replace('$cgroup', '.+'))
                self.assertNotIn('$', query)
                self.assertTrue(self.prom.query(query), f'no series: {query}')

    def test_cgroup_series(self):
        """The idle group's session: its series, labelled by its path."""
        sel = f'pfmfs_event_count_total{{job="{JOB}",cgroup="{self.cgroup}"}}'
        self.prom.waitSamples(sel, 1)
        events = sorted(r['metric']['event'] + '/' + r['metric']['set'] for r in self.prom.query(sel))
        self.assertEqual(events, ['branches/1', 'cycles/0', 'cycles/1', 'instructions/0'])
        self.assertTrue(all('cpu' not in r['metric'] for r in self.prom.query(sel)))


def _exprs(node):
    """Every `expr` string in a Grafana dashboard's JSON."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == 'expr' and isinstance(v, str):
                yield v
            else:
                yield from _exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _exprs(v)


if __name__ == '__main__':
    pfmfs_mount.main()
