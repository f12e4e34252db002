#!/usr/bin/env python3
# The fast path's socket under attack (pfmfs(5), SECURITY, "The fast path's
# socket"; fs/fastpath_server.h): pmu/info says who listens (the kernel's
# SO_PEERCRED of the listener agrees); another user holding 300 idle
# connections keeps 16 and takes the socket from nobody: the victim and root
# are served at once, while every held connection stays open; a connection
# that sends nothing is closed at its deadline, and not before; the
# refusals' log lines are limited to ten a minute.
import os
import re
import select
import socket
import struct
import subprocess
import sys
import time

import pfmfs_mount
from pfmfs_mount import TEST_USER, TEST_USER2, WAIT_S, MountTestCase, runAs, userIds
from test_fastpath import askAndClose

PER_USER = 16  # FastPathServer::Limits::per_user

# Run as another user: connects N times to the socket and says how many the
# daemon left open (a refused one reads as end of file at once: the daemon
# sends nothing before a request); then, told to on stdin, how many of those
# it has closed since.
HOLDER = r'''
import select, socket, sys, time
name, n, wait = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conns = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect('\0' + name)
    conns.append(s)
open_ = set(conns)
end = time.monotonic() + wait
while len(open_) > %d and time.monotonic() < end:
    ready, _, _ = select.select(list(open_), [], [], 0.1)
    open_ -= set(ready)
print(len(open_), flush=True)
sys.stdin.readline()
ready, _, _ = select.select(list(open_), [], [], 0)
print(len(ready), flush=True)
''' % PER_USER


def endpoint(m):
    """(name, pid, uid) of pmu/info's fastpath keys."""
    info = m.read('pmu/info')
    got = re.search(r' fastpath=@(\S+) fastpath_pid=(\d+) fastpath_uid=(\d+)\n$', info)
    assert got, f'pmu/info names no fast-path endpoint: {info!r}'
    return got.group(1), int(got.group(2)), int(got.group(3))


def refusedOrAnswer(name, text):
    """The answer to one request, or 'closed' if the daemon closed the
    connection without one."""
    try:
        answer, fd = askAndClose(name, text)
    except (BrokenPipeError, ConnectionResetError):
        return 'closed'
    return answer if answer or fd else 'closed'


def peerCred(name):
    """(pid, uid, gid) the kernel reports for the listener of @name."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect('\0' + name)
        return struct.unpack('3i', s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))


class ChannelTest(MountTestCase):

    def test_pmu_info_names_the_listener_as_the_kernel_sees_it(self):
        name, pid, uid = endpoint(self.m)
        self.assertEqual(pid, self.m.proc.pid)
        self.assertEqual(uid, os.geteuid())
        self.assertEqual(peerCred(name)[:2], (pid, uid))
        # Any user sees the same listener.
        self.assertEqual(runAs(TEST_USER, peerCred, name)[:2], (pid, uid))


class LimitTest(MountTestCase):
    # Held connections must outlive the test: their deadline is a minute.
    mount_args = ('--fastpath-deadline=60000',)

    def holder(self, user, n):
        uid, gid = userIds(user)
        p = subprocess.Popen([pfmfs_mount.userPython(), '-c', HOLDER, endpoint(self.m)[0], str(n), str(WAIT_S)],
                             user=uid, group=gid, extra_groups=[], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        self.addCleanup(p.communicate)  # after the kill: closes its pipes
        self.addCleanup(p.kill)
        return p

    def test_another_users_idle_connections_take_the_socket_from_nobody(self):
        name = endpoint(self.m)[0]
        attacker = self.holder(TEST_USER2, 300)
        self.assertEqual(int(attacker.stdout.readline()), PER_USER, 'connections the attacker keeps')
        victim = self.userSession(TEST_USER)
        mine = self.newSession()
        for _ in range(20):
            self.assertEqual(runAs(TEST_USER, askAndClose, name, f'page {victim.name}'), ('ok', True))
            self.assertEqual(askAndClose(name, f'page {mine.name}'), ('ok', True))
        # The attacker's own limit is theirs alone: one more of theirs goes.
        self.assertEqual(runAs(TEST_USER2, refusedOrAnswer, name, f'page {victim.name}'), 'closed')
        attacker.stdin.write('\n')
        attacker.stdin.flush()
        self.assertEqual(int(attacker.stdout.readline()), 0, 'held connections closed early')
        # 284 + 1 refusals, ten lines a minute: the rest held back.
        refusals = [l for l in self.m.log().splitlines() if 'connections: one more refused' in l]
        self.assertEqual(len(refusals), 10, '\n'.join(refusals))

    def test_a_user_may_hold_their_limit_and_still_be_served_after(self):
        name = endpoint(self.m)[0]
        victim = self.userSession(TEST_USER)
        own = self.holder(TEST_USER, PER_USER - 1)
        self.assertEqual(int(own.stdout.readline()), PER_USER - 1)
        self.assertEqual(runAs(TEST_USER, askAndClose, name, f'page {victim.name}'), ('ok', True))
        own.stdin.write('\n')
        own.stdin.flush()
        self.assertEqual(int(own.stdout.readline()), 0)


def silentFor(name):
    """Seconds until the daemon closes a connection that sends nothing."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        # Before the connect: the daemon's clock for the deadline starts when
        # it sees the connection, which may be before connect() returns here.
        t0 = time.monotonic()
        s.connect('\0' + name)
        ready, _, _ = select.select([s], [], [], WAIT_S)
        took = time.monotonic() - t0
        assert ready, f'a silent connection still open after {WAIT_S} s'
        assert s.recv(16) == b'', 'the daemon said something unasked'
        return took


class DeadlineTest(MountTestCase):
    mount_args = ('--fastpath-deadline=300',)

    def test_a_silent_connection_is_closed_at_its_deadline(self):
        name = endpoint(self.m)[0]
        self.assertGreaterEqual(silentFor(name), 0.3)
        # A request sent at once is served all the same.
        s = self.newSession()
        self.assertEqual(askAndClose(name, f'page {s.name}'), ('ok', True))


if __name__ == '__main__':
    pfmfs_mount.main()
