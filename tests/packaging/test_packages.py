#!/usr/bin/env python3
"""The Debian packages of debian/, built, checked, installed and used.

1. dpkg-buildpackage -us -uc -b in a copy of the source tree under a
   temporary directory (the checkout and its build directories are not
   touched), with DEB_BUILD_OPTIONS=nocheck.
2. lintian on the .changes: any E: tag fails; W: tags are printed.
3. The packages' contents: libpfm3 holds the library whose SONAME names it,
   libpfm3-dev conflicts with libpfm4-dev, the DKMS sources sit under
   /usr/src/NAME-VERSION with the NAME and VERSION of helper-kmod/dkms.conf.
4. apt-get install of the four packages (not the -dbgsym ones), then:
   - dkms status lists the module; where a Debian kernel's headers are
     installed (tests/vm/install-deps.sh installs linux-headers-amd64) it
     must have been built for that kernel by the package's postinst, or
     `dkms build` builds it now;
   - `PFMFSD=/usr/sbin/pfmfsd scripts/quickstart.sh`, the README's
     experiment on the installed daemon;
   - self_count.c, a perfmon2 program, built against the installed headers
     with pkg-config (libpfm.so.3) and statically with libpfm.a, run on a
     mount of the installed pfmfsd (sim, manual clock: exact counts).
5. dpkg -P of every package installed, including any dependency apt pulled
   in, also when a step fails; the module's DKMS tree and built modules must
   be gone.

Needs root (it installs packages) and the tools of scripts/install-deps.sh;
exits 77 (skip) without them, and fails instead under CI=true. While the
packages are installed a libpfm.so.3 and <perfmon/*.h> are in system paths,
so meson runs this test alone (is_parallel: false, suite packaging).
dpkg and apt-get run in sessions of their own, so that a kill never stops
them halfway; if the test dies with the packages installed (meson's timeout
SIGKILLs it), a janitor process started before the install purges them, and
failing that the next run does (a marker file records the install).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ['pfmfs', 'libpfm3', 'libpfm3-dev', 'pfmfs-helper-dkms']
MARKER = '/var/lib/pfmfs-tests/packaging-installed'
CI = os.environ.get('CI') == 'true'
TOOLS = ['dpkg-buildpackage', 'dh', 'dh_dkms', 'lintian', 'fakeroot', 'dkms', 'apt-get', 'cc', 'pkg-config']

started = time.monotonic()


def log(msg):
    print(f'[{time.monotonic() - started:6.1f}s] {msg}', flush=True)


class Failure(Exception):
    pass


def run(cmd, check=True, env=None, cwd=None, timeout=900, quiet=False, detached=False):
    """Runs cmd; returns its output (stdout and stderr together).
    detached: dpkg and apt-get run in a session of their own and are never
    killed, so that neither meson's kill of the test's process group nor an
    exception here leaves a package half installed or half removed."""
    shown = cmd if isinstance(cmd, str) else ' '.join(cmd)
    if not quiet:
        log(f'$ {shown}')
    if detached:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace')
        out, _ = p.communicate(timeout=timeout)  # on any exception p runs on
        returncode = p.returncode
    else:
        r = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd, env=env, timeout=timeout,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors='replace')
        out, returncode = r.stdout, r.returncode
    if check and returncode != 0:
        raise Failure(f'{shown}: exit status {returncode}\n{tail(out, 40)}')
    return out


def tail(text, n):
    return '\n'.join('    ' + line for line in text.splitlines()[-n:])


def installed_packages():
    out = run(['dpkg-query', '-W', '-f', '${Package} ${db:Status-Abbrev}\n'], quiet=True)
    return {line.split()[0] for line in out.splitlines() if len(line.split()) > 1 and line.split()[1][1] in 'iHUFWt'}


def apt_env():
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    env.pop('LD_LIBRARY_PATH', None)
    return env


def purge(names):
    """dpkg -P of names that are on the machine (installed or half so)."""
    def known(n):
        status = run(['dpkg-query', '-W', '-f', '${db:Status-Abbrev}', n], check=False, quiet=True)
        return len(status) > 1 and status[1] != 'n' and 'no packages found' not in status
    present = [n for n in names if known(n)]
    if present:
        run(['dpkg', '-P'] + present, env=apt_env(), detached=True)


def skip_or_fail(msg):
    if CI:
        print(f'FAIL: CI=true and {msg}', file=sys.stderr)
        sys.exit(1)
    print(f'SKIP: {msg}', file=sys.stderr)
    sys.exit(SKIP)


def dkms_conf():
    text = open(os.path.join(REPO, 'helper-kmod', 'dkms.conf')).read()
    name = re.search(r'^PACKAGE_NAME="?([^"\n]+)"?', text, re.M).group(1)
    version = re.search(r'^PACKAGE_VERSION="?([^"\n]+)"?', text, re.M).group(1)
    return name, version


def copy_tree(work):
    """The source tree, in WORK/pfmfs-0.1.0, as git sees it (tracked and
    untracked-but-not-ignored files: build directories and module objects
    left out), or, outside a git checkout, everything but build*/."""
    tarball = os.path.join(work, 'src.tar')
    listed = None
    if os.path.exists(os.path.join(REPO, '.git')) and shutil.which('git'):
        # Fails where git refuses the checkout (another user's: safe.directory).
        listed = subprocess.run(['git', '-C', REPO, 'ls-files', '-z', '-co', '--exclude-standard'],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if listed is not None and listed.returncode == 0:
        files = [f for f in listed.stdout.decode().split('\0') if f and os.path.lexists(os.path.join(REPO, f))]
        subprocess.run(['tar', '-C', REPO, '--null', '-T', '-', '-cf', tarball],
                       input='\0'.join(files).encode(), check=True)
    else:
        subprocess.run(['tar', '-C', REPO, '--exclude=./build*', '--exclude=./.git', '-cf', tarball, '.'],
                       check=True)
    src = os.path.join(work, 'pfmfs-0.1.0')
    os.makedirs(src)
    subprocess.run(['tar', '-C', src, '-xf', tarball], check=True)
    os.unlink(tarball)
    return src


def build(work):
    src = copy_tree(work)
    env = dict(os.environ, DEB_BUILD_OPTIONS=f'nocheck parallel={os.cpu_count() or 1}')
    env.pop('LD_LIBRARY_PATH', None)
    t0 = time.monotonic()
    log('$ dpkg-buildpackage -us -uc -b  (log: build.log)')
    with open(os.path.join(work, 'build.log'), 'w') as f:
        p = subprocess.run(['dpkg-buildpackage', '-us', '-uc', '-b'], cwd=src, env=env,
                           stdout=f, stderr=subprocess.STDOUT, timeout=1200)
    text = open(os.path.join(work, 'build.log'), errors='replace').read()
    if p.returncode != 0:
        missing = [line for line in text.splitlines() if 'dh_missing' in line or 'not installed to' in line]
        hint = ''
        if missing:
            hint = ('\n  meson installs files no debian/*.install names (add them to the right '
                    'package; docs/packaging.md):\n' + '\n'.join('    ' + m for m in missing))
        raise Failure(f'dpkg-buildpackage failed ({p.returncode}):\n{tail(text, 40)}{hint}')
    log(f'packages built in {time.monotonic() - t0:.0f} s')
    changes = [f for f in os.listdir(work) if f.endswith('.changes')]
    if len(changes) != 1:
        raise Failure(f'expected one .changes in {work}, found {changes}')
    return os.path.join(work, changes[0])


def lintian(changes):
    out = run(['lintian', '--fail-on', 'none', changes], check=False)
    tags = [line for line in out.splitlines() if re.match(r'^[EW]: ', line)]
    for t in tags:
        log(f'lintian {t}')
    errors = [t for t in tags if t.startswith('E: ')]
    if errors:
        raise Failure('lintian errors:\n' + '\n'.join('    ' + e for e in errors))
    log(f'lintian: no errors, {len(tags)} warnings')


def debs(work):
    found = {}
    for f in os.listdir(work):
        m = re.match(r'^([a-z0-9.+-]+)_[^_]+_[a-z0-9]+\.deb$', f)
        if m and m.group(1) in PACKAGES:
            found[m.group(1)] = os.path.join(work, f)
    if sorted(found) != sorted(PACKAGES):
        raise Failure(f'built {sorted(found)}, expected {sorted(PACKAGES)}')
    return found


def check_contents(found, multiarch, name, version):
    def listing(pkg):
        out = run(['dpkg-deb', '-c', found[pkg]], quiet=True)
        return {line.split()[5].lstrip('.') for line in out.splitlines()}

    def field(pkg, name):
        return run(['dpkg-deb', '-f', found[pkg], name], quiet=True).strip()

    libdir = f'/usr/lib/{multiarch}'
    want = {
        'pfmfs': ['/usr/sbin/pfmfsd', '/usr/bin/pfmstat', '/usr/share/pfmfs/metrics', '/usr/sbin/pfmfs-exporter',
                  '/usr/share/man/man8/pfmfs-exporter.8.gz', '/lib/systemd/system/pfmfs-exporter.service',
                  '/usr/lib/sysusers.d/pfmfs-exporter.conf', '/usr/share/doc/pfmfs/examples/exporter.conf'],
        'libpfm3': [f'{libdir}/libpfm.so.3'],
        'libpfm3-dev': [f'{libdir}/libpfm.so', f'{libdir}/libpfm.a', f'{libdir}/pkgconfig/libpfm.pc',
                        '/usr/include/perfmon/perfmon.h', '/usr/include/perfmon/perfmon_v2.h',
                        '/usr/include/perfmon/perfmon_dfl_smpl.h', '/usr/include/perfmon/pfmlib.h',
                        # and the model headers pfmon includes (all 23 are libpfm 3.10's)
                        '/usr/include/perfmon/pfmlib_gen_ia32.h', '/usr/include/perfmon/pfmlib_core.h',
                        '/usr/include/perfmon/pfmlib_amd64.h', '/usr/include/perfmon/perfmon_pebs_core_smpl.h'],
        'pfmfs-helper-dkms': [f'/usr/src/{name}-{version}/{f}'
                              for f in ('dkms.conf', 'Makefile', 'Kbuild', 'main.c', 'uapi/pfmfs_helper.h')],
    }
    for pkg, paths in want.items():
        have = listing(pkg)
        for path in paths:
            if path not in have:
                raise Failure(f'{pkg} lacks {path}')
    # Nothing a module build leaves beside the sources.
    leftovers = [p for p in listing('pfmfs-helper-dkms') if re.search(r'\.(o|ko|mod|cmd)$', p)]
    if leftovers:
        raise Failure(f'pfmfs-helper-dkms holds build products: {leftovers}')
    if 'libpfm4-dev' not in field('libpfm3-dev', 'Conflicts'):
        raise Failure('libpfm3-dev does not conflict with libpfm4-dev')
    if 'fuse3' not in field('pfmfs', 'Depends'):
        raise Failure('pfmfs does not depend on fuse3')
    if 'dkms' not in field('pfmfs-helper-dkms', 'Depends'):
        raise Failure('pfmfs-helper-dkms does not depend on dkms')
    log('contents: every expected file, Conflicts and Depends in place')


def debian_kernels():
    """Kernels under /lib/modules whose headers (build link) are installed."""
    out = []
    for k in sorted(os.listdir('/lib/modules')) if os.path.isdir('/lib/modules') else []:
        if os.path.exists(f'/lib/modules/{k}/build/Makefile'):
            out.append(k)
    return out


def check_dkms(name, version):
    status = run(['dkms', 'status', f'{name}/{version}'])
    if f'{name}/{version}' not in status:
        raise Failure(f'dkms status does not list {name}/{version}:\n{status}')
    kernels = debian_kernels()
    if not kernels:
        if CI:
            raise Failure('no kernel headers under /lib/modules/*/build: tests/vm/install-deps.sh installs them')
        log('no kernel headers installed: the module was only added (dkms status above)')
        return
    k = kernels[-1]
    line = run(['dkms', 'status', f'{name}/{version}', '-k', k], quiet=True)
    if ': built' in line or ': installed' in line:
        log(f'the postinst built the module for {k}: {line.strip()}')
    else:
        t0 = time.monotonic()
        run(['dkms', 'build', f'{name}/{version}', '-k', k], timeout=600)
        log(f'dkms build for {k}: {time.monotonic() - t0:.0f} s')
    ko = run(f'find /var/lib/dkms/{name}/{version}/{k} -name "pfmfs_helper.ko*"', check=False, quiet=True).split()
    if not ko:
        raise Failure(f'no pfmfs_helper.ko under /var/lib/dkms/{name}/{version}/{k}')
    info = run(['modinfo', ko[0]], quiet=True)
    if f'vermagic:       {k} ' not in info and not re.search(rf'vermagic:\s+{re.escape(k)}\s', info):
        raise Failure(f'{ko[0]} is not built for {k}:\n{info}')
    log(f'module built for {k}: {ko[0]}')


def quickstart():
    env = dict(os.environ, PFMFSD='/usr/sbin/pfmfsd')
    env.pop('LD_LIBRARY_PATH', None)
    out = run([os.path.join(REPO, 'scripts', 'quickstart.sh')], env=env, timeout=300)
    if 'pfmfsd mounted on' not in out:
        raise Failure(f'quickstart did not mount:\n{tail(out, 30)}')
    print(tail(out, 12))
    log('quickstart ran on /usr/sbin/pfmfsd')


def perfmon2_program(work, multiarch):
    env = dict(os.environ)
    env.pop('LD_LIBRARY_PATH', None)
    env.pop('PKG_CONFIG_PATH', None)
    prog = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'self_count.c')
    dyn = os.path.join(work, 'self_count')
    static = os.path.join(work, 'self_count_static')
    flags = run('pkg-config --cflags --libs libpfm', env=env).split()
    run(['cc', '-Wall', '-Werror', '-o', dyn, prog] + flags, env=env)
    # libpfm.a named by its installed path, so that nothing else is taken.
    run(['cc', '-Wall', '-Werror', '-static', '-o', static, prog, f'/usr/lib/{multiarch}/libpfm.a', '-lpthread'],
        env=env)
    ldd = run(['ldd', dyn], env=env)
    # /lib is /usr/lib's link on a merged-/usr system: compare real paths.
    m = re.search(r'libpfm\.so\.3 => (\S+)', ldd)
    if not m or os.path.realpath(m.group(1)) != os.path.realpath(f'/usr/lib/{multiarch}/libpfm.so.3'):
        raise Failure(f'{dyn} does not load the installed libpfm.so.3:\n{ldd}')
    if 'libpfm' in run(['ldd', static], env=env, check=False):
        raise Failure(f'{static} is linked dynamically with libpfm')

    mnt = os.path.join(work, 'mnt')
    os.makedirs(mnt, exist_ok=True)
    daemon = subprocess.Popen(['/usr/sbin/pfmfsd', '-f', '--pmu=sim', '--sim-clock=manual', mnt],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, 'pfmfsd.log'), 'w'))
    try:
        for _ in range(200):
            if os.path.exists(os.path.join(mnt, 'version')) or daemon.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(os.path.join(mnt, 'version')):
            raise Failure('pfmfsd did not mount:\n' + open(os.path.join(work, 'pfmfsd.log')).read())
        for exe in (dyn, static):
            out = run([exe], env=dict(env, PFMFS_MOUNT=mnt)).strip()
            if out != 'inst=2000000 cycles=3000000':
                raise Failure(f'{os.path.basename(exe)}: {out!r}, expected inst=2000000 cycles=3000000')
            log(f'{os.path.basename(exe)}: {out}')
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(10)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        subprocess.run(['fusermount3', '-u', '-z', mnt], stderr=subprocess.DEVNULL, check=False)


def check_purged(name, version):
    left = [p for p in (f'/usr/src/{name}-{version}', f'/var/lib/dkms/{name}', '/usr/sbin/pfmfsd',
                        '/usr/include/perfmon/perfmon.h',
                        '/etc/systemd/system/multi-user.target.wants/pfmfsd.service') if os.path.lexists(p)]
    left += run(f'ls /lib/modules/*/updates/dkms/pfmfs_helper.ko* 2>/dev/null', check=False, quiet=True).split()
    if left:
        raise Failure(f'left after the purge: {left}')
    log('purged: nothing of the packages is left')


# Purges the packages if this process dies with them installed (the marker
# still there): meson's timeout kills the test's process group with SIGKILL
# half a second after SIGTERM, too soon for the finally below. dpkg -P is
# retried while a dpkg still in flight holds its lock.
JANITOR = r"""
pid=$1 marker=$2 mnt=$3; shift 3
while kill -0 "$pid" 2>/dev/null; do sleep 1; done
[ -f "$marker" ] || exit 0
# The test's own mount of the installed pfmfsd: unmounted, the daemon exits.
fusermount3 -u -z "$mnt" 2>/dev/null
for _ in $(seq 600); do
  DEBIAN_FRONTEND=noninteractive dpkg -P "$@" >/dev/null 2>&1 && break
  sleep 1
done
rm -f "$marker"
"""


def start_janitor(work):
    subprocess.Popen(['sh', '-c', JANITOR, 'pfmfs-packaging-janitor', str(os.getpid()), MARKER,
                      os.path.join(work, 'mnt')] + PACKAGES,
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)


def main():
    if os.geteuid() != 0:
        skip_or_fail('not root (the test installs packages)')
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        skip_or_fail(f'missing {", ".join(missing)} (scripts/install-deps.sh installs them)')
    # A killed run's packages: purge them first.
    if os.path.exists(MARKER):
        log(f'{MARKER}: a previous run left its packages; purging them')
        purge(PACKAGES)
        os.unlink(MARKER)
    before = installed_packages()
    ours = [p for p in PACKAGES if p in before]
    if ours:
        print(f'FAIL: {", ".join(ours)} already installed: the test would purge them (dpkg -P them first)',
              file=sys.stderr)
        return 1
    if 'libpfm4-dev' in before:
        print('FAIL: libpfm4-dev is installed and conflicts with libpfm3-dev: installing would remove it '
              '(apt-get purge libpfm4-dev first)', file=sys.stderr)
        return 1

    # dkms makes a module-signing key at its first build: one this test
    # made goes with the packages.
    dkms_keys = [k for k in ('/var/lib/dkms/mok.key', '/var/lib/dkms/mok.pub') if not os.path.exists(k)]
    name, version = dkms_conf()
    multiarch = run(['dpkg-architecture', '-qDEB_HOST_MULTIARCH'], quiet=True).strip()
    work = tempfile.mkdtemp(prefix='pfmfs-packaging.')
    installed = False
    status = 0
    try:
        changes = build(work)
        lintian(changes)
        found = debs(work)
        check_contents(found, multiarch, name, version)

        os.makedirs(os.path.dirname(MARKER), exist_ok=True)
        open(MARKER, 'w').close()
        installed = True
        start_janitor(work)
        t0 = time.monotonic()
        run(['apt-get', 'install', '-y', '--no-install-recommends', '-o', 'DPkg::Lock::Timeout=300']
            + [found[p] for p in PACKAGES], env=apt_env(), timeout=900, detached=True)
        log(f'installed in {time.monotonic() - t0:.0f} s (the DKMS postinst included)')
        check_dkms(name, version)
        quickstart()
        perfmon2_program(work, multiarch)
    except (Failure, subprocess.TimeoutExpired, subprocess.CalledProcessError, OSError) as e:
        print(f'FAIL: {e}', file=sys.stderr)
        status = 1
    finally:
        # The cleanup runs to its end: a SIGTERM or ^C now is ignored.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if installed:
            try:
                purge(PACKAGES)
                # Whatever apt pulled in for them (none where install-deps ran).
                purge(sorted(installed_packages() - before))
                for k in dkms_keys:
                    if os.path.exists(k):
                        os.unlink(k)
                os.unlink(MARKER)
                try:
                    os.rmdir(os.path.dirname(MARKER))
                except OSError:
                    pass  # not empty: other tests' files
                check_purged(name, version)
            except (Failure, subprocess.TimeoutExpired) as e:
                print(f'FAIL: {e}', file=sys.stderr)
                status = 1
        if status == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f'(the build and its log are kept in {work})', file=sys.stderr)
    log('passed' if status == 0 else 'failed')
    return status


if __name__ == '__main__':
    # SIGTERM (meson's timeout) ends the test through main's finally, like ^C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sys.exit(main())
