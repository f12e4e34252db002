#!/usr/bin/env bash
# The mount tests (tests/integration/) on the x86 backend: boots the QEMU
# guest of tests/vm/ once, loads pfmfs_helper.ko on its test PMU
# (emulate=1), and runs each named test file with PFMFS_BACKEND=x86 against
# this build's pfmfsd. Prints one line per file, the failures' output, then
# `N passed, M failed` (files); exits 0 only if every file passed. The name
# `libpfm` runs tests/libpfm/test_libpfm.py instead (the libpfm-compat C
# programs whose first line lists x86), and `mount-fuzz` the state-machine
# fuzzer tests/fuzz/mount_fuzz.py for a minute.
#
#   tests/vm/x86-mount-tests.sh BUILD_DIR FILE...    e.g. build tree ctl counts libpfm
#
# Time limits follow progress, not a total: a file fails when its log has
# not grown for PFMFS_X86_STALL seconds (300; the unit tests print a line as
# each test starts and ends), and says which test was running. A machine
# slower than ours, or busy, takes longer and still passes.
#
# For long runs: PFMFS_X86_FUZZ_ARGS replaces mount_fuzz.py's arguments
# (e.g. "--total-ops 500000 --seed 11 --ops 3000 --kill-every 2"), which
# prints nothing until it ends: give it PFMFS_X86_STALL of its length.
#
# In the guest it runs itself with --guest. Logs: $PFMFS_VM_WORK (default
# build/vm)/x86-results/FILE.log and x86-console.log.
set -euo pipefail

if [ "${1:-}" = --guest ]; then
  shift
  ko=$1 build=$2 out=$3; shift 3
  insmod "$ko" emulate=1 || { echo "FAIL insmod $ko emulate=1" >"$out/results"; exit 0; }
  # PFMFS_TIME_SCALE: the libpfm programs' limits (tests/libpfm), for a
  # guest several times slower than the host.
  export PFMFSD=$build/fs/pfmfsd PFMFS_BACKEND=x86 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PFMFS_PROGS=$build/tests/integration/progs CI=${CI:-} PFMFS_TIME_SCALE=${PFMFS_TIME_SCALE:-5}
  stall=${PFMFS_X86_STALL:-300}
  # watched LOG COMMAND...: runs COMMAND in a session of its own, its output
  # to LOG, and kills it when LOG stops growing for $stall s, naming the
  # test that was running (its last line).
  watched() {
    local log=$1 pid size last_size=-1 quiet=0; shift
    setsid "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
      sleep 5
      size=$(stat -c %s "$log")
      if [ "$size" = "$last_size" ]; then quiet=$((quiet + 5)); else quiet=0 last_size=$size; fi
      if [ $quiet -ge "$stall" ]; then
        kill -KILL -- "-$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        echo "FAIL: no progress for $stall s (PFMFS_X86_STALL); what ran last: $(tail -n1 "$log")" >>"$log"
        return 124
      fi
    done
    wait "$pid"
  }
  for f in "$@"; do
    start=$(date +%s)
    rc=0
    if [ "$f" = mount-fuzz ]; then
      # The state-machine fuzzer (tests/fuzz/), a minute on the x86 backend.
      # shellcheck disable=SC2086  # PFMFS_X86_FUZZ_ARGS: words
      PFMFS_LIBPFM_FUZZ=$build/tests/fuzz/libpfm_fuzz watched "$out/$f.log" python3 tests/fuzz/mount_fuzz.py \
        ${PFMFS_X86_FUZZ_ARGS:---seconds 60 --seed 4 --ops 600 --kill-every 2} || rc=$?
    elif [ "$f" = libpfm ]; then
      # libpfm-compat's C programs (tests/libpfm/), built against the tree
      # the host installed (see below: the build dir is read-only here).
      PFMFS_BUILD_ROOT=$build watched "$out/$f.log" python3 tests/libpfm/test_libpfm.py || rc=$?
    else
      watched "$out/$f.log" python3 "tests/integration/test_$f.py" || rc=$?
    fi
    ran=$(grep -E '^(backend x86: |mount_fuzz: backend)' "$out/$f.log" | tail -n1 | sed 's/^backend x86: //' || true)
    if [ $rc -eq 0 ]; then
      echo "PASS $f ($(( $(date +%s) - start )) s; $ran)" >>"$out/results"
    else
      echo "FAIL $f (exit $rc, $(( $(date +%s) - start )) s; $ran)" >>"$out/results"
    fi
    tail -n1 "$out/results"
  done
  # Whatever the tests did, the daemons are gone: the module must unload.
  rmmod pfmfs_helper || echo "FAIL rmmod: the module did not unload after the tests" >>"$out/results"
  dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace' >"$out/dmesg" && echo "FAIL kernel log: see dmesg" >>"$out/results"
  exit 0
fi

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"
[ $# -ge 2 ] || vm_die "usage: tests/vm/x86-mount-tests.sh BUILD_DIR FILE..."
build=$(cd "$1" && pwd); shift
[ -x "$build/fs/pfmfsd" ] || vm_die "no $build/fs/pfmfsd: build first"
ko=$(tests/vm/build-module.sh)
out=$VM_WORK/share/x86-results
rm -rf "$out"; mkdir -p "$out"
# The name `libpfm` runs tests/libpfm/test_libpfm.py, which compiles its C
# programs against an installed libpfm-compat. `meson install` writes
# meson-logs/install-log.txt into the build dir, which is read-only in the
# guest: install here, on the host, into the writable share, and let the
# driver use that tree (PFMFS_INSTALLED_ROOT). PFMFS_SANITIZE: the programs
# are linked with the sanitizer the build's libpfm.so was built with.
libpfm_root=$VM_WORK/share/libpfm-root
sanitize=none
for f in "$@"; do
  [ "$f" = libpfm ] || continue
  rm -rf "$libpfm_root"
  meson install -C "$build" --destdir "$libpfm_root" --no-rebuild --quiet >/dev/null \
    || vm_die "meson install -C $build --destdir $libpfm_root failed"
  sanitize=$(meson introspect --buildoptions "$build" |
    python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"))')
done
start=$(date +%s)
status=0
stall=${PFMFS_X86_STALL:-300}
[[ $stall =~ ^[1-9][0-9]*$ ]] || vm_die "PFMFS_X86_STALL must be a number of seconds, not '$stall'"
# No limit on the whole: each file's progress is watched in the guest, and
# the guest's here, by what it writes to the share and the console: a guest
# silent for a minute longer than the files' own limit is stuck (a hung
# kernel, say), and is stopped.
tests/vm/run-in-vm.sh --timeout 0 \
  --env CI --env PFMFS_X86_FUZZ_ARGS --env PFMFS_X86_STALL --env PFMFS_TIME_SCALE --env "PFMFS_INSTALLED_ROOT=$libpfm_root" \
  --env "PFMFS_SANITIZE=$sanitize" -- tests/vm/x86-mount-tests.sh --guest "$ko" "$build" "$out" "$@" \
  >"$VM_WORK/x86-console.log" 2>&1 &
vm=$!
trap 'kill -TERM $vm 2>/dev/null || true' EXIT  # run-in-vm.sh stops QEMU
quiet=0 last=
while kill -0 $vm 2>/dev/null; do
  sleep 5
  now=$(cat "$VM_WORK/x86-console.log" "$out"/* 2>/dev/null | wc -c || true)
  if [ "$now" = "$last" ]; then quiet=$((quiet + 5)); else quiet=0 last=$now; fi
  if [ $quiet -ge $((stall + 60)) ]; then
    echo "the guest wrote nothing for $quiet s: stopped (console: $VM_WORK/x86-console.log)"
    kill -TERM $vm  # run-in-vm.sh stops QEMU
    break
  fi
done
wait $vm || status=$?
rm -rf "$VM_WORK/x86-results"; cp -r "$out" "$VM_WORK/x86-results"
passed=0 failed=0
if [ -f "$out/results" ]; then
  while read -r line; do
    echo "$line"
    case $line in
      PASS*) passed=$((passed + 1)) ;;
      *) failed=$((failed + 1))
         f=${line#FAIL }; f=${f%% *}
         [ -f "$out/$f.log" ] && grep -E -A25 '^(FAIL|ERROR):' "$out/$f.log" | head -n 80 | sed 's/^/    /' ;;
    esac
  done <"$out/results"
fi
if [ $((passed + failed)) -lt $# ]; then
  echo "the guest ran $((passed + failed)) of $# files (run-in-vm.sh status $status; console: $VM_WORK/x86-console.log)"
  tail -n 20 "$VM_WORK/x86-console.log" | sed 's/^/    /'
  failed=$((failed + $# - passed - failed))
fi
echo "x86 mount tests took $(( $(date +%s) - start )) s with the VM's boot"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
