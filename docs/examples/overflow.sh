#!/bin/sh
# overflow.sh: a sampling loop through a pfmfs mount. A counter set to -PERIOD
# with `notify` overflows every PERIOD events; each overflow queues a message
# and masks the session; the loop reads the message (a blocking read of
# `messages`) and writes `restart`. It runs on the mount's backend (pmu/info)
# and says which: by default it samples cycles and counts instructions
# alongside on the sim and perf-x86, and samples the CPU time (TASK_CLOCK, in
# ns) and counts it alongside on perf-sw, perf's software events. POSIX sh and
# coreutils only.
# Usage: overflow.sh [MOUNT] [-n SAMPLES] [-P PERIOD] [-e EVENT] [-p TID]
set -eu

usage() {
  echo "usage: overflow.sh [MOUNT] [-n SAMPLES] [-P PERIOD] [-e EVENT] [-p TID]" >&2
  echo "  takes SAMPLES (default 10) overflow notifications, one every PERIOD (default" >&2
  echo "  1000000) EVENTs (default UNHALTED_CORE_CYCLES; TASK_CLOCK, in ns, on perf-sw)" >&2
  echo "  of thread TID (default: a busy loop it starts; under --sim-clock=manual a" >&2
  echo "  sleeping process, and the script advances the virtual clock 1 ms at a time" >&2
  echo "  until each sample arrives)" >&2
  exit 2
}

mount=/run/pfmfs
case ${1-} in
  ''|-*) ;;
  *) mount=$1; shift ;;
esac
samples=10
period=1000000
event=
tid=
while [ $# -gt 0 ]; do
  case $1 in
    -n) [ $# -ge 2 ] || usage; samples=$2; shift 2 ;;
    -P) [ $# -ge 2 ] || usage; period=$2; shift 2 ;;
    -e) [ $# -ge 2 ] || usage; event=$2; shift 2 ;;
    -p) [ $# -ge 2 ] || usage; tid=$2; shift 2 ;;
    *) usage ;;
  esac
done
for n in "$samples" "$period"; do
  case $n in ''|*[!0-9]*) usage ;; esac
done
if [ "$samples" -eq 0 ] || [ "$period" -eq 0 ]; then usage; fi
[ -f "$mount/version" ] || { echo "overflow.sh: no pfmfs mount at $mount" >&2; exit 1; }

# pmu/info: backend=B model=M ...
info=$(cat "$mount/pmu/info")
backend=${info%% *}
model=${info#* }
model=${model%% *}
if [ -e "$mount/pmu/sim/advance" ]; then clock=manual; else clock=real; fi
# The sampled event's default and the event counted alongside (pmc1), with
# the key the summary line gives it.
case $model in
  model=perf-sw) [ -n "$event" ] || event=TASK_CLOCK; other=TASK_CLOCK; key=task_clock ;;
  *) [ -n "$event" ] || event=UNHALTED_CORE_CYCLES; other=INSTRUCTION_RETIRED; key=instructions ;;
esac

session=$mount/sessions/ovfl-$$
child=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  [ -n "$child" ] && kill "$child" 2>/dev/null
  [ -d "$session" ] && rmdir "$session" 2>/dev/null
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

put() {
  if ! printf '%s\n' "$1" 2>/dev/null > "$2"; then
    echo "overflow.sh: writing '$1' to ${2#"$mount"/}: $(cat "$session/error" 2>/dev/null)" >&2
    exit 1
  fi
}

# field KEY LINE: the value of KEY=... in a key=value line.
field() {
  for kv in $2; do
    case $kv in "$1"=*) echo "${kv#"$1"=}"; return 0 ;; esac
  done
}

if [ -z "$tid" ]; then
  if [ $clock = manual ]; then
    sleep 600 &                        # virtual time: it needs no CPU
  else
    sh -c 'while :; do :; done' &      # real time: a thread that runs
  fi
  child=$!
  tid=$child
fi

mkdir "$session"
put "$event" "$session/sets/0/pmc0"                         # the sampling counter
put "$other" "$session/sets/0/pmc1"                         # counted alongside
put "-$period long_reset=-$period notify" "$session/sets/0/pmd0"
put "load $tid" "$session/ctl"
put start "$session/ctl"

echo "$backend $model clock=$clock: a notification every $period $event of thread $tid"

i=0
ended=
while [ $i -lt "$samples" ]; do
  if [ $clock = manual ]; then
    # Nothing happens until virtual time moves: 1 ms at a time until the
    # overflow has happened (the session is then masked: one message).
    steps=0
    while [ "$(field queued "$(cat "$session/state")")" = 0 ]; do
      put 1000000 "$mount/pmu/sim/advance"
      steps=$((steps + 1))
      [ $steps -lt 100000 ] || { echo "overflow.sh: no overflow after 100 s of virtual time" >&2; exit 1; }
    done
  fi
  # One read(2) returns every whole message line queued; it blocks until
  # there is one.
  msgs=$(timeout 10 dd if="$session/messages" bs=4096 count=1 2>/dev/null) || true
  [ -n "$msgs" ] || { echo "overflow.sh: no message within 10 s" >&2; exit 1; }
  ended=
  while read -r line; do
    case $line in
      type=ovfl*) i=$((i + 1)); echo "sample $i: $line" ;;
      type=end*) echo "the thread exited: $line"; ended=1 ;;
    esac
  done <<EOM
$msgs
EOM
  [ -z "$ended" ] || break
  [ $i -lt "$samples" ] || break
  put restart "$session/ctl"
done

# After an end message the session has unloaded itself (counts kept).
[ -n "$ended" ] || put stop "$session/ctl"
line=
while read -r l; do
  case $l in "set=0 pmd=1 "*) line=$l ;; esac
done < "$session/counts"
echo "samples=$i period=$period $key=$(field value "$line") enabled_ns=$(field enabled_ns "$line")"
