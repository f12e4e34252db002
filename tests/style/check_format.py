"""Every C and C++ file is laid out as .clang-format says (meson test `format`).

Usage: check_format.py SOURCE_ROOT

Lists the files `clang-format --dry-run` would change. The folders with a
.clang-format of their own that turns formatting off (the helper module, the C
test programs, libpfm 3.x's headers) pass as they are. To fix a failure, run
clang-format -i on the files it names (docs/CONTRIBUTING.md, "Style").
"""
import os
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))


def sources():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '*.c', '*.cpp', '*.h'],
                         check=True, capture_output=True, text=True).stdout
    return [os.path.join(ROOT, p) for p in out.split()]


def main():
    files = sources()
    if not files:
        print('check_format: no sources listed by git in', ROOT)
        return 1
    bad = []
    for i in range(0, len(files), 100):
        r = subprocess.run(['clang-format', '--dry-run', '-Werror', *files[i:i + 100]],
                           capture_output=True, text=True)
        for line in r.stderr.splitlines():
            if ': error:' in line:
                path = line.split(':', 1)[0]
                if path not in bad:
                    bad.append(path)
    for path in bad:
        print('not formatted:', os.path.relpath(path, ROOT))
    print(f'check_format: {len(files)} files, {len(bad)} not formatted')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
