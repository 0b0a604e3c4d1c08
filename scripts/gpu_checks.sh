#!/usr/bin/env bash
# The GPU checks (issues 8 and 44), for a machine with an NVIDIA GPU that
# may lack apt and Debian's libraries. Build on Debian 12, pack, carry, run:
#
#   bash scripts/build.sh && bash scripts/gpu_checks.sh pack build [--without-nccl] [--python PY] [--out DIR]
#   # copy build/gpu-bundle (it holds this script too) to the GPU machine, then there:
#   bash gpu-bundle/gpu_checks.sh run gpu-bundle
#
# pack puts trainrun, conformance_cuda, allreduce_bench, engine_cuda_bench,
# staging_latency_bench and device_copy_bench (debug info stripped) in BUILD/gpu-bundle/bin,
# the ResNet-50 gradient sizes in BUILD/gpu-bundle/data, and the shared
# libraries `ldd` lists for them in BUILD/gpu-bundle/lib, except glibc's
# (the GPU machine's own are used; they must be glibc 2.36 or newer) and
# libcuda.so.1 (the driver belongs to the GPU machine). run uses the GPU
# machine's own library where ldconfig knows one of the same name (its
# libstdc++ may be newer, and its torch needs that), else the bundle's.
# libnccl.so.2 (200+ MB, loaded at run time, so ldd does not list it) goes
# in too unless --without-nccl is given; then the GPU machine's own NCCL
# 2.18+ is used (from ldconfig, or the nvidia-nccl wheel of its python3).
# --python PY adds the Python package trainrun in BUILD/gpu-bundle/python,
# its module _core compiled for PY's version (the GPU machine's python3
# with torch: its minor version must match PY's), tests/gpu's Python
# checks, and the sources of trainrun._c10d with scripts/build_c10d.py,
# which run builds against the GPU machine's own torch. --out DIR packs
# into DIR, not BUILD/gpu-bundle. run sets LD_LIBRARY_PATH to the bundle's
# libraries it uses and runs, in order:
#   1. trainrun --check-build              (NCCL version, CUDA driver, GPUs)
#   2. NCCL conformance, np=1               (--backend nccl, CUDA buffers)
#   3. tcp conformance with CUDA buffers, np=2 on one GPU (staged)
#   4. default routing takes NCCL           (no --backend; NCCL_DEBUG=VERSION shows NCCL started)
#   5. allreduce_bench --device cuda        (np=1 through NCCL; np=2 staged through the tcp backend)
#   6. device_copy_bench: packing a device fusion buffer three ways;
#      engine_cuda_bench: the engine's ResNet-50 step on CUDA tensors, fused
#      against unfused (np=1, NCCL), and fused and staged at np=2 (values checked)
#   7. staging_latency_bench, np=2 on one GPU: where a small staged
#      allreduce's time goes (and again under MPS when the machine has it)
#   8. with the Python package: trainrun.torch on CUDA tensors (every
#      collective, a side stream, one DistributedOptimizer step), np=1
#      through NCCL and np=2 staged through the tcp backend, with python3's torch;
#      trainrun._c10d built against that torch; torch.distributed's
#      backend "trainrun" on CUDA tensors (every collective, a side stream,
#      DDP steps), np=1 and np=2; DDP with "trainrun" beside "nccl", np=1
# (a check passes when its command exits 0 and its output matches, across lines)
# and ends with one line per check and "N passed, N failed"; exit 1 if any failed.
# Without a usable GPU (no driver, no device) run checks nothing, says why
# in one line and exits 77.
set -uo pipefail

usage() {
  echo "usage: $0 pack BUILD_DIR [--without-nccl] [--python PY] [--out DIR] | run BUNDLE_DIR [--max-bytes N]" >&2
  exit 2
}

# The Python package in BUNDLE/python/trainrun for interpreter PY: the
# build's .py files, and _core compiled and linked by the build's own
# commands with PY's headers and extension suffix. Prints the module's path.
pack_python() {
  local build=$1 py=$2 bundle=$3
  local suffix include own
  suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || exit 1
  include=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || exit 1
  own=$(cd "$build" && ls integrations/python/core/_core.cpython-*.so 2>/dev/null | head -1)
  [[ -n $own ]] || { echo "gpu_checks: $build has no trainrun._core: build with -Dpython=enabled" >&2; exit 1; }
  local module=integrations/python/core/_core$suffix
  if [[ $own != "$module" ]]; then
    mkdir -p "$build/$module.p"
    (cd "$build" && ninja -t commands "$own" | grep -F "$own" |
      sed "s#$(basename "$own")#_core$suffix#g; s#-I[^ ]*python3\.[0-9]*##g; s# -c # -I$include -c #" | bash -e) >&2 ||
      { echo "gpu_checks: cannot build trainrun._core for $py" >&2; exit 1; }
  fi
  mkdir -p "$bundle/python" && cp -r "$build/integrations/python/trainrun" "$bundle/python/" || exit 1
  rm -rf "$bundle/python/trainrun/"*.so "$bundle/python/trainrun/"*.p
  strip --strip-debug -o "$bundle/python/trainrun/_core$suffix" "$build/$module" || exit 1
  local root
  root=$(realpath "$(dirname "$0")/..")
  cp "$root"/tests/gpu/*.py "$root/tests/bench/gradient_set.py" "$bundle/python/" || exit 1
  # trainrun._c10d is built on the GPU machine, against its own torch.
  rm -f "$bundle/python/trainrun/"_c10d*
  mkdir -p "$bundle/c10d-src/integrations/python/core" "$bundle/c10d-src/lib/include" "$bundle/c10d-src/vocabulary" || exit 1
  cp -r "$root/integrations/torch_distributed" "$bundle/c10d-src/integrations/" &&
    cp "$root/integrations/python/core/core_group.h" "$bundle/c10d-src/integrations/python/core/" &&
    cp -r "$root/lib/include/trainrun" "$bundle/c10d-src/lib/include/" &&
    cp -r "$root/vocabulary/trainrun" "$bundle/c10d-src/vocabulary/" &&
    cp "$root/scripts/build_c10d.py" "$bundle/" || exit 1
  echo "$bundle/python/trainrun/_core$suffix"
}

pack() {
  local build=$1 with_nccl=$2 py=$3 bundle=$4
  rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" || exit 1
  local programs=("$build/trainrun" "$build/tests/conformance_cuda" "$build/examples/allreduce_bench"
    "$build/tests/bench/engine_cuda_bench" "$build/tests/bench/staging_latency_bench")
  for p in "${programs[@]}"; do
    [[ -x $p ]] || { echo "gpu_checks: $p is missing: build with CUDA found (meson -Dnccl=enabled)" >&2; exit 1; }
    strip --strip-debug -o "$bundle/bin/$(basename "$p")" "$p" || exit 1
  done
  # Built only where nvcc is (the build's summary says so): optional.
  if [[ -x $build/tests/bench/device_copy_bench ]]; then
    strip --strip-debug -o "$bundle/bin/device_copy_bench" "$build/tests/bench/device_copy_bench" || exit 1
  fi
  mkdir -p "$bundle/data" && cp "$(dirname "$0")/../tests/bench/resnet50_sizes.txt" "$bundle/data/" || exit 1
  local linked=("${programs[@]}")
  if [[ -n $py ]]; then
    local module
    module=$(pack_python "$build" "$py" "$bundle") || exit 1
    linked+=("$module")
  fi
  ldd "${linked[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|ld-linux*|libcuda.so.*) ;;
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
  if [[ $status -eq 0 ]] && grep -Ezq "$expect" <<<"$out"; then
    passed=$((passed + 1)); summary+=("PASS  $name")
  else
    failed=$((failed + 1)); summary+=("FAIL  $name (exit $status)")
  fi
}

# The staged latency again with MPS, which lets the ranks' contexts share
# the GPU at once; a diagnosis, not a check: not every machine may run it.
staging_under_mps() {
  local bin=$1
  if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "=== staged allreduce latency under MPS: no nvidia-cuda-mps-control here"
    return
  fi
  local pipes
  pipes=$(mktemp -d)
  if CUDA_MPS_PIPE_DIRECTORY=$pipes CUDA_MPS_LOG_DIRECTORY=$pipes nvidia-cuda-mps-control -d; then
    echo "=== staged allreduce latency under MPS"
    CUDA_MPS_PIPE_DIRECTORY=$pipes "$bin/trainrun" --local -np 2 --backend tcp \
      "$bin/staging_latency_bench" --iterations 500 2>&1
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipes nvidia-cuda-mps-control
  else
    echo "=== staged allreduce latency under MPS: the MPS daemon did not start"
  fi
  rm -rf "$pipes"
}

# trainrun.torch (Horovod's API) and torch.distributed's backend "trainrun"
# on CUDA tensors, with the GPU machine's python3 and torch.
run_python_checks() {
  local bundle=$1 bin=$1/bin python=$1/python
  local horovod=("$python/cuda_tensors_check.py")
  check "trainrun.torch, CUDA tensors, NCCL, np=1" "NCCL version [0-9.]+.*rank 0 of 1 \(tcp, cuda\): passed" \
    env NCCL_DEBUG=VERSION PYTHONPATH="$python" "$bin/trainrun" --local -np 1 python3 "${horovod[@]}"
  check "trainrun.torch, CUDA tensors, staged through the tcp backend, np=2" "rank 1 of 2 \(tcp, cuda\): passed" \
    env PYTHONPATH="$python" "$bin/trainrun" --local -np 2 --backend tcp python3 "${horovod[@]}"
  check "trainrun._c10d built against this machine's torch" "_c10d" \
    python3 "$bundle/build_c10d.py" "$bundle/c10d-src" "$python/trainrun"
  check "torch.distributed backend trainrun, CUDA tensors, NCCL, np=1" "c10d cuda: rank 0 of 1 .*passed" \
    env PYTHONPATH="$python" "$bin/trainrun" --local -np 1 python3 "$python/c10d_cuda_check.py"
  check "torch.distributed backend trainrun, CUDA tensors, staged through the tcp backend, np=2" \
    "c10d cuda: rank 1 of 2 .*passed" \
    env PYTHONPATH="$python" "$bin/trainrun" --local -np 2 --backend tcp python3 "$python/c10d_cuda_check.py"
  check "DDP on a GPU: backend trainrun beside nccl, np=1" "agree after the steps: yes" \
    env PYTHONPATH="$python" "$bin/trainrun" --local -np 1 python3 "$python/ddp_gpu_bench.py" \
    --sizes "$bundle/data/resnet50_sizes.txt"
}

run() {
  local bundle max_bytes=$2
  bundle=$(realpath "$1") || exit 1
  local bin=$bundle/bin
  # The bundle's libraries that this machine lacks (and the bundle's NCCL, if packed).
  local libs=$bundle/lib/used known
  known=$(ldconfig -p 2>/dev/null | awk 'NR > 1 {print $1}')
  rm -rf "$libs" && mkdir -p "$libs" || exit 1
  for lib in "$bundle"/lib/*.so*; do
    local name=${lib##*/}
    [[ $name != libnccl.so.2 ]] && grep -qxF "$name" <<<"$known" && continue
    ln -s "$lib" "$libs/$name"
  done
  echo "=== from the bundle: $(ls "$libs" | tr '\n' ' ')"
  if [[ ! -e $libs/libnccl.so.2 ]] && ! grep -qxF libnccl.so.2 <<<"$known"; then
    # The nvidia-nccl wheel that python3's torch loads, if any.
    local wheel
    wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
    [[ -e $wheel/libnccl.so.2 ]] && libs+=:$wheel
  fi
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
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
  check "tcp conformance with CUDA buffers, np=2" "rank 1 of 2 \(tcp, CUDA buffers\): passed" \
    "$bin/trainrun" --local -np 2 --backend tcp "$bin/conformance_cuda"
  check "default routing sends CUDA buffers to NCCL" "NCCL version [0-9.]+" \
    env NCCL_DEBUG=VERSION "$bin/trainrun" --local -np 1 "$bin/conformance_cuda" --test-case="allreduce*"
  check "allreduce_bench, CUDA buffers, NCCL, np=1" "busbw" \
    "$bin/trainrun" --local -np 1 --backend nccl "$bin/allreduce_bench" --device cuda --max-bytes "$max_bytes"
  check "allreduce_bench, CUDA buffers, staged through the tcp backend, np=2" "busbw" \
    "$bin/trainrun" --local -np 2 --backend tcp "$bin/allreduce_bench" --device cuda --max-bytes "$max_bytes"
  local sizes=$bundle/data/resnet50_sizes.txt
  if [[ -x $bin/device_copy_bench ]]; then
    check "device fusion copies: per copy, batched, the engine's kernel" "kernel" "$bin/device_copy_bench" "$sizes"
  fi
  check "engine, ResNet-50 step on CUDA tensors, fused against unfused, NCCL, np=1" "unfused / fused = " \
    "$bin/trainrun" --local -np 1 --backend nccl "$bin/engine_cuda_bench" "$sizes"
  check "engine, ResNet-50 step on CUDA tensors, staged through the tcp backend, np=2" "np=2, backend tcp" \
    "$bin/trainrun" --local -np 2 --backend tcp "$bin/engine_cuda_bench" "$sizes" --rounds 2 --steps 3
  check "staged allreduce latency, np=2 on one GPU" "copies, one rank at a time" \
    "$bin/trainrun" --local -np 2 --backend tcp "$bin/staging_latency_bench"
  staging_under_mps "$bin"
  if [[ -d $bundle/python ]]; then
    run_python_checks "$bundle"
  fi
  printf '%s\n' "${summary[@]}"
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
}

case ${1:-} in
  pack)
    [[ $# -ge 2 ]] || usage
    build=$2
    shift 2
    with_nccl=yes
    py=
    out=$build/gpu-bundle
    while [[ $# -gt 0 ]]; do
      case $1 in
        --without-nccl) with_nccl=no; shift ;;
        --python) [[ $# -ge 2 ]] || usage; py=$2; shift 2 ;;
        --out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
        *) usage ;;
      esac
    done
    pack "$build" "$with_nccl" "$py" "$out" ;;
  run)
    [[ $# -ge 2 ]] || usage
    run "$2" "$([[ ${3:-} == --max-bytes ]] && echo "${4:-256M}" || echo 256M)" ;;
  *) usage ;;
esac
