#!/usr/bin/env bash
# Builds pfmfs and runs every test: unit, mount (integration) and libpfm
# tests in a plain build (with the benchmarks once, as a check that they run),
# in an ASan/UBSan build and in a TSan build; the parsers' libFuzzer targets
# in a clang build (suite fuzz, tests/fuzz/); and, in the plain build, PAPI's
# perfmon2 component built from Debian's source (suite papi, tests/papi/), the
# helper module's tests and the mount tests on the x86 backend in a QEMU
# guest (suite vm, tests/vm/). Ends with the
# lines "benchmarks: N passed, M failed" and "tests: N passed, M failed, K
# skipped", after one naming each failure; exits non-zero on any failure, and
# on any skip when CI=true (CI must run every test).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
tests/vm/install-deps.sh  # QEMU, Debian's kernel and its headers, for suite vm
tests/papi/install-deps.sh  # deb-src lines and a C/Fortran toolchain: PAPI's source, for suite papi

setup() {  # setup DIR [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir"
}

status=0
run() {  # run DIR [meson test options...]
  local dir=$1; shift
  # The summary below counts every JSON log a run leaves (its name depends on
  # the options), so a run starts with none.
  rm -f "$dir"/meson-logs/*.json
  meson test -C "$dir" --print-errorlogs "$@" || status=1
}

setup build
# Benchmarks first; their log is kept aside, since the unit run after them
# starts with an empty log folder, and the summary reports them on a line
# of their own.
run build --benchmark --verbose
mkdir -p build/summary
cp build/meson-logs/testlog.json build/summary/benchmarks.json 2>/dev/null || rm -f build/summary/benchmarks.json
run build --suite unit --suite integration --suite libpfm --suite papi --suite vm --suite packaging

# The integration tests mount this build's pfmfsd, so the daemon itself runs
# under ASan/UBSan here, with every mount test driving it.
setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  run build-asan --suite unit --suite integration --suite libpfm

# The same again under TSan: the daemon's FUSE workers, ticker and watchers
# race each other under every mount test, and the library's notifier threads
# under the C programs. TSan maps shadow memory at fixed places; without ASLR
# (setarch -R, which the daemons and programs the tests start inherit) it
# works whatever the kernel's mmap randomisation.
setup build-tsan -Db_sanitize=thread
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  run build-tsan --suite unit --suite integration --suite libpfm --wrapper "setarch $(uname -m) -R"

# The libFuzzer targets of every parser (tests/fuzz/), in a clang build with
# ASan/UBSan: each oracle's committed corpus replayed, then a few seconds of
# fuzzing each.
CC=clang CXX=clang++ setup build-fuzz -Dfuzzers=true -Dtests=false -Db_sanitize=address,undefined -Db_lundef=false
run build-fuzz --suite fuzz

python3 - build build-asan build-tsan build-fuzz <<'PY' || status=1
# One line for the benchmarks and one for the tests, each failure named, so
# that the last lines of a long log say what went wrong.
import glob, json, os, sys
def tally(logs, where):
    passed = failed = skipped = 0
    for line in (l for log in logs for l in open(log)):
        r = json.loads(line)
        if r["result"] in ("OK", "EXPECTEDFAIL"): passed += 1
        elif r["result"] == "SKIP": skipped += 1
        else:
            failed += 1
            print(f"FAILED: {where} {r['name']} ({r['result']}), its last lines:")
            for l in ((r.get("stdout") or "") + (r.get("stderr") or "")).splitlines()[-6:]: print(f"    {l}")
    return passed, failed, skipped
bench = "build/summary/benchmarks.json"
if os.path.exists(bench):
    bp, bf, _ = tally([bench], "benchmark")
else:
    print("FAILED: the benchmarks left no log"); bp, bf = 0, 1
passed = failed = skipped = 0
for d in sys.argv[1:]:
    logs = glob.glob(os.path.join(d, "meson-logs", "*.json"))
    if not logs:
        print(f"FAILED: {d} left no test log")
        failed += 1
    p, f, s = tally(logs, d)
    passed, failed, skipped = passed + p, failed + f, skipped + s
print(f"benchmarks: {bp} passed, {bf} failed")
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
ci = os.environ.get("CI") == "true"
sys.exit(1 if bf or failed or (ci and skipped) else 0)
PY
exit $status
