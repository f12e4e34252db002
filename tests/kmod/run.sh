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
    lost) echo "ring_records=16" ;;
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
  t0=$(date +%s%N)
  for i in $(seq 100); do
    insmod "$ko" emulate=1 || { echo "insmod $i failed"; return 1; }
    [ -c /dev/pfmfs_helper ] || { echo "no /dev/pfmfs_helper after insmod $i"; return 1; }
    rmmod pfmfs_helper || { echo "rmmod $i failed"; return 1; }
  done
  t1=$(date +%s%N)
  echo "100 loads and unloads: $(( (t1 - t0) / 100000000 )) ms each on average"
  [ ! -e /dev/pfmfs_helper ] || { echo "/dev/pfmfs_helper left after rmmod"; return 1; }
}

guest_main() {
  local ko=$1 bin=$2 out=$3; shift 3
  local tests=("$@") t rc start end lines secs params
  rm -rf "$out"; mkdir -p "$out"
  # (no process substitution: the guest has no /dev/fd)
  [ ${#tests[@]} -gt 0 ] || read -r -a tests <<<"load_unload $("$bin" --list | tr '\n' ' ')"
  for t in "${tests[@]}"; do
    start=$(date +%s%N)
    lines=$(dmesg | wc -l)
    rc=0
    if [ "$t" = load_unload ]; then
      guest_load_unload "$ko" >"$out/$t.log" 2>&1 || rc=$?
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
  guest_main "$@"
  exit 0
fi

# ---- on the host

. "$here/../vm/lib.sh"
cd "$REPO_ROOT"
cc=${CC:-cc}
mkdir -p "$VM_WORK/kmod" "$VM_WORK/share"
if [ "${1:-}" = --list ]; then
  echo load_unload
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
ko=$(flock "$VM_WORK/kmod/build.lock" tests/vm/build-module.sh)
cp "$ko" "$run/pfmfs_helper.ko"
out=$run/results
start=$(date +%s)
status=0
tests/vm/run-in-vm.sh --timeout 1800 -- tests/kmod/run.sh --guest "$run/pfmfs_helper.ko" "$run/kmod_test" "$out" "$@" \
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
[ "$want" -gt 0 ] || want=$("$run/kmod_test" --list | wc -l | awk '{print $1 + 1}')
if [ $((passed + failed)) -lt "$want" ]; then
  echo "the guest ran $((passed + failed)) of $want tests (run-in-vm.sh status $status; console: $VM_WORK/kmod/results/console.log)"
  tail -n 20 "$run/console.log" | sed 's/^/    /'
  failed=$((failed + want - passed - failed))
fi
echo "tests took $(( $(date +%s) - start )) s with the VM's boot"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
