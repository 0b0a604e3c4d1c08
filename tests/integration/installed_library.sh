#!/usr/bin/env bash
# The library as a user gets it, installed where the build did not say:
# `meson install` into a scratch DESTDIR, then the prefix moved to another
# one (TMP/moved/opt/trainrun), so the .pc and CMake files must find it from
# their own place. Against it,
#   - the conformance program compiled with nothing but the installed
#     headers, libtrainrun.a and `pkg-config --static trainrun`, run by the
#     installed trainrun with 2 local ranks;
#   - examples/hello built with pkg-config, Meson and CMake
#     (tests/packaging/cxx.sh), 2 ranks each.
# Usage: installed_library.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
tmp=$(realpath "$(mktemp -d /tmp/trainrun-installed-XXXXXX)")
trap 'rm -rf "$tmp"' EXIT

DESTDIR="$tmp/destdir" meson install -C "$build" --no-rebuild --quiet >/dev/null
launcher=$(find "$tmp/destdir" -path '*/bin/trainrun')
[[ -n "$launcher" ]] || { echo "FAIL: meson install put no bin/trainrun"; exit 1; }
configured=${launcher#"$tmp/destdir"}
configured=${configured%/bin/trainrun}
root=$tmp/moved/opt/trainrun
mkdir -p "$(dirname "$root")" && mv "$tmp/destdir$configured" "$root"
pc=$(find "$root" -name trainrun.pc)
[[ -n "$pc" ]] || { echo "FAIL: meson install put no trainrun.pc"; exit 1; }
pc_prefix=$(pkg-config --variable=prefix "$pc")
[[ $(realpath "$pc_prefix") == "$root" ]] ||
  { echo "FAIL: trainrun.pc, moved from $configured to $root, says prefix=$pc_prefix"; exit 1; }
for f in "$root/bin/trainrun" "$root/include/trainrun/trainrun.h" "$root/share/man/man1/trainrun.1"; do
  [[ -e "$f" ]] || { echo "FAIL: not installed: $f"; exit 1; }
done
[[ -n "$(find "$root" -name libtrainrun.a)" ]] || { echo "FAIL: libtrainrun.a not installed"; exit 1; }

# Only the test's own files travel: no -I into the source tree.
mkdir -p "$tmp/src/tests/conformance"
cp "$src/tests/conformance/conformance.cc" "$src/tests/conformance/typed_buffer.h" \
   "$src/tests/conformance/every_rank_main.h" "$tmp/src/tests/conformance/"
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs --static trainrun)
echo "g++ conformance.cc $flags"
g++ -std=c++17 -O1 -I"$tmp/src" "$tmp/src/tests/conformance/conformance.cc" $flags -o "$tmp/conformance"

# Two ranks: the conformance suite runs it at 1-4 ranks from the build tree;
# this run proves the installed headers and library alone make it.
for np in 2; do
  out=$(TRAINRUN_COLLECTIVE_TIMEOUT=120 "$root/bin/trainrun" --local -np "$np" "$tmp/conformance" 2>&1) || {
    echo "$out" | tail -40
    echo "FAIL: conformance with np=$np"
    exit 1
  }
  passed=$(grep -c "conformance: rank .* passed$" <<<"$out" || true)
  [[ "$passed" == "$np" ]] || { echo "$out" | tail -20; echo "FAIL: $passed of $np ranks passed"; exit 1; }
  echo "np=$np: all $np ranks passed"
done

bash "$src/tests/packaging/cxx.sh" "$tmp/moved" /opt/trainrun "$tmp/consumers" ||
  { echo "FAIL: examples/hello against the install moved from $configured to $root"; exit 1; }
