// Event sets through the mount: perfmon2's pfm_create_evtsets,
// pfm_delete_evtsets and pfm_getinfo_evtsets over sets/N and its files
// (pfmfs(5)). The rest of the shared operations are context_ops.cpp's.
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "context_ops.h"
#include "key_value.h"
#include "session_io.h"
#include "text_builder.h"

namespace pfmcompat {

int createSet(Context& c, uint16_t id, uint32_t flags, uint64_t timeout_ns, uint64_t* effective_ns) {
  constexpr uint32_t kOvfl = 0x01, kTime = 0x02;  // PFM_SETFL_OVFL_SWITCH, PFM_SETFL_TIME_SWITCH
  if (flags & ~(kOvfl | kTime)) return -EINVAL;
  char path[32];
  TextBuilder p(path, sizeof path);
  p.add("sets/").dec(id);
  // An existing set is modified, as perfmon2 did (set 0 always exists).
  bool created = mkdirat(c.dirFd(), path, 0700) == 0;
  if (!created && errno != EEXIST) {
    noteMountFailure();
    return -errno;
  }
  char rule[64];
  TextBuilder r(rule, sizeof rule);
  if (flags & kTime) {
    r.add("time ").dec(timeout_ns);
    if (flags & kOvfl) r.add(" ovfl");
  } else {
    r.add(flags & kOvfl ? "ovfl" : "none");
  }
  int e = 0;
  SetStatus st;
  FdLease sw = c.setFile(id, SetFile::Switch);
  if (!sw.ok())
    e = setError(sw.error());
  else if ((e = writeWhole(sw.fd(), r.data(), r.size())) == 0 && effective_ns)
    e = setStatus(c, id, &st, false);
  if (e < 0) {
    // perfmon2 checked the descriptor before it made the set: a refused
    // rule (a time switch of 0 ns, say) leaves no new set behind. The
    // mount's reason stays in `error`; this rmdir cannot fail on a set
    // this call made, and nothing is loaded that could hold it.
    if (created) unlinkat(c.dirFd(), path, AT_REMOVEDIR);
    return e;
  }
  if (effective_ns) *effective_ns = st.timeout_ns;
  return 0;
}

int deleteSet(Context& c, uint16_t id) {
  char path[32];
  TextBuilder p(path, sizeof path);
  p.add("sets/").dec(id);
  // The cached helper files of the set stay open: they name the set by its
  // number, so they serve a set created again under the same number.
  if (unlinkat(c.dirFd(), path, AT_REMOVEDIR) != 0) {
    noteMountFailure();
    return setError(errno);
  }
  return 0;
}

int setStatus(Context& c, uint16_t id, SetStatus* out, bool want_flags) {
  char text[512];
  FdLease info = c.setFile(id, SetFile::Info);
  if (!info.ok()) return setError(info.error());
  ssize_t len = readSnapshot(info.fd(), text, sizeof text);
  if (len < 0) return setError(int(-len));
  LineCursor cur(text, size_t(len));
  Line line;
  if (!cur.next(&line)) return -EIO;
  *out = SetStatus{};
  if (!findNumber(line, "runs", &out->runs) || !findNumber(line, "duration_ns", &out->duration_ns) ||
      !findNumber(line, "timeout_ns", &out->timeout_ns) || !findNumber(line, "ovfl_pmds", &out->ovfl_pmds) ||
      !findNumber(line, "avail_pmcs", &out->avail_pmcs) || !findNumber(line, "avail_pmds", &out->avail_pmds))
    return -EIO;
  if (!want_flags) return 0;
  FdLease sw = c.setFile(id, SetFile::Switch);
  if (!sw.ok()) return setError(sw.error());
  len = readSnapshot(sw.fd(), text, sizeof text);
  if (len < 0) return setError(int(-len));
  // "none" | "time NS" | "ovfl" | "time NS ovfl"
  if (strncmp(text, "time", 4) == 0) out->flags |= 0x02;
  if (strstr(text, "ovfl")) out->flags |= 0x01;
  return 0;
}

}  // namespace pfmcompat
