// fcntl(2): the owner a program sets on a context's descriptor, as it set it
// (async_notify.h, noteOwner). The kernel keeps it, but does not always say
// it back: an F_SETOWN of a thread id that is not its process's (or
// F_SETOWN_EX F_OWNER_PID of one) reads back as 0 from F_GETOWN and
// F_GETOWN_EX, though the kernel would signal that thread, so the
// notifier could not find it. libpfm.so.3 exports fcntl and fcntl64
// (libpfm.map), so the dynamic linker binds a program's calls to them
// before libc's (glibc's fcntl.h names fcntl64 under _FILE_OFFSET_BITS=64);
// in libpfm.a they are weak (make_static.sh).
//
// Every call goes to libc's own function with its arguments, result and
// errno untouched. Only a successful F_SETOWN or F_SETOWN_EX in a process
// that has made a context looks further: the descriptor table's lookup (an
// atomic load and one fstat, no lock, no allocation) and, for a context's
// descriptor, one atomic store. So the call stays as async-signal-safe as
// libc's.
//
// libc's functions are found once, by a load-time constructor, as the other
// interposers' are (sysfs_libc.cpp); until then, or where there are none (a
// fully static program, where libc.a's fcntl may also win the link over
// these weak ones), the call is the system call, with glibc's adjustment of
// F_GETOWN. The entry is not instrumented by the sanitizers: their runtimes
// call fcntl, and in a program linked with libpfm.a that is this function,
// maybe before the sanitizer is ready to run instrumented code.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "async_notify.h"
#include "context_table.h"
#include "sysfs_libc.h"  // PFMFS_NOT_INSTRUMENTED

// Weak, as in sysfs_libc.cpp: a fully static program does not get libc.a's
// dynamic-loading code for our sake, and sees dlsym == nullptr.
#pragma weak dlsym

namespace {

using FcntlFn = int (*)(int, int, ...);

// libc's fcntl and fcntl64, or nullptr (the system call); published by the
// load-time lookup alone and read without instrumentation: plain words and
// __atomic builtins.
FcntlFn g_fcntl_fns[2];
int g_fcntl_ready = 0;  // 1 once g_fcntl_fns are final

__attribute__((constructor(101))) void resolveFcntlAtLoad() {
  FcntlFn fns[2] = {nullptr, nullptr};
  if (&dlsym != nullptr) {
    fns[0] = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl"));
    fns[1] = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl64"));
  }
  __atomic_store_n(&g_fcntl_fns[0], fns[0], __ATOMIC_RELAXED);
  __atomic_store_n(&g_fcntl_fns[1], fns[1], __ATOMIC_RELAXED);
  __atomic_store_n(&g_fcntl_ready, 1, __ATOMIC_RELEASE);
}

// glibc's fcntl without libc: F_GETOWN through F_GETOWN_EX, since the
// system call's negative process group would read as an error.
PFMFS_NOT_INSTRUMENTED int sysFcntl(int fd, int cmd, void* arg) {
  if (cmd == F_GETOWN) {
    struct f_owner_ex owner;
    if (syscall(SYS_fcntl, fd, F_GETOWN_EX, &owner) != 0) return -1;
    return owner.type == F_OWNER_PGRP ? -owner.pid : owner.pid;
  }
  return int(syscall(SYS_fcntl, fd, cmd, arg));
}

// The owner cmd just set on fd, if fd is a context's: recorded with its
// context (the descriptor it was created on: a dup's owner is its file's).
__attribute__((noinline)) void noteIfContext(int fd, int cmd, void* arg) {
  if (!pfmcompat::ContextTable::everUsed()) return;
  const int saved = errno;
  pfmcompat::ContextRef ref = pfmcompat::ContextTable::lookup(fd);
  if (ref) {
    int type, id;
    if (cmd == F_SETOWN) {  // the kernel's reading: negative is a process group
      const int who = int(reinterpret_cast<intptr_t>(arg));
      type = who < 0 ? F_OWNER_PGRP : F_OWNER_PID;
      id = who < 0 ? -who : who;
    } else {  // F_SETOWN_EX: the call succeeded, so arg was the program's struct
      const auto* owner = static_cast<const struct f_owner_ex*>(arg);
      type = owner->type;
      id = owner->pid;
    }
    pfmcompat::noteOwner(ref->userFd(), ref->generation(), type, id);
  }
  errno = saved;
}

PFMFS_NOT_INSTRUMENTED int fcntlAndNote(bool is64, int fd, int cmd, void* arg) {
  FcntlFn real = nullptr;
  const bool ready = __atomic_load_n(&g_fcntl_ready, __ATOMIC_ACQUIRE);
  if (ready) real = __atomic_load_n(&g_fcntl_fns[is64 ? 1 : 0], __ATOMIC_RELAXED);
  const int r = real ? real(fd, cmd, arg) : sysFcntl(fd, cmd, arg);
  // No context exists before the load-time lookup: the library's own
  // constructors make none.
  if (r == 0 && ready && (cmd == F_SETOWN || cmd == F_SETOWN_EX)) noteIfContext(fd, cmd, arg);
  return r;
}

}  // namespace

// Declared under the libc names through asm labels, as the sysfs
// interposers are (sysfs_interpose.cpp says why). The third argument is
// read as glibc reads it: one pointer-sized word, whatever the command.
extern "C" __attribute__((visibility("default"))) int pfmfs_fcntl(int fd, int cmd, ...) __asm__("fcntl");
PFMFS_NOT_INSTRUMENTED int pfmfs_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntlAndNote(false, fd, cmd, arg);
}

extern "C" __attribute__((visibility("default"))) int pfmfs_fcntl64(int fd, int cmd, ...) __asm__("fcntl64");
PFMFS_NOT_INSTRUMENTED int pfmfs_fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return fcntlAndNote(true, fd, cmd, arg);
}
