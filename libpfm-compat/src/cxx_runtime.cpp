// The few pieces of the C++ runtime that libpfm-compat's code uses:
// allocation, and the functions the standard containers call on errors
// (with -fno-exceptions, an abort with a message). Defined here so that
// libpfm.a links into C programs with a plain C toolchain (`cc prog.c -lpfm`,
// `-static` too) and libpfm.so.3 needs no libstdc++. They never replace a
// program's own: the version script keeps them local to libpfm.so.3, and
// make_static.sh localizes them in libpfm.a (docs/libpfm-compat.md).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "libpfm: %s\n", what);
  std::abort();
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = std::malloc(n ? n : 1)) return p;
  fail("out of memory");
}

void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return std::malloc(n ? n : 1); }
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

// <bits/functexcept.h>: what a container or a lock throws. The library
// checks its sizes and locks before it gets there; reaching one is a bug.
namespace std {
void __throw_bad_alloc() { fail("out of memory"); }
void __throw_bad_array_new_length() { fail("bad array length"); }
void __throw_length_error(const char* what) { fail(what); }
void __throw_logic_error(const char* what) { fail(what); }
void __throw_out_of_range(const char* what) { fail(what); }
void __throw_invalid_argument(const char* what) { fail(what); }
void __throw_bad_function_call() { fail("bad function call"); }
void __throw_system_error(int) { fail("system error (a lock or a thread)"); }
void __throw_out_of_range_fmt(const char* fmt, ...) {
  char buf[256];
  std::va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fail(buf);
}
}  // namespace std
