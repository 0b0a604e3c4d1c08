#!/usr/bin/env bash
# A 20-line C++ program (examples/hello/hello.cc) built against an installed
# trainrun the four ways users build, each run with 2 ranks by the installed
# trainrun:
#   tests/packaging/cxx.sh TREE [PREFIX] [WORK]
# TREE is a DESTDIR-style tree (`meson install --destdir TREE`, a Debian
# build's debian/tmp; / for the system) holding PREFIX (default /usr).
#   pkg-config   g++ $(pkg-config --cflags --libs trainrun), and with --static
#   meson        dependency('trainrun', static: true): libcrypto.a linked in
#   cmake        find_package(trainrun) and trainrun::trainrun; when the tree
#                has libtrainrun_torch.a, consumer_torch.cc with trainrun::torch too
# The .pc may name only public flags: no Open MPI .pc, no path to
# libgloo.so, no -I/usr/include, no -DTRAINRUN_*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
program=$here/../../examples/hello/hello.cc
tree=$(realpath "$1")
prefix=${2:-/usr}
work=$(realpath -m "${3:-$(mktemp -d)}")
libdir=$prefix/lib/$(gcc -print-multiarch)
root=${tree%/}$prefix
trainrun=$root/bin/trainrun
rm -rf "$work" && mkdir -p "$work"
export PKG_CONFIG_PATH=${tree%/}$libdir/pkgconfig
[[ $tree == / ]] || export PKG_CONFIG_SYSROOT_DIR=$tree
fail() { echo "cxx: $*"; exit 1; }

flags=$(pkg-config --cflags --libs trainrun) || fail "pkg-config trainrun failed (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
static_flags=$(pkg-config --static --cflags --libs trainrun)
echo "cxx: pkg-config --static --cflags --libs trainrun: $static_flags"
for bad in ompi libgloo.so '-I/usr/include ' '-I/usr/include$' -DTRAINRUN -DOMPI; do
  grep -Eq -- "$bad" <<<"$static_flags" && fail "pkg-config leaks '$bad': $static_flags"
done

run2() {  # NAME BINARY: 2 ranks through the installed trainrun
  local out
  out=$("$trainrun" --local -np 2 "$2" 2>&1) || fail "$1: trainrun -np 2 exited $?: $out"
  for r in 0 1; do
    grep -Eq "^\[$r\] hello from rank $r of 2 .* = 3$" <<<"$out" || fail "$1: rank $r's line missing: $out"
  done
  echo "cxx: $1: 2 ranks OK"
}

# shellcheck disable=SC2086
g++ -std=c++17 -o "$work/pc-shared" "$program" $flags || fail "pkg-config link failed"
run2 pkg-config "$work/pc-shared"
# shellcheck disable=SC2086
g++ -std=c++17 -o "$work/pc-static" "$program" $static_flags || fail "pkg-config --static link failed"
run2 "pkg-config --static" "$work/pc-static"

meson setup "$work/meson" "$here/consumer" >"$work/meson.log" 2>&1 || { cat "$work/meson.log"; fail "meson setup failed"; }
ninja -C "$work/meson" >>"$work/meson.log" 2>&1 || { cat "$work/meson.log"; fail "meson build failed"; }
if ldd "$work/meson/consumer" | grep -q libcrypto; then fail "meson static: true still links libcrypto.so"; fi
run2 "meson static" "$work/meson/consumer"

with_torch=OFF
[[ -f ${tree%/}$libdir/libtrainrun_torch.a ]] && with_torch=ON
cmake -S "$here/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$root" -DWITH_TORCH=$with_torch \
  >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "cmake configure failed"; }
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake build failed"; }
run2 cmake "$work/cmake/consumer"
if [[ $with_torch == ON ]]; then
  out=$("$trainrun" --local -np 2 "$work/cmake/consumer_torch" 2>&1) || fail "consumer_torch exited $?: $out"
  [[ $(grep -c '^\[[01]\] consumer_torch: rank [01]: weights match$' <<<"$out") == 2 ]] || fail "consumer_torch: $out"
  echo "cxx: cmake trainrun::torch: 2 ranks OK"
fi
