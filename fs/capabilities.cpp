// Capability handling with libcap-ng (see capabilities.h).
#include "fs/capabilities.h"

#include <cap-ng.h>
#include <linux/capability.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "pmu/backend_registry.h"
#include "pmu/host_info.h"

namespace pfmfs::fs {

std::vector<int> capabilitiesNeeded(const std::string& backend) {
  // Each backend says which, and why (pmu/*/…_entry.cpp). pfmfsd keeps
  // CAP_SYS_ADMIN dormant for every backend, to unmount at exit: that is
  // dropCapabilities' `dormant`, not this list.
  const pmu::BackendEntry* e = pmu::findBackend(backend);
  if (!e) return {};
  return {e->capabilities.begin(), e->capabilities.end()};
}

Status dropCapabilities(const std::vector<int>& keep, const std::vector<int>& dormant) {
  capng_get_caps_process();
  // Changing the bounding set needs CAP_SETPCAP; without it (a daemon started
  // by a plain user) dropping the capability sets is all there is to do.
  capng_select_t select = capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP) ? CAPNG_SELECT_BOTH : CAPNG_SELECT_CAPS;
  bool had_admin = capng_have_capability(CAPNG_PERMITTED, CAP_SYS_ADMIN);
  capng_clear(CAPNG_SELECT_BOTH);
  for (int cap : keep) {
    if (capng_update(CAPNG_ADD, static_cast<capng_type_t>(CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET),
                     cap) != 0)
      return err(EINVAL, "capability {} cannot be kept", cap);
  }
  for (int cap : dormant) {
    if (cap == CAP_SYS_ADMIN && !had_admin) continue;  // a plain user's daemon: fusermount3 unmounts
    if (capng_update(CAPNG_ADD, static_cast<capng_type_t>(CAPNG_PERMITTED | CAPNG_BOUNDING_SET), cap) != 0)
      return err(EINVAL, "capability {} cannot be kept", cap);
  }
  if (int rc = capng_apply(select); rc != 0) return err(EPERM, "libcap-ng could not drop capabilities (error {})", rc);
  return {};
}

bool raiseCapability(int cap) {
  capng_get_caps_process();
  if (!capng_have_capability(CAPNG_PERMITTED, static_cast<unsigned>(cap))) return false;
  if (capng_update(CAPNG_ADD, CAPNG_EFFECTIVE, static_cast<unsigned>(cap)) != 0) return false;
  return capng_apply(CAPNG_SELECT_CAPS) == 0;
}

bool inDaemonUserNamespace(pid_t pid) {
  // The namespace's link names it; reading another process's needs ptrace
  // access, which a daemon without CAP_SYS_PTRACE (x86) lacks for other
  // users. Its uid_map is world-readable: a namespace below ours maps ids
  // other than the whole range one to one, and only a privileged user can
  // make one that does.
  char mine[64] = {};
  char theirs[64] = {};
  std::string link = "/proc/" + std::to_string(pid) + "/ns/user";
  ssize_t a = ::readlink("/proc/self/ns/user", mine, sizeof mine - 1);
  ssize_t b = ::readlink(link.c_str(), theirs, sizeof theirs - 1);
  if (a > 0 && b > 0)
    return std::string(mine, static_cast<std::size_t>(a)) == std::string(theirs, static_cast<std::size_t>(b));
  std::string own = pmu::readSmallFile("/proc/self/uid_map");
  std::string other = pmu::readSmallFile("/proc/" + std::to_string(pid) + "/uid_map");
  return !own.empty() && own == other;
}

}  // namespace pfmfs::fs
