#!/bin/sh
# multiplex-study.sh: how good is a scaled estimate? A picture for teaching
# multiplexing. The same workload is counted by one session per switch
# period (1, 4 and 16 ms by default), each with SETS event sets (default 2)
# that all count the same events and hand over round-robin; the scaled
# estimate of every set (value x enabled_ns / running_ns, from `counts`) is
# sampled at regular points and set against the true count, then drawn with
# gnuplot: one PNG per backend, a row of two panels per switch period.
#
# Where the truth comes from:
#  - sim (--sim-clock=manual only): it is arithmetic. The script drives the
#    virtual clock itself through pmu/sim/advance (root), so every number is
#    exact and the figure is the same on every run. Each session has its own
#    target (a sleeping process: the sim lets one session load a thread) and
#    one advance moves them all. Events: SIM_PHASE_A and SIM_PHASE_B, 4 per
#    ns in alternating milliseconds (A in the first of every two), and
#    UNHALTED_CORE_CYCLES, 3 per ns all the time; the truth of each is
#    floor(rate x t), t the target time since the load (pfmfs(5), "The sim
#    PMU"). Under the sim's real clock the counts would follow the target's
#    CPU time and nothing here could say when the phases fell: refused.
#  - perf: it is measured. perf lets several sessions load one thread, so a
#    fourth session on the same thread counts the same events in one set
#    that never switches. The workload (python3) alternates phases of 30 ms
#    of its CPU time: one touching fresh pages (a page fault each), one
#    computing (none), so the page-fault rate varies in time. perf-sw counts
#    PAGE_FAULTS and TASK_CLOCK (the CPU time itself, a perfectly steady
#    event); perf-x86 INSTRUCTION_RETIRED and UNHALTED_CORE_CYCLES. At each
#    sample the workload is stopped (SIGSTOP) while every session is read,
#    so that the estimates and the truth are of the same instant; its time
#    does not move while it is stopped. Sets switch on the engine's tick
#    under the real clock (pfmfsd --tick, 1 ms), so their turns are a little
#    longer and less regular than asked.
#  - x86: a thread takes one session only and nothing else knows the truth:
#    refused.
#
# Samples: every 0.5 ms of virtual time for 64 ms on the sim; every 25 ms of
# wall time, 60 times, on perf (about 1.5 s, less of it CPU time on a busy
# machine). Time on the plots is the target's time since the start (the
# session's enabled_ns), which is also when sets switch.
#
# Output in OUTDIR (default .), named by the backend B of pmu/info:
#   multiplex-study-B.dat  every sample: gnuplot data, one block per switch
#                          period (gnuplot's `index`), columns named in the
#                          '# columns:' line: t_ns, the truth session's time
#                          (= t_ns on the sim), the truth of each event, then
#                          value, running_ns and scaled of each event in each
#                          set ('-' while a set has not run, as in `counts`)
#   multiplex-study-B.png  per switch period, the first event's estimate in
#                          every set against its truth over time (left) and
#                          each estimate's error in % of the truth (right)
# and on stdout a table: per switch period, event and set, the estimate and
# the truth at the end, the error, and the worst error over the second half
# of the run (a set's first turns say more about how little it has seen than
# about the switch period). The sessions are removed and the targets killed
# on exit, also on failure and ^C.
#
# Runs as root (the sim's clock, pmu/sim/advance, is root's). Needs gnuplot
# (Debian: gnuplot-nox; without it the .dat is written and the script
# fails), awk, and python3 on perf. POSIX sh.
# Usage: multiplex-study.sh [MOUNT [OUTDIR]] [-n SETS] [-p MS,MS,...]
set -eu

usage() {
  echo "usage: multiplex-study.sh [MOUNT [OUTDIR]] [-n SETS] [-p MS,MS,...]" >&2
  echo "  counts one workload with SETS event sets (default 2, at most 8) switched every" >&2
  echo "  MS milliseconds of its time, one session per period (default 1,4,16; at most 4)," >&2
  echo "  and writes OUTDIR/multiplex-study-BACKEND.dat and .png (OUTDIR default .)" >&2
  exit 2
}

mount=/run/pfmfs
outdir=.
case ${1-} in
  ''|-*) ;;
  *) mount=$1; shift
     case ${1-} in ''|-*) ;; *) outdir=$1; shift ;; esac ;;
esac
nsets=2
periods_ms=1,4,16
while [ $# -gt 0 ]; do
  case $1 in
    -n) [ $# -ge 2 ] || usage; nsets=$2; shift 2 ;;
    -p) [ $# -ge 2 ] || usage; periods_ms=$2; shift 2 ;;
    *) usage ;;
  esac
done
case $nsets in [1-8]) ;; *) echo "multiplex-study.sh: -n takes 1 to 8 sets" >&2; exit 2 ;; esac
periods=
for p in $(echo "$periods_ms" | tr ',' ' '); do
  case $p in ''|*[!0-9]*|0*) echo "multiplex-study.sh: -p takes whole milliseconds > 0, comma-separated" >&2; exit 2 ;; esac
  periods="$periods ${p}000000"
done
# shellcheck disable=SC2086  # a list of words
set -- $periods
case $# in [1-4]) ;; *) echo "multiplex-study.sh: -p takes 1 to 4 periods" >&2; exit 2 ;; esac
[ -f "$mount/version" ] || { echo "multiplex-study.sh: no pfmfs mount at $mount" >&2; exit 1; }
[ -d "$outdir" ] || { echo "multiplex-study.sh: no directory $outdir" >&2; exit 1; }

# pmu/info: backend=B model=M ...
info=$(cat "$mount/pmu/info")
backend=${info%% *}
backend=${backend#backend=}
model=${info#* }
model=${model%% *}
model=${model#model=}
if [ -e "$mount/pmu/sim/advance" ]; then clock=manual; else clock=real; fi
case $backend/$model/$clock in
  sim/*/manual) events="SIM_PHASE_A SIM_PHASE_B UNHALTED_CORE_CYCLES" ;;
  sim/*) echo "multiplex-study.sh: the sim's truth is known only under its manual clock (pfmfsd --pmu=sim --sim-clock=manual)" >&2; exit 2 ;;
  perf/perf-sw/*) events="PAGE_FAULTS TASK_CLOCK" ;;
  perf/*) events="INSTRUCTION_RETIRED UNHALTED_CORE_CYCLES" ;;
  *) echo "multiplex-study.sh: backend $backend: no second session can count the truth on the same thread (perf and the sim's manual clock only)" >&2; exit 2 ;;
esac
# shellcheck disable=SC2086
set -- $events
nevents=$#

dat=$outdir/multiplex-study-$backend.dat
png=$outdir/multiplex-study-$backend.png
tag=msx-$$
sessions=
targets=
workload=
raw=
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  for s in $sessions; do rmdir "$mount/sessions/$s" 2>/dev/null || true; done
  # SIGKILL: a stopped workload would keep a SIGTERM pending.
  for p in $targets; do kill -KILL "$p" 2>/dev/null || true; done
  [ -n "$raw" ] && rm -f "$raw"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
raw=$(mktemp)

# put VALUE FILE SESSION: one write; on refusal print the session's reason and fail.
put() {
  if ! printf '%s\n' "$1" 2>/dev/null > "$2"; then
    echo "multiplex-study.sh: writing '$1' to ${2#"$mount"/}: $(cat "$mount/sessions/$3/error" 2>/dev/null)" >&2
    exit 1
  fi
}

# setup NAME TID SETS SWITCH: a session on TID whose SETS sets count $events,
# each handing over after SWITCH ns (none: a single set that never switches).
setup() {
  s=$mount/sessions/$1
  mkdir "$s"
  sessions="$sessions $1"
  k=0
  while [ $k -lt "$3" ]; do
    [ $k -eq 0 ] || mkdir "$s/sets/$k"
    n=0
    for ev in $events; do put "$ev" "$s/sets/$k/pmc$n" "$1"; n=$((n + 1)); done
    [ "$4" = none ] || put "time $4" "$s/sets/$k/switch" "$1"
    k=$((k + 1))
  done
  put "load $2" "$s/ctl" "$1"
}

# sample K: "K SESSION LINE" for each line of every session's counts. One
# awk reads every file: a sample costs one process, however many sessions.
sample() {
  awk -v k="$1" -v dir="$mount/sessions" -v names="$sessions" 'BEGIN {
    n = split(names, s, " ")
    for (i = 1; i <= n; i++) {
      f = dir "/" s[i] "/counts"
      while ((getline line < f) > 0) print k, s[i], line
      close(f)
    }
  }' >> "$raw"
}

# stopped PID: wait until the process has stopped (a SIGSTOP takes effect
# when it next leaves the kernel: microseconds on an idle machine), reading
# its state letter from /proc/PID/stat without starting a process; after the
# first thousand looks, every 10 ms, for 5 s at most.
stopped() {
  i=0
  while :; do
    read -r st < "/proc/$1/stat" 2>/dev/null || { echo "multiplex-study.sh: the workload ($1) has exited" >&2; exit 1; }
    st=${st##*) }
    [ "${st%% *}" != T ] || return 0
    i=$((i + 1))
    [ $i -lt 1500 ] || { echo "multiplex-study.sh: the workload ($1) did not stop" >&2; exit 1; }
    [ $i -lt 1000 ] || sleep 0.01
  done
}

if [ "$backend" = sim ]; then
  step_ns=500000
  nsamples=128
  for p in $periods; do
    sleep 600 &
    targets="$targets $!"
    setup "$tag-$p" $! "$nsets" "$p"
  done
  for p in $periods; do put start "$mount/sessions/$tag-$p/ctl" "$tag-$p"; done
  k=1
  while [ $k -le $nsamples ]; do
    put $step_ns "$mount/pmu/sim/advance" "$tag-$p"
    sample $k
    k=$((k + 1))
  done
  what="every $((step_ns / 1000)) us of virtual time for $((step_ns * nsamples / 1000000)) ms"
else
  nsamples=60
  command -v python3 >/dev/null 2>&1 || { echo "multiplex-study.sh: the workload on perf is a python3 program: no python3" >&2; exit 1; }
  # The workload stops itself before its first phase: the sessions are loaded
  # and started while it does not run, so that all of them count from the
  # same instant.
  python3 -c '
import mmap, os, signal, time
os.kill(os.getpid(), signal.SIGSTOP)
PHASE_S = 0.030  # of CPU time
page = mmap.PAGESIZE
x = 0
while True:
    end = time.thread_time() + PHASE_S
    while time.thread_time() < end:   # a page fault per page
        m = mmap.mmap(-1, 64 * page)
        m.madvise(mmap.MADV_NOHUGEPAGE)
        for i in range(0, len(m), page):
            m[i] = 1
        m.close()
    end = time.thread_time() + PHASE_S
    while time.thread_time() < end:   # no page fault
        for i in range(2000):
            x += i
' &
  workload=$!
  targets=$workload
  stopped $workload
  for p in $periods; do
    setup "$tag-$p" $workload "$nsets" "$p"
  done
  setup "$tag-truth" $workload 1 none
  for s in $sessions; do put start "$mount/sessions/$s/ctl" "$s"; done
  kill -CONT $workload
  k=1
  while [ $k -le $nsamples ]; do
    sleep 0.025
    kill -STOP $workload
    stopped $workload
    sample $k
    kill -CONT $workload
    k=$((k + 1))
  done
  kill -STOP $workload
  what="every 25 ms of wall time, $nsamples times"
fi
for s in $sessions; do put stop "$mount/sessions/$s/ctl" "$s"; done

# The data file. awk's numbers are doubles: the counts are copied as text,
# and the sim's truths (below 2^53 here) are computed exactly.
awk -v backend="$backend" -v model="$model" -v clock="$clock" -v tag="$tag" -v nsets="$nsets" \
    -v events="$events" -v periods="$periods" -v nsamples="$nsamples" -v what="$what" '
function truth(ev, t,   a) {   # the sim: floor(rate x t), t in ns since the load
  a = 4 * (int(t / 2000000) * 1000000 + (t % 2000000 < 1000000 ? t % 2000000 : 1000000))
  if (ev == "SIM_PHASE_A") return a
  if (ev == "SIM_PHASE_B") return 4 * t - a
  return 3 * t   # UNHALTED_CORE_CYCLES
}
{
  k = $1; name = $2
  delete f
  for (i = 3; i <= NF; i++) { j = index($i, "="); f[substr($i, 1, j - 1)] = substr($i, j + 1) }
  key = k SUBSEP name SUBSEP f["set"] SUBSEP f["pmd"]
  value[key] = f["value"]; running[key] = f["running_ns"]; scaled[key] = f["scaled"]
  enabled[k, name] = f["enabled_ns"]
}
END {
  ne = split(events, ev, " ")
  np = split(periods, per, " ")
  printf "# multiplex-study backend=%s model=%s clock=%s sets=%d events=%s", backend, model, clock, nsets, ev[1]
  for (e = 2; e <= ne; e++) printf ",%s", ev[e]
  printf " periods_ns=%s", per[1]
  for (i = 2; i <= np; i++) printf ",%s", per[i]
  printf " samples=%d (%s)\n", nsamples, what
  printf "# columns: t_ns truth_t_ns"
  for (e = 1; e <= ne; e++) printf " truth:%s", ev[e]
  for (s = 0; s < nsets; s++)
    for (e = 1; e <= ne; e++) printf " set%d:%s:value set%d:%s:running_ns set%d:%s:scaled", s, ev[e], s, ev[e], s, ev[e]
  printf "\n"
  for (i = 1; i <= np; i++) {
    if (i > 1) printf "\n\n"
    name = tag "-" per[i]
    printf "# period_ns=%s\n", per[i]
    for (k = 1; k <= nsamples; k++) {
      t = enabled[k, name]
      if (backend == "sim") { tt = t } else { tt = enabled[k, tag "-truth"] }
      printf "%s %s", t, tt
      for (e = 1; e <= ne; e++) {
        if (backend == "sim") printf " %.0f", truth(ev[e], t)
        else printf " %s", value[k, tag "-truth", 0, e - 1]
      }
      for (s = 0; s < nsets; s++)
        for (e = 1; e <= ne; e++) {
          key = k SUBSEP name SUBSEP s SUBSEP (e - 1)
          printf " %s %s %s", value[key], running[key], scaled[key]
        }
      printf "\n"
    }
  }
}' "$raw" > "$dat"

# The table: per period, event and set, the last sample and the worst error
# over the second half of the samples.
echo "backend=$backend model=$model clock=$clock: $nsets sets switched every $(echo "$periods_ms" | tr ',' ' ') ms, sampled $what"
awk -v nsets="$nsets" -v events="$events" -v nsamples="$nsamples" '
BEGIN { nevents = split(events, ev, " "); for (e = 0; e < nevents; e++) evname[e] = ev[e + 1] }
/^# period_ns=/ { p = substr($2, 11); order[++np] = p; k = 0; next }
/^#/ || NF == 0 { next }
{
  k++
  for (e = 0; e < nevents; e++) {
    truth = $(3 + e)
    for (s = 0; s < nsets; s++) {
      c = 3 + nevents + 3 * (s * nevents + e)
      if ($(c + 2) == "-" || truth == 0) continue
      err = ($(c + 2) - truth) / truth
      last[p, e, s] = $(c + 2); lasttruth[p, e, s] = truth; lasterr[p, e, s] = err
      if (k > nsamples / 2 && (!((p, e, s) in worst) || (err < 0 ? -err : err) > (worst[p, e, s] < 0 ? -worst[p, e, s] : worst[p, e, s])))
        worst[p, e, s] = err
    }
  }
}
END {
  printf "%-9s %-22s %3s %16s %16s %9s %13s\n", "switch_ms", "event", "set", "estimate", "truth", "error", "worst_error"
  for (i = 1; i <= np; i++)
    for (e = 0; e < nevents; e++)
      for (s = 0; s < nsets; s++) {
        p = order[i]
        if (!((p, e, s) in last)) { printf "%-9g %-22s %3d %16s %16s %9s %13s\n", p / 1e6, evname[e], s, "-", "-", "-", "-"; continue }
        printf "%-9g %-22s %3d %16.0f %16.0f %+8.1f%% %+12.1f%%\n", p / 1e6, evname[e], s, last[p, e, s], lasttruth[p, e, s],
               100 * lasterr[p, e, s], 100 * worst[p, e, s]
      }
}' "$dat"

if ! command -v gnuplot >/dev/null 2>&1; then
  echo "multiplex-study.sh: wrote $dat, but no gnuplot to draw it (Debian: apt-get install gnuplot-nox)" >&2
  exit 1
fi

# The picture: a row per switch period. Left, the first event's truth (thick,
# black) and every set's estimate of it; right, each estimate's error in
# percent of the truth, which shows what the counts' scale hides (the first
# turns of a set are far off: its range is clipped to +-120%).
# shellcheck disable=SC2086
set -- $events
first=$1
# shellcheck disable=SC2086
set -- $periods
np=$#
{
  # gd's png: a palette image of a few tens of KB (cairo's antialiased one
  # is several times larger), fit to be committed with the docs.
  echo "set terminal png size 960,$((200 * np + 40)) font 'DejaVuSans,9' noenhanced"
  echo "set output '$png'"
  echo "set datafile missing '-'"
  echo "set multiplot layout $np,2 title '$first on $backend ($model), $nsets sets: the scaled estimate of each set against the truth'"
  echo "set xlabel 'target time (ms)'"
  echo "set key top left"
  echo "set grid"
  echo "set autoscale xfix"
  i=0
  for p in $periods; do
    ms=$((p / 1000000))
    echo "set title 'sets switched every $ms ms: counts'"
    echo "set ylabel '$first'"
    echo "set format y '%.0s%c'"
    echo "set yrange [*:*]"
    printf "plot '%s' index %d using (\$1/1e6):3 with lines lw 4 lc rgb 'black' title 'truth'" "$dat" $i
    s=0
    set -- '#d62728' '#1f77b4' '#2ca02c' '#ff7f0e' '#9467bd' '#8c564b' '#e377c2' '#7f7f7f'
    while [ $s -lt "$nsets" ]; do
      printf ", '' index %d using (\$1/1e6):%d with lines lw 1 lc rgb '%s' title 'set %d estimate'" \
        $i $((3 + nevents + 3 * s * nevents + 2)) "$1" $s
      shift
      s=$((s + 1))
    done
    echo
    echo "set title 'sets switched every $ms ms: error of the estimate'"
    echo "set ylabel '(estimate - truth) / truth, %'"
    echo "set format y '%g'"
    echo "set yrange [-120<*<-5 : 5<*<120]"
    printf "plot 0 with lines lw 4 lc rgb 'black' notitle"
    s=0
    set -- '#d62728' '#1f77b4' '#2ca02c' '#ff7f0e' '#9467bd' '#8c564b' '#e377c2' '#7f7f7f'
    while [ $s -lt "$nsets" ]; do
      printf ", '%s' index %d using (\$1/1e6):((column(%d) - \$3) * 100 / \$3) with lines lw 1 lc rgb '%s' title 'set %d'" \
        "$dat" $i $((3 + nevents + 3 * s * nevents + 2)) "$1" $s
      shift
      s=$((s + 1))
    done
    echo
    i=$((i + 1))
  done
  echo "unset multiplot"
} | gnuplot
echo "wrote $dat and $png"
