#!/usr/bin/env python3
# pfmstat's derived metrics (docs/pfmstat.1.md, METRICS) through a real
# mount. On the sim's manual clock every metric is exact: the sim's rates
# (pfmfs(5), "The sim PMU") make IPC 2/3, 3 GHz, 1 % of branches missed...
#   - -M of metrics and groups: their events in one set, every value exact
#   - the estimate marker when a metric's events are multiplexed apart, in
#     the table, CSV and JSON
#   - a metric too big for one set: spread, each event counted once
#   - the user's table extends and overrides the installed one
#   - a garbage table line refused with its file and line number, exit 2,
#     the command never run; an unknown -M; --list-metrics; --no-metrics
# On perf: the software events' rates from the same run's own counts.
import json
import os

from pfmfs_mount import perfOnly, simOnly
from test_pfmstat import MS, WAITER, PfmstatTestCase, csvMetrics, csvRows, table
from test_perf import prog

# What the sim counts per ns (pfmfs(5)), by the names the table's formulas
# use: the events -M adds are shown by those.
RATES = {'cycles': 3, 'instructions': 2, 'ref_cycles': 2.5, 'branches': 0.4, 'branch_misses': 0.004,
         'cache_references': 0.05, 'cache_misses': 0.01}
SIM_METRICS = ['ipc', 'cpi', 'ghz', 'turbo_ratio', 'branch_miss_ratio', 'branch_mpki', 'cache_miss_ratio', 'llc_mpki']


class MetricsTestCase(PfmstatTestCase):

    def counted(self, *args, ns=10 * MS, env=None):
        """pfmstat ARGS on a shell that waits while the clock moves `ns`."""
        p = self.start(*args, 'sh', '-c', WAITER, env=env)
        self.ready(p)
        self.m.advance(ns)
        self.release(p)
        status, out, err = self.finish(p)
        self.assertEqual(status, 0, err)
        self.assertNoSession()
        return err

    def tableFile(self, text, name='metrics'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path


@simOnly
class SimMetricsTest(MetricsTestCase):

    def test_groups_of_metrics_are_exact(self):
        lines = [json.loads(line) for line in self.counted('--json', '-M', 'pipeline,branches,cache').splitlines()]
        events = {line['event']: line for line in lines if 'event' in line}
        metrics = {line['metric']: line for line in lines if 'metric' in line}
        # Every event once, all in one set (4 general and 3 fixed counters),
        # counted the whole 10 ms.
        self.assertEqual(sorted(events), sorted(RATES))
        self.assertEqual({e['set'] for e in events.values()}, {0})
        for name, rate in RATES.items():
            self.assertEqual(events[name]['count'], int(rate * 10 * MS), name)
        c = {name: float(e['count']) for name, e in events.items()}
        # The formulas of pfmstat/metrics.table, in its order of operations.
        self.assertEqual(metrics, {
            'ipc': {'metric': 'ipc', 'value': c['instructions'] / c['cycles'], 'unit': 'insn per cycle',
                    'estimate': False},
            'cpi': {'metric': 'cpi', 'value': 1.5, 'unit': 'cycles per insn', 'estimate': False},
            'ghz': {'metric': 'ghz', 'value': 3, 'unit': 'GHz', 'estimate': False},
            'turbo_ratio': {'metric': 'turbo_ratio', 'value': 1.2, 'unit': 'x reference clock', 'estimate': False},
            'branch_miss_ratio': {'metric': 'branch_miss_ratio', 'value': 1, 'unit': '% of branches',
                                  'estimate': False},
            'branch_mpki': {'metric': 'branch_mpki', 'value': 2, 'unit': 'misses per 1k insn', 'estimate': False},
            'cache_miss_ratio': {'metric': 'cache_miss_ratio', 'value': 20, 'unit': '% of LLC refs',
                                 'estimate': False},
            'llc_mpki': {'metric': 'llc_mpki', 'value': 5, 'unit': 'misses per 1k insn', 'estimate': False},
        })
        self.assertEqual(list(metrics), SIM_METRICS)  # the table's order

    def test_multiplexed_apart_is_an_estimate_in_every_format(self):
        # cycles and instructions in two sets, 5 ms each of 10: IPC from the
        # scaled counts (20 M / 30 M), marked; GHz from cycles' own set, exact.
        args = ['-e', '{cycles}', '-e', '{instructions}', '--switch-ms', '1']
        lines = self.counted(*args).split('\n')
        self.assertEqual(lines[4:10], [
            table('15,000,000', 'cycles', '30,000,000', '(50.00%)') + '  #        3.000 GHz',
            table('10,000,000', 'instructions', '20,000,000', '(50.00%)') + '  #       ~0.667 insn per cycle',
            '',
            "  ~ an estimate: the metric's events were counted in different sets, multiplexed (pfmstat(1))",
            '',
            lines[9]])
        self.assertRegex(lines[9], r'^ +\d+\.\d{9} seconds time elapsed$')

        self.counted('-x,', '-o', self.out, *args)
        self.assertEqual(csvMetrics(self.outFile()), {
            'ghz': [3.0, 'GHz', 'exact'],
            'ipc': [20 / 30, 'insn per cycle', 'estimate'],
        })
        json_lines = [json.loads(line) for line in self.counted('--json', *args).splitlines()]
        self.assertEqual([line for line in json_lines if 'metric' in line], [
            {'metric': 'ipc', 'value': 20 / 30, 'unit': 'insn per cycle', 'estimate': True},
            {'metric': 'ghz', 'value': 3, 'unit': 'GHz', 'estimate': False},
        ])

    def test_a_metric_too_big_for_one_set(self):
        # Six general events and cycles on 4 general counters: spread over
        # sets, each event counted once, the value from the scaled counts.
        events = ['cache_misses', 'cache_references', 'branches', 'branch_misses', 'sim_phase_a', 'sim_phase_b']
        path = self.tableFile(f'metric=big expr="({" + ".join(events)}) / cycles" unit="per cycle"\n')
        self.counted('-x,', '-o', self.out, '--switch-ms', '1', '--metric-table', path, '-M', 'big')
        text = self.outFile()
        names = [line.split(',')[1] for line in text.splitlines() if len(line.split(',')) == 6]
        self.assertEqual(sorted(names), sorted(events + ['cycles']))
        rows = csvRows(text)
        self.assertLess(rows['cycles'][2], rows['cycles'][3])  # multiplexed: ran part of the time
        value = float(sum(rows[e][1] for e in events)) / float(rows['cycles'][1])
        self.assertEqual(csvMetrics(text)['big'], [value, 'per cycle', 'estimate'])

    def test_the_users_table_extends_and_overrides(self):
        home = os.path.join(self.tmp, 'config')
        os.makedirs(os.path.join(home, 'pfmfs'))
        self.tableFile('# mine\nmetric=ipc expr="instructions / cycles" unit="IPC" groups=default\n'
                       'metric=insn_per_ns expr="instructions / time_ns" unit="insn/ns" groups=default\n',
                       'config/pfmfs/metrics')
        self.counted('-x,', '-o', self.out, '-e', 'cycles,instructions', env={'XDG_CONFIG_HOME': home})
        self.assertEqual(csvMetrics(self.outFile()), {
            'ipc': [2 / 3, 'IPC', 'exact'],
            'ghz': [3.0, 'GHz', 'exact'],
            'insn_per_ns': [2.0, 'insn/ns', 'exact'],
        })

    def refused(self, *args, env=None):
        marker = os.path.join(self.tmp, 'ran')
        p = self.start(*args, 'touch', marker, env=env)
        status, out, err = self.finish(p)
        self.assertEqual(status, 2, err)
        self.assertFalse(os.path.exists(marker))
        self.assertEqual(self.sessions(), [])
        return err

    def test_garbage_is_refused_with_its_line(self):
        good = 'metric=ipc2 expr="instructions / cycles"\n'
        cases = [
            ('metric=x expr="cycles / (instructions"\n', "expr: the '(' at column 10 is not closed"),
            ('metric=x expr="cycles $ 2"\n', "expr: unexpected '$' at column 8"),
            ('metric=x expr="2 * time_ns"\n', 'expr: the formula names no event'),
            ('metric=X expr="cycles"\n', "metric name 'X': lower case letters, digits and _, a letter first"),
            ('metric=x expr="cycles" colour=red\n', "unknown key 'colour' (metric, expr, unit, groups, desc)"),
            ('metric=x unit="u"\n', 'no expr= formula'),
            ('expr="cycles" unit="u\n', 'unit: the quoted value is not closed'),
            ('garbage\n', "'garbage' is not key=value"),
            ('metric=ipc2 expr="cycles"\n', f'metric ipc2 is defined at {{path}}:2 already'),
        ]
        for line, reason in cases:
            with self.subTest(line=line):
                path = self.tableFile('# a comment\n' + good + '\n' + line)
                err = self.refused('--metric-table', path, '-e', 'cycles')
                self.assertEqual(err, f'pfmstat: {path}:4: {reason.format(path=path)}\n')
        # The user's own table, the same.
        home = os.path.join(self.tmp, 'config')
        os.makedirs(os.path.join(home, 'pfmfs'))
        path = self.tableFile('metric=x expr="cycles +"\n', 'config/pfmfs/metrics')
        self.assertEqual(self.refused('-e', 'cycles', env={'XDG_CONFIG_HOME': home}),
                         f'pfmstat: {path}:1: expr: the formula ends where a value was expected\n')
        missing = os.path.join(self.tmp, 'nosuch')
        self.assertRegex(self.refused('--metric-table', missing), rf'^pfmstat: metrics table: .*{missing}')
        self.assertEqual(self.refused('-M', 'nosuch'),
                         'pfmstat: -M nosuch: no such metric or metric group (pfmstat --list-metrics)\n')
        self.assertRegex(self.refused('-M', 'page_faults_per_sec'),
                         r"^pfmstat: -M page_faults_per_sec: metric page_faults_per_sec needs event 'page_faults', "
                         r'which this PMU does not have \(.*metrics:\d+\)\n$')

    def test_list_metrics(self):
        status, out, err = self.run_pfmstat('--list-metrics')
        self.assertEqual((status, err), (0, ''))
        names = [line.split()[0] for line in out.splitlines()]
        self.assertEqual(names, [f'metric={n}' for n in SIM_METRICS])
        self.assertIn('metric=ipc expr="instructions / cycles" unit="insn per cycle" groups=default,pipeline', out)

    def test_no_metrics(self):
        self.counted('-x,', '-o', self.out, '-e', 'cycles,instructions', '--no-metrics')
        self.assertEqual(csvMetrics(self.outFile()), {})
        self.counted('-x,', '-o', self.out, '-e', 'cycles', '--no-metrics', '-M', 'cpi')
        self.assertEqual(csvMetrics(self.outFile()), {'cpi': [1.5, 'cycles per insn', 'exact']})
        self.assertEqual(sorted(csvRows(self.outFile())), ['cycles', 'instructions'])


@perfOnly
class PerfMetricsTest(MetricsTestCase):

    def test_software_rates_from_the_same_counts(self):
        argv = [prog('perf_worker'), 'touch', '1000']
        p = self.start('-x,', '-o', self.out, '-e', 'page-faults,context-switches,task-clock', *argv)
        self.assertEqual(self.finish(p)[0], 0)
        rows, metrics = csvRows(self.outFile()), csvMetrics(self.outFile())
        self.assertGreaterEqual(rows['page-faults'][0], 1000)
        for metric, event in ('page_faults_per_sec', 'page-faults'), ('context_switches_per_sec', 'context-switches'):
            count, _, running, _, _ = rows[event]
            self.assertEqual(metrics[metric], [1e9 * count / running, '/sec', 'exact'])

    def test_list_metrics_follows_the_pmu(self):
        status, out, err = self.run_pfmstat('--list-metrics')
        self.assertEqual((status, err), (0, ''))
        names = {line.split()[0][len('metric='):] for line in out.splitlines()}
        self.assertTrue({'page_faults_per_sec', 'context_switches_per_sec', 'cpu_migrations_per_sec',
                         'major_fault_ratio'} <= names, names)
        with open(self.m.path('pmu/events')) as f:
            hardware = 'INSTRUCTION_RETIRED' in f.read()
        # perf-sw has no cycles: the pipeline's metrics are another model's.
        self.assertEqual('ipc' in names, hardware, names)


if __name__ == '__main__':
    import pfmfs_mount
    pfmfs_mount.main()
