"""No source file of the daemon, the engine, the backends, pfmstat,
libpfm-compat or the helper module is over 500 lines (meson test
`file-size`; docs/CONTRIBUTING.md, "Names").

Usage: check_file_size.py SOURCE_ROOT

A file that grows past the limit holds more than one thing: split it by
what it does, each part in a file named after it. Tests, examples and
libpfm 3.x's public headers (their layout is libpfm's) are not counted.
"""
import os
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
LIMIT = 500
COUNTED = ('fastpath/', 'fs/', 'session/', 'pmu/', 'pfmstat/', 'libpfm-compat/src/', 'helper-kmod/')


def main():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '*.c', '*.cpp', '*.h'],
                         check=True, capture_output=True, text=True).stdout
    files = [p for p in out.split() if p.startswith(COUNTED)]
    if not files:
        print('check_file_size: no sources listed by git in', ROOT)
        return 1
    over = []
    for path in files:
        with open(os.path.join(ROOT, path), encoding='utf-8', errors='replace') as f:
            lines = sum(1 for _ in f)
        if lines > LIMIT:
            over.append((lines, path))
    for lines, path in sorted(over, reverse=True):
        print(f'{path}: {lines} lines, over {LIMIT}')
    print(f'check_file_size: {len(files)} files, {len(over)} over {LIMIT} lines')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
