#!/usr/bin/env bash
# run-fuzzers.sh FUZZER CORPUS_ROOT MODE N
#
# Drives fuzz_parsers (libfuzzer_target.cpp) over every oracle, each with its
# committed corpus CORPUS_ROOT/ORACLE/:
#   replay N   every corpus input once (a regression test), then N seconds
#              of fuzzing from the corpus; new inputs go to a scratch
#              directory, the committed corpus is left as it is (suite fuzz)
#   long N     N executions of fuzzing per oracle, then the corpus merged
#              back, minimized, into CORPUS_ROOT (the long runs whose figures
#              docs/fuzzing.md reports); the figures go to stdout
#   seed       writes each oracle's seeds into its empty corpus directory
# Exits non-zero when an oracle fails or a sanitizer reports; the input that
# did it is left in the scratch directory it names.
set -euo pipefail

fuzzer=$1
corpus=$2
mode=$3
n=${4:-0}

scratch=$(mktemp -d /tmp/pfmfs-fuzz.XXXXXX)
PFMFS_ORACLE=dict "$fuzzer" >"$scratch/parsers.dict"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

status=0
printf '%-16s %12s %8s %8s %8s\n' oracle executions 'exec/s' cov corpus
# PFMFS_ORACLES="a b" limits the run to those oracles (say, to share the
# long runs between cores).
for oracle in ${PFMFS_ORACLES:-$(PFMFS_ORACLE=list "$fuzzer")}; do
  dir=$corpus/$oracle
  mkdir -p "$dir"
  export PFMFS_ORACLE=$oracle
  if [ "$mode" = seed ]; then
    [ -n "$(ls -A "$dir")" ] || PFMFS_SEED_DIR=$dir "$fuzzer"
    continue
  fi
  work=$scratch/$oracle
  mkdir -p "$work"
  log=$scratch/$oracle.log
  case $mode in
    replay)
      # -runs=0: load (run) every corpus input, fuzz nothing.
      if ! "$fuzzer" -runs=0 "$dir" >"$log" 2>&1 ||
         ! "$fuzzer" -dict="$scratch/parsers.dict" -max_total_time="$n" -print_final_stats=1 \
             -artifact_prefix="$work/" "$work" "$dir" >>"$log" 2>&1; then
        echo "FAIL: $oracle (input and log in $work, $log):"; tail -n 25 "$log"; status=1; continue
      fi ;;
    long)
      if ! "$fuzzer" -dict="$scratch/parsers.dict" -runs="$n" -print_final_stats=1 \
             -artifact_prefix="$work/" "$work" "$dir" >"$log" 2>&1; then
        echo "FAIL: $oracle (input and log in $work, $log):"; tail -n 25 "$log"; status=1; continue
      fi
      "$fuzzer" -merge=1 "$dir" "$work" >>"$log" 2>&1 ;;
    *) echo "run-fuzzers: unknown mode $mode" >&2; exit 2 ;;
  esac
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | cut -d' ' -f2)
  printf '%-16s %12s %8s %8s %8s\n' "$oracle" "${runs:-?}" "${speed:-?}" "${cov:-?}" "$(ls "$dir" | wc -l)"
done
[ "$status" -eq 0 ] && rm -rf "$scratch"
exit "$status"
