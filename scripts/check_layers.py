#!/usr/bin/env python3
"""The layer graph of pfmfs (docs/design.md, "Layers"), checked.

Every `#include "DIR/..."` of a source file must name its own unit or one of
the units LAYERS lets it use; a unit is a top-level folder, or a backend's
folder under pmu/. The build runs this (meson.build: target `layers`), so an
upward include fails `ninja` with the file, the line and the rule; the test
`layers` (tests/style/test_layers.py) checks that it does.

Usage: check_layers.py SOURCE_ROOT [--stamp FILE]
"""
import os
import re
import sys

# unit: the units it may include besides itself. Below a unit is only what it
# may use: pmu knows no session, session no FUSE, and fs no backend.
LAYERS = {
    'base': [],                           # Mutex and the thread-safety macros: every unit's
    'fastpath': ['base'],                       # the mapped page's layout, shared with libpfm-compat
    'helper-kmod/uapi': [],               # the helper module's ioctl ABI
    'pmu': ['base'],                      # Backend, PmuDescription, the registry
    'pmu/perf_event': ['base', 'pmu'],    # perf_event_open utilities of several backends
    'pmu/sim': ['base', 'pmu', 'pmu/perf_event'],
    'pmu/perf': ['base', 'pmu', 'pmu/perf_event'],
    'pmu/x86': ['base', 'pmu', 'helper-kmod/uapi'],
    'session': ['base', 'pmu', 'fastpath'],
    'fs': ['base', 'session', 'pmu', 'fastpath'],
    'pfmstat': ['base'],                  # a client of the mount: links nothing of the daemon
    'exporter': ['base', 'pfmstat'],      # pfmfs-exporter: pfmstat's sessions served to Prometheus
    'libpfm-compat': ['base', 'fastpath'],  # a client of the mount, and the fast path's reader
    'examples': ['base', 'session', 'pmu', 'pmu/sim'],
}

# The one file that names every backend: `--pmu=auto`'s order is its table.
EXCEPTIONS = {
    'pmu/backend_registry.cpp': ['pmu/perf', 'pmu/sim', 'pmu/x86'],
}

# Where a file's or an include's unit is decided: these folders hold units
# of their own one level down.
NESTED = {'pmu', 'helper-kmod'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def unitOf(path):
    parts = path.split('/')
    if parts[0] in NESTED and len(parts) > 2:
        return parts[0] + '/' + parts[1]
    return parts[0]


def sources(root):
    for top in sorted({u.split('/')[0] for u in LAYERS}):
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith(('.cpp', '.h', '.c')):
                    yield os.path.relpath(os.path.join(d, f), root)


def violations(root):
    """(file, line, include, reason) for every include the graph forbids."""
    out = []
    tops = {u.split('/')[0] for u in LAYERS}
    for path in sources(root):
        unit = unitOf(path)
        if unit not in LAYERS:
            if unit.startswith('helper-kmod'):
                continue  # the module's own C: kernel includes only
            out.append((path, 0, '', f'unit {unit} is not in check_layers.py\'s LAYERS: add its row'))
            continue
        allowed = {unit, *LAYERS[unit], *EXCEPTIONS.get(path, [])}
        with open(os.path.join(root, path), errors='replace') as f:
            text = f.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            if '/' not in inc or inc.split('/')[0] not in tops:
                continue  # a file beside it, or a header of its own include root
            target = unitOf(inc)
            if target not in allowed:
                line = text.count('\n', 0, m.start()) + 1
                out.append((path, line, inc, f'{unit} may include only {", ".join(sorted(allowed))}'))
    return out


def main(argv):
    root = os.path.abspath(argv[1])
    bad = violations(root)
    for path, line, inc, why in bad:
        print(f'{path}:{line}: error: include "{inc}" goes against the layers: {why} '
              f'(scripts/check_layers.py, docs/design.md)', file=sys.stderr)
    if bad:
        return 1
    if len(argv) > 3 and argv[2] == '--stamp':
        with open(argv[3], 'w') as f:
            f.write('layers ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
