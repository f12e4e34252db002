// The fast path's side of the filesystem (fastpath_server.h): a session's
// page and perf group for its owner, and the page's end with the session.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fs/filesystem.h"
#include "fs/filesystem_internal.h"
#include "fs/log.h"

namespace pfmfs::fs {

std::shared_ptr<SessionEntry> Filesystem::fastEntry(uid_t uid, std::string_view name, Error& why) {
  std::shared_ptr<SessionEntry> e;
  {
    MutexLock lock(registry_mutex_);
    auto it = registry_.find(name);
    if (it != registry_.end()) e = it->second;
  }
  if (!e || !e->alive) {
    why = err(ENOENT, "no session '{}'", printable(name));
    return nullptr;
  }
  if (uid != 0 && uid != e->session->uid()) {
    why = err(EACCES, "session {} is not yours", e->session->name());
    return nullptr;
  }
  return e;
}

Result<pmu::Fd> Filesystem::fastPage(uid_t uid, std::string_view name) {
  if (!engine_.backend().mappedReads())
    return err(EOPNOTSUPP, "the {} backend has no mapped reads: read the counts through the mount",
               engine_.backend().name());
  Error why;
  auto e = fastEntry(uid, name, why);
  if (!e) return why;
  MutexLock lock(e->fast_mutex);
  if (!e->alive) return err(ENOENT, "session {} was destroyed", e->session->name());
  if (!e->fast) {
    auto map = FastPageMap::create(("pfmfs-fastpath:" + e->session->name()).c_str());
    if (!map) return map.error();
    e->fast.emplace(std::move(*map));
    e->session->setFastPage(e->fast->page());
  }
  pmu::Fd fd(::fcntl(e->fast->fd(), F_DUPFD_CLOEXEC, 0));
  if (!fd) return err(errno, "fast-path page of session {}: {}", e->session->name(), std::strerror(errno));
  return fd;
}

Result<std::vector<pmu::Fd>> Filesystem::fastGroup(uid_t uid, std::string_view name, std::uint64_t id) {
  Error why;
  auto e = fastEntry(uid, name, why);
  if (!e) return why;
  return e->session->fastGroupFds(id);
}

Result<pmu::Fd> Filesystem::sampleBuffer(uid_t uid, std::string_view name) {
  Error why;
  auto e = fastEntry(uid, name, why);
  if (!e) return why;
  auto buf = e->session->sampleBufferFd();
  if (!buf) return buf.error();
  return std::move(buf->first);
}

// After the session left the engine: its readers see "ask the mount" (and
// the mount then says there is no such session); their mappings keep the
// memfd's page alive, ours goes.
void Filesystem::dropFastPage(SessionEntry& e) {
  MutexLock lock(e.fast_mutex);
  if (!e.fast) return;
  e.session->setFastPage(nullptr);
  e.fast.reset();
}

}  // namespace pfmfs::fs
