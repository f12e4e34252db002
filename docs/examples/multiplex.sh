#!/bin/sh
# multiplex.sh: the quick-start experiment. Monitors a busy loop and a sleeping
# process, each in its own session with two event sets multiplexed on time,
# and prints every counter with its running and enabled time and the scaled
# estimate. It runs on the mount's backend (pmu/info) and says which: on the
# sim and perf-x86 set 0 counts cycles and instructions, set 1 LLC references
# and branches; on perf-sw (perf's software events, no hardware PMU) both sets
# count the CPU time (TASK_CLOCK), set 0 with the page faults, set 1 with the
# context switches (kernel level: root or pfmfsd --allow-kernel; minor faults
# otherwise). POSIX sh and coreutils only.
# Usage: multiplex.sh [MOUNT] [-t SECONDS] [-s SWITCH_NS] [-phases]
set -eu

usage() {
  echo "usage: multiplex.sh [MOUNT] [-t SECONDS] [-s SWITCH_NS] [-phases]" >&2
  echo "  -t  how long to count (default 1 s; under --sim-clock=manual the virtual" >&2
  echo "      clock is advanced by that much instead of waiting)" >&2
  echo "  -s  time each set runs before the next one (default 1000000 ns)" >&2
  echo "  -phases  set 1 counts SIM_PHASE_A,SIM_PHASE_B (sim backend only) instead of" >&2
  echo "      LLC_REFERENCES,BRANCH_INSTRUCTIONS_RETIRED" >&2
  exit 2
}

mount=/run/pfmfs
case ${1-} in
  ''|-*) ;;
  *) mount=$1; shift ;;
esac
seconds=1
switch_ns=1000000
phases=
while [ $# -gt 0 ]; do
  case $1 in
    -t) [ $# -ge 2 ] || usage; seconds=$2; shift 2 ;;
    -s) [ $# -ge 2 ] || usage; switch_ns=$2; shift 2 ;;
    -phases) phases=1; shift ;;
    *) usage ;;
  esac
done
case $seconds in ''|*[!0-9]*|0) echo "multiplex.sh: -t takes whole seconds > 0" >&2; exit 2 ;; esac
[ -f "$mount/version" ] || { echo "multiplex.sh: no pfmfs mount at $mount" >&2; exit 1; }

# pmu/info: backend=B model=M ...
info=$(cat "$mount/pmu/info")
backend=${info%% *}
model=${info#* }
model=${model%% *}
if [ -e "$mount/pmu/sim/advance" ]; then clock=manual; else clock=real; fi
case $model in
  model=perf-sw)
    set0="TASK_CLOCK PAGE_FAULTS"
    set1="TASK_CLOCK CONTEXT_SWITCHES:u:k"   # perf counts a switch in the kernel only
    ;;
  *)
    set0="UNHALTED_CORE_CYCLES INSTRUCTION_RETIRED"
    set1="LLC_REFERENCES BRANCH_INSTRUCTIONS_RETIRED"
    ;;
esac
if [ -n "$phases" ]; then
  if [ "$backend" != backend=sim ]; then
    echo "multiplex.sh: -phases needs the sim backend (this mount: $backend $model)" >&2
    exit 2
  fi
  set1="SIM_PHASE_A SIM_PHASE_B"
fi

busy_pid=
sleep_pid=
sessions=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  [ -n "$busy_pid" ] && kill "$busy_pid" 2>/dev/null
  [ -n "$sleep_pid" ] && kill "$sleep_pid" 2>/dev/null
  for s in $sessions; do rmdir "$mount/sessions/$s" 2>/dev/null || true; done
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# put VALUE FILE SESSION: one write; on refusal print the session's reason and fail.
put() {
  if ! printf '%s\n' "$1" 2>/dev/null > "$2"; then
    echo "multiplex.sh: writing '$1' to ${2#"$mount"/}: $(cat "$mount/sessions/$3/error" 2>/dev/null)" >&2
    exit 1
  fi
}

# setup NAME TID: a session on TID with set 0 and set 1, each running
# $switch_ns before handing over to the other.
setup() {
  s=$mount/sessions/$1
  mkdir "$s"
  sessions="$sessions $1"
  mkdir "$s/sets/1"
  n=0
  for ev in $set0; do put "$ev" "$s/sets/0/pmc$n" "$1"; n=$((n + 1)); done
  case $set1 in
    *CONTEXT_SWITCHES:u:k*)
      # Kernel-level counting needs root or pfmfsd --allow-kernel: without
      # it, count minor faults instead.
      printf 'CONTEXT_SWITCHES:u:k\n' 2>/dev/null > "$s/sets/1/pmc1" || set1="TASK_CLOCK MINOR_FAULTS"
      ;;
  esac
  n=0
  for ev in $set1; do put "$ev" "$s/sets/1/pmc$n" "$1"; n=$((n + 1)); done
  put "time $switch_ns" "$s/sets/0/switch" "$1"
  put "time $switch_ns" "$s/sets/1/switch" "$1"
  put "load $2" "$s/ctl" "$1"
}

sh -c 'while :; do :; done' &
busy_pid=$!
sleep 30 &
sleep_pid=$!

busy=mux-busy-$$
sleeper=mux-sleep-$$
setup "$busy" "$busy_pid"
setup "$sleeper" "$sleep_pid"

put start "$mount/sessions/$busy/ctl" "$busy"
put start "$mount/sessions/$sleeper/ctl" "$sleeper"
if [ $clock = manual ]; then
  put "${seconds}000000000" "$mount/pmu/sim/advance" "$busy"
else
  sleep "$seconds"
fi
put stop "$mount/sessions/$busy/ctl" "$busy"
put stop "$mount/sessions/$sleeper/ctl" "$sleeper"

echo "$backend $model clock=$clock: 2 sets switched every ${switch_ns} ns for ${seconds} s"
fmt='%-7s %7s  %-28s %14s %12s %12s %14s\n'
# shellcheck disable=SC2059
printf "$fmt" process pid event raw_count enabled_ns running_ns scaled

# table LABEL PID SESSION: one row per line of the session's counts.
table() {
  label=$1 pid=$2 name=$3
  while read -r line; do
    set_id='' pmd='' value='' enabled='' running='' scaled=''
    for kv in $line; do
      case $kv in
        set=*) set_id=${kv#set=} ;;
        pmd=*) pmd=${kv#pmd=} ;;
        value=*) value=${kv#value=} ;;
        enabled_ns=*) enabled=${kv#enabled_ns=} ;;
        running_ns=*) running=${kv#running_ns=} ;;
        scaled=*) scaled=${kv#scaled=} ;;
      esac
    done
    if [ "$set_id" = 0 ]; then events=$set0; else events=$set1; fi
    # shellcheck disable=SC2086
    set -- $events
    shift "$pmd"
    # shellcheck disable=SC2059
    printf "$fmt" "$label" "$pid" "$1" "$value" "$enabled" "$running" "$scaled"
  done < "$mount/sessions/$name/counts"
}
table busy "$busy_pid" "$busy"
table sleep "$sleep_pid" "$sleeper"

