#!/usr/bin/env python3
# The fast path's socket and page (fs/fastpath_server.h, fastpath/fast_page.h)
# as libpfm-compat sees them: pmu/info names the socket; a session's owner
# (and root) gets its page, read-only, and on perf the descriptors of its
# perf group (the leader first); nobody else gets anything; garbage gets an
# errno. Under the sim's manual clock the page answers exactly what
# sets/N/pmds answers after every operation; on perf the group's own read
# gives the PMD file's value.
import errno
import mmap
import os
import re
import socket
import struct

import pfmfs_mount
from pfmfs_mount import PMU, SIM, TEST_USER, MountTestCase, neg, perfOnly, runAs, simOnly

HEADER = struct.Struct('<IIQIiIIQQQQ')    # magic .. pmd_count: 64 bytes
ENTRY = struct.Struct('<QQQQQQIHH')       # upper .. member: 56 bytes
MAGIC, VERSION, PAGE = 0x4d465046, 1, 4096
KPAGE, KPERF = 1, 2


def askAll(name, text):
    """One request on the fast-path socket: (answer, [descriptors])."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect('\0' + name)
        s.send(text.encode() if isinstance(text, str) else text)
        msg, fds, _, _ = socket.recv_fds(s, 4096, 64)
        return msg.decode(), fds


def ask(name, text):
    """(answer, the one descriptor or None); more than one is an error."""
    answer, fds = askAll(name, text)
    if len(fds) > 1:
        for fd in fds:
            os.close(fd)
        raise AssertionError(f'{text!r}: {len(fds)} descriptors, want at most one')
    return answer, (fds[0] if fds else None)


def askAndClose(name, text):
    answer, fd = ask(name, text)
    if fd is not None:
        os.close(fd)
    return answer, fd is not None


def readPage(fd):
    """A consistent copy of the page (seq even and unchanged around the
    copy), as a dict; entries as dicts by PMD index."""
    with mmap.mmap(fd, PAGE, mmap.MAP_SHARED, mmap.PROT_READ) as m:
        for _ in range(1000):
            seq = struct.unpack_from('<Q', m, 8)[0]
            data = m[:PAGE]
            if seq % 2 == 0 and struct.unpack_from('<Q', m, 8)[0] == seq:
                break
        else:
            raise AssertionError('no consistent page')
    (magic, version, seq, usable, tid, read_format, set_id, group, group_size, switch_ns,
     count) = HEADER.unpack_from(data, 0)
    page = dict(magic=magic, version=version, seq=seq, usable=usable, tid=tid, read_format=read_format,
                set=set_id, group=group, group_size=group_size, switch_ns=switch_ns, entries={})
    for i in range(min(count, 64)):
        upper, base, ref, mask, last_reset, switch_left, index, source, member = ENTRY.unpack_from(
            data, HEADER.size + i * ENTRY.size)
        page['entries'][index] = dict(upper=upper, base=base, ref=ref, mask=mask, last_reset=last_reset,
                                      switch_left=switch_left, source=source, member=member)
    return page


def pageValues(page):
    """What the page says pfm_read_pmds answers, for kPage entries:
    {index: (value, last_reset, switch_left)}."""
    out = {}
    for index, e in page['entries'].items():
        assert e['source'] == KPAGE, e
        out[index] = (e['upper'] | e['base'], e['last_reset'], e['switch_left'])
    return out


def mountValues(s, set_id):
    """The same from sets/N/pmds (what libpfm-compat reads today)."""
    out = {}
    for line in s.read(f'sets/{set_id}/pmds').splitlines():
        kv = pfmfs_mount.parseKv(line)
        out[int(kv['pmd'])] = (int(kv['value']), int(kv['last_reset']), int(kv['switch_left']))
    return out


# askAll sends its request right after connecting, but a loaded machine can
# stop this process between the two for longer than the daemon's default
# 250 ms: these tests are about what is answered, so the deadline is long
# here (test_fastpath_channel tests the deadline itself).
PATIENT = ('--fastpath-deadline=60000',)


class FastPathTest(MountTestCase):

    mount_args = PATIENT

    def setUp(self):
        m = re.search(r' fastpath=@(\S+) fastpath_pid=\d+ fastpath_uid=\d+\n$', self.m.read('pmu/info'))
        self.assertIsNotNone(m, 'pmu/info names no fast-path socket')
        self.sock = m.group(1)

    def pageOf(self, s):
        answer, fd = ask(self.sock, f'page {s.name}')
        self.assertEqual(answer, 'ok')
        self.addCleanup(os.close, fd)
        return fd

    def test_the_page_is_the_owners_and_read_only(self):
        s = self.newSession()
        fd = self.pageOf(s)
        self.assertEqual(os.fstat(fd).st_size, PAGE)
        page = readPage(fd)
        self.assertEqual((page['magic'], page['version'], page['usable']), (MAGIC, VERSION, 0))
        with self.assertRaises(PermissionError):
            mmap.mmap(fd, PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.assertErrno(errno.EPERM, os.write, fd, b'x')
        self.assertErrno(errno.EPERM, os.ftruncate, fd, 0)
        # A second request: the same page.
        other = self.pageOf(s)
        self.assertEqual(os.fstat(other).st_ino, os.fstat(fd).st_ino)

    def test_the_sampling_buffer_is_the_owners_and_read_only(self):
        s = self.newSession()
        self.assertEqual(ask(self.sock, f'smpl {s.name}'),
                         (f'err {errno.ENOENT} session {s.name} has no sampling format', None))
        s.write('smpl_fmt', 'default buf_size=6000\n')
        answer, fd = ask(self.sock, f'smpl {s.name}')
        self.assertEqual(answer, 'ok')
        self.addCleanup(os.close, fd)
        self.assertEqual(os.fstat(fd).st_size, 8192)  # whole pages
        with self.assertRaises(PermissionError):
            mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.assertErrno(errno.EPERM, os.write, fd, b'x')
        self.assertErrno(errno.EPERM, os.ftruncate, fd, 0)
        with mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ) as m:
            count, cur, overflows, buf_size, min_space, version, flags = struct.unpack_from('<QQQQQII', m, 0)
            # The largest entry: 40 bytes and every PMD of the PMU.
            self.assertEqual((count, cur, overflows, buf_size, min_space, version, flags),
                             (0, 128, 0, 6000, 40 + 8 * len(PMU.pmds), 0x10000, 0))
            with open(s.path('smpl_buf'), 'rb') as f:
                self.assertEqual(m[:6000], f.read())
        answer, got = runAs(TEST_USER, askAndClose, self.sock, f'smpl {s.name}')
        self.assertFalse(got)
        self.assertRegex(answer, rf'^err {errno.EACCES} session {re.escape(s.name)} is not yours$')

    def assertErrno(self, code, fn, *args):
        with self.assertRaises(OSError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.errno, code, errno.errorcode.get(cm.exception.errno))

    def test_nobody_else_gets_anything(self):
        s = self.newSession()
        for text in (f'page {s.name}', f'group {s.name} 1'):
            answer, got = runAs(TEST_USER, askAndClose, self.sock, text)
            self.assertFalse(got, text)
            self.assertRegex(answer, rf'^err {errno.EACCES} session {re.escape(s.name)} is not yours$')
        # A user's own session: theirs, and root's too.
        name = f'fastpath-user-{os.getpid()}'
        runAs(TEST_USER, os.mkdir, self.m.path('sessions', name))
        self.addCleanup(lambda: os.path.isdir(self.m.path('sessions', name)) and os.rmdir(self.m.path('sessions', name)))
        self.assertEqual(runAs(TEST_USER, askAndClose, self.sock, f'page {name}'), ('ok', True))
        self.assertEqual(askAndClose(self.sock, f'page {name}'), ('ok', True))

    def test_garbage_gets_an_errno(self):
        s = self.newSession()
        cases = [
            ('page no-such-session', errno.ENOENT),
            ('page', errno.ENOENT),
            (f'page {s.name} extra', errno.EINVAL),
            ('fetch x', errno.EINVAL),
            (f'group {s.name} abc', errno.EINVAL),
            (f'group {s.name} -1', errno.EINVAL),
            (f'group {s.name}', errno.EINVAL),
            (f'group {s.name} 99999999999999999999999', errno.EINVAL),
            (f'group {s.name} 12345', errno.ESTALE),  # not the loaded set's group (nothing is loaded)
            (b'page \xff\x00\n', errno.ENOENT),
            ('page ' + 'x' * 600, errno.EINVAL),
        ]
        for text, code in cases:
            with self.subTest(text=text[:40]):
                answer, fd = ask(self.sock, text)
                self.assertIsNone(fd)
                self.assertRegex(answer, rf'^err {code} [ -~]+$')
        # An empty message is the end of the connection: no answer.
        self.assertEqual(ask(self.sock, ''), ('', None))
        # The daemon serves on.
        self.assertEqual(askAndClose(self.sock, f'page {s.name}'), ('ok', True))

    def test_a_destroyed_session_leaves_a_page_that_says_ask_the_mount(self):
        s = self.newSession()
        pid = self.sleeper()
        s.pmc(0, PMU.pmc_a)
        s.ctl(f'load {pid}')
        fd = self.pageOf(s)
        self.assertEqual(readPage(fd)['usable'], 1)
        s.destroy()
        self.assertEqual(readPage(fd)['usable'], 0)
        answer, _ = ask(self.sock, f'page {s.name}')
        self.assertRegex(answer, rf'^err {errno.ENOENT} ')

    @simOnly
    def test_the_page_answers_what_the_mount_answers(self):
        s = self.newSession()
        pid = self.sleeper()
        s.mkset(1)
        s.pmc(0, PMU.pmc_a)
        s.pmc(1, PMU.pmc_b)
        s.pmd(3, 77)
        s.write('sets/0/pmd0', f'{neg(3000)} short_reset={neg(2000)}\n')
        s.pmc(0, PMU.pmc_b, set_id=1)
        s.write('sets/0/switch', 'time 700\n')
        s.write('sets/1/switch', 'time 300\n')
        fd = self.pageOf(s)
        self.assertEqual(readPage(fd)['usable'], 0, 'unloaded')
        s.ctl(f'load {pid}')

        def agree(what):
            page = readPage(fd)
            self.assertEqual(page['usable'], 1, what)
            self.assertEqual(page['tid'], pid, what)
            self.assertEqual(mountValues(s, page['set']), pageValues(page), what)

        agree('loaded')
        s.ctl('start')
        for ns in (100, 599, 1, 1, 299, 2000, 333, 7777, 1):
            self.m.advance(ns)
            agree(f'after {ns} ns more')
        s.pmd(0, 12345)
        agree('a PMD written while counting')
        s.ctl('stop')
        agree('stopped')
        s.ctl('start')
        self.m.advance(10)
        agree('started again')

    @simOnly
    def test_masked_is_unusable_until_restart(self):
        s = self.newSession()
        pid = self.sleeper()
        s.pmc(0, PMU.pmc_a)
        s.write('sets/0/pmd0', f'{neg(300)} long_reset={neg(600)} notify\n')
        fd = self.pageOf(s)
        s.ctl(f'load {pid}')
        s.ctl('start')
        self.m.advance(100)
        self.assertIn('state=masked', s.state())
        self.assertEqual(readPage(fd)['usable'], 0)
        s.ctl('restart')
        page = readPage(fd)
        self.assertEqual(page['usable'], 1)
        self.assertEqual(pageValues(page)[0], (neg(600), neg(600), 0))
        self.assertEqual(mountValues(s, 0), pageValues(page))

    @perfOnly
    def test_the_perf_group_gives_the_pmd_files_value(self):
        s = self.newSession()
        w = self.worker()
        s.pmc(0, PMU.pmc_a)
        s.pmc(1, PMU.pmc_b)
        s.pmd(0, 1000)
        fd = self.pageOf(s)
        s.ctl(f'load {w.tid}')
        s.ctl('start')
        w.fault(37)
        page = readPage(fd)
        self.assertEqual(page['usable'], 1)
        e = page['entries'][0]
        self.assertEqual(e['source'], KPERF)
        n = page['group_size']
        self.assertEqual(n, 2)
        # Every member's descriptor, the leader first: perf events all.
        answer, fds = askAll(self.sock, f'group {s.name} {page["group"]}')
        for member in fds:
            self.addCleanup(os.close, member)
        self.assertEqual(answer, 'ok')
        self.assertEqual(len(fds), n)
        for member in fds:
            self.assertEqual(os.readlink(f'/proc/self/fd/{member}'), 'anon_inode:[perf_event]')
        values = struct.unpack(f'<{3 + 2 * n}Q', os.read(fds[0], 8 * (3 + 2 * n)))
        self.assertEqual(values[0], n)
        hw = e['base'] + values[3 + 2 * e['member']] - e['ref']
        self.assertLessEqual(hw, e['mask'], 'wrapped')
        value = e['upper'] | hw
        self.assertEqual(value, s.readPmd(0))
        self.assertGreaterEqual(value, 1037)
        # A group that is not the loaded set's: ESTALE.
        answer, _ = ask(self.sock, f'group {s.name} {page["group"] + 1000}')
        self.assertRegex(answer, rf'^err {errno.ESTALE} ')
        # Stopped: the page holds the values themselves.
        s.ctl('stop')
        page = readPage(fd)
        self.assertEqual(page['entries'][0]['source'], KPAGE)
        self.assertEqual(pageValues(page)[0][0], s.readPmd(0))


if __name__ == '__main__':
    pfmfs_mount.main()
