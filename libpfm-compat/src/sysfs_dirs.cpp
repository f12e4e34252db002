// The library's own directory streams (sysfs_dirs.h).
#include "sysfs_dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "base/mutex.h"

namespace pfmcompat::sysfs::dirs {

static_assert(sizeof(struct dirent) == sizeof(struct dirent64), "x86_64: one layout for both");

// What does not change once the stream is open (fd, node, parentIno, buf
// itself) is read without the lock; a leaf.
struct Stream {
  pfmfs::Mutex lock;
  int fd = -1;  // a getdents64 stream's descriptor; -1 for the tree's
  // The tree's listing: position 0 is ".", 1 "..", then childAt(pos - 2).
  Node node;
  uint64_t parentIno = 0;
  size_t pos GUARDED_BY(lock) = 0;
  struct dirent64 entry GUARDED_BY(lock) = {};  // what next() returned last
  // A getdents64 stream: its buffer, what the last call filled, how far
  // next() has gone in it, and the d_off of the entry returned last.
  char* buf PT_GUARDED_BY(lock) = nullptr;
  size_t size GUARDED_BY(lock) = 0;
  size_t offset GUARDED_BY(lock) = 0;
  long filepos GUARDED_BY(lock) = 0;
};

namespace {

constexpr size_t kBufSize = 32768;  // glibc's
constexpr size_t kSlots = 32;

// The registry: blocks of slots, each an open stream or nullptr; a block
// is added when every slot is taken, and never freed.
struct Block {
  std::atomic<Stream*> slot[kSlots] = {};
  std::atomic<Block*> next{nullptr};
};
Block g_first;
std::atomic<long> g_open{0};  // streams enrolled: find() skips the scan at 0

bool enroll(Stream* s) {
  g_open.fetch_add(1, std::memory_order_acq_rel);
  for (Block* b = &g_first;;) {
    for (auto& slot : b->slot) {
      Stream* empty = nullptr;
      if (slot.load(std::memory_order_relaxed) == nullptr &&
          slot.compare_exchange_strong(empty, s, std::memory_order_acq_rel))
        return true;
    }
    Block* n = b->next.load(std::memory_order_acquire);
    if (!n) {
      void* mem = malloc(sizeof(Block));
      if (!mem) {
        g_open.fetch_sub(1, std::memory_order_acq_rel);
        errno = ENOMEM;
        return false;
      }
      Block* fresh = new (mem) Block;
      if (b->next.compare_exchange_strong(n, fresh, std::memory_order_acq_rel)) {
        n = fresh;
      } else {  // another thread added one: n is it
        fresh->~Block();
        free(mem);
      }
    }
    b = n;
  }
}

void withdraw(Stream* s) {
  for (Block* b = &g_first; b; b = b->next.load(std::memory_order_acquire)) {
    for (auto& slot : b->slot) {
      Stream* mine = s;
      if (slot.compare_exchange_strong(mine, nullptr, std::memory_order_acq_rel)) {
        g_open.fetch_sub(1, std::memory_order_acq_rel);
        return;
      }
    }
  }
}

Stream* make() {
  void* mem = malloc(sizeof(Stream));
  if (!mem) {
    errno = ENOMEM;
    return nullptr;
  }
  return new (mem) Stream;
}

void destroy(Stream* s) {
  free(s->buf);
  s->~Stream();
  free(s);
}

// The tree's next entry into s->entry.
struct dirent64* treeNextLocked(Stream* s) REQUIRES(s->lock) {
  char name[kNameMax] = {};
  Node child;
  uint64_t ino;
  unsigned char type = DT_DIR;
  if (s->pos == 0) {
    name[0] = '.';
    ino = inodeOf(s->node);
  } else if (s->pos == 1) {
    name[0] = name[1] = '.';
    ino = s->parentIno;
  } else if (childAt(s->node, s->pos - 2, &child, name)) {
    ino = inodeOf(child);
    type = child.isDir() ? DT_DIR : DT_REG;
  } else {
    return nullptr;
  }
  ++s->pos;
  struct dirent64* e = &s->entry;
  size_t len = strlen(name);
  e->d_ino = ino;
  e->d_off = off64_t(s->pos);
  e->d_type = type;
  memcpy(e->d_name, name, len + 1);
  // As the kernel sizes a record: the name, its NUL, 8-byte aligned.
  e->d_reclen = (unsigned short)((offsetof(struct dirent64, d_name) + len + 1 + 7) & ~size_t(7));
  return e;
}

// The next entry of the descriptor's, from the buffer or a new getdents64.
// A directory removed meanwhile (ENOENT) ends the listing, as in glibc.
struct dirent64* fdNextLocked(Stream* s) REQUIRES(s->lock) {
  if (s->offset >= s->size) {
    int saved = errno;
    long n = syscall(SYS_getdents64, s->fd, s->buf, kBufSize);
    if (n <= 0) {
      if (n < 0 && errno == ENOENT) errno = saved;
      return nullptr;
    }
    s->size = size_t(n);
    s->offset = 0;
  }
  auto* e = reinterpret_cast<struct dirent64*>(s->buf + s->offset);
  s->offset += e->d_reclen;
  s->filepos = long(e->d_off);
  return e;
}

struct dirent64* nextLocked(Stream* s) REQUIRES(s->lock) {
  return s->fd < 0 ? treeNextLocked(s) : fdNextLocked(s);
}

void seekLocked(Stream* s, long pos) REQUIRES(s->lock) {
  if (s->fd < 0) {
    if (pos >= 0) s->pos = size_t(pos);
    return;
  }
  int saved = errno;
  if (lseek(s->fd, pos, SEEK_SET) < 0) {
    errno = saved;
    return;
  }
  s->size = s->offset = 0;
  s->filepos = pos;
}

int compareWith(const void* a, const void* b, void* compare) {
  return (*static_cast<libc::ScanCompare*>(compare))(static_cast<const struct dirent64**>(const_cast<void*>(a)),
                                                     static_cast<const struct dirent64**>(const_cast<void*>(b)));
}

}  // namespace

Stream* openNode(const Node& dir) {
  Stream* s = make();
  if (!s) return nullptr;
  s->node = dir;
  if (dir.kind == Kind::kRoot) {  // "..": /sys/kernel, what the machine has there
    struct stat st;
    int saved = errno;
    s->parentIno = libc::stat("/sys/kernel", &st) == 0 ? uint64_t(st.st_ino) : inodeOf(dir);
    errno = saved;
  } else {
    s->parentIno = inodeOf(parentOf(dir));
  }
  if (!enroll(s)) {
    destroy(s);
    return nullptr;
  }
  return s;
}

Stream* openFd(int fd) {
  int flags = int(syscall(SYS_fcntl, fd, F_GETFL));  // not through fcntl's interposer
  struct stat st;
  if (flags < 0 || (flags & O_PATH)) {
    errno = EBADF;
    return nullptr;
  }
  if ((flags & O_ACCMODE) == O_WRONLY) {
    errno = EINVAL;
    return nullptr;
  }
  if (fstat(fd, &st) < 0) return nullptr;
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    return nullptr;
  }
  Stream* s = make();
  if (!s) return nullptr;
  s->buf = static_cast<char*>(malloc(kBufSize));
  s->fd = fd;
  if (!s->buf || !enroll(s)) {
    s->fd = -1;  // the caller's still
    destroy(s);
    errno = ENOMEM;
    return nullptr;
  }
  return s;
}

Stream* find(DIR* d) {
  if (!d || g_open.load(std::memory_order_acquire) == 0) return nullptr;
  for (Block* b = &g_first; b; b = b->next.load(std::memory_order_acquire)) {
    for (auto& slot : b->slot) {
      Stream* s = slot.load(std::memory_order_acquire);
      if (s && asDir(s) == d) return s;
    }
  }
  return nullptr;
}

struct dirent64* next(Stream* s) {
  pfmfs::MutexLock l(s->lock);
  return nextLocked(s);
}

int nextInto(Stream* s, struct dirent64* entry, struct dirent64** result) {
  pfmfs::MutexLock l(s->lock);
  int saved = errno;
  errno = 0;
  struct dirent64* e = nextLocked(s);
  int err = errno;
  errno = saved;
  *result = nullptr;
  if (!e) return err;
  memcpy(entry, e, e->d_reclen < sizeof *entry ? e->d_reclen : sizeof *entry);
  *result = entry;
  return 0;
}

void rewind(Stream* s) {
  pfmfs::MutexLock l(s->lock);
  seekLocked(s, 0);
}

long tell(Stream* s) {
  pfmfs::MutexLock l(s->lock);
  return s->fd < 0 ? long(s->pos) : s->filepos;
}

void seek(Stream* s, long pos) {
  pfmfs::MutexLock l(s->lock);
  seekLocked(s, pos);
}

int fd(Stream* s) {
  if (s->fd >= 0) return s->fd;
  errno = ENOTSUP;
  return -1;
}

int close(Stream* s) {
  withdraw(s);
  int r = s->fd >= 0 ? ::close(s->fd) : 0;
  int err = errno;
  destroy(s);
  errno = err;
  return r;
}

int scan(Stream* s, struct dirent64*** list, libc::ScanFilter filter, libc::ScanCompare compare) {
  int saved = errno;
  struct dirent64** v = nullptr;
  size_t n = 0, cap = 0;
  int err = 0;
  for (;;) {
    errno = 0;
    struct dirent64* e = next(s);
    if (!e) {
      err = errno;
      break;
    }
    if (filter && !filter(e)) continue;
    if (n == cap) {
      size_t more = cap ? cap * 2 : 16;
      void* grown = realloc(v, more * sizeof *v);
      if (!grown) {
        err = ENOMEM;
        break;
      }
      v = static_cast<struct dirent64**>(grown);
      cap = more;
    }
    // The copy is of the record's size only, as glibc's scandir makes it.
    void* copy = malloc(e->d_reclen);
    if (!copy) {
      err = ENOMEM;
      break;
    }
    v[n++] = static_cast<struct dirent64*>(memcpy(copy, e, e->d_reclen));
  }
  if (err != 0) {
    while (n > 0) free(v[--n]);
    free(v);
    errno = err;
    return -1;
  }
  if (compare && n > 1) qsort_r(v, n, sizeof *v, compareWith, &compare);
  *list = v;
  errno = saved;
  return int(n);
}

}  // namespace pfmcompat::sysfs::dirs
