#!/usr/bin/env bash
# run.sh BUILD_DIR: builds PAPI against BUILD_DIR's libpfm-compat (cached,
# build-papi.sh), then runs test_papi.py on the backend $PFMFS_BACKEND names
# with BUILD_DIR's pfmfsd. Meson's tests papi and papi-perf.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
export PFMFS_PAPI_CACHE=${PFMFS_PAPI_CACHE:-/var/cache/pfmfs-tests/papi}
if [ "$(id -u)" -ne 0 ]; then
  # build-papi.sh installs packages and the test mounts: both need root.
  if [ "${CI:-}" = true ]; then echo "FAIL: CI=true and not root" >&2; exit 1; fi
  echo "SKIP: not root" >&2; exit 77
fi
"$here/build-papi.sh" "$build" "$PFMFS_PAPI_CACHE"
PFMFSD="$build/fs/pfmfsd" exec python3 "$here/test_papi.py"
