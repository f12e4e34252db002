// The shared operations: each turns a vector or a command into the fewest
// writes and reads of session files (pfmfs(5)), and the mount's answers into
// perfmon2's errno values.
#include "context_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include "async_notify.h"
#include "context.h"
#include "context_table.h"
#include "key_value.h"
#include "mount.h"
#include "scratch_buffer.h"
#include "session_io.h"
#include "text_builder.h"

namespace pfmcompat {
namespace {

// The mount has registers 0..63: one bit each in a u64 mask.
constexpr unsigned kMaxRegs = 64;

// The distinct sets of a vector, in order of first appearance, without
// allocating: element i starts a group when no earlier element has its set.
template <class KeyOf>
bool firstOfSet(size_t i, KeyOf key) {
  const uint16_t set = key(i).set;
  for (size_t j = 0; j < i; ++j)
    if (key(j).set == set) return false;
  return true;
}

// What every vector call checks first: one register number out of range
// fails the whole call before anything is read or written, and an empty
// vector does nothing. 1 when there is work and `scratch` has its room, else
// the call's result (0 or -errno).
template <class KeyOf>
int startVector(size_t n, KeyOf key, const ScratchBuffer& scratch) {
  for (size_t i = 0; i < n; ++i)
    if (key(i).num >= kMaxRegs) return -EINVAL;
  if (n == 0) return 0;
  return scratch.data() ? 1 : -ENOMEM;
}

// Appends each element's line to one `regs` write per set; a register seen
// twice in a group, or a full buffer, closes the write and opens the next.
template <class KeyOf, class LineOf>
int writeGrouped(Context& c, size_t n, KeyOf key, LineOf line) {
  ScratchBuffer scratch;
  if (int r = startVector(n, key, scratch); r <= 0) return r;
  for (size_t i = 0; i < n; ++i) {
    if (!firstOfSet(i, key)) continue;
    const uint16_t set = key(i).set;
    FdLease regs = c.setFile(set, SetFile::Regs);
    if (!regs.ok()) return setError(regs.error());
    TextBuilder text(scratch.data(), scratch.size());
    auto flush = [&]() -> int {
      if (text.size() == 0) return 0;
      int r = writeWhole(regs.fd(), text.data(), text.size());
      text.clear();
      return r;
    };
    uint64_t in_write = 0;
    for (size_t j = i; j < n; ++j) {
      const RegKey k = key(j);
      if (k.set != set) continue;
      const uint64_t bit = uint64_t(1) << k.num;
      if (in_write & bit) {
        if (int r = flush(); r < 0) return r;
        in_write = 0;
      }
      const size_t mark = text.size();
      line(j, text);
      if (text.overflowed()) {
        text.truncate(mark);
        if (int r = flush(); r < 0) return r;
        in_write = 0;
        line(j, text);
      }
      in_write |= bit;
    }
    if (int r = flush(); r < 0) return r;
  }
  return 0;
}

bool parsePmdLine(const Line& line, unsigned* num, PmdValues* v) {
  uint64_t k;
  if (!findNumber(line, "pmd", &k) || k >= kMaxRegs) return false;
  *num = unsigned(k);
  if (!v) return true;
  return findNumber(line, "value", &v->value) && findNumber(line, "last_reset", &v->last_reset) &&
         findNumber(line, "switch_left", &v->switch_left);
}

uint64_t pmdsPresent(const char* text, size_t size) {
  uint64_t mask = 0;
  LineCursor cur(text, size);
  Line line;
  unsigned num;
  while (cur.next(&line))
    if (parsePmdLine(line, &num, nullptr)) mask |= uint64_t(1) << num;
  return mask;
}

bool findPmd(const char* text, size_t size, unsigned want, PmdValues* v) {
  LineCursor cur(text, size);
  Line line;
  unsigned num;
  while (cur.next(&line))
    if (parsePmdLine(line, &num, nullptr) && num == want) return parsePmdLine(line, &num, v);
  return false;
}

// A `regs` line "pmcK 0xV [no_emul64]" for PMC want.
bool findPmcInRegs(const char* text, size_t size, unsigned want, uint64_t* value) {
  LineCursor cur(text, size);
  Line line;
  while (cur.next(&line)) {
    if (line.size < 4 || memcmp(line.begin, "pmc", 3) != 0) continue;
    const char* p = line.begin + 3;
    const char* end = line.begin + line.size;
    const char* num_end = p;
    while (num_end < end && *num_end != ' ') ++num_end;
    uint64_t k;
    if (!parseU64(p, size_t(num_end - p), &k) || k != want) continue;
    const char* v = num_end;
    while (v < end && *v == ' ') ++v;
    const char* v_end = v;
    while (v_end < end && *v_end != ' ') ++v_end;
    return parseU64(v, size_t(v_end - v), value);
  }
  return false;
}

int command(Context& c, const TextBuilder& text) {
  if (text.overflowed()) return -EINVAL;
  FdLease ctl = c.ctl();
  if (!ctl.ok()) return -ctl.error();
  return writeWhole(ctl.fd(), text.data(), text.size());
}

// PFMFS_FASTPATH=0 turns the fast path off for the contexts created after.
bool fastPathWanted() {
  const char* v = getenv("PFMFS_FASTPATH");
  return !(v && strcmp(v, "0") == 0);
}

std::atomic<uint64_t> g_session_counter{0};
std::atomic<uint32_t> g_generation{0};

}  // namespace

int createContext(const CreateOptions& options) {
  const char* mount = mountPath();
  if (!mount) return -ENODEV;
  ContextTable::sweep();
  char path[4096 + 128];
  TextBuilder p(path, sizeof path);
  // Unique per process and call; a name left by a dead process of the same
  // pid (or another library instance) only costs one more try.
  int made = -1;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    p.clear();
    p.add(mount).add("/sessions/pfm.").dec(uint64_t(getpid())).add('.').dec(g_session_counter.fetch_add(1));
    if (p.overflowed()) return -ENAMETOOLONG;
    // The sticky bit: autoclose from birth, and destroyed if this thread dies
    // before msg is open (pfmfs(5), sessions/), so no kill leaves it behind.
    made = mkdir(path, S_ISVTX | 0700);
    if (made == 0 || errno != EEXIST) break;
  }
  if (made != 0) return -errno;
  const char* name = path + strlen(mount) + strlen("/sessions/");

  int dir_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    int e = errno;
    rmdir(path);
    return -e;
  }
  ContextTable::reclaim(dir_fd);
  // The descriptor perfmon2 returned: not close-on-exec, as it was.
  int fd = openat(dir_fd, "msg", O_RDONLY);
  if (fd < 0) {
    int e = errno;
    close(dir_fd);
    rmdir(path);
    return -e;
  }
  ContextTable::reclaim(fd);
  // From here on closing fd destroys the session (autoclose).
  // A failed create leaves nothing behind when it returns, as in perfmon2.
  auto fail = [&](int e) {
    close(fd);
    waitSessionGone(dir_fd, name);
    close(dir_fd);
    return -e;
  };
  if (fd >= ContextTable::kMaxFd) return fail(EMFILE);

  auto writeFile = [&](const char* file, const char* text) -> int {
    int f = openat(dir_fd, file, O_WRONLY | O_CLOEXEC);
    if (f < 0) return -errno;
    ContextTable::reclaim(f);
    int r = writeWhole(f, text, strlen(text));
    close(f);
    return r;
  };
  if (options.system_wide)
    if (int r = writeFile("mode", "system"); r < 0) return fail(-r);
  // Always written: it replaces every flag, and autoclose must stay even on
  // a daemon that did not take the sticky bit.
  char flags[64];
  TextBuilder f(flags, sizeof flags);
  f.add("autoclose");
  if (options.notify_block) f.add(" notify_block");
  if (options.no_msg) f.add(" no_msg");
  if (int r = writeFile("flags", flags); r < 0) return fail(-r);
  // The format last, on a session that is otherwise made: the mount names
  // an unknown format, a buffer too small or over the owner's limit.
  if (options.smpl_name) {
    char fmt[160];
    TextBuilder t(fmt, sizeof fmt);
    t.add(options.smpl_name).add(" buf_size=").dec(options.smpl_buf_size);
    t.add(" buf_flags=").dec(options.smpl_buf_flags);
    int r = t.overflowed() ? -EINVAL : writeFile("smpl_fmt", fmt);
    if (r < 0) {
      debugCreateFailure(dir_fd, fd, "smpl_fmt", -r);
      return fail(-r);
    }
  }

  struct stat st;
  if (fstat(fd, &st) != 0) return fail(errno);
  Context* c = ContextTable::allocate();
  if (!c) return fail(ENOMEM);
  const uint32_t generation = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool fast = fastPathWanted();
  if (fast) prepareCurrentTid();
  c->init(fd, dir_fd, name, st.st_dev, st.st_ino, generation, options.system_wide, fast,
          options.smpl_name ? options.smpl_buf_size : 0);
  ContextTable::install(c);
  watchContext(fd, generation);
  return fd;
}

int writePmcs(Context& c, const void* vec, size_t n, PmcGetter get) {
  auto key = [&](size_t i) {
    PmcItem it = get(vec, i);
    return RegKey{it.num, it.set};
  };
  return writeGrouped(c, n, key, [&](size_t i, TextBuilder& t) {
    PmcItem it = get(vec, i);
    t.add("pmc").dec(it.num).add(' ').hex(it.value);
    if (it.no_emul64) t.add(" no_emul64");
    t.add('\n');
  });
}

int writePmds(Context& c, const void* vec, size_t n, PmdGetter get) {
  auto key = [&](size_t i) {
    PmdItem it = get(vec, i);
    return RegKey{it.num, it.set};
  };
  return writeGrouped(c, n, key, [&](size_t i, TextBuilder& t) {
    PmdItem it = get(vec, i);
    t.add("pmd").dec(it.num).add(' ').dec(it.value);
    if (!it.value_only) {
      t.add(" long_reset=").dec(it.long_reset);
      t.add(" short_reset=").dec(it.short_reset);
      t.add(" switch_cnt=").dec(it.switch_cnt);
      t.add(" reset_pmds=").hex(it.reset_pmds);
      t.add(" smpl_pmds=").hex(it.smpl_pmds);
      t.add(" random_mask=").hex(it.random_mask);
      t.add(" eventid=").dec(it.eventid);
      t.add(" notify=").add(it.notify ? '1' : '0');
      t.add(" random=").add(it.random ? '1' : '0');
    } else {
      // A perfmon3 value write leaves the attributes; flags it carries still count.
      if (it.notify) t.add(" notify=1");
      if (it.random) t.add(" random=1");
    }
    t.add('\n');
  });
}

bool fastReadPmds(Context& c, void* vec, size_t n, KeyGetter key, PmdSetter put) {
  return c.fastPath().read(c, vec, n, key, put) == 0;
}

int readPmds(Context& c, void* vec, size_t n, KeyGetter key_of, PmdSetter put) {
  auto key = [&](size_t i) { return key_of(vec, i); };
  ScratchBuffer scratch;
  if (int r = startVector(n, key, scratch); r <= 0) return r;
  // The snapshots of the first sets are kept for the second pass; sets past
  // the kept area are read into the transient tail, and read again to fill.
  constexpr size_t kTransient = 16 * 1024;  // > the largest `pmds` (64 lines)
  char* const transient = scratch.data() + scratch.size() - kTransient;
  const size_t kept_cap = scratch.size() - kTransient;
  struct Kept {
    uint16_t set;
    size_t offset;
    size_t size;
  };
  constexpr int kMaxKept = 16;
  Kept kept[kMaxKept];
  int n_kept = 0;
  size_t used = 0;

  auto readSet = [&](uint16_t set, char* dst, size_t cap) -> ssize_t {
    FdLease f = c.setFile(set, SetFile::Pmds);
    if (!f.ok()) return setError(f.error());
    ssize_t len = readSnapshot(f.fd(), dst, cap);
    return len < 0 ? setError(int(-len)) : len;
  };

  // Pass 1: one read per set; every element must be there before any is filled.
  for (size_t i = 0; i < n; ++i) {
    if (!firstOfSet(i, key)) continue;
    const uint16_t set = key(i).set;
    const bool keep = n_kept < kMaxKept && kept_cap - used >= kTransient;
    char* dst = keep ? scratch.data() + used : transient;
    // At most kTransient: the kernel pins every page of a direct_io read's
    // buffer, so a read sized to the whole scratch area costs more.
    ssize_t len = readSet(set, dst, kTransient);
    if (len < 0) return int(len);
    const uint64_t present = pmdsPresent(dst, size_t(len));
    for (size_t j = i; j < n; ++j)
      if (key(j).set == set && !(present & (uint64_t(1) << key(j).num))) return -EINVAL;
    if (keep) {
      kept[n_kept++] = Kept{set, used, size_t(len)};
      used += size_t(len) + 1;
    }
  }
  // Pass 2: fill.
  for (size_t i = 0; i < n; ++i) {
    if (!firstOfSet(i, key)) continue;
    const uint16_t set = key(i).set;
    const char* text = nullptr;
    size_t size = 0;
    for (int k = 0; k < n_kept && !text; ++k)
      if (kept[k].set == set) {
        text = scratch.data() + kept[k].offset;
        size = kept[k].size;
      }
    if (!text) {
      ssize_t len = readSet(set, transient, kTransient);
      if (len < 0) return int(len);
      text = transient;
      size = size_t(len);
    }
    for (size_t j = i; j < n; ++j) {
      if (key(j).set != set) continue;
      PmdValues v;
      if (!findPmd(text, size, key(j).num, &v)) return -EINVAL;
      put(vec, j, v);
    }
  }
  return 0;
}

int readPmcs(Context& c, void* vec, size_t n, KeyGetter key_of, PmcSetter put) {
  auto key = [&](size_t i) { return key_of(vec, i); };
  ScratchBuffer scratch;
  if (int r = startVector(n, key, scratch); r <= 0) return r;
  for (size_t i = 0; i < n; ++i) {
    if (!firstOfSet(i, key)) continue;
    const uint16_t set = key(i).set;
    FdLease regs = c.setFile(set, SetFile::Regs);
    if (!regs.ok()) return setError(regs.error());
    ssize_t len = readSnapshot(regs.fd(), scratch.data(), scratch.size());
    if (len < 0) return setError(int(-len));
    for (size_t j = i; j < n; ++j) {
      const RegKey k = key(j);
      if (k.set != set) continue;
      uint64_t value;
      if (!findPmcInRegs(scratch.data(), size_t(len), k.num, &value)) {
        // Not in `regs`: still at its default; its own file says which.
        char path[40], text[64];
        TextBuilder p(path, sizeof path);
        p.add("sets/").dec(set).add("/pmc").dec(k.num);
        FdLease f = c.sessionFile(path, O_RDONLY);
        if (!f.ok()) return setError(f.error());
        ssize_t m = readSnapshot(f.fd(), text, sizeof text);
        if (m < 0) return setError(int(-m));
        size_t digits = 0;
        while (digits < size_t(m) && text[digits] != ' ' && text[digits] != '\n') ++digits;
        if (!parseU64(text, digits, &value)) return -EIO;
      }
      put(vec, j, value);
    }
  }
  return 0;
}

int loadContext(Context& c, uint32_t target, const uint16_t* set) {
  char buf[64];
  TextBuilder t(buf, sizeof buf);
  t.add("load ").dec(target);
  if (set) t.add(" set=").dec(*set);
  int r = command(c, t);
  // close() returns before the daemon hears of it (FUSE sends the release
  // afterwards), so a context the program just closed may still hold this
  // target. perfmon2's close was synchronous: wait for such sessions to go,
  // and try once more. A genuine EBUSY stays.
  if (r == -EBUSY && ContextTable::sweep() > 0) r = command(c, t);
  if (r == 0) c.setLoaded(true);
  return r;
}

int unloadContext(Context& c) {
  int r = simpleCommand(c, "unload");
  if (r == 0) {
    c.setLoaded(false);
    c.fastPath().dropGroup();
    drainNotifications(c.userFd());
  }
  return r;
}

int stopContext(Context& c) {
  int r = simpleCommand(c, "stop");
  if (r == 0) drainNotifications(c.userFd());
  return r;
}

int startContext(Context& c, const uint16_t* set) {
  char buf[32];
  TextBuilder t(buf, sizeof buf);
  t.add("start");
  if (set) t.add(' ').dec(*set);
  return command(c, t);
}

int simpleCommand(Context& c, const char* cmd) {
  char buf[32];
  TextBuilder t(buf, sizeof buf);
  t.add(cmd);
  return command(c, t);
}

}  // namespace pfmcompat
