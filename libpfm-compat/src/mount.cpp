// Finding the pfmfs mount (docs/libpfm-compat.md): $PFMFS_MOUNT, else /run/pfmfs when it
// looks like one, else the first fuse.pfmfs entry of /proc/self/mountinfo
// that root or the calling user mounted. Runs once per process in the normal
// case; nothing here is on a hot path.
//
// Whom to trust: on a machine where /dev/fuse is open to all, any user can
// mount a filesystem of type fuse.pfmfs (fusermount3) that answers what it
// likes, and see what a program writes to it. A mount found in mountinfo is
// taken only if its user_id= (the uid that mounted it, which the kernel
// records) is root's or the caller's. A set-id program (AT_SECURE) takes no
// PFMFS_MOUNT from its caller, and only root's mounts.
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <atomic>

#include "base/mutex.h"

namespace pfmcompat {
namespace {

constexpr const char* kDefaultMount = "/run/pfmfs";
constexpr size_t kPathMax = 4096;

char g_path[kPathMax];
std::atomic<bool> g_found{false};
// Serialises the lookup, a leaf; guards no field: g_path is written once
// under it and published by g_found (release), which readers load first.
pfmfs::Mutex g_lookup_mutex;

// /run/pfmfs counts when its version file says "pfmfs": that is true of the
// mount itself and of a bind mount of it, and false of an empty directory
// left behind by a daemon that has gone (which would otherwise hide a live
// mount elsewhere).
bool versionSaysPfmfs(const char* dir) {
  char path[kPathMax];
  if (snprintf(path, sizeof path, "%s/version", dir) >= int(sizeof path)) return false;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16];
  ssize_t n = pread(fd, buf, sizeof buf, 0);
  close(fd);
  return n >= 5 && memcmp(buf, "pfmfs", 5) == 0;
}

// mountinfo escapes space, tab, newline and backslash as \ooo octal.
void unescapeMountinfo(char* s) {
  char* out = s;
  for (char* in = s; *in; ++in) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
      *out++ = char((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
      in += 3;
    } else {
      *out++ = *in;
    }
  }
  *out = '\0';
}

// Whether a fuse mount's super options ("rw,user_id=1000,group_id=1000,...")
// say it was mounted by root, or (unless root_only) by `uid`.
bool mountedBy(char* super, uid_t uid, bool root_only) {
  char* save = nullptr;
  for (char* opt = strtok_r(super, ",\n", &save); opt; opt = strtok_r(nullptr, ",\n", &save)) {
    if (strncmp(opt, "user_id=", 8) != 0) continue;
    char* end = nullptr;
    errno = 0;
    const unsigned long long id = strtoull(opt + 8, &end, 10);
    if (errno != 0 || end == opt + 8 || *end != '\0') return false;
    return id == 0 || (!root_only && id == uid);
  }
  return false;  // no user_id: not a FUSE mount as the kernel records one
}

// Fields: id parent major:minor root mountpoint options [optional...] - fstype source super
bool firstFuseMountFromMountinfo(char* out, size_t out_size, bool root_only) {
  FILE* f = fopen("/proc/self/mountinfo", "re");
  if (!f) return false;
  char* line = nullptr;
  size_t cap = 0;
  bool found = false;
  while (!found && getline(&line, &cap, f) > 0) {
    char* save = nullptr;
    char* field = strtok_r(line, " \n", &save);
    char* mount_point = nullptr;
    for (int i = 0; field && i < 4; ++i) field = strtok_r(nullptr, " \n", &save);
    mount_point = field;  // the fifth field
    while (field && strcmp(field, "-") != 0) field = strtok_r(nullptr, " \n", &save);
    char* fstype = field ? strtok_r(nullptr, " \n", &save) : nullptr;
    char* source = fstype ? strtok_r(nullptr, " \n", &save) : nullptr;
    char* super = source ? strtok_r(nullptr, " \n", &save) : nullptr;
    if (mount_point && fstype && strcmp(fstype, "fuse.pfmfs") == 0 && super && mountedBy(super, getuid(), root_only)) {
      unescapeMountinfo(mount_point);
      if (strlen(mount_point) < out_size) {
        strcpy(out, mount_point);
        found = true;
      }
    }
  }
  free(line);
  fclose(f);
  return found;
}

void stripTrailingSlashes(char* p) {
  size_t n = strlen(p);
  while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
}

}  // namespace

const char* mountPath() {
  if (g_found.load(std::memory_order_acquire)) return g_path;
  pfmfs::MutexLock lock(g_lookup_mutex);
  if (g_found.load(std::memory_order_relaxed)) return g_path;

  int saved_errno = errno;  // a successful lookup leaves errno as it found it
  char candidate[kPathMax];
  bool ok = false;
  const bool set_id = getauxval(AT_SECURE) != 0;
  const char* env = secure_getenv("PFMFS_MOUNT");
  if (env && *env) {
    // An explicit choice is taken as given: a wrong one should fail loudly on
    // use (ENOENT) rather than silently pick another mount.
    if (strlen(env) < sizeof candidate) {
      strcpy(candidate, env);
      ok = true;
    }
  } else if (versionSaysPfmfs(kDefaultMount)) {
    strcpy(candidate, kDefaultMount);
    ok = true;
  } else {
    ok = firstFuseMountFromMountinfo(candidate, sizeof candidate, set_id);
  }
  if (!ok) {
    errno = ENODEV;
    return nullptr;
  }
  stripTrailingSlashes(candidate);
  strcpy(g_path, candidate);
  g_found.store(true, std::memory_order_release);
  errno = saved_errno;
  return g_path;
}

}  // namespace pfmcompat
