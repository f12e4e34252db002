#!/usr/bin/env bash
# build-papi.sh BUILD_DIR CACHE_DIR
#
# Builds Debian 12's PAPI 7.0.0 with its perfmon2 component against the
# libpfm-compat of BUILD_DIR, the way docs/libpfm-compat.md ("PAPI") tells a
# user to: the library installed (here under CACHE_DIR/root, by meson install
# --destdir), the source from Debian's archive (apt-get source papi), and
#   ./configure --with-perfmon=2.82 --with-pfm-incdir=... --with-pfm-libdir=...
# Two builds come out of it:
#   CACHE_DIR/plain   PAPI as Debian ships its source, unmodified
#   CACHE_DIR/patched the same with papi-7.0.0-perfmon2.patch (the fix of
#                     PAPI's preset crash, and the architectural presets)
# each with libpapi.a, the utilities the tests run and the ctests they run.
#
# The builds are cached: a second run with the same libpfm-compat (library
# and headers), patch and script only checks, in a second or so. PAPI takes
# libpfm.a's objects into libpapi, so a changed library means a new build.
set -euo pipefail

build=$(cd "$1" && pwd)
cache=$2
here=$(cd "$(dirname "$0")" && pwd)
patch_file=$here/papi-7.0.0-perfmon2.patch
version=7.0.0
utils=(papi_avail papi_component_avail papi_native_avail papi_command_line)
ctests=(zero first second multiplex1 multiplex2 overflow overflow_twoevents attach2 attach3
        fork fork2 exec exec2 forkexec forkexec2 forkexec3 forkexec4 all_native_events cmpinfo hwinfo)

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9  # the sim and perf runs share the cache

# ---- what to build with: Debian's source, and the library as installed

# apt-get source needs deb-src lines and dpkg-source; install-deps.sh adds
# both when missing. Debian applies its own patches at extraction.
if [ ! -d "$cache/src/papi-$version" ]; then
  "$here/install-deps.sh"
  rm -rf "$cache/src" && mkdir -p "$cache/src"
  (cd "$cache/src" && apt-get source -qq papi >/dev/null)
  [ -d "$cache/src/papi-$version" ] || { echo "build-papi: apt-get source papi gave no papi-$version" >&2; exit 1; }
fi

rm -rf "$cache/root"
meson install -C "$build" --destdir "$cache/root" --no-rebuild --quiet >/dev/null
pfm_lib=$(dirname "$(find "$cache/root" -name libpfm.a | head -n1)")
pfm_inc=$(dirname "$(dirname "$(find "$cache/root" -path '*/perfmon/pfmlib.h' | head -n1)")")
[ -f "$pfm_lib/libpfm.a" ] && [ -f "$pfm_inc/perfmon/perfmon.h" ] || {
  echo "build-papi: meson install left no libpfm.a or perfmon/ headers under $cache/root" >&2; exit 1; }

key=$(cat "$pfm_lib/libpfm.a" "$pfm_inc"/perfmon/*.h "$patch_file" "$0" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$cache/key" 2>/dev/null)" = "$key" ] && [ -x "$cache/patched/src/ctests/zero" ]; then
  echo "build-papi: cached build of PAPI $version in $cache"
  exit 0
fi
rm -f "$cache/key"

make_papi() {  # make_papi DIR: the library, then only what the tests run
  local src=$1/src
  make -C "$src" -j"$(nproc)" libpapi.a >"$1.log" 2>&1
  make -C "$src/testlib" -j"$(nproc)" >>"$1.log" 2>&1
  make -C "$src/validation_tests" -j"$(nproc)" >>"$1.log" 2>&1
  make -C "$src/utils" -j"$(nproc)" "${utils[@]}" >>"$1.log" 2>&1
  make -C "$src/ctests" -j"$(nproc)" "${ctests[@]}" >>"$1.log" 2>&1
}

started=$(date +%s)
rm -rf "$cache/plain" "$cache/patched"
cp -a "$cache/src/papi-$version" "$cache/plain"
(cd "$cache/plain/src" &&
  ./configure --with-perfmon=2.82 --with-pfm-incdir="$pfm_inc" --with-pfm-libdir="$pfm_lib" >"$cache/plain.log" 2>&1) ||
  { tail -n 20 "$cache/plain.log" >&2; exit 1; }
make_papi "$cache/plain" || { tail -n 30 "$cache/plain.log" >&2; exit 1; }

# The patched build starts from the plain one: make rebuilds what the two
# files touch (papi_internal.o, the preset table) and relinks.
cp -a "$cache/plain" "$cache/patched"
(cd "$cache/patched" && patch -p1 -s <"$patch_file")
make_papi "$cache/patched" || { tail -n 30 "$cache/patched.log" >&2; exit 1; }

echo "$key" >"$cache/key"
echo "build-papi: built PAPI $version (plain and patched) in $(( $(date +%s) - started )) s"
