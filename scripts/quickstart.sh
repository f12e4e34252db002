#!/usr/bin/env bash
# Quick start, as root on a fresh Debian 12: installs what is missing, builds
# pfmfs, mounts pfmfsd with the default backend on a temporary mount point,
# runs the multiplexing experiment of docs/examples/multiplex.sh against it,
# and unmounts (also when something fails). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "quickstart: run as root (it installs packages and mounts a filesystem)" >&2
  exit 1
fi

scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build fs/pfmfsd >/dev/null

if [ ! -e /dev/fuse ]; then
  modprobe fuse 2>/dev/null || true
fi
if [ ! -e /dev/fuse ]; then
  echo "quickstart: /dev/fuse is missing: load the fuse module (modprobe fuse)" >&2
  exit 1
fi

workdir=$(mktemp -d /tmp/pfmfs-quickstart.XXXXXX)
mnt=$workdir/mnt
mkdir "$mnt"
daemon=

cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -TERM "$daemon" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  if mountpoint -q "$mnt" 2>/dev/null; then
    fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  fi
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build/fs/pfmfsd -f -o allow_other "$mnt" 2>"$workdir/pfmfsd.log" &
daemon=$!
for _ in $(seq 200); do
  [ -e "$mnt/version" ] && break
  if ! kill -0 "$daemon" 2>/dev/null; then
    echo "quickstart: pfmfsd did not start:" >&2
    cat "$workdir/pfmfsd.log" >&2
    exit 1
  fi
  sleep 0.05
done
if [ ! -e "$mnt/version" ]; then
  echo "quickstart: $mnt/version did not appear in 10 s" >&2
  cat "$workdir/pfmfsd.log" >&2
  exit 1
fi

echo "pfmfsd mounted on $mnt:"
sed 's/^/  /' "$mnt/pmu/info"
echo
echo "A busy loop and a sleeping process, each counted in two event sets switched"
echo "every millisecond of its CPU time (docs/examples/multiplex.sh):"
echo
sh docs/examples/multiplex.sh "$mnt" -t 1
echo
echo "The busy loop's CPU time drives its counts; the sleeper barely runs, so its"
echo "sets have (almost) no running time and no estimate (scaled=-)."
echo "Next: docs/tutorial.md walks through the files; docs/pfmfs.5.md is the reference."
