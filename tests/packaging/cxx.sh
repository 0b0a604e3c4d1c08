#!/usr/bin/env bash
# A 20-line C++ program (examples/hello/hello.cc) built against trainrun the
# four ways users build, each run with 2 ranks by that trainrun's launcher:
#   tests/packaging/cxx.sh TREE [PREFIX] [WORK]         an installed trainrun
#   tests/packaging/cxx.sh --build-tree BUILD [WORK]    a build tree, not installed
# (WORK, kept: the programs and logs; a scratch folder, removed, without it).
# TREE is a DESTDIR-style tree (`meson install --destdir TREE`, a Debian
# build's debian/tmp; / for the system) holding PREFIX (default /usr). Its
# .pc and CMake files find the prefix from their own place, so nothing here
# tells pkg-config where the tree lies but PKG_CONFIG_PATH. BUILD is a Meson
# build folder: BUILD/meson-uninstalled/trainrun-uninstalled.pc and
# BUILD/trainrunConfig.cmake, headers from the source tree.
#   pkg-config   g++ $(pkg-config --cflags --libs trainrun), and with --static
#   meson        dependency('trainrun', static: true): libcrypto.a linked in
#   cmake        find_package(trainrun) and trainrun::trainrun; when there is
#                a libtrainrun_torch.a, consumer_torch.cc with trainrun::torch too
# Each checks that it used the files meant (not another trainrun on the
# system). The .pc may name only public flags: no Open MPI .pc, no path to
# libgloo.so, no -I/usr/include, no -DTRAINRUN_*.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
program=$here/../../examples/hello/hello.cc
if [[ ${1:-} == --build-tree ]]; then
  build=$(realpath "$2")
  what="build tree $build"
  export PKG_CONFIG_PATH=$build/meson-uninstalled
  pc_file=$PKG_CONFIG_PATH/trainrun-uninstalled.pc
  cmake_prefix=$build
  cmake_dir=$build
  trainrun=$build/trainrun
  torch_lib=$build/integrations/libtorch/libtrainrun_torch.a
else
  tree=$(realpath "$1")
  prefix=${2:-/usr}
  libdir=${tree%/}$prefix/lib/$(gcc -print-multiarch)
  cmake_prefix=${tree%/}$prefix
  what="installed $cmake_prefix"
  export PKG_CONFIG_PATH=$libdir/pkgconfig
  pc_file=$PKG_CONFIG_PATH/trainrun.pc
  cmake_dir=$libdir/cmake/trainrun
  trainrun=$cmake_prefix/bin/trainrun
  torch_lib=$libdir/libtrainrun_torch.a
fi
if [[ -n ${3:-} ]]; then
  work=$(realpath -m "$3")
  rm -rf "$work" && mkdir -p "$work"
else
  work=$(mktemp -d /tmp/trainrun-cxx-XXXXXX)
  trap 'rm -rf "$work"' EXIT
fi
fail() { echo "cxx: $what: $*"; exit 1; }
echo "cxx: examples/hello against the $what"

used=$(pkg-config --path trainrun) || fail "pkg-config trainrun failed (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
[[ $used == "$pc_file" ]] || fail "pkg-config read $used, not $pc_file"
includedir=$(pkg-config --variable=includedir trainrun)
[[ -f $includedir/trainrun/trainrun.h ]] || fail "no trainrun/trainrun.h in the .pc's includedir $includedir"
if [[ -n ${tree:-} && $(realpath "$includedir") != "$(realpath "$cmake_prefix")"/* ]]; then
  fail "the .pc's includedir $includedir is outside $cmake_prefix"
fi
flags=$(pkg-config --cflags --libs trainrun)
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
[[ -f $torch_lib ]] && with_torch=ON
cmake -S "$here/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$cmake_prefix" -DWITH_TORCH=$with_torch \
  >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; fail "cmake configure failed"; }
found=$(sed -n 's/^trainrun_DIR:PATH=//p' "$work/cmake/CMakeCache.txt")
[[ $found -ef $cmake_dir ]] || fail "cmake found trainrun in $found, not $cmake_dir"
cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake build failed"; }
run2 cmake "$work/cmake/consumer"
if [[ $with_torch == ON ]]; then
  out=$("$trainrun" --local -np 2 "$work/cmake/consumer_torch" 2>&1) || fail "consumer_torch exited $?: $out"
  [[ $(grep -c '^\[[01]\] consumer_torch: rank [01]: weights match$' <<<"$out") == 2 ]] || fail "consumer_torch: $out"
  echo "cxx: cmake trainrun::torch: 2 ranks OK"
fi
