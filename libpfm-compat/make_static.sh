#!/bin/sh
# make_static.sh LD OBJCOPY NM AR IN.a OUT.a CHECK MAP
# libpfm.a from the library's objects (IN.a): one relocatable object in which
# only the libpfm API (pfm_*) and the libc names the library answers itself
# (/sys/kernel/perfmon's, and mmap's: the other global names of MAP,
# libpfm.map) stay global, so that nothing of the library's own (its C++ runtime pieces,
# template instances, internals) can clash with a program's symbols, as
# libpfm.map does for libpfm.so.3. The libc names are made weak: in a
# dynamically linked program they still come before libc.so's, and in a
# fully static one libc.a's own definitions, where the link takes them, win
# instead of clashing. With CHECK=check it fails if the archive would need
# the C++ runtime (a plain `cc` link must work); sanitized builds skip the
# check, their programs link the runtimes.
set -eu
ld=$1 objcopy=$2 nm=$3 ar=$4 in=$5 out=$6 check=$7 map=$8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The names of the map's global: section, but pfm_* (comments dropped).
interposed=$(sed -n '/global:/,/local:/p' "$map" | sed -e 's,/\*.*\*/,,g' -e 's/global://' -e 's/local://' |
  tr ';' '\n' | tr -d ' \t' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | grep -v '^pfm_' || true)
if [ -z "$interposed" ]; then
  echo "make_static.sh: no interposed names in $map" >&2
  exit 1
fi
keep="--wildcard --keep-global-symbol=pfm_*"
for name in $interposed; do
  keep="$keep --keep-global-symbol=$name --weaken-symbol=$name"
done
"$ld" -r -o "$tmp/libpfm.o" --whole-archive "$in"
# shellcheck disable=SC2086  # $keep is a list of options
"$objcopy" $keep "$tmp/libpfm.o"
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
