#!/usr/bin/env bash
# Configures (once) and builds trainrun in ./build. Extra arguments go to
# `meson setup` on the first run, e.g. scripts/build.sh -Dnccl=disabled.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  meson setup build --buildtype=debugoptimized "$@"
fi
ninja -C build
# The MNIST digits, converted once (scripts/fetch_mnist.sh fetched them).
if [[ ! -f data/mnist/mnist.bin && -f data/mnist/package/src/digits/9.json && -x build/examples/mnist/mnist_convert ]]; then
  build/examples/mnist/mnist_convert data/mnist/package/src/digits data/mnist/mnist.bin
fi
