#!/usr/bin/env bash
# Sanitizer runs, CI's phases after the main suite (scripts/test.sh):
#   asan  build-asan, gcc -Db_sanitize=address,undefined: the unit tests,
#         the rendezvous server and its load test, conformance-tcp-np2, the
#         engine tests and the launcher integration tests (launcher, output,
#         strangers, bad_input, full-disk, closed_streams) and the elastic jobs (elastic)
#   tsan  build-tsan, gcc -Db_sanitize=thread: unit-engine, engine-tcp-np2, elastic
# Builds only what those tests run. Results: <dir>/meson-logs/testlog.json.
#   scripts/sanitize.sh [asan] [tsan]        (both when none is named)
# Reports stop the test at the first finding (halt_on_error); suppressions
# for uninstrumented third-party libraries only: tests/sanitizers/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."
phases=("$@")
((${#phases[@]})) || phases=(asan tsan)
supp=$PWD/tests/sanitizers
# Small builds: no LibTorch, NCCL, MPI or examples (none of these tests uses them).
# -O0 -g1: with the sanitizers, -O2 -g took 20x longer to compile the Beast
# server (772 s against 38 s for rendezvous/http_server.cc here); -g1 keeps
# function names and lines in reports.
common=(-Dtorch=disabled -Dc10d=disabled -Dnccl=disabled -Dmpi=disabled -Dexamples=false -Dman=false -Db_lundef=false
        -Doptimization=0 -Ddebug=false -Dc_args=-g1 -Dcpp_args=-g1)

declare -A sanitize=([asan]=address,undefined [tsan]=thread)
declare -A targets=(
  [asan]="trainrun tests/test-unit-rendezvous tests/test-unit-contract tests/test-unit-backends tests/test-unit-lib tests/test-unit-engine tests/test-unit-cli
          tests/test-rendezvous-server tests/rendezvous-load-test tests/conformance tests/engine_multirank
          tests/engine_program tests/test-engine-jobs tests/rank_program tests/test-launcher tests/test-output
          tests/test-unit-mesh tests/test-strangers tests/test-bad_input tests/elastic_program tests/test-elastic
          tests/test-full-disk tests/test-unit-process tests/test-closed_streams"
  [tsan]="trainrun tests/test-unit-engine tests/engine_multirank tests/elastic_program tests/test-elastic")
declare -A tests=(
  [asan]="unit-rendezvous unit-contract unit-backends unit-lib unit-engine unit-cli rendezvous-server rendezvous-load-1024
          conformance-tcp-np2 engine-tcp-np2 engine-jobs launcher output unit-mesh strangers bad_input elastic
          full-disk unit-process closed_streams"
  [tsan]="unit-engine engine-tcp-np2 elastic")

status=0
for phase in "${phases[@]}"; do
  dir=build-$phase
  rm -f "$dir/meson-logs/testlog.json"
  if [[ ! -f $dir/build.ninja ]]; then
    meson setup "$dir" -Db_sanitize="${sanitize[$phase]}" "${common[@]}" >"/tmp/trainrun-$phase-setup.log" 2>&1 ||
      { cat "/tmp/trainrun-$phase-setup.log"; status=1; continue; }
  fi
  start=$SECONDS
  # shellcheck disable=SC2086
  ninja -C "$dir" ${targets[$phase]} || { status=1; continue; }
  echo "sanitize: $phase build took $((SECONDS - start)) s"
  start=$SECONDS
  # shellcheck disable=SC2086
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ASAN_OPTIONS=detect_leaks=1 \
  LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0 \
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp \
    meson test -C "$dir" --no-rebuild --print-errorlogs --timeout-multiplier 3 ${tests[$phase]} || status=1
  echo "sanitize: $phase tests took $((SECONDS - start)) s"
done
exit $status
