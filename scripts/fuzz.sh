#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang) in build-fuzz and runs
# each for SECONDS_PER_TARGET seconds (default 25) on a scratch copy of its
# seed corpus (tests/fuzz/corpus/<target>/ is never written). Prints one
# line per target and exits non-zero if any target crashed; crash inputs
# and logs stay under build-fuzz/fuzz-out/<target>/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      FUZZ_TARGETS="host_list auth" to pick
# Reproduce a crash: build-fuzz/tests/fuzz/fuzz_<target> <crash file>
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-25}
dir=build-fuzz

if [[ ! -f $dir/build.ninja ]]; then
  # Only the fuzz targets are built; the rest is configured as small as it goes.
  log=$(mktemp)
  if ! CC=clang CXX=clang++ meson setup "$dir" -Dfuzz=true -Dtests=false -Dexamples=false -Dman=false \
      -Dtorch=disabled -Dc10d=disabled -Dnccl=disabled -Dmpi=disabled -Dssh=disabled -Db_lundef=false >"$log" 2>&1; then
    cat "$log"; rm -f "$log"; exit 1
  fi
  rm -f "$log"
fi
mapfile -t all < <(ninja -C "$dir" -t targets all | sed -n 's|^tests/fuzz/fuzz_\([a-z0-9_]*\): .*|\1|p' | sort -u)
targets=(${FUZZ_TARGETS:-${all[@]}})
ninja -C "$dir" "${targets[@]/#/tests/fuzz/fuzz_}" >/dev/null || { ninja -C "$dir" "${targets[@]/#/tests/fuzz/fuzz_}"; exit 1; }

# One meson-testlog-like line per target, for scripts/test.sh's count.
results=$dir/meson-logs/fuzzlog.json
mkdir -p "$dir/meson-logs" && : >"$results"
failed=0
for t in "${targets[@]}"; do
  out=$dir/fuzz-out/$t
  rm -rf "$out" && mkdir -p "$out/corpus"
  [[ -d tests/fuzz/corpus/$t ]] && cp tests/fuzz/corpus/"$t"/* "$out/corpus/" 2>/dev/null
  start=$SECONDS
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$dir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus" >"$out/log" 2>&1
  rc=$?
  elapsed=$((SECONDS - start))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log" | tail -1)
  if ((rc == 0)); then
    echo "fuzz_$t: ${runs:-?} runs in $elapsed s (${rate:-?}/s), clean"
    result=OK
  else
    artifact=$(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null | head -1)
    summary=$(grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|FUZZ_CHECK failed' "$out/log")
    echo "fuzz_$t: CRASH after ${runs:-?} runs in $elapsed s: ${summary:-exit $rc}; input ${artifact:-?}; log $out/log"
    result=FAIL
    failed=1
  fi
  printf '{"name": "fuzz_%s", "result": "%s", "duration": %d}\n' "$t" "$result" "$elapsed" >>"$results"
done
exit $failed
