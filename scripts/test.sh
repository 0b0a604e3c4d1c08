#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite, then the
# sanitizer, fuzzing and packaging phases, one after another (the main
# suite's timing tests never share the 2 cores with a build):
#   1. main      build/: `meson test` (every suite)
#   2. asan      build-asan: ASan+UBSan set      (scripts/sanitize.sh asan)
#   3. tsan      build-tsan: TSan engine set     (scripts/sanitize.sh tsan)
#   4. fuzz      build-fuzz: each fuzz target FUZZ_SECONDS s (default 15; scripts/fuzz.sh)
#   5. package   build-package, build-pip: pip install, .deb build, install and purge,
#                a C++ program against the installed tree (scripts/package.sh)
# Ends with one plain line "N passed, N failed, N skipped" over all phases
# (each sanitizer test, fuzz target and packaging test counts as one test); exits
# non-zero on any failure. TEST_PHASES="main fuzz" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
phases=(${TEST_PHASES:-main asan tsan fuzz package})
# ccache (scripts/setup.sh) keyed on paths relative to the tree: the
# packaging phase's pip build (build-pip, -O2 -g like build/) reuses the
# main build's objects.
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
status=0
declare -A logs=([main]=build/meson-logs/testlog.json [asan]=build-asan/meson-logs/testlog.json
                 [tsan]=build-tsan/meson-logs/testlog.json [fuzz]=build-fuzz/meson-logs/fuzzlog.json
                 [package]=build-package/meson-logs/packagelog.json)
timing=()
for phase in "${phases[@]}"; do
  start=$SECONDS
  rm -f "${logs[$phase]}"
  case $phase in
    main) bash scripts/build.sh && meson test -C build --print-errorlogs ;;
    asan|tsan) bash scripts/sanitize.sh "$phase" ;;
    fuzz) bash scripts/fuzz.sh "${FUZZ_SECONDS:-15}" ;;
    package) bash scripts/package.sh ;;
    *) echo "test.sh: unknown phase $phase"; false ;;
  esac || status=1
  timing+=("$phase $((SECONDS - start)) s")
done
echo "phase wall times: $(IFS=,; echo "${timing[*]}")"
python3 - "${phases[@]}" <<'PY' || status=1
import json, os, sys
logs = {"main": "build/meson-logs/testlog.json", "asan": "build-asan/meson-logs/testlog.json",
        "tsan": "build-tsan/meson-logs/testlog.json", "fuzz": "build-fuzz/meson-logs/fuzzlog.json",
        "package": "build-package/meson-logs/packagelog.json"}
passed = failed = skipped = 0
for phase in sys.argv[1:]:
    if not os.path.exists(logs[phase]):
        print(f"{phase}: no results (its build or setup failed)")
        failed += 1
        continue
    results = [json.loads(line) for line in open(logs[phase]) if line.strip()]
    p = sum(r["result"] in ("OK", "EXPECTEDFAIL") for r in results)
    s = sum(r["result"] == "SKIP" for r in results)
    passed, skipped, failed = passed + p, skipped + s, failed + len(results) - p - s
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
exit $status
