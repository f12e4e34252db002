// The mount, as files: finding it, reading and writing its files with the
// errno and the session's `error` reason when the mount refuses.
#pragma once

#include <string>

namespace pfmstat {

// --mount, else $PFMFS_MOUNT, else /run/pfmfs when its version file says
// pfmfs, else the first fuse.pfmfs mount in /proc/self/mountinfo (the order
// libpfm-compat uses). Throws UsageError when there is none.
std::string findMount(const std::string& option);

// The whole file; throws RunError naming the path and errno.
std::string readFile(const std::string& path);

// One write(2) of `text`; returns 0 or the errno.
int writeFile(const std::string& path, const std::string& text);

}  // namespace pfmstat
