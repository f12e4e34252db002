#!/usr/bin/env bash
# Quick start: installs what is missing, builds pfmfs and runs the example
# experiment, printing its results.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build examples/pfmfs-engine-demo >/dev/null
build/examples/pfmfs-engine-demo
