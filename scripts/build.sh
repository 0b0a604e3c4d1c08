#!/usr/bin/env bash
# Configures (once) and builds trainrun in ./build. Extra arguments go to
# `meson setup` on the first run, e.g. scripts/build.sh -Dnccl=disabled.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f build/build.ninja ]]; then
  meson setup build --buildtype=debugoptimized "$@"
fi
ninja -C build
