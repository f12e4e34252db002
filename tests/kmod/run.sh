#!/usr/bin/env bash
# The tests of pfmfs_helper.ko (helper-kmod/), run in the QEMU guest of
# tests/vm/: builds the module (tests/vm/build-module.sh) and the C tests
# here, boots the guest once and, for each test, loads the module on the
# test PMU (emulate=1), runs the test, unloads the module and looks for
# kernel warnings. Prints one line per test, then `N passed, M failed`;
# exits 0 only if every test passed.
#
#   tests/kmod/run.sh [TEST...]        all tests, or the ones named
#   tests/kmod/run.sh --list
#
# Inside the guest run.sh runs itself with --guest. The last run's logs:
# $PFMFS_VM_WORK (default build/vm)/kmod/results/ (TEST.log, TEST.dmesg,
# console.log).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Module parameters per test, after emulate=1.
params_of() {
  case $1 in
    lost|inherit_lost) echo "ring_records=16" ;;
    overflow_cpu) echo "skid=3000000" ;;
    shape) echo "emulate_counters=8 emulate_width=40" ;;
    *) echo "" ;;
  esac
}

# ---- in the guest

# Kernel lines that mean a test broke the kernel, whatever the test said.
BAD_DMESG='WARNING:|BUG:|Oops|general protection|NMI received for unknown reason|Call Trace|refcount_t|list_del corruption|soft lockup|hung_task'

guest_load_unload() {
  local ko=$1 i t0 t1
  # The guest has no PMU: without emulate=1 the module refuses to load.
  if insmod "$ko" 2>/dev/null; then
    rmmod pfmfs_helper; echo "loaded without a PMU and without emulate=1"; return 1
  fi
  dmesg | tail -n 3 | grep -q 'emulate=1' || { echo "no hint at emulate=1 in the kernel log"; return 1; }
  for p in emulate_counters=0 emulate_counters=9 emulate_width=8 emulate_width=65 ring_records=8; do
    if insmod "$ko" emulate=1 "$p" 2>/dev/null; then
      rmmod pfmfs_helper; echo "loaded with $p"; return 1
    fi
  done
  local tload=0 tunload=0
  for i in $(seq 100); do
    t0=$(date +%s%N)
    insmod "$ko" emulate=1 || { echo "insmod $i failed"; return 1; }
    t1=$(date +%s%N)
    [ -c /dev/pfmfs_helper ] || { echo "no /dev/pfmfs_helper after insmod $i"; return 1; }
    rmmod pfmfs_helper || { echo "rmmod $i failed"; return 1; }
    tload=$((tload + t1 - t0)) tunload=$((tunload + $(date +%s%N) - t1))
  done
  echo "100 loads and unloads: insmod $((tload / 100000000)) ms, rmmod $((tunload / 100000000)) ms on average (TCG)"
  [ ! -e /dev/pfmfs_helper ] || { echo "/dev/pfmfs_helper left after rmmod"; return 1; }
}

# Opens DEVICE in the background and holds it (ATTACH of cpu 0: the
# counters reserved, the LVTPC armed) until release_device.
hold_device() {
  rm -f /tmp/kmod-hold.in /tmp/kmod-hold.out
  mkfifo /tmp/kmod-hold.in
  "$bin" open_hold "$1" </tmp/kmod-hold.in >/tmp/kmod-hold.out &
  hold_pid=$!
  exec 3>/tmp/kmod-hold.in
  local i
  for i in $(seq 100); do
    grep -q . /tmp/kmod-hold.out 2>/dev/null && break
    sleep 0.05
  done
  [ "$(cat /tmp/kmod-hold.out)" = open ] || { echo "open_hold $1: $(cat /tmp/kmod-hold.out)"; return 1; }
}

release_device() {
  exec 3>&-
  wait "$hold_pid"
}

# Two builds of the module (pfmfs_helper and pfmfs_helper_b, the same code
# under another name) stand for the module and perf: the counters'
# reservation keeps either out while the other holds them.
guest_coexist() {
  local ko=$1 kob=$2 r
  insmod "$ko" emulate=1 && insmod "$kob" emulate=1 || { echo "insmod both"; return 1; }
  [ "$("$bin" open_try /dev/pfmfs_helper_b)" = 0 ] || { echo "open b while a is idle"; return 1; }
  hold_device /dev/pfmfs_helper || return 1
  r=$("$bin" open_try /dev/pfmfs_helper_b)
  [ "$r" = EBUSY ] || { echo "open b while a holds the counters: $r, expected EBUSY"; return 1; }
  dmesg | tail -n 5 | grep -q 'pfmfs_helper_b: counter 0 is in use by perf events or the NMI watchdog: stop them' ||
    { echo "no message for the refused open"; return 1; }
  release_device
  [ "$("$bin" open_try /dev/pfmfs_helper_b)" = 0 ] || { echo "open b after a's close"; return 1; }
  rmmod pfmfs_helper || return 1
  hold_device /dev/pfmfs_helper_b || return 1
  if insmod "$ko" emulate=1 2>/dev/null; then
    echo "loaded while b holds the counters"; release_device; return 1
  fi
  dmesg | tail -n 5 | grep -q 'pfmfs_helper: counter 0 is in use' ||
    { echo "no message for the refused load"; release_device; return 1; }
  release_device
  insmod "$ko" emulate=1 || { echo "insmod after b's close"; return 1; }
  rmmod pfmfs_helper && rmmod pfmfs_helper_b
}

guest_main() {
  local ko=$1 kob=$2 bin=$3 out=$4; shift 4
  local tests=("$@") t rc start end lines secs params
  rm -rf "$out"; mkdir -p "$out"
  # (no process substitution: the guest has no /dev/fd)
  [ ${#tests[@]} -gt 0 ] || read -r -a tests <<<"load_unload coexist $("$bin" --list | tr '\n' ' ')"
  for t in "${tests[@]}"; do
    start=$(date +%s%N)
    lines=$(dmesg | wc -l)
    rc=0
    if [ "$t" = load_unload ]; then
      guest_load_unload "$ko" >"$out/$t.log" 2>&1 || rc=$?
    elif [ "$t" = coexist ]; then
      guest_coexist "$ko" "$kob" >"$out/$t.log" 2>&1 || rc=$?
      rmmod pfmfs_helper_b 2>/dev/null || true
      rmmod pfmfs_helper 2>/dev/null || true
    else
      params=$(params_of "$t")
      # shellcheck disable=SC2086
      if ! insmod "$ko" emulate=1 $params >"$out/$t.log" 2>&1; then
        echo "insmod emulate=1 $params failed" >>"$out/$t.log"; rc=1
      else
        timeout -k 5 180 "$bin" "$t" >>"$out/$t.log" 2>&1 || rc=$?
        [ $rc -ne 124 ] || echo "timed out after 180 s" >>"$out/$t.log"
        if ! rmmod pfmfs_helper >>"$out/$t.log" 2>&1; then
          echo "rmmod failed after the test" >>"$out/$t.log"; rc=1
          sleep 2; rmmod pfmfs_helper 2>/dev/null || true
        fi
      fi
    fi
    if dmesg | tail -n +"$((lines + 1))" | grep -E "$BAD_DMESG" >"$out/$t.dmesg"; then
      { echo "kernel log:"; cat "$out/$t.dmesg"; } >>"$out/$t.log"; rc=1
    fi
    dmesg | tail -n +"$((lines + 1))" >"$out/$t.dmesg"
    end=$(date +%s%N)
    secs=$(printf '%d.%d' $(( (end - start) / 1000000000 )) $(( (end - start) / 100000000 % 10 )))
    if [ $rc -eq 0 ]; then
      echo "PASS $t ($secs s)" >>"$out/results"
    else
      echo "FAIL $t ($secs s): $(grep -m1 -E 'FAIL|failed|timed out|loaded|kernel log|no ' "$out/$t.log" || tail -n1 "$out/$t.log")" >>"$out/results"
    fi
    tail -n1 "$out/results"
  done
}

if [ "${1:-}" = --guest ]; then
  shift
  bin=$3
  guest_main "$@"
  exit 0
fi

# ---- on the host

. "$here/../vm/lib.sh"
cd "$REPO_ROOT"
cc=${CC:-cc}
mkdir -p "$VM_WORK/kmod" "$VM_WORK/share"
if [ "${1:-}" = --list ]; then
  echo load_unload; echo coexist
  grep -o '{ "[a-z_0-9]*", t_' "$here/kt.c" | cut -d'"' -f2
  exit 0
fi
# Everything of this run in a directory of its own (the guest sees the
# share): concurrent runs (meson's suite vm, a developer) must not collide.
run=$(mktemp -d "$VM_WORK/share/kmod.XXXXXX")
trap 'rm -rf "$run"' EXIT
$cc -O2 -g -Wall -Wextra -Werror -pthread -Ihelper-kmod/uapi -o "$run/kmod_test" "$here"/*.c
# build-module.sh builds in one shared directory: one build at a time, and
# this run keeps its own copy of the result.
build() { flock "$VM_WORK/kmod/build.lock" tests/vm/build-module.sh "$@" 2>>"$run/build.log" || {
  cat "$run/build.log" >&2; echo "tests/kmod/run.sh: the module did not build" >&2; exit 1; }; }
ko=$(build)
cp "$ko" "$run/pfmfs_helper.ko"
# The same module named pfmfs_helper_b, for the coexist test: its sources
# refreshed in place (unchanged files keep their times: make rebuilds what
# changed), Kbuild renamed.
srcb=$VM_WORK/kmod/src-b
mkdir -p "$srcb"
tar -C helper-kmod -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod' --exclude='*.mod.c' \
  --exclude='.*.cmd' --exclude=modules.order --exclude=Module.symvers --exclude=Kbuild . | tar -C "$srcb" -xf -
sed 's/pfmfs_helper/pfmfs_helper_b/g' helper-kmod/Kbuild >"$srcb/Kbuild.new"
cmp -s "$srcb/Kbuild.new" "$srcb/Kbuild" 2>/dev/null || mv "$srcb/Kbuild.new" "$srcb/Kbuild"
rm -f "$srcb/Kbuild.new"
kob=$(build -o "$VM_WORK/kmod/helper-kmod-b" "$srcb")
cp "$kob" "$run/pfmfs_helper_b.ko"
out=$run/results
start=$(date +%s)
status=0
tests/vm/run-in-vm.sh --timeout 1800 -- tests/kmod/run.sh --guest "$run/pfmfs_helper.ko" \
  "$run/pfmfs_helper_b.ko" "$run/kmod_test" "$out" "$@" \
  >"$run/console.log" 2>&1 || status=$?
# The last run's logs, for a look afterwards.
rm -rf "$VM_WORK/kmod/results"
mkdir -p "$VM_WORK/kmod/results"
cp -r "$run/console.log" "$out"/. "$VM_WORK/kmod/results/" 2>/dev/null || true
passed=0 failed=0
if [ -f "$out/results" ]; then
  while read -r line; do
    echo "$line"
    case $line in
      PASS*) passed=$((passed + 1)) ;;
      *) failed=$((failed + 1))
         t=${line#FAIL }; t=${t%% *}
         sed 's/^/    /' "$out/$t.log" | tail -n 15 ;;
    esac
  done <"$out/results"
fi
want=$#
[ "$want" -gt 0 ] || want=$("$run/kmod_test" --list | wc -l | awk '{print $1 + 2}')
if [ $((passed + failed)) -lt "$want" ]; then
  echo "the guest ran $((passed + failed)) of $want tests (run-in-vm.sh status $status; console: $VM_WORK/kmod/results/console.log)"
  tail -n 20 "$run/console.log" | sed 's/^/    /'
  failed=$((failed + want - passed - failed))
fi
echo "tests took $(( $(date +%s) - start )) s with the VM's boot"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
