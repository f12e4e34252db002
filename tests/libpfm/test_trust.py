#!/usr/bin/env python3
# test_trust.py: whom libpfm-compat trusts (docs/libpfm-compat.md, "Whom the
# library trusts"; pfmfs(5), SECURITY), tried as two plain users would:
#
# - The restart hijack: a program keeps running while pfmfsd restarts on its
#   mount, and another user binds the old daemon's fast-path socket name in
#   between, offering a forged page. The squatter gets a connection and not
#   one byte; the program finds the new daemon, maps its page and reads the
#   counts the mount shows (fastpath_victim.c).
# - Mounts: a fuse.pfmfs mount another user made with fusermount3 is not
#   taken by a program that looks for a mount on its own; its owner's own
#   programs take it; a set-uid program ignores its caller's PFMFS_MOUNT
#   (mount_probe.c).
#
# Run by meson (tests 'libpfm-trust' and 'libpfm-trust-perf'), or by hand as
# test_libpfm.py is.
import os
import select
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))

import pfmfs_mount  # noqa: E402  (after the path above)
from pfmfs_mount import TEST_USER, TEST_USER2, Mount, backendArgs, daemonPath, userIds, waitFor  # noqa: E402
import test_libpfm  # noqa: E402
from test_libpfm import Installed, Program, WAIT_S  # noqa: E402

INSTALLED = None

# Another user's listener on a name: offers every connection a forged page
# at once (an "ok" and an unsealed memfd saying pmd0 = 0xdeadbeef), counts
# connections and the bytes they sent; on a line on stdin prints "CONNS BYTES".
SQUATTER = r'''
import os, select, socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
srv.bind('\0' + sys.argv[1])
srv.listen(64)
page = os.memfd_create('forged')
os.ftruncate(page, 4096)
os.pwrite(page, (0x4d465046 | 1 << 32).to_bytes(8, 'little') + bytes(8) + (1).to_bytes(4, 'little'), 0)
print('bound', flush=True)
conns = got = 0
while True:
    ready, _, _ = select.select([srv, sys.stdin], [], [])
    if sys.stdin in ready:
        break
    c, _ = srv.accept()
    conns += 1
    try:
        socket.send_fds(c, [b'ok'], [page])
        c.settimeout(2)
        while True:
            data = c.recv(4096)
            if not data:
                break
            got += len(data)
    except OSError:
        pass
    c.close()
print(conns, got, flush=True)
'''


def setUpModule():
    global INSTALLED
    INSTALLED = Installed()
    # The programs run as the test users: they must reach them and libpfm.so.
    for d, _, _ in os.walk(INSTALLED.tmp):
        os.chmod(d, 0o755)


def tearDownModule():
    if INSTALLED is not None:
        INSTALLED.close()


def asUser(user):
    uid, gid = userIds(user)
    return dict(user=uid, group=gid, extra_groups=[])


def readLine(p, what):
    """A line of p's stdout (unbuffered: bufsize=0) within WAIT_S, or a
    failure naming `what`; '' at end of file."""
    fd, line = p.stdout.fileno(), b''
    while not line.endswith(b'\n'):
        ready, _, _ = select.select([fd], [], [], WAIT_S)
        if not ready:
            p.kill()
            raise AssertionError(f'no {what} within {WAIT_S:.0f} s (read so far: {line!r})')
        byte = os.read(fd, 1)
        if not byte:
            break
        line += byte
    return line.decode(errors='replace')


def tell(p, text):
    p.stdin.write(text.encode())
    p.stdin.flush()


def userDir(user):
    """A fresh directory `user` owns, under one everybody may enter."""
    top = tempfile.mkdtemp(prefix='pfmfs-trust-')
    os.chmod(top, 0o755)
    d = os.path.join(top, 'mnt')
    os.mkdir(d, 0o755)
    uid, gid = userIds(user)
    os.chown(d, uid, gid)
    return top, d


class HijackTest(unittest.TestCase):

    def test_a_squatter_on_the_old_name_gets_nothing_and_counts_stay_true(self):
        exe = INSTALLED.program(Program(os.path.join(HERE, 'fastpath_victim.c')))
        top, mnt = userDir('root')
        self.addCleanup(shutil.rmtree, top, True)
        first = Mount(mountpoint=mnt).start()
        self.addCleanup(lambda: first.proc is not None and first.close())
        info = first.read('pmu/info')
        old = info.split(' fastpath=@')[1].split()[0]
        victim = subprocess.Popen([exe], env=INSTALLED.runEnv(first), cwd='/', stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0, **asUser(TEST_USER))
        self.addCleanup(victim.communicate)  # after the kill: closes its pipes
        self.addCleanup(victim.kill)
        out = ''
        while 'ready' not in out:
            line = readLine(victim, 'ready from the victim')
            self.assertTrue(line, f'the victim ended before the restart: {out}')
            out += line
        first.close()

        squatter = subprocess.Popen([pfmfs_mount.userPython(), '-c', SQUATTER, old], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, bufsize=0, **asUser(TEST_USER2))
        self.addCleanup(squatter.communicate)
        self.addCleanup(squatter.kill)
        self.assertEqual(readLine(squatter, 'bind by the squatter'), 'bound\n')
        second = Mount(mountpoint=mnt).start()
        self.addCleanup(lambda: second.proc is not None and second.close())
        self.assertNotIn(f'fastpath=@{old} ', second.read('pmu/info'))

        tell(victim, 'go\n')
        rest, _ = victim.communicate(timeout=WAIT_S)
        out += rest.decode(errors='replace')
        self.assertEqual(victim.returncode, 0, f'the victim failed:\n{out}\npfmfsd log:\n{second.log()[-3000:]}')
        self.assertIn('ok\n', out)
        tell(squatter, '\n')
        conns, got = map(int, readLine(squatter, 'the squatter\'s count').split())
        self.assertEqual((conns, got), (1, 0), 'the library sent the squatter something')
        self.assertTrue(waitFor(lambda: not os.listdir(second.path('sessions'))), 'the session outlived close()')


# One mount namespace of the test's own: /etc/fuse.conf lets plain users
# mount with allow_other there alone (a bind mount of a copy), the other
# tests' mounts (root's, which the library would rightly take first) are
# gone from it, and TEST_USER2's pfmfsd mounts with fusermount3, as any user
# may where /dev/fuse is open to all. Then mount_probe runs as the stranger,
# as the owner, and set-uid root in the owner's hands with PFMFS_MOUNT set.
CHOICE = r'''
set -e
mount --bind "$CONF" /etc/fuse.conf
# fstype is the field after "-": the optional fields before it come and go
# (a private namespace has none).
awk '{for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "fuse.pfmfs") print $5; break }}' \
  /proc/self/mountinfo | while read -r m; do umount -l "$m" || true; done
[ -z "$(awk '{for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "fuse.pfmfs") print $5; break }}' \
  /proc/self/mountinfo)" ] || { echo "other pfmfs mounts left"; exit 4; }
setpriv --reuid="$U2" --regid="$G2" --clear-groups -- "$PFMFSD" -f $BACKEND_ARGS -o allow_other "$MNT" &
daemon=$!
i=0
while [ ! -e "$MNT/version" ]; do
  i=$((i + 1)); [ $i -lt $((WAIT * 50)) ] || { echo "no mount"; exit 3; }; sleep 0.02
done
echo "mountinfo=$(awk -v m="$MNT" '$5 == m' /proc/self/mountinfo)"
echo "== stranger"; env -u PFMFS_MOUNT setpriv --reuid="$U1" --regid="$G1" --clear-groups -- "$PROBE"
echo "== owner"; env -u PFMFS_MOUNT setpriv --reuid="$U2" --regid="$G2" --clear-groups -- "$PROBE"
echo "== owner, PFMFS_MOUNT"; PFMFS_MOUNT="$MNT" setpriv --reuid="$U2" --regid="$G2" --clear-groups -- "$PROBE"
echo "== set-uid, PFMFS_MOUNT"; PFMFS_MOUNT="$MNT" setpriv --reuid="$U2" --regid="$G2" --clear-groups -- "$SETUID"
kill $daemon; wait $daemon || true
'''


class MountChoiceTest(unittest.TestCase):

    def test_only_root_or_the_callers_own_mounts_are_taken(self):
        probe_exe = INSTALLED.program(Program(os.path.join(HERE, 'mount_probe.c')))
        # Set-uid: the dynamic loader ignores LD_LIBRARY_PATH, so libpfm.a.
        static = INSTALLED.program(Program(os.path.join(HERE, 'mount_probe.c')), static=True)
        d = pfmfs_mount.setIdDir()
        self.addCleanup(shutil.rmtree, d, True)
        setuid = os.path.join(d, 'mount_probe')
        shutil.copy(static, setuid)
        os.chmod(setuid, 0o4755)  # root's
        top, mnt = userDir(TEST_USER2)
        self.addCleanup(shutil.rmtree, top, True)
        conf = os.path.join(top, 'fuse.conf')
        with open(conf, 'w') as f:
            f.write('user_allow_other\n')
        os.chmod(conf, 0o644)
        (u1, g1), (u2, g2) = userIds(TEST_USER), userIds(TEST_USER2)
        env = dict(os.environ, CONF=conf, MNT=mnt, PFMFSD=os.path.abspath(daemonPath()), BACKEND_ARGS=' '.join(backendArgs()),
                   PROBE=probe_exe, SETUID=setuid, U1=str(u1), G1=str(g1), U2=str(u2), G2=str(g2),
                   WAIT=str(int(WAIT_S)), LD_LIBRARY_PATH=INSTALLED.lib_dir, PFMFS_BACKEND=pfmfs_mount.BACKEND)
        p = subprocess.run(['unshare', '--mount', '--propagation', 'private', 'sh', '-c', CHOICE], cwd='/',
                           env=env, capture_output=True, text=True, timeout=4 * WAIT_S)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 0, out)
        runs = {}
        for part in p.stdout.split('== ')[1:]:
            title, *lines = part.splitlines()
            runs[title] = dict(line.split('=', 1) for line in lines if '=' in line)
        self.assertIn(f'user_id={u2},', p.stdout, 'the mount is not the user\'s own as the kernel records it')
        self.assertIn(',allow_other', p.stdout, 'the user could not mount with allow_other')
        # Not taken by another user's program: no mount found, no session made there.
        self.assertNotEqual(runs['stranger']['init'], '0', out)
        self.assertFalse(runs['stranger']['context'].startswith('ok'), out)
        # Its owner's programs take it, found or named.
        self.assertEqual(runs['owner']['init'], '0', out)
        self.assertTrue(runs['owner']['context'].startswith(f'ok {mnt}/sessions/pfm.'), out)
        self.assertTrue(runs['owner, PFMFS_MOUNT']['context'].startswith(f'ok {mnt}/sessions/pfm.'), out)
        # A set-uid program takes neither its caller's word nor its caller's mount.
        self.assertNotEqual(runs['set-uid, PFMFS_MOUNT']['init'], '0', out)
        self.assertFalse(runs['set-uid, PFMFS_MOUNT']['context'].startswith('ok'), out)


if __name__ == '__main__':
    pfmfs_mount.main()
