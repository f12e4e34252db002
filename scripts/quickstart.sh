#!/usr/bin/env bash
# Quick start, as root on a fresh Debian 12: installs what is missing, builds
# pfmfs, mounts pfmfsd with the default backend (--pmu=auto: perf where
# perf_event_open works, else the sim) on a temporary mount point, says which
# backend it got, runs the multiplexing experiment of docs/examples/multiplex.sh
# against it, and unmounts (also when something fails). Safe to run again.
# PFMFSD=path/to/pfmfsd uses that daemon as it is: no install, no build.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "quickstart: run as root (it installs packages and mounts a filesystem)" >&2
  exit 1
fi

pfmfsd=${PFMFSD:-}
if [ -z "$pfmfsd" ]; then
  scripts/install-deps.sh
  [ -f build/build.ninja ] || meson setup build >/dev/null
  ninja -C build fs/pfmfsd >/dev/null
  pfmfsd=build/fs/pfmfsd
fi

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

"$pfmfsd" -f -o allow_other "$mnt" 2>"$workdir/pfmfsd.log" &
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

# pmu/info: backend=B model=M ...
info=$(cat "$mnt/pmu/info")
backend=${info%% *}
backend=${backend#backend=}
model=${info#* }
model=${model%% *}
model=${model#model=}
echo "pfmfsd mounted on $mnt with the $backend backend ($model):"
sed 's/^/  /' "$mnt/pmu/info"
# --pmu=auto logs why it did not pick perf.
sed -n 's/^pfmfsd: info: not using perf: /  (not perf: /p' "$workdir/pfmfsd.log" | sed 's/$/)/'
echo
case $backend/$model in
  perf/perf-sw)
    echo "No hardware PMU here: perf's software events (docs/backends.md)."
    echo "A busy loop and a sleeping process, each counted in two event sets switched"
    echo "every millisecond of its CPU time: CPU time (TASK_CLOCK, ns) and page faults,"
    echo "then CPU time and context switches (docs/examples/multiplex.sh):"
    ;;
  *)
    echo "A busy loop and a sleeping process, each counted in two event sets switched"
    echo "every millisecond of its CPU time: cycles and instructions, then LLC"
    echo "references and branches (docs/examples/multiplex.sh):"
    ;;
esac
echo
sh docs/examples/multiplex.sh "$mnt" -t 1
echo
case $backend in
  sim)
    echo "The sim counts at fixed rates per ns of the target's CPU time: the busy loop's"
    echo "CPU time drives its counts."
    ;;
  *)
    echo "Each set counted about half of the busy loop's CPU time (running_ns); scaled"
    echo "= raw_count x enabled_ns / running_ns estimates the whole time. TASK_CLOCK,"
    echo "counted in both sets, is the running time itself, so both estimate enabled_ns."
    ;;
esac
echo "The sleeper barely runs, so its sets have (almost) no running time and no"
echo "estimate (scaled=-)."
echo "Next: docs/tutorial.md walks through the files; docs/pfmfs.5.md is the reference;"
echo "docs/backends.md says what each backend counts."
