#!/usr/bin/env bash
# Installs what trainrun needs to build and test on Debian 12, and only what
# is missing: when everything is present it runs no apt command at all.
# Run as root (or with sudo). Idempotent.
set -euo pipefail

packages=(
  # build
  g++ meson ninja-build pkg-config cmake python3
  # libraries (DESIGN §6)
  libcli11-dev libboost-dev libssl-dev libgloo-dev libopenmpi-dev doctest-dev
  # tests and benchmarks
  procps openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi
