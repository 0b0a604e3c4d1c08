#!/usr/bin/env bash
# scripts/gpu_checks.sh where there is no GPU: pack, with the Python package
# for Debian's python3, gives a bundle whose package loads from the bundle,
# and run says in one line that there is no GPU and exits 77 (what it does
# with a GPU: docs/gpus.md "GPU checks"). Usage: gpu_bundle.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
fail() { echo "FAIL: $*"; exit 1; }
[[ -x $build/tests/conformance_cuda ]] || { echo "skipped: the build has no NCCL backend (CUDA headers not found)"; exit 77; }
tmp=$(mktemp -d /tmp/trainrun-gpu-bundle-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bundle=$tmp/gpu-bundle

out=$(bash "$src/scripts/gpu_checks.sh" pack "$build" --without-nccl --python /usr/bin/python3 --out "$bundle" 2>&1) ||
  fail "pack: $out"
echo "$out"
for f in bin/trainrun bin/conformance_cuda bin/allreduce_bench bin/engine_cuda_bench bin/staging_latency_bench \
         data/resnet50_sizes.txt gpu_checks.sh build_c10d.py python/cuda_tensors_check.py python/c10d_cuda_check.py \
         python/ddp_gpu_bench.py python/trainrun/torch/mpi_ops.py c10d-src/integrations/torch_distributed/process_group.cc \
         c10d-src/integrations/python/core/core_group.h c10d-src/vocabulary/trainrun/types.h; do
  [[ -e $bundle/$f ]] || fail "not in the bundle: $f"
done
# trainrun._c10d is built on the GPU machine against its own torch, never carried.
! compgen -G "$bundle/python/trainrun/_c10d*" >/dev/null || fail "the bundle carries a trainrun._c10d"
for f in libnccl.so.2 libc.so.6 libcuda.so.1; do
  [[ ! -e $bundle/lib/$f ]] || fail "$f is in the bundle (the GPU machine's own is used)"
done
PYTHONPATH=$bundle/python /usr/bin/python3 -c '
import sys, trainrun._core as core
assert core.__file__.startswith(sys.argv[1] + "/"), core.__file__' "$bundle" || fail "trainrun._core does not load from the bundle"

out=$(bash "$bundle/gpu_checks.sh" run "$bundle" 2>&1)
status=$?
echo "$out"
if [[ $status -eq 0 ]]; then
  grep -q "^[0-9]* passed, 0 failed" <<<"$out" || fail "run exited 0 without its summary"
else
  [[ $status -eq 77 ]] || fail "run exited $status; without a GPU it exits 77"
  grep -q "^gpu_checks: no GPU here, nothing checked" <<<"$out" || fail "run did not say why it checked nothing"
fi
echo "gpu bundle: passed"
