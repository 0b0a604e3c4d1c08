#!/usr/bin/env bash
# The GPU checks of issue 8, for a machine with an NVIDIA GPU that may lack
# apt and Debian's libraries. Build on Debian 12, pack, carry, run:
#
#   bash scripts/build.sh && bash scripts/gpu_checks.sh pack build      # on the Debian machine
#   # copy build/gpu-bundle (it holds this script too) to the GPU machine, then there:
#   bash gpu-bundle/gpu_checks.sh run gpu-bundle
#
# pack puts trainrun, conformance_cuda and allreduce_bench (debug info
# stripped) in BUILD/gpu-bundle/bin and the shared libraries `ldd` lists for
# them in BUILD/gpu-bundle/lib, except glibc's (the GPU machine's own are
# used; they must be glibc 2.36 or newer) and libcuda.so.1 (the driver
# belongs to the GPU machine). libnccl.so.2 (200+ MB, loaded at run time,
# so ldd does not list it) goes in too unless --without-nccl is given; then
# the GPU machine's own NCCL 2.18+ is used. run sets LD_LIBRARY_PATH to the
# bundle's lib and runs, in order:
#   1. trainrun --check-build              (NCCL version, CUDA driver, GPUs)
#   2. NCCL conformance, np=1               (--backend nccl, CUDA buffers)
#   3. Gloo conformance with CUDA buffers, np=2 on one GPU (staged)
#   4. default routing takes NCCL           (no --backend; NCCL_DEBUG=VERSION shows NCCL started)
#   5. allreduce_bench --device cuda        (np=1 through NCCL; np=2 staged through Gloo)
# and ends with one line per check and "N passed, N failed"; exit 1 if any failed.
# Without a usable GPU (no driver, no device) run checks nothing, says why
# in one line and exits 77.
set -uo pipefail

usage() {
  echo "usage: $0 pack BUILD_DIR [--without-nccl] | run BUNDLE_DIR [--max-bytes N]" >&2
  exit 2
}

pack() {
  local build=$1 with_nccl=$2
  local bundle=$build/gpu-bundle
  rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" || exit 1
  local programs=("$build/trainrun" "$build/tests/conformance_cuda" "$build/examples/allreduce_bench")
  for p in "${programs[@]}"; do
    [[ -x $p ]] || { echo "gpu_checks: $p is missing: build with CUDA found (meson -Dnccl=enabled)" >&2; exit 1; }
    strip --strip-debug -o "$bundle/bin/$(basename "$p")" "$p" || exit 1
  done
  ldd "${programs[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so.*) ;;
      *) cp -L "$lib" "$bundle/lib/" ;;
    esac
  done
  if [[ $with_nccl == yes ]]; then
    # The NCCL the build itself loads, as --check-build names it.
    local nccl
    nccl=$("$build/trainrun" --check-build | sed -n 's/.*NCCL [0-9.]* (\(.*libnccl\.so\.2\)).*/\1/p')
    [[ -f $nccl ]] || { echo "gpu_checks: libnccl.so.2 not found; --check-build says: $("$build/trainrun" --check-build | grep nccl)" >&2; exit 1; }
    cp -L "$nccl" "$bundle/lib/libnccl.so.2" || exit 1
  fi
  cp "$0" "$bundle/gpu_checks.sh"
  echo "gpu_checks: packed $bundle ($(du -sh "$bundle" | cut -f1)): $(ls "$bundle/lib" | tr '\n' ' ')"
}

passed=0
failed=0
summary=()

# check NAME EXPECT_REGEX COMMAND...: passes when COMMAND exits 0 and its output matches.
check() {
  local name=$1 expect=$2
  shift 2
  echo "=== $name: $*"
  local out status
  out=$("$@" 2>&1)
  status=$?
  echo "$out"
  if [[ $status -eq 0 ]] && grep -Eq "$expect" <<<"$out"; then
    passed=$((passed + 1)); summary+=("PASS  $name")
  else
    failed=$((failed + 1)); summary+=("FAIL  $name (exit $status)")
  fi
}

run() {
  local bundle max_bytes=$2
  bundle=$(realpath "$1") || exit 1
  local bin=$bundle/bin
  export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export TRAINRUN_COLLECTIVE_TIMEOUT=300
  echo "=== host: $(uname -n), $(ldd --version | head -1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "(no nvidia-smi)"
  # Without a usable GPU every check would fail for the same reason: say it once.
  local nccl_line
  nccl_line=$("$bin/trainrun" --check-build 2>&1 | grep -aE '^\s*nccl')
  if ! grep -Eq "CUDA driver [0-9.]+, [1-9][0-9]* GPU" <<<"$nccl_line"; then
    echo "gpu_checks: no GPU here, nothing checked (trainrun --check-build:${nccl_line:- no nccl backend})"
    exit 77
  fi
  check "check-build shows NCCL and a GPU" "nccl.*NCCL [0-9.]+ .*CUDA driver [0-9.]+, [1-9][0-9]* GPU" \
    "$bin/trainrun" --check-build
  check "NCCL conformance, np=1" "conformance: rank 0 of 1 \(nccl, CUDA buffers\): passed" \
    "$bin/trainrun" --local -np 1 --backend nccl "$bin/conformance_cuda"
  check "Gloo conformance with CUDA buffers, np=2" "rank 1 of 2 \(gloo, CUDA buffers\): passed" \
    "$bin/trainrun" --local -np 2 --backend gloo "$bin/conformance_cuda"
  check "default routing sends CUDA buffers to NCCL" "NCCL version [0-9.]+" \
    env NCCL_DEBUG=VERSION "$bin/trainrun" --local -np 1 "$bin/conformance_cuda" --test-case="allreduce*"
  check "allreduce_bench, CUDA buffers, NCCL, np=1" "busbw" \
    "$bin/trainrun" --local -np 1 --backend nccl "$bin/allreduce_bench" --device cuda --max-bytes "$max_bytes"
  check "allreduce_bench, CUDA buffers, staged through Gloo, np=2" "busbw" \
    "$bin/trainrun" --local -np 2 --backend gloo "$bin/allreduce_bench" --device cuda --max-bytes "$max_bytes"
  printf '%s\n' "${summary[@]}"
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

case ${1:-} in
  pack)
    [[ $# -ge 2 ]] || usage
    pack "$2" "$([[ ${3:-} == --without-nccl ]] && echo no || echo yes)" ;;
  run)
    [[ $# -ge 2 ]] || usage
    run "$2" "$([[ ${3:-} == --max-bytes ]] && echo "${4:-256M}" || echo 256M)" ;;
  *) usage ;;
esac
