#!/usr/bin/env python3
"""What a scrape of pfmfs-exporter costs (pfmfs-exporter(8), SCRAPE COST).

    exporter_bench.py PFMFSD PFMFS_EXPORTER [--scrapes N] [--idle-s S]

Mounts pfmfsd's sim (real clock) on a temporary directory and runs the
exporter on it with one session per online CPU, each counting 8 events (two
sets: the sim has 4 general and 3 fixed counters). Then, in the same run:

- N scrapes of /metrics, a TCP connection each (civetweb keeps none
  alive): the time each takes at the client, its bytes, and the CPU time
  the exporter and pfmfsd spent per scrape;
- the baseline: N times a plain `cat` of the same sessions' `counts` files
  through the mount (a fork and exec each, as a shell script would), and N
  times the same files read in this process (the mount's part alone);
- S seconds with a scrape every 15 s: the exporter's and pfmfsd's CPU use
  as a share of one CPU.

Every figure is printed beside the baselines, as a ratio. CPU times come
from /proc/PID/task/*/schedstat (nanoseconds on a CPU, every thread).
Needs root (a mount with allow_other); exits 77 without it.
"""
import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

EVENTS = ('cycles,instructions,branches,branch-misses,LLC_REFERENCES,LLC_MISSES,'
          'UNHALTED_REFERENCE_CYCLES,SIM_PHASE_A')
INTERVAL_S = 15
WAIT_S = 60


def cpuNs(pid):
    """CPU time of every thread of `pid`, in ns."""
    total = 0
    for tid in os.listdir(f'/proc/{pid}/task'):
        try:
            with open(f'/proc/{pid}/task/{tid}/schedstat') as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended: its time is gone with it
    return total


def waitFor(predicate, what):
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            sys.exit(f'exporter_bench: {what} did not happen within {WAIT_S} s')
        time.sleep(0.02)


def freePort():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def row(name, times_ns, cat_ns, read_ns, extra=''):
    med = statistics.median(times_ns)
    print(f'  {name:<34} median {med / 1e3:8.1f} us  p90 {percentile(times_ns, 90) / 1e3:8.1f} us'
          f'  x{med / cat_ns:5.2f} of cat  x{med / read_ns:5.2f} of read{extra}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('pfmfsd')
    ap.add_argument('exporter')
    ap.add_argument('--scrapes', type=int, default=200)
    ap.add_argument('--idle-s', type=int, default=60, help='the 15-s interval run (seconds)')
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('SKIP: not root (the bench mounts pfmfsd with allow_other)', file=sys.stderr)
        sys.exit(77)

    tmp = tempfile.mkdtemp(prefix='exp-bench-')
    mnt = os.path.join(tmp, 'mnt')
    os.mkdir(mnt)
    daemon = subprocess.Popen([a.pfmfsd, '-f', '--pmu=sim', '-o', 'allow_other', mnt],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    exporter = None
    try:
        waitFor(lambda: os.path.exists(os.path.join(mnt, 'version')), 'the mount')
        config = os.path.join(tmp, 'exporter.conf')
        with open(config, 'w') as f:
            f.write(f'events {EVENTS}\n')
        port = freePort()
        err = open(os.path.join(tmp, 'stderr'), 'wb')
        exporter = subprocess.Popen([a.exporter, '--config', config, '--mount', mnt,
                                     '--listen', f'127.0.0.1:{port}'], stdout=subprocess.DEVNULL, stderr=err)

        def serving():
            if exporter.poll() is not None:
                sys.exit(f'exporter_bench: the exporter exited: {open(err.name).read()}')
            return b'serving' in open(err.name, 'rb').read()

        waitFor(serving, 'the exporter serving')
        sessions = sorted(n for n in os.listdir(os.path.join(mnt, 'sessions'))
                          if n.startswith(f'pfmfs-exporter.{exporter.pid}.'))
        counts = [os.path.join(mnt, 'sessions', n, 'counts') for n in sessions]
        def scrape():
            # A connection each: civetweb closes it after the response (no
            # keep-alive, so that an idle client holds none of its threads).
            conn = http.client.HTTPConnection('127.0.0.1', port, timeout=WAIT_S)
            try:
                conn.request('GET', '/metrics')
                r = conn.getresponse()
                body = r.read()
                assert r.status == 200, r.status
                return len(body)
            finally:
                conn.close()

        for _ in range(10):  # warm: the connection, the page cache, civetweb's threads
            scrape()

        sizes, scrape_ns = [], []
        e0, d0 = cpuNs(exporter.pid), cpuNs(daemon.pid)
        for _ in range(a.scrapes):
            t = time.perf_counter_ns()
            sizes.append(scrape())
            scrape_ns.append(time.perf_counter_ns() - t)
        e_per = (cpuNs(exporter.pid) - e0) / a.scrapes
        d_per = (cpuNs(daemon.pid) - d0) / a.scrapes
        text = open(counts[0]).read()
        lines = len(text.splitlines())

        cat_ns, read_ns = [], []
        for _ in range(a.scrapes):
            t = time.perf_counter_ns()
            subprocess.run(['cat'] + counts, stdout=subprocess.DEVNULL, check=True)
            cat_ns.append(time.perf_counter_ns() - t)
        cat_bytes = sum(len(open(c, 'rb').read()) for c in counts)
        d0 = cpuNs(daemon.pid)
        for _ in range(a.scrapes):
            t = time.perf_counter_ns()
            for c in counts:
                with open(c, 'rb') as f:
                    f.read()
            read_ns.append(time.perf_counter_ns() - t)
        d_read = (cpuNs(daemon.pid) - d0) / a.scrapes

        base, base_read = statistics.median(cat_ns), statistics.median(read_ns)
        print(f'exporter_bench: {len(counts)} cpus x 8 events ({lines} counts lines per session), '
              f'{a.scrapes} of each; ratios against `cat` of the {len(counts)} counts files and '
              'against reading them in this process')
        row('scrape (GET /metrics)', scrape_ns, base, base_read,
            f'  {statistics.median(sizes):.0f} bytes (cat: {cat_bytes})')
        row('baseline: cat counts files', cat_ns, base, base_read)
        row('baseline: read counts in-process', read_ns, base, base_read)
        print(f'  CPU per scrape: exporter {e_per / 1e3:.1f} us, pfmfsd {d_per / 1e3:.1f} us '
              f'(pfmfsd per in-process read of the files: {d_read / 1e3:.1f} us)')

        # The 15-s interval: what the exporter costs a machine at rest.
        e0, d0, t0 = cpuNs(exporter.pid), cpuNs(daemon.pid), time.monotonic()
        next_scrape = t0
        while time.monotonic() - t0 < a.idle_s:
            if time.monotonic() >= next_scrape:
                scrape()
                next_scrape += INTERVAL_S
            time.sleep(min(0.5, max(0.0, next_scrape - time.monotonic())))
        wall = time.monotonic() - t0
        e_use = (cpuNs(exporter.pid) - e0) / (wall * 1e9)
        d_use = (cpuNs(daemon.pid) - d0) / (wall * 1e9)
        print(f'  every {INTERVAL_S} s for {wall:.0f} s: exporter {e_use * 100:.4f} % of one CPU, '
              f'pfmfsd {d_use * 100:.4f} %')
    finally:
        if exporter is not None and exporter.poll() is None:
            exporter.send_signal(signal.SIGTERM)
            exporter.wait(WAIT_S)
        subprocess.run(['fusermount3', '-u', mnt])
        daemon.wait(WAIT_S)
        os.rmdir(mnt)
        subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    main()
