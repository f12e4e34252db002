// Where the pfmfs mount is: the one place libpfm-compat asks. Both the
// perfmon2 calls (sessions/) and the event encoding (pmu/) build their paths
// on it. Lookup order: $PFMFS_MOUNT, /run/pfmfs, the first fuse.pfmfs mount.
#pragma once

namespace pfmcompat {

// The mount's path without a trailing slash, or nullptr when none is found
// (errno is then ENODEV). The first success is cached for the life of the
// process; a failure is not, so a daemon started later is still found.
// Safe to call from several threads at once.
const char* mountPath();

}  // namespace pfmcompat
