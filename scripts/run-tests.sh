#!/usr/bin/env bash
# Builds pfmfs and runs every test: unit, mount (integration) and libpfm
# tests in a plain build (with the benchmarks once, as a check that they run),
# in an ASan/UBSan build and in a TSan build; the parsers' libFuzzer targets
# in a clang build (suite fuzz, tests/fuzz/); and, in the plain build, PAPI's
# perfmon2 component built from Debian's source (suite papi, tests/papi/), the
# helper module's tests and the mount tests on the x86 backend in a QEMU
# guest (suite vm, tests/vm/), and the Debian packages (suite packaging).
#
#   scripts/run-tests.sh [--load] [--builds LIST]
#
#   --load         one busy loop per CPU runs beside the builds and the tests,
#                  as on a CI machine that something else keeps busy: every
#                  test must pass so (docs/CONTRIBUTING.md, Tests and time)
#   --builds LIST  only these builds and their suites, of plain, asan, tsan
#                  and fuzz (default: all four, comma-separated)
#
# The builds run one after another; as each is there, its tests start in a
# lane of their own beside the rest (the vm suite, QEMU on one host thread,
# in another), each on what the others leave of the CPUs. The packaging
# suite, which installs into this machine's own root that the guest shares,
# runs alone at the end. Compiles go through ccache (~/.cache/ccache), so a
# second run on the same machine rebuilds little. Each lane's output is kept
# in build/summary/lane-NAME.log and printed once all are done; the console
# gets a line as each step starts and ends.
#
# Ends with a table of minutes per step and per suite, one line naming each
# failure with its last lines, and the lines "benchmarks: N passed, M
# failed" and "tests: N passed, M failed, K skipped"; exits non-zero on any
# failure, and on any skip when CI=true (CI must run every test).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '12,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
load=0
builds=plain,asan,tsan,fuzz
while [ $# -gt 0 ]; do
  case $1 in
    --load) load=1; shift ;;
    --builds) [ $# -ge 2 ] || usage; builds=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run-tests: unknown argument '$1'" >&2; usage ;;
  esac
done
for b in ${builds//,/ }; do
  case $b in plain|asan|tsan|fuzz) ;; *) echo "run-tests: no build '$b' (plain, asan, tsan, fuzz)" >&2; exit 2 ;; esac
done
want() { [[ ,$builds, == *,$1,* ]]; }

began=$(date +%s)
summary=build/summary
mkdir -p "$summary"
rm -f "$summary"/*.json "$summary"/*.log "$summary"/steps.tsv
steps=$summary/steps.tsv
exec 3>&1  # the console, for the steps' lines while lanes write to their logs

# step NAME COMMAND...: runs COMMAND, says on the console when it starts and
# how it ended, and keeps its times for the table. Returns its status.
step() {
  local name=$1 t0 t1 rc=0; shift
  t0=$(date +%s)
  echo "run-tests: [$(date +%T)] $name" >&3
  "$@" || rc=$?
  t1=$(date +%s)
  printf '%s\t%s\t%s\t%s\n' "$name" "$((t0 - began))" "$((t1 - began))" "$rc" >>"$steps"
  echo "run-tests: [$(date +%T)] $name: $([ $rc -eq 0 ] && echo ok || echo "FAILED (status $rc)") after $((t1 - t0)) s" >&3
  return $rc
}

deps() {
  scripts/install-deps.sh
  tests/vm/install-deps.sh  # QEMU, Debian's kernel and its headers, for suite vm
  tests/papi/install-deps.sh  # deb-src lines and a C/Fortran toolchain: PAPI's source, for suite papi
  # The users and group the mount tests run as, made once here rather than
  # by two lanes' first tests at the same moment.
  python3 -c 'import sys; sys.path.insert(0, "tests/integration"); import pfmfs_mount; pfmfs_mount.ensureUsers()'
}
step deps deps

# Busy loops for --load: from here to the end, as nice as the tests.
hogs=()
stop_hogs() { for h in "${hogs[@]}"; do kill "$h" 2>/dev/null || true; done; }
trap stop_hogs EXIT
if [ $load -eq 1 ]; then
  for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    hogs+=($!)
  done
  echo "run-tests: --load: ${#hogs[@]} busy loops beside the tests" >&3
fi

setup() {  # setup DIR [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir"
}

run() {  # run BUILD NAME [meson test options...]: its JSON log kept as summary/BUILD-NAME.json
  # Logs of their own (--logbase): two lanes may run meson test in one
  # build. meson adds the wrapper's name to a log's (NAME-setarch.json).
  local build=$1 name=$2 dir rc=0; shift 2
  dir=$(build_dir "$build")
  rm -f "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json
  meson test -C "$dir" --logbase "$name" --print-errorlogs "$@" || rc=$?
  local log
  for log in "$dir/meson-logs/$name".json "$dir/meson-logs/$name"-*.json; do
    if [ -f "$log" ]; then cp "$log" "$summary/$build-$name.json"; fi
  done
  return $rc
}
build_dir() {  # build_dir BUILD: its meson build directory
  case $1 in plain) echo build ;; *) echo "build-$1" ;; esac
}

# The cache serves every clone on this machine, wherever it is: paths are
# taken relative to the checkout, and the working directory (which -g
# would add) is left out of the hash.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache} CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
ccache --max-size=5G >/dev/null 2>&1 || true

# The steps, in lanes that run side by side, each on what the others leave
# of the CPUs: the builds one after another; then, as each build is there,
# its tests in a lane of their own (the vm suite, one host thread of QEMU,
# in another). What a lane waits for is a file in build/summary saying how
# a build ended.
built() {  # built NAME: waits for build NAME; true if it succeeded
  while [ ! -e "$summary/built-$1" ]; do
    # The builds' lane ended without saying (killed): no such build.
    kill -0 "$builds_pid" 2>/dev/null || [ -e "$summary/built-$1" ] || return 1
    sleep 1
  done
  [ "$(cat "$summary/built-$1")" = 0 ]
}
build_step() {  # build_step NAME DIR [meson options...]
  local name=$1 rc=0; shift
  step "$name: build" setup "$@" || rc=$?
  echo $rc >"$summary/built-$name"
  return $rc
}

lane_builds() {
  local rc=0
  if want plain; then build_step plain build || rc=1; fi
  # ASan/UBSan at -O0: GCC's UBSan at -O2 took 111 s for one test file (13 s
  # at -O0), and the whole build over 15 minutes; the checks are the same,
  # and its tests, mostly waiting on FUSE, take no longer.
  if want asan; then build_step asan build-asan -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=0 || rc=1; fi
  if want tsan; then build_step tsan build-tsan -Db_sanitize=thread || rc=1; fi
  if want fuzz; then
    # Also clang's thread-safety check (meson.build): it compiles every
    # library and program, so a lock misused anywhere fails this build.
    CC="ccache clang" CXX="ccache clang++" \
      build_step fuzz build-fuzz -Dfuzzers=true -Dtests=false -Db_sanitize=address,undefined -Db_lundef=false || rc=1
  fi
  return $rc
}

lane_vm() {  # the helper module's tests and the mount tests on x86, in the QEMU guest
  built plain || return 1
  step "plain: vm" run plain vm --suite vm --no-rebuild
}

lane_plain() {
  local rc=0
  built plain || return 1
  # Benchmarks: a check that they run (their figures are measured on a quiet
  # machine, docs/CONTRIBUTING.md).
  step "plain: benchmarks" run plain benchmarks --benchmark --verbose --no-rebuild || rc=1
  step "plain: unit, integration, libpfm, papi" \
    run plain tests --suite unit --suite integration --suite libpfm --suite papi --no-rebuild || rc=1
  return $rc
}

lane_asan() {
  built asan || return 1
  # The integration tests mount this build's pfmfsd, so the daemon itself
  # runs under ASan/UBSan here, with every mount test driving it.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    step "asan: unit, integration, libpfm" \
    run asan tests --suite unit --suite integration --suite libpfm --no-rebuild
}

lane_tsan() {
  built tsan || return 1
  # The daemon's FUSE workers, ticker and watchers race each other under
  # every mount test, and the library's notifier threads under the C
  # programs. TSan maps shadow memory at fixed places; without ASLR
  # (setarch -R, which the daemons and programs the tests start inherit) it
  # works whatever the kernel's mmap randomisation.
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    step "tsan: unit, integration, libpfm" \
    run tsan tests --suite unit --suite integration --suite libpfm --no-rebuild \
    --wrapper "setarch $(uname -m) -R"
}

lane_fuzz() {
  built fuzz || return 1
  # The libFuzzer targets of every parser (tests/fuzz/), in a clang build
  # with ASan/UBSan: each oracle's committed corpus replayed, then a few
  # seconds of fuzzing each.
  step "fuzz: fuzz" run fuzz fuzz --suite fuzz --no-rebuild
}

status=0
rm -f "$summary"/built-*
lanes=(builds)
for b in plain asan tsan fuzz; do want $b && lanes+=("$b"); done
want plain && lanes+=(vm)
pids=()
for l in "${lanes[@]}"; do
  "lane_$l" >"$summary/lane-$l.log" 2>&1 &
  pids+=($!)
  [ "$l" != builds ] || builds_pid=$!  # what the other lanes wait on
done
for i in "${!lanes[@]}"; do
  wait "${pids[$i]}" || status=1
  echo "==== lane ${lanes[$i]} (build/summary/lane-${lanes[$i]}.log) ===="
  cat "$summary/lane-${lanes[$i]}.log"
done

# The Debian packages: built, installed into this machine's root and purged,
# with nothing else running (the guest shares this root).
if want plain && built plain; then
  step "plain: packaging" run plain packaging --suite packaging --no-rebuild || status=1
fi
stop_hogs

python3 - "$summary" "$builds" "$(( $(date +%s) - began ))" <<'PY' || status=1
# The table of minutes, then one line for the benchmarks and one for the
# tests, each failure named, so that the last lines of a long log say what
# went wrong and where the time went.
import collections, glob, json, os, sys
summary, builds, total = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
print(f"\nminutes per step ({total / 60:.1f} in all; the vm lane runs beside the others):")
for line in open(os.path.join(summary, "steps.tsv")):
    name, t0, t1, rc = line.rstrip("\n").split("\t")
    print(f"  {name:<42} {int(t0) / 60:5.1f} to {int(t1) / 60:5.1f}: {(int(t1) - int(t0)) / 60:5.1f}"
          + ("" if rc == "0" else f"  (status {rc})"))

def records(log):
    for line in open(log):
        yield json.loads(line)

suites = collections.defaultdict(float)
for b in builds:
    for log in glob.glob(os.path.join(summary, f"{b}-*.json")):
        if log.endswith("-benchmarks.json"):
            continue
        for r in records(log):
            suite = r["name"].split(" / ")[0].split(":")[-1]
            suites[(b, suite)] += r.get("duration") or 0
if suites:
    print("minutes per suite (the sum of its tests'):")
    for (b, suite), secs in sorted(suites.items(), key=lambda kv: -kv[1]):
        print(f"  {b + ' ' + suite:<42} {secs / 60:5.1f}")

def tally(logs, where):
    passed = failed = skipped = 0
    for log in logs:
        for r in records(log):
            if r["result"] in ("OK", "EXPECTEDFAIL"): passed += 1
            elif r["result"] == "SKIP": skipped += 1
            else:
                failed += 1
                print(f"FAILED: {where} {r['name']} ({r['result']}), its last lines:")
                for l in ((r.get("stdout") or "") + (r.get("stderr") or "")).splitlines()[-20:]: print(f"    {l}")
    return passed, failed, skipped

bp = bf = 0
if "plain" in builds:
    bench = os.path.join(summary, "plain-benchmarks.json")
    if os.path.exists(bench):
        bp, bf, _ = tally([bench], "benchmark")
    else:
        print("FAILED: the benchmarks left no log"); bf = 1
passed = failed = skipped = 0
expected = {"plain": ["tests", "vm", "packaging"], "asan": ["tests"], "tsan": ["tests"], "fuzz": ["fuzz"]}
for b in builds:
    for name in expected[b]:
        log = os.path.join(summary, f"{b}-{name}.json")
        if not os.path.exists(log):
            print(f"FAILED: {b} {name} left no test log")
            failed += 1
            continue
        p, f, s = tally([log], b)
        passed, failed, skipped = passed + p, failed + f, skipped + s
print(f"benchmarks: {bp} passed, {bf} failed")
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
ci = os.environ.get("CI") == "true"
sys.exit(1 if bf or failed or (ci and skipped) else 0)
PY
exit $status
