#!/usr/bin/env bash
# What building PAPI from Debian's source package needs beyond pfmfs's own
# dependencies: deb-src lines for the archive the machine already uses (added
# once, in their own file), dpkg-dev for apt-get source, and make and
# gfortran for PAPI's build (its configure looks for a Fortran compiler).
set -euo pipefail

packages=(dpkg-dev make gcc gfortran patch)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

have_src() { apt-cache showsrc papi 2>/dev/null | grep -q '^Package: papi'; }

if [ ${#missing[@]} -eq 0 ] && have_src; then exit 0; fi
if [ "$(id -u)" -ne 0 ]; then
  echo "papi install-deps: need deb-src lines and ${missing[*]:-nothing else}; run as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if ! have_src; then
  # deb822 sources (Debian 12's default) name their types; a deb-src copy of
  # each binary source is what apt-get source needs.
  src=/etc/apt/sources.list.d/pfmfs-deb-src.sources
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ "$f" != "$src" ] || continue
    awk '/^Types:/ { print "Types: deb-src"; next } { print } END { print "" }' "$f"
  done >"$src.new"
  if [ -s "$src.new" ]; then mv "$src.new" "$src"; else rm -f "$src.new"; fi
  if [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
    sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >/etc/apt/sources.list.d/pfmfs-deb-src.list
  fi
  apt-get update -qq
  have_src || { echo "papi install-deps: still no source package for papi after adding deb-src" >&2; exit 1; }
fi
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
