#!/bin/sh
# make_static.sh LD OBJCOPY NM AR IN.a OUT.a CHECK
# libpfm.a from the library's objects (IN.a): one relocatable object in which
# only the libpfm API (pfm_*) stays global, so that nothing of the library's
# own (its C++ runtime pieces, template instances, internals) can clash with
# a program's symbols, as libpfm.map does for libpfm.so.3. With CHECK=check
# it fails if the archive would need the C++ runtime (a plain `cc` link must
# work); sanitized builds skip the check, their programs link the runtimes.
set -eu
ld=$1 objcopy=$2 nm=$3 ar=$4 in=$5 out=$6 check=$7
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ld" -r -o "$tmp/libpfm.o" --whole-archive "$in"
"$objcopy" --wildcard --keep-global-symbol='pfm_*' "$tmp/libpfm.o"
if [ "$check" = check ]; then
  cxx=$("$nm" -u "$tmp/libpfm.o" | awk '{print $2}' | grep -E '^(_Z|__cxa_|__gxx_|_Unwind_)' || true)
  if [ -n "$cxx" ]; then
    echo "make_static.sh: libpfm.a would need the C++ runtime for:" $cxx >&2
    echo "  define them in libpfm-compat/src/cxx_runtime.cpp" >&2
    exit 1
  fi
fi
rm -f "$out"
"$ar" rcsD "$out" "$tmp/libpfm.o"
