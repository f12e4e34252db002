#!/usr/bin/env bash
# Installs the Debian 12 packages pfmfs builds and tests with, only those that
# are missing (apt-get update runs only when something is to be installed).
# linux-perf gives the tests `perf stat`, to check the perf backend's counts
# against perf's own; clang and its libFuzzer runtime (libclang-rt-14-dev)
# build tests/fuzz's coverage-guided targets.
set -euo pipefail

packages=(
  meson ninja-build g++ pkg-config python3
  libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libfuse3-dev fuse3 libcap-ng-dev
  prometheus-cpp-dev  # pfmfs-exporter: its HTTP server and exposition (prometheus-cpp, civetweb)
  prometheus  # tests/exporter: a real Prometheus scrapes the exporter; promtool checks its configs
  libdw-dev  # pfmstat report: symbols of the recorded programs (elfutils' libdwfl)
  passwd util-linux procps
  linux-perf
  clang libclang-rt-14-dev
  clang-format git  # tests/style/check_format.py: .clang-format's layout on every tracked source
  ccache  # scripts/run-tests.sh's four builds: a second run on the same machine rebuilds little
  # Building, checking and installing the Debian packages of debian/
  # (tests/packaging): dpkg-buildpackage, dh and its DKMS add-on, lintian.
  dpkg-dev debhelper dh-dkms fakeroot lintian dkms
  lowdown man-db groff-base  # man pages from docs/*.md (docs/meson.build), checked by tests/docs
  gnuplot-nox  # docs/examples/multiplex-study.sh draws its PNGs with it (test_multiplex_study.py)
  systemd  # systemd-analyze verify of pfmfsd.service (test mount-command); where systemd is not init it starts nothing
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
