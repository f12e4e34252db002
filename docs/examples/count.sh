#!/bin/sh
# count.sh: count the cycles and instructions (or other events) of a command
# or of a running thread through a pfmfs mount, whatever its backend: the
# default events are the mount's (pmu/info): cycles and instructions on the
# sim and perf-x86, CPU time (TASK_CLOCK) and page faults on perf-sw, perf's
# software events. POSIX sh and coreutils only.
# Usage: count.sh [MOUNT] [-e EVENT,...] [-p TID [-t SECONDS]] [COMMAND [ARG...]]
# With COMMAND, the exit status is COMMAND's, as with time(1).
set -eu

usage() {
  echo "usage: count.sh [MOUNT] [-e EVENT,...] [-p TID [-t SECONDS]] [COMMAND [ARG...]]" >&2
  echo "  counts EVENTs (default UNHALTED_CORE_CYCLES,INSTRUCTION_RETIRED; TASK_CLOCK,PAGE_FAULTS" >&2
  echo "  on perf-sw; at most one per general counter) of COMMAND from its start to its exit," >&2
  echo "  or of thread TID for SECONDS (default 1; under --sim-clock=manual the virtual clock" >&2
  echo "  is advanced instead)" >&2
  exit 2
}

mount=/run/pfmfs
case ${1-} in
  ''|-*) ;;
  *) mount=$1; shift ;;
esac
events=
tid=
seconds=1
while [ $# -gt 0 ]; do
  case $1 in
    -e) [ $# -ge 2 ] || usage; events=$2; shift 2 ;;
    -p) [ $# -ge 2 ] || usage; tid=$2; shift 2 ;;
    -t) [ $# -ge 2 ] || usage; seconds=$2; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) usage ;;
    *) break ;;
  esac
done
if [ -z "$tid" ] && [ $# -eq 0 ]; then usage; fi
case $seconds in ''|*[!0-9]*) echo "count.sh: -t takes whole seconds" >&2; exit 2 ;; esac
[ -f "$mount/version" ] || { echo "count.sh: no pfmfs mount at $mount" >&2; exit 1; }

# pmu/info: backend=B model=M pmcs=... counters=N ...
info=$(cat "$mount/pmu/info")
backend=${info%% *}
model=${info#* }
model=${model%% *}
counters=${info#*counters=}
counters=${counters%% *}
if [ -e "$mount/pmu/sim/advance" ]; then clock=manual; else clock=real; fi
if [ -z "$events" ]; then
  case $model in
    model=perf-sw) events=TASK_CLOCK,PAGE_FAULTS ;;   # no hardware PMU: perf's software events
    *) events=UNHALTED_CORE_CYCLES,INSTRUCTION_RETIRED ;;
  esac
fi

session=$mount/sessions/count-$$
status=0
child=
fifo=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  [ -n "$child" ] && kill "$child" 2>/dev/null
  [ -n "$fifo" ] && rm -f "$fifo"
  [ -d "$session" ] && rmdir "$session" 2>/dev/null
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# put VALUE FILE: one write; on refusal print the session's reason and fail.
put() {
  if ! printf '%s\n' "$1" 2>/dev/null > "$2"; then
    echo "count.sh: writing '$1' to ${2#"$mount"/}: $(cat "$session/error" 2>/dev/null)" >&2
    exit 1
  fi
}

mkdir "$session"

# One event per general counter, pmc0, pmc1, ...
n=0
names=
old_ifs=$IFS
IFS=,
for ev in $events; do
  IFS=$old_ifs
  if [ "$n" -ge "$counters" ]; then
    echo "count.sh: $counters general counters: at most $counters events" >&2
    exit 2
  fi
  put "$ev" "$session/sets/0/pmc$n"
  names="$names $ev"
  n=$((n + 1))
done
IFS=$old_ifs
[ "$n" -gt 0 ] || usage

if [ -n "$tid" ]; then
  put "load $tid" "$session/ctl"
  put start "$session/ctl"
  if [ $clock = manual ]; then
    put "${seconds}000000000" "$mount/pmu/sim/advance"   # virtual time: exact counts
  else
    sleep "$seconds"
  fi
  what="thread $tid for ${seconds}s"
  case $(cat "$session/state") in
    *exited=1*) what="$what (it exited: counts up to its exit)" ;;   # unloaded itself
    *) put stop "$session/ctl" ;;
  esac
else
  # The child waits on a fifo until it is loaded and started, then becomes
  # COMMAND: the session counts COMMAND from its first instruction. The
  # session unloads itself when COMMAND exits and keeps its counts.
  fifo=$(mktemp -u "${TMPDIR:-/tmp}/count.XXXXXX")
  mkfifo "$fifo"
  sh -c 'read -r _ < "$0"; exec "$@"' "$fifo" "$@" &
  child=$!
  put "load $child" "$session/ctl"
  put start "$session/ctl"
  echo go > "$fifo"
  wait "$child" || status=$?
  child=
  # The exit unloads the session (state ... exited=1) within a tick.
  i=0
  while [ $i -lt 100 ]; do
    case $(cat "$session/state") in *exited=1*) break ;; esac
    sleep 0.01; i=$((i + 1))
  done
  what="$* (exit status $status)"
fi

echo "$backend $model clock=$clock"
echo "counted: $what"
printf '%-30s %20s %14s\n' event count running_ns
# counts: set=0 pmd=K value=V enabled_ns=E running_ns=R scaled=S
# shellcheck disable=SC2086  # one word per event
set -- $names
cycles='' instructions=''
while read -r line; do
  value='' running=''
  for kv in $line; do
    case $kv in
      value=*) value=${kv#value=} ;;
      running_ns=*) running=${kv#running_ns=} ;;
    esac
  done
  ev=$1; shift
  printf '%-30s %20s %14s\n' "$ev" "$value" "$running"
  case $ev in
    UNHALTED_CORE_CYCLES*|unhalted_core_cycles*) cycles=$value ;;
    INSTRUCTION_RETIRED*|instruction_retired*) instructions=$value ;;
  esac
done < "$session/counts"
if [ -n "$cycles" ] && [ -n "$instructions" ] && [ "$cycles" -gt 0 ]; then
  ipc=$((instructions * 1000 / cycles))
  printf 'IPC %d.%03d\n' $((ipc / 1000)) $((ipc % 1000))
fi
exit "$status"
