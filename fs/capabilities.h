// Dropping privileges after the mount: pfmfsd keeps only the capabilities its
// backend needs (docs/pfmfsd.8.md lists them per backend).
#pragma once

#include <sys/types.h>
#include <string>
#include <vector>

#include "pmu/result.h"

namespace pfmfs::fs {

// The capabilities (CAP_* numbers) the named backend needs while running.
std::vector<int> capabilitiesNeeded(const std::string& backend);

// Clears every capability but `keep` from the effective, permitted,
// inheritable and bounding sets (the bounding set only where we may change
// it). `dormant` ones stay permitted but not effective, to be raised for one
// last act (CAP_SYS_ADMIN to unmount at exit). Fails with the reason when
// libcap-ng cannot apply it.
Status dropCapabilities(const std::vector<int>& keep, const std::vector<int>& dormant);

// Makes a dormant capability effective again. False if it was not kept.
bool raiseCapability(int cap);

// Whether process `pid` is in pfmfsd's user namespace: only there do the
// capabilities /proc shows for it count here. (Any user may make a user
// namespace of their own and hold every capability inside it.)
bool inDaemonUserNamespace(pid_t pid);

}  // namespace pfmfs::fs
