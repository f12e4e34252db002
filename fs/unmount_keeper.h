// The other end of auto_unmount. libfuse mounts through fusermount3, which
// stays behind holding one end of a socket and unmounts when the other end,
// ours, closes, but only if the connection is gone by then (it checks that
// the mount point answers ENOTCONN). When pfmfsd dies of SIGKILL the kernel
// releases the process's files in no order of ours, and a worker thread
// killed inside read(2) of /dev/fuse releases its hold on it late: the
// socket may close first, fusermount3 finds the mount alive (ECONNABORTED
// from the abort that follows) and leaves a dead mount behind. So our end
// of the socket moves to a process of its own, which closes it only once
// pfmfsd has wholly exited (its pidfd), /dev/fuse's release included.
#pragma once

#include <set>

#include "pmu/result.h"

namespace pfmfs::fs {

// The descriptors open now: take them before fuse_session_mount.
std::set<int> openDescriptors();

// After the mount: the one socket opened since `before` that is not
// /dev/fuse (`fuse_fd`) is fusermount3's. A child (pfmfsd-unmount, no
// capabilities, nothing else open) takes it over and this process closes
// its own. Nothing to do (ok) without such a socket: a mount made without
// auto_unmount. Fails, changing nothing, when the child cannot be made.
Status keepUnmountSocket(const std::set<int>& before, int fuse_fd);

}  // namespace pfmfs::fs
