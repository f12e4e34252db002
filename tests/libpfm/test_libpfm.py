#!/usr/bin/env python3
# test_libpfm.py: libpfm-compat as perfmon2 programs use it. Installs the
# build into a temporary root (`meson install --destdir`), compiles every C
# program of tests/libpfm against the installed headers and libpfm.so.3 with
# pkg-config, as an outside program would be built, and runs each one against
# a fresh pfmfsd mount (check.h documents the convention). Also compiles the
# headers alone as C and C++ of several standards, SIGKILLs churn.c at
# random moments to prove no session is ever left behind, and reads
# /sys/kernel/perfmon from `cat` with LD_PRELOAD=libpfm.so.3.
#
# Run by meson (tests 'libpfm' and 'libpfm-perf'); by hand:
#   PFMFS_BUILD_ROOT=build PFMFSD=build/fs/pfmfsd python3 tests/libpfm/test_libpfm.py [ProgramTest.test_v3_calls]
# PFMFS_BACKEND=perf (or x86) runs the programs whose first line lists `perf`
# (`x86`); PFMFS_INSTALLED_ROOT=DIR uses a `meson install --destdir DIR` done
# before instead of installing (tests/vm/x86-mount-tests.sh: the x86 run, in
# the QEMU guest of tests/vm/).
import os
import random
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))

import perfmon_headers  # noqa: E402  (beside this file)
import pfmfs_mount  # noqa: E402  (after the path above)
from pfmfs_mount import BACKEND, Mount, descendantsOf, inCi, processTreeOf, threadsOf, waitFor  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SKIP_STATUS = 77
# How much slower than a plain build on an idle host this run may be (the
# QEMU guest sets more): every time limit below is multiplied by it, and the
# programs get it too (check.h's wait_ms()).
TIME_SCALE = max(1.0, float(os.environ.get('PFMFS_TIME_SCALE') or 1))
# The bound of a wait for what must happen (a churn's start or stop, ...):
# what it waits for takes milliseconds; it fails only what never comes.
WAIT_S = pfmfs_mount.WAIT_S * TIME_SCALE
# How long a dead program's sessions may take to go: FUSE tells the daemon
# of the last close asynchronously, milliseconds late even on a loaded
# machine. A wait for what must happen, not a promise of speed.
SESSION_GONE_S = WAIT_S
# A program's time limit unless its first line says otherwise: a program
# takes a second or two at most (under TSan, on a loaded machine); the limit
# is there for a hang, and stays above check.h's waits (WAIT_MS, 20 s), so
# that a wait that runs out fails with its own message first.
DEFAULT_TIMEOUT_S = 60
WARNINGS = ['-Wall', '-Wextra', '-Werror']
# The libc calls the library answers itself (libpfm-compat/libpfm.map): those
# that reach /sys/kernel/perfmon (src/sysfs_interpose.cpp) and mmap, which
# maps a context's sampling buffer (src/mmap_interpose.cpp). The only names
# either library defines beside the API, weak in libpfm.a.
INTERPOSED = sorted([
    'open', 'open64', 'openat', 'openat64', '__open_2', '__open64_2', '__openat_2', '__openat64_2',
    'fopen', 'fopen64', 'access', 'faccessat', 'euidaccess', 'eaccess',
    'stat', 'stat64', 'lstat', 'lstat64', 'fstatat', 'fstatat64',
    '__xstat', '__xstat64', '__lxstat', '__lxstat64', '__fxstatat', '__fxstatat64', 'statx',
    'opendir', 'fdopendir', 'readdir', 'readdir64', 'readdir_r', 'readdir64_r', 'closedir', 'rewinddir', 'dirfd',
    'telldir', 'seekdir', 'scandir', 'scandir64',
    'mmap', 'mmap64', 'fcntl', 'fcntl64'])


def buildRoot():
    root = os.environ.get('PFMFS_BUILD_ROOT')
    if root:
        return root
    candidate = os.path.join(REPO, 'build')
    if os.path.exists(os.path.join(candidate, 'build.ninja')):
        return candidate
    raise SystemExit('PFMFS_BUILD_ROOT is not set and there is no build/ to install from')


def sanitizeFlags():
    """-fsanitize= as the build uses it: an ASan-built libpfm.so needs its
    program linked with ASan too."""
    value = os.environ.get('PFMFS_SANITIZE', 'none')
    return [] if value in ('', 'none') else [f'-fsanitize={value}']


def run(cmd, **kw):
    """A build step: fails the test with its output when it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError(f'{shlex.join(cmd)} exited {p.returncode}:\n{p.stdout}{p.stderr}')
    return p.stdout


# ---- the programs and their first line -------------------------------------------

class Program:
    """A tests/libpfm/*.c program and what its `// pfmfs-test:` line asks
    (timeout: seconds, already times TIME_SCALE)."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.backends = ['sim']
        self.manual_clock = True
        self.daemon_args = []
        self.args = []
        self.env = {}
        self.timeout = DEFAULT_TIMEOUT_S * TIME_SCALE
        self.runs = True
        with open(path) as f:
            first = f.readline()
        m = re.match(r'\s*//\s*pfmfs-test:(.*)$', first)
        if m:
            for word in m.group(1).split():
                self._apply(word)

    def _apply(self, word):
        key, eq, value = word.partition('=')
        if not eq:
            raise SystemExit(f'{self.path}: pfmfs-test word {word!r} is not key=value')
        if key == 'backends':
            self.backends = value.split(',')
        elif key == 'clock':
            self.manual_clock = value == 'manual'
        elif key == 'daemon-arg':
            self.daemon_args.append(value)
        elif key == 'arg':
            self.args.append(value)
        elif key == 'env':
            name, _, val = value.partition('=')
            self.env[name] = val
        elif key == 'timeout':
            self.timeout = int(value) * TIME_SCALE
        elif key == 'run':
            self.runs = value != 'no'
        else:
            raise SystemExit(f'{self.path}: unknown pfmfs-test key {key!r}')


def programs():
    return [Program(os.path.join(HERE, f)) for f in sorted(os.listdir(HERE)) if f.endswith('.c')]


# ---- the installed library ---------------------------------------------------------

class Installed:
    """The build installed under a temporary root, and how to compile against
    it: pkg-config's flags for libpfm and the directory of libpfm.so.3."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix='pfmfs-libpfm-')
        self.bin = os.path.join(self.tmp, 'bin')
        os.mkdir(self.bin)
        # PFMFS_INSTALLED_ROOT: a destdir the build was installed into before
        # (tests/vm/x86-mount-tests.sh does it on the host: in the QEMU guest
        # the build directory is read-only, and `meson install` writes
        # meson-logs/install-log.txt there).
        self.destdir = os.environ.get('PFMFS_INSTALLED_ROOT')
        if not self.destdir:
            self.destdir = os.path.join(self.tmp, 'root')
            meson = shlex.split(os.environ.get('PFMFS_MESON', 'meson'))
            run([*meson, 'install', '-C', buildRoot(), '--destdir', self.destdir, '--no-rebuild', '--quiet'])
        pcs = [os.path.join(d, f) for d, _, files in os.walk(self.destdir) for f in files if f == 'libpfm.pc']
        if len(pcs) != 1:
            raise AssertionError(f'meson install put {len(pcs)} libpfm.pc under {self.destdir}')
        self.pc_dir = os.path.dirname(pcs[0])
        # The .pc names the configured prefix; the sysroot puts the destdir in
        # front of its -I and -L paths, as a cross build would.
        self.pc_env = dict(os.environ, PKG_CONFIG_PATH=self.pc_dir, PKG_CONFIG_SYSROOT_DIR=self.destdir)
        self.cflags = shlex.split(run(['pkg-config', '--cflags', 'libpfm'], env=self.pc_env))
        self.libs = shlex.split(run(['pkg-config', '--libs', 'libpfm'], env=self.pc_env))
        lib_dirs = [f[2:] for f in self.libs if f.startswith('-L')]
        if not lib_dirs or not os.path.exists(os.path.join(lib_dirs[0], 'libpfm.so.3')):
            raise AssertionError(f'pkg-config --libs libpfm gave {self.libs}: no libpfm.so.3 there')
        self.lib_dir = lib_dirs[0]
        self.include_dir = next(f[2:] for f in self.cflags if f.startswith('-I'))
        self._built = {}
        self._lock = threading.Lock()

    def compile(self, source, out, std='gnu11', extra=(), static=False):
        """static: linked with libpfm.a (`-Wl,-Bstatic -lpfm`), by the C
        compiler alone, as a C program links it: no C++ runtime."""
        cc = os.environ.get('CC', 'cc')
        libs = self.libs
        if static:
            libs = [f for f in self.libs if f != '-lpfm'] + ['-Wl,-Bstatic', '-lpfm', '-Wl,-Bdynamic']
        run([cc, f'-std={std}', *WARNINGS, '-g', '-pthread', *sanitizeFlags(), *extra,
             source, '-o', out, *self.cflags, *libs])
        return out

    def program(self, prog, static=False):
        """The executable of a Program, built once per run (by one thread:
        another would exec it half-written)."""
        name = prog.name + ('-static' if static else '')
        with self._lock:
            if name not in self._built:
                self._built[name] = self.compile(prog.path, os.path.join(self.bin, name), static=static)
            return self._built[name]

    def runEnv(self, mount, extra=None):
        env = dict(os.environ, PFMFS_MOUNT=mount.mnt, PFMFS_BACKEND=BACKEND,
                   LD_LIBRARY_PATH=self.lib_dir, PFMFS_TIME_SCALE=str(TIME_SCALE))
        env.update(extra or {})
        return env

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


INSTALLED = None


def setUpModule():
    global INSTALLED
    INSTALLED = Installed()


def tearDownModule():
    if INSTALLED is not None:
        INSTALLED.close()


def sessions(mount):
    return sorted(os.listdir(mount.path('sessions')))


class LibpfmTestCase(unittest.TestCase):
    maxDiff = None

    def startMount(self, prog=None):
        args = prog.daemon_args if prog else []
        m = Mount(args, manual_clock=prog.manual_clock if prog else True).start()
        self.addCleanup(self._closeMount, m)
        return m

    def _closeMount(self, m):
        if m.proc is not None:
            m.close()

    def assertNoSessions(self, m, what):
        """MOUNT/sessions empties within SESSION_GONE_S and pfmfsd lives."""
        if not waitFor(lambda: not sessions(m), SESSION_GONE_S):
            self.fail(f'{what}: sessions left after {SESSION_GONE_S:.0f} s: {sessions(m)}\n'
                      f'pfmfsd log (tail):\n{m.log()[-4000:]}')
        self.assertIsNone(m.proc.poll(), f'{what}: pfmfsd died:\n{m.log()[-4000:]}')


# ---- one test per program ------------------------------------------------------------

class ProgramTest(LibpfmTestCase):
    """Filled below with test_NAME for every program this backend runs."""

    def runProgram(self, prog, static=False):
        exe = INSTALLED.program(prog, static)
        m = self.startMount(prog)
        out_path = os.path.join(INSTALLED.tmp, prog.name + '.out')
        workdir = tempfile.mkdtemp(prefix=prog.name + '-', dir=INSTALLED.tmp)
        # Output to a file, not a pipe: a child the program leaves behind for a
        # moment must not hold the test up by keeping a pipe open.
        with open(out_path, 'wb') as out:
            began = time.monotonic()
            p = subprocess.Popen([exe] + prog.args, env=INSTALLED.runEnv(m, prog.env), cwd=workdir,
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            where = None
            try:
                status = p.wait(prog.timeout)
            except subprocess.TimeoutExpired:
                where = f'{processTreeOf(p.pid)}\n pfmfsd {m.proc.pid}:\n{threadsOf(m.proc.pid)}'
                kids = descendantsOf(p.pid)
                p.kill()
                for kid in kids:  # a stuck child outlives its parent
                    try:
                        os.kill(kid, signal.SIGKILL)
                    except OSError:
                        pass
                status = p.wait()
        print(f'{prog.name}: {time.monotonic() - began:.1f} s', file=sys.stderr)
        with open(out_path, 'rb') as f:
            output = f.read().decode(errors='replace')
        if where is not None:
            # Every wait of a program is bounded below this (check.h): a step
            # that never ended. Its output says how far it got; /proc, where.
            self.fail(f'{prog.name} was killed after its timeout of {prog.timeout:.0f} s (PFMFS_TIME_SCALE='
                      f'{TIME_SCALE:g}) on {BACKEND}: a step never ended. Where its threads and those of pfmfsd '
                      f'were:\n{where}\n'
                      f'its output (the last line is the last step it finished):\n{output}\n'
                      f'pfmfsd log (tail):\n{m.log()[-4000:]}')
        if status == SKIP_STATUS and not inCi():
            self.skipTest(output.strip() or f'{prog.name} exited 77')
        self.assertEqual(status, 0, f'{prog.name} exited {status} on {BACKEND}; its output:\n{output}\n'
                         f'pfmfsd log (tail):\n{m.log()[-4000:]}')
        self.assertNoSessions(m, prog.name)


def _programTest(prog, static):
    def test(self):
        self.runProgram(prog, static)
    test.__doc__ = f'{prog.name}.c on the {BACKEND} backend' + (', linked with libpfm.a' if static else '')
    return test


for _prog in programs():
    if _prog.runs and BACKEND in _prog.backends:
        setattr(ProgramTest, f'test_{_prog.name}', _programTest(_prog, static=False))
        # libpfm.a is the same code: once per backend where the programs are
        # cheap to run (the x86 run, in QEMU, runs the shared library only).
        if BACKEND != 'x86':
            setattr(ProgramTest, f'test_{_prog.name}_static', _programTest(_prog, static=True))


# ---- the headers alone -----------------------------------------------------------------

@pfmfs_mount.simOnly  # the same on every backend: once, in the sim run
class HeaderTest(unittest.TestCase):
    """<perfmon/*.h> compile alone, warning-free, as C and C++ of every
    standard a perfmon2 program may use; headers_c.c and headers_cxx.cpp
    static_assert the sizes and offsets of the ABI structures, headers_bits.c
    the bit positions of the register layouts (perfmon_headers.py: the other
    sources compiled here)."""

    def compileOnly(self, compiler, source, std, extra=()):
        out = os.path.join(INSTALLED.tmp, f'headers-{std}.o')
        run([compiler, f'-std={std}', *WARNINGS, *extra, '-c', os.path.join(HERE, source), '-o', out,
             *INSTALLED.cflags])

    # ISO modes with -pedantic-errors: the headers use no GNU extension.
    def test_c99(self):
        self.compileOnly(os.environ.get('CC', 'cc'), 'headers_c.c', 'c99', ['-pedantic-errors'])

    def test_c11(self):
        self.compileOnly(os.environ.get('CC', 'cc'), 'headers_c.c', 'c11', ['-pedantic-errors'])

    def test_gnu11(self):
        self.compileOnly(os.environ.get('CC', 'cc'), 'headers_c.c', 'gnu11')

    def test_cxx11(self):
        self.compileOnly(os.environ.get('CXX', 'c++'), 'headers_cxx.cpp', 'c++11', ['-pedantic-errors'])

    def test_cxx17(self):
        self.compileOnly(os.environ.get('CXX', 'c++'), 'headers_cxx.cpp', 'c++17', ['-pedantic-errors'])

    def test_cxx20(self):
        self.compileOnly(os.environ.get('CXX', 'c++'), 'headers_cxx.cpp', 'c++20', ['-pedantic-errors'])

    def test_installed_files(self):
        """meson install lays out what `#include <perfmon/...>` and `-lpfm`
        need, with the soname perfmon2 programs were linked against."""
        self.assertEqual(sorted(os.listdir(os.path.join(INSTALLED.include_dir, 'perfmon'))),
                         perfmon_headers.HEADERS)
        self.assertEqual(os.readlink(os.path.join(INSTALLED.lib_dir, 'libpfm.so')), 'libpfm.so.3')
        self.assertEqual(os.readlink(os.path.join(INSTALLED.lib_dir, 'libpfm.so.3')), 'libpfm.so.3.10.0')
        soname = run(['objdump', '-p', os.path.join(INSTALLED.lib_dir, 'libpfm.so.3.10.0')])
        self.assertRegex(soname, r'SONAME\s+libpfm\.so\.3\n')
        self.assertEqual(run(['pkg-config', '--modversion', 'libpfm'], env=INSTALLED.pc_env).strip(), '3.10.0')

    def compileEach(self, sources):
        compiler = perfmon_headers.Compiler(INSTALLED.tmp, INSTALLED.cflags, WARNINGS)
        return sorted(compiler.compile(sources).items())

    def test_each_header_alone(self):
        """Each of libpfm 3.10's 23 headers compiles alone in a C program
        and a C++ one (-Wall -Wextra -Werror -pedantic-errors), but the four
        per-architecture ones that libpfm 3.10 also kept from being included
        directly: those stop the build with a message naming the header to
        include instead."""
        sources = {h: perfmon_headers.aloneSource(h) for h in perfmon_headers.HEADERS}
        for (header, lang), p in self.compileEach(sources):
            with self.subTest(header=header, lang=lang):
                hint = perfmon_headers.DIRECT_ONLY.get(header)
                if hint:
                    self.assertNotEqual(p.returncode, 0, f'<perfmon/{header}> compiled alone')
                    self.assertIn(hint, p.stderr)
                else:
                    self.assertEqual(p.returncode, 0, p.stderr)

    def test_self_start_defined_once(self):
        """pfm_self_start/pfm_self_stop are there, defined once, whichever
        headers a program includes in whatever order; with
        __PFMLIB_OS_COMPILE, as in libpfm 3.10, pfmlib.h brings neither them
        nor perfmon.h, and the source may define them as functions."""
        sources = {'+'.join(hs): perfmon_headers.selfStartSource(hs)
                   for hs in perfmon_headers.SELF_START_INCLUDES}
        sources['os_compile'] = perfmon_headers.OS_COMPILE_SOURCE
        for (name, lang), p in self.compileEach(sources):
            with self.subTest(includes=name, lang=lang):
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_pebs_formats_together(self):
        """The three PEBS formats' headers, which libpfm 3.10 could not
        include together (perfmon_pebs_smpl.h declared the other two's
        record types again), compile together in every order, with libpfm
        3.10's record sizes."""
        for (name, lang), p in self.compileEach(perfmon_headers.pebsSources()):
            with self.subTest(order=name, lang=lang):
                self.assertEqual(p.returncode, 0, p.stderr)

    def test_register_bits(self):
        """headers_bits.c, built as C99 and as C++11, finds every bit-field
        of the model-specific register layouts where the processor manuals
        (and libpfm 3.10) put it."""
        for lang, compiler, std in (('c', os.environ.get('CC', 'cc'), 'c99'),
                                    ('c++', os.environ.get('CXX', 'c++'), 'c++11')):
            with self.subTest(lang=lang):
                exe = os.path.join(INSTALLED.tmp, f'headers_bits-{std}')
                run([compiler, '-x', lang, f'-std={std}', '-pedantic-errors', *WARNINGS,
                     os.path.join(HERE, 'headers_bits.c'), '-x', 'none', '-o', exe, *INSTALLED.cflags])
                p = subprocess.run([exe], capture_output=True, text=True, timeout=WAIT_S)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_static_archive_links_with_a_c_toolchain_alone(self):
        """libpfm.a beside libpfm.so.3, as libpfm 3.10 installed them: a C
        program links it with `cc ... -lpfm -static` and nothing else (no
        -lstdc++), and it defines nothing global beyond the API (no clash
        with a program's own symbols, C++ runtime included) but the libc
        interposers, weak (so they never clash with libc.a's in a static link)."""
        archive = os.path.join(INSTALLED.lib_dir, 'libpfm.a')
        self.assertTrue(os.path.isfile(archive))
        defined = run(['nm', '-g', '--defined-only', archive])
        symbols = [line.split() for line in defined.splitlines()
                   if len(line.split()) == 3 and line.split()[1] in 'TWDBRV']
        names = [name for _, _, name in symbols]
        others = {name: kind for _, kind, name in symbols if not name.startswith('pfm_')}
        self.assertEqual(sorted(others), INTERPOSED)
        self.assertEqual(set(others.values()), {'W'})
        self.assertIn('pfm_create_context', names)
        if sanitizeFlags():
            return  # a sanitized archive needs the sanitizers' runtimes: the programs link them
        exe = os.path.join(INSTALLED.tmp, 'static_initialize')
        src = os.path.join(INSTALLED.tmp, 'static_initialize.c')
        with open(src, 'w') as f:
            f.write('#include <perfmon/pfmlib.h>\n#include <stdio.h>\n'
                    'int main(void) { puts(pfm_strerror(PFMLIB_ERR_NOTSUPP)); '
                    'return pfm_initialize() == PFMLIB_SUCCESS; }\n')
        run([os.environ.get('CC', 'cc'), src, '-o', exe, *INSTALLED.cflags, '-L' + INSTALLED.lib_dir, '-lpfm',
             '-static'])
        self.assertNotIn('Dynamic Section', run(['readelf', '-d', exe]))
        # No mount named: pfm_initialize says so, as the shared library does.
        p = subprocess.run([exe], capture_output=True, text=True,
                           env=dict(os.environ, PFMFS_MOUNT='/nonexistent'))
        self.assertEqual((p.returncode, p.stdout), (0, 'not supported (no pfmfs mount, or not on this PMU)\n'),
                         p.stderr)

    def test_exports_only_the_api(self):
        """gnu_symbol_visibility hidden: the library exports pfm_* functions,
        the libc calls that answer /sys/kernel/perfmon and mmap, and nothing
        of its C++ insides (no mangled names)."""
        lib = os.path.join(INSTALLED.lib_dir, 'libpfm.so.3')
        dyn = run(['nm', '-D', '--defined-only', lib])
        names = [line.split()[-1] for line in dyn.splitlines() if line.split()[-2] in ('T', 'W', 'D', 'B', 'V')]
        stray = sorted(n for n in names if not n.startswith('pfm_'))
        self.assertEqual(stray, INTERPOSED, 'exported beyond the API and the libc interposers')
        # libpfm 3.10's functions, all but two that no header declared.
        self.assertEqual(sorted(n for n in names if n.startswith('pfm_')),
                         sorted(set(perfmon_headers.LIBPFM_3_10_EXPORTS) - set(perfmon_headers.NOT_EXPORTED)))
        for api in ('pfm_create_context', 'pfm_write_pmcs', 'pfm_write_pmds', 'pfm_read_pmds',
                    'pfm_load_context', 'pfm_start', 'pfm_stop', 'pfm_restart', 'pfm_create_evtsets',
                    'pfm_delete_evtsets', 'pfm_getinfo_evtsets', 'pfm_unload_context', 'pfm_create',
                    'pfm_write', 'pfm_read', 'pfm_attach', 'pfm_set_state', 'pfm_create_sets',
                    'pfm_getinfo_sets', 'pfm_initialize', 'pfm_dispatch_events', 'pfm_find_event',
                    'pfm_find_full_event', 'pfm_get_cycle_event', 'pfm_get_inst_retired_event',
                    'pfm_strerror'):
            self.assertIn(api, names)


# ---- /sys/kernel/perfmon for programs not linked with the library -----------------

@pfmfs_mount.simOnly  # the same on every backend: once, in the sim run
class SysfsPreloadTest(LibpfmTestCase):
    """A program that does not link libpfm (cat) reads perfmon2's sysfs
    files with LD_PRELOAD=libpfm.so.3, the documented way
    (docs/libpfm-compat.md); sysfs_files.c checks them in a linked program."""

    @staticmethod
    def sanitizerRuntimes():
        """A sanitized libpfm.so.3 in a program built without sanitizers
        needs the runtimes loaded first (ASan checks that it is)."""
        libs = {'address': 'libasan.so', 'thread': 'libtsan.so'}
        cc = os.environ.get('CC', 'cc')
        return [run([cc, f'-print-file-name={libs[s]}']).strip()
                for s in os.environ.get('PFMFS_SANITIZE', 'none').split(',') if s in libs]

    def cat(self, m, paths, env=None):
        return self.runPreloaded(m, ['cat', *paths], env)

    def runPreloaded(self, m, cmd, env=None):
        preload = ' '.join(self.sanitizerRuntimes() + [os.path.join(INSTALLED.lib_dir, 'libpfm.so.3')])
        preload = {'LD_PRELOAD': preload, **(env or {})}
        return subprocess.run(cmd, env=INSTALLED.runEnv(m, preload), capture_output=True, text=True,
                              timeout=DEFAULT_TIMEOUT_S * TIME_SCALE)

    def test_cat_with_ld_preload(self):
        m = self.startMount()
        with open(m.path('pmu/desc/model')) as f:
            model = f.read()
        with open(m.path('pmu/desc/pmd0/name')) as f:
            pmd0 = f.read()
        p = self.cat(m, ['/sys/kernel/perfmon/version', '/sys/kernel/perfmon/syscall',
                         '/sys/kernel/perfmon/pmu_desc/model', '/sys/kernel/perfmon/pmu_desc/pmd0/name'])
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, '2.82\n295\n' + model + pmd0, ''))
        p = self.cat(m, ['/sys/kernel/perfmon/version'], {'PFMFS_SYSFS': '0'})
        self.assertEqual((p.returncode, p.stdout), (1, ''))
        self.assertIn('No such file or directory', p.stderr)
        p = subprocess.run(['cat', '/sys/kernel/perfmon/version'], env=INSTALLED.runEnv(m), capture_output=True,
                           text=True, timeout=DEFAULT_TIMEOUT_S * TIME_SCALE)
        self.assertEqual((p.returncode, p.stdout), (1, ''), 'without LD_PRELOAD')

    def test_ls_with_ld_preload(self):
        """ls lists the directories (opendir, readdir, dirfd, closedir;
        sysfs_dirs.c checks every listing in a linked program)."""
        m = self.startMount()
        c = {'LC_ALL': 'C'}  # ls sorts by the locale's collation
        p = self.runPreloaded(m, ['ls', '-a', '/sys/kernel/perfmon', '/sys/kernel/perfmon/formats'], c)
        self.assertEqual((p.returncode, p.stdout, p.stderr),
                         (0, '/sys/kernel/perfmon:\n.\n..\nformats\npmu_desc\nsmpl_buffer_mem_cur\n'
                          'smpl_buffer_mem_max\nsys_sessions_count\nsyscall\ntask_sessions_count\nversion\n\n'
                          '/sys/kernel/perfmon/formats:\n.\n..\ndefault\n', ''))
        p = self.runPreloaded(m, ['ls', '-R', '/sys/kernel/perfmon/formats/default'], c)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (0, '/sys/kernel/perfmon/formats/default:\nversion\n', ''))
        p = self.runPreloaded(m, ['ls', '/sys/kernel/perfmon/nope', '/sys/kernel/perfmon/version/'], c)
        self.assertEqual((p.returncode, p.stdout), (2, ''))
        self.assertIn('No such file or directory', p.stderr)
        self.assertIn('Not a directory', p.stderr)


# ---- kill -9 -----------------------------------------------------------------------------

# test_new_context_right_after_close: sessions in a row, a progress line
# every batch, and how long one batch may take.
CHURN_SESSIONS = 3000
CHURN_BATCH = 100
CHURN_STALL_S = 120 * TIME_SCALE

CHURN_STOPS = ['after_mkdir', 'after_create', 'after_write', 'after_load', 'after_start', 'after_read',
               'after_stop']


class ChurnTest(LibpfmTestCase):
    """churn.c loops over a whole perfmon2 session (create, write, load
    itself, start, read, stop, close) and sometimes exits mid-way; SIGKILL at
    any moment must leave no session behind: the library's descriptor is the
    session's only anchor (autoclose), and a session made but not yet opened
    dies with the thread that made it."""

    @staticmethod
    def spawn(m, env):
        exe = INSTALLED.program(Program(os.path.join(HERE, 'churn.c')))
        return subprocess.Popen([exe], env=INSTALLED.runEnv(m, env), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def churn(self, m, env):
        p = self.spawn(m, env)
        self.addCleanup(self._reap, p)  # a failed test leaves no (stopped) churn behind
        return p

    @staticmethod
    def _reap(p):
        if p.poll() is None:
            p.kill()
        p.communicate()

    def readyLine(self, p, what):
        """churn's first line ("ready", after pfm_initialize), waited for up
        to WAIT_S; b'' if it ended first (its stderr says why)."""
        with selectors.DefaultSelector() as sel:
            sel.register(p.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=WAIT_S):
                where = threadsOf(p.pid)
                p.kill()
                self.fail(f'{what}: churn did not get past pfm_initialize in {WAIT_S:.0f} s:\n{where}')
        return p.stdout.readline()

    def waitStopped(self, p, what):
        """Waits until churn stops itself (it takes milliseconds: up to
        WAIT_S); fails (after killing it) if it exits instead."""
        deadline = time.monotonic() + WAIT_S
        while True:
            pid, status = os.waitpid(p.pid, os.WUNTRACED | os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                where = threadsOf(p.pid)
                p.kill()
                self.fail(f'{what}: churn did not stop itself within {WAIT_S:.0f} s:\n{where}')
            time.sleep(0.005)  # a poll: waitpid has no timeout
        if not os.WIFSTOPPED(status):
            p.returncode = os.waitstatus_to_exitcode(status)  # reaped: let Popen know
            _, err = p.communicate()
            self.fail(f'{what}: churn did not stop (status {status:#x}): {err.decode()}')

    def test_kill_at_random(self):
        seed = int(os.environ.get('PFMFS_CHURN_SEED', random.randrange(1 << 32)))
        runs = int(os.environ.get('PFMFS_CHURN_RUNS', '100'))
        print(f'churn: seed {seed} (PFMFS_CHURN_SEED={seed} repeats it), {runs} runs', file=sys.stderr)
        rng = random.Random(seed)
        m = self.startMount()
        exits = kills = 0
        for i in range(runs):
            # churn's own choices (when to exit mid-way) follow the seed too.
            p = self.churn(m, {'PFMFS_CHURN_SEED': str(rng.randrange(1 << 31)), 'PFMFS_CHURN_ITER': '0'})
            what = f'run {i} of seed {seed}'
            ready = self.readyLine(p, what)  # after pfm_initialize: kills land in the loop
            # Not a synchronization: the random moment of the kill.
            delay = rng.uniform(0, 0.030)
            time.sleep(delay)
            what = f'{what} (kill after {delay * 1000:.1f} ms)'
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            out, err = p.communicate()
            self.assertEqual(ready, b'ready\n', f'{what}: churn did not start: {err.decode()}')
            if p.returncode == -signal.SIGKILL:
                kills += 1
            else:
                exits += 1
                self.assertEqual(p.returncode, 0, f'{what}: churn failed: {err.decode()}')
            self.assertNoSessions(m, what)
        print(f'churn: {kills} killed, {exits} exited by themselves', file=sys.stderr)
        self.assertGreater(kills, runs // 2)

    def test_kill_at_each_step(self):
        """churn stops itself (SIGSTOP) at a chosen step; the session is there
        while it is stopped and gone once it is killed. after_mkdir is the
        library's first step done by hand: mkdir mode 01700, msg not opened."""
        m = self.startMount()
        for stop in CHURN_STOPS:
            with self.subTest(stop=stop):
                p = self.churn(m, {'PFMFS_CHURN_STOP': stop, 'PFMFS_CHURN_ITER': '1'})
                self.waitStopped(p, stop)
                self.assertEqual(len(sessions(m)), 1, f'{stop}: {sessions(m)}')
                p.send_signal(signal.SIGKILL)
                p.communicate()
                self.assertEqual(p.returncode, -signal.SIGKILL)
                self.assertNoSessions(m, f'killed {stop}')

    def test_thread_that_made_it_exits(self):
        """A thread makes a session (mkdir 01700) and exits without opening
        msg while its process lives on (stopped): the session goes."""
        m = self.startMount()
        p = self.churn(m, {'PFMFS_CHURN_STOP': 'thread_mkdir', 'PFMFS_CHURN_ITER': '1'})
        self.waitStopped(p, 'thread_mkdir')
        self.assertNoSessions(m, 'a thread made a session and exited')


    def test_new_context_right_after_close(self):
        """perfmon2's close() has ended the context when it returns, so a
        program may close one and load the next on the same thread at once.
        churn does that 3000 times while busy loops take every CPU and other
        churns are killed around it: FUSE sends the release of a closed file
        asynchronously, late on a loaded machine, and the library must not
        let that show (no EBUSY from a context already closed)."""
        m = self.startMount()
        done = threading.Event()
        hogs = [subprocess.Popen(['sh', '-c', 'while :; do :; done']) for _ in range(os.cpu_count() or 1)]

        def stopHogs():
            for hog in hogs:
                hog.kill()
            for hog in hogs:
                hog.wait()
        self.addCleanup(stopHogs)  # on a failure; a pass stops them before its last check

        def killer():
            while not done.is_set():
                victim = self.spawn(m, {'PFMFS_CHURN_ITER': '0'})
                time.sleep(0.01)  # not a synchronization: kills at any moment, before or in its loop
                victim.kill()
                victim.communicate()

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        try:
            p = self.churn(m, {'PFMFS_CHURN_ITER': str(CHURN_SESSIONS), 'PFMFS_CHURN_PROGRESS': str(CHURN_BATCH)})
            self.awaitProgress(p)
            _, err = p.communicate()
        finally:
            done.set()
            t.join()
        stopHogs()
        self.assertEqual(p.returncode, 0, f'churn failed: {err.decode()}')
        self.assertNoSessions(m, f'after {CHURN_SESSIONS} sessions in a row')

    def awaitProgress(self, p):
        """Follows churn's "done I" lines until it ends. Its pace is the
        machine's (3000 sessions take 10 s here, 4 minutes in the QEMU guest
        with its CPUs taken): the limit is on a batch that makes no progress,
        CHURN_STALL_S, not on the whole, and a stall says where it was."""
        sel = selectors.DefaultSelector()
        sel.register(p.stdout, selectors.EVENT_READ)
        lines = []  # (sessions done, seconds it took them)
        began = last = time.monotonic()
        buffered = b''
        while True:
            if not sel.select(timeout=CHURN_STALL_S):
                done_so_far = lines[-1][0] if lines else 0
                paces = ', '.join(f'{d:.1f}' for _, d in lines[-5:]) or 'none'
                where = threadsOf(p.pid)
                p.kill()
                self.fail(f'churn stalled: no {CHURN_BATCH} sessions in {CHURN_STALL_S:.0f} s after session '
                          f'{done_so_far} of {CHURN_SESSIONS}, {time.monotonic() - began:.0f} s in (seconds per '
                          f'{CHURN_BATCH} before: {paces}); where it was:\n{where}')
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                break
            buffered += chunk
            *whole, buffered = buffered.split(b'\n')
            for line in whole:
                if line.startswith(b'done '):
                    now = time.monotonic()
                    lines.append((int(line.split()[1]), now - last))
                    last = now
                    if lines[-1][0] % 500 == 0:  # progress, for whoever watches the log (the QEMU guest's runner)
                        print(f'churn: {lines[-1][0]} of {CHURN_SESSIONS} sessions, {now - began:.0f} s', file=sys.stderr)
        sel.close()
        print(f'churn: {CHURN_SESSIONS} sessions in {time.monotonic() - began:.1f} s', file=sys.stderr)

if __name__ == '__main__':
    pfmfs_mount.main()
