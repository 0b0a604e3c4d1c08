#!/usr/bin/env bash
# The pip install path (docs/install.md), end to end:
#   tests/packaging/pip.sh AREA
# 1. a venv made with --system-site-packages (Debian's torch) gets
#    `pip install --no-build-isolation .` (meson-python; build dir
#    build-pip beside build/ and -Ddebug=true, -O2 -g as build/, so that
#    ccache hands it the main build's objects (scripts/test.sh); `pip
#    wheel` reuses it; the installed files are stripped either way)
# 2. pip show, importlib.metadata.version == meson.build's version, the
#    venv's bin/trainrun, `python -m trainrun --version`
# 3. examples/pytorch/mnist.py (1 epoch) with 2 ranks through the venv's trainrun
# 4. torch.distributed's backend "trainrun" (trainrun._c10d, built where
#    LibTorch and libtorch_python are found: Debian's libtorch-dev): a 2-rank
#    init_process_group("trainrun") + all_reduce through the venv's trainrun;
#    and the one-line ImportError of a build without it, from the installed
#    package less trainrun._c10d (the only file such a build leaves out), so
#    without a second build
# 5. `pip wheel .` installs (--no-index) into a second venv, where 2 ranks allreduce
# 6. `pip uninstall -y trainrun` leaves each venv's files as they were before
# Needs /usr/bin/python3 with torch (python3-torch, python3-venv, python3-mesonpy)
# libtorch-dev, and data/mnist/mnist.bin (scripts/setup.sh, scripts/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
area=$(realpath -m "$1")
python=/usr/bin/python3
data=$root/data/mnist/mnist.bin
fail() { echo "pip: $*"; exit 1; }
[[ -f $data ]] || fail "$data missing: run scripts/setup.sh and scripts/build.sh first"
$python -c 'import mesonpy' 2>/dev/null || fail "meson-python missing for $python (Debian: python3-mesonpy)"
unset PYTHONPATH
version=$(meson introspect "$root/meson.build" --projectinfo | $python -c 'import json, sys; print(json.load(sys.stdin)["version"])')
mkdir -p "$area"
build=(--config-settings=builddir="$root/build-pip" --config-settings=setup-args=-Ddebug=true)
# meson-python 0.12 reconfigures a build dir it does not find when its native
# file is already there (and fails): a first build starts without it.
[[ -f $root/build-pip/build.ninja ]] || rm -f "$root/.mesonpy-native-file.ini"
rm -rf "$area/venv" "$area/venv2" "$area/wheels"

files() { find "$1" | LC_ALL=C sort; }
make_venv() {  # DIR: a venv over Debian's interpreter and packages, and its file list
  $python -m venv --system-site-packages "$1"
  "$1/bin/pip" --version >/dev/null
  files "$1" >"$1.before"
}
uninstall() {  # DIR: pip uninstall leaves the venv as it was
  "$1/bin/pip" uninstall -y trainrun >/dev/null || fail "pip uninstall failed in $1"
  files "$1" >"$1.after"
  left=$(comm -13 "$1.before" "$1.after")
  [[ -z $left ]] || fail "pip uninstall left files in $1: $left"
}

make_venv "$area/venv"
venv=$area/venv
start=$SECONDS
(cd "$root" && nice "$venv/bin/pip" install --no-build-isolation "${build[@]}" . \
  >"$area/pip-install.log" 2>&1) || { tail -30 "$area/pip-install.log"; fail "pip install failed"; }
echo "pip: pip install --no-build-isolation . took $((SECONDS - start)) s; installed $(du -sk --exclude='*/__pycache__' \
  "$venv/bin/trainrun" "$venv"/lib/python3*/site-packages/trainrun | awk '{s += $1} END {print s}') KiB"

out=$("$venv/bin/pip" show trainrun) || fail "pip show trainrun exited $?"
grep -qx "Version: $version" <<<"$out" || fail "pip show does not say Version: $version: $out"
got=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("trainrun"))')
[[ $got == "$version" ]] || fail "importlib.metadata.version('trainrun') is $got, meson.build says $version"
where=$(cd / && "$venv/bin/python" -c 'import trainrun; print(trainrun.__file__)')
[[ $where == "$venv"/lib/python3*/site-packages/trainrun/__init__.py ]] || fail "trainrun imported from $where"
[[ -x $venv/bin/trainrun ]] || fail "no $venv/bin/trainrun"
out=$("$venv/bin/python" -m trainrun --version) || fail "python -m trainrun --version exited $?"
[[ $out == "trainrun $version" ]] || fail "python -m trainrun --version printed '$out'"
echo "pip: pip show, importlib.metadata, python -m trainrun, $venv/bin/trainrun: OK"

start=$SECONDS
out=$(cd / && "$venv/bin/trainrun" --local -np 2 "$venv/bin/python" "$root/examples/pytorch/mnist.py" --epochs 1 \
  --data "$data" 2>&1) || fail "mnist.py with 2 ranks exited $?: $out"
accuracy=$(sed -n 's/^\[0\] accuracy \([0-9.]*\)$/\1/p' <<<"$out")
$python -c "import sys; sys.exit(not float('${accuracy:-0}') >= 0.9)" || fail "mnist.py accuracy '${accuracy}' < 0.9: $out"
echo "pip: examples/pytorch/mnist.py, 2 ranks through $venv/bin/trainrun: accuracy $accuracy ($((SECONDS - start)) s)"

start=$SECONDS
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
compgen -G "$site/trainrun/_c10d.*.so" >/dev/null ||
  fail "no trainrun._c10d in $site/trainrun: LibTorch with libtorch_python not found? (Debian: libtorch-dev; see $area/pip-install.log)"
cat >"$area/c10d_allreduce.py" <<'PY'
import sys

import torch
import torch.distributed as dist

import trainrun._c10d
import trainrun.torch.distributed  # noqa: F401 registers the backend "trainrun"

dist.init_process_group("trainrun")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.tensor([rank + 1.0, 10.0 * (rank + 1)])
dist.all_reduce(t)
expected = torch.tensor([size * (size + 1) / 2, 5.0 * size * (size + 1)])
print(f"c10d {dist.get_backend()} rank {rank} of {size}: {t.tolist()} from {trainrun._c10d.__file__}")
sys.exit(0 if torch.equal(t, expected) else 3)
PY
out=$(cd / && "$venv/bin/trainrun" --local -np 2 "$venv/bin/python" "$area/c10d_allreduce.py" 2>&1) ||
  fail "init_process_group(\"trainrun\") + all_reduce with 2 ranks exited $?: $out"
[[ $(grep -c "^\[[01]\] c10d trainrun rank [01] of 2: \[3.0, 30.0\] from $site/trainrun/_c10d\." <<<"$out") == 2 ]] ||
  fail "init_process_group(\"trainrun\") + all_reduce with 2 ranks: $out"
echo "pip: torch.distributed backend trainrun, 2 ranks all_reduce through $venv/bin/trainrun: OK ($((SECONDS - start)) s)"
# A build without trainrun._c10d installs the same package less that file.
rm -rf "$area/without-c10d" && mkdir "$area/without-c10d"
cp -r "$site/trainrun" "$area/without-c10d/" && rm "$area"/without-c10d/trainrun/_c10d.*.so
out=$(cd / && PYTHONPATH=$area/without-c10d "$venv/bin/python" -c '
import sys
import trainrun
assert trainrun.__file__.startswith(sys.argv[1]), trainrun.__file__
try:
    import trainrun.torch.distributed
except ImportError as e:
    sys.exit(f"{type(e).__name__}: {e}" + ("" if e.__suppress_context__ else " (and a chained traceback)"))' \
  "$area/without-c10d/" 2>&1) && fail "import trainrun.torch.distributed without trainrun._c10d worked"
[[ $out == "ImportError: this trainrun was built without torch support "*"pip install"*-Dc10d=enabled &&
   $out != *$'\n'* ]] || fail "import trainrun.torch.distributed without trainrun._c10d: not one ImportError line: $out"
rm -rf "$area/without-c10d"
echo "pip: without trainrun._c10d, import trainrun.torch.distributed says: ${out#ImportError: }"

start=$SECONDS
(cd "$root" && nice "$venv/bin/pip" wheel --no-build-isolation --no-deps "${build[@]}" \
  -w "$area/wheels" . >"$area/pip-wheel.log" 2>&1) || { tail -30 "$area/pip-wheel.log"; fail "pip wheel failed"; }
wheel=$(ls "$area"/wheels/trainrun-"$version"-*.whl)
echo "pip: pip wheel took $((SECONDS - start)) s: $(basename "$wheel"), $(( $(stat -c %s "$wheel") / 1024 )) KiB"
make_venv "$area/venv2"
"$area/venv2/bin/pip" install --no-index --no-deps "$wheel" >/dev/null || fail "the wheel does not install"
out=$(cd / && "$area/venv2/bin/trainrun" --local -np 2 "$area/venv2/bin/python" -c '
import torch, trainrun.torch as hvd
hvd.init()
print("sum", hvd.allreduce(torch.tensor([hvd.rank() + 1.0]), op=hvd.Sum).item())' 2>&1) ||
  fail "2 ranks from the wheel's venv exited $?: $out"
[[ $(grep -c '^\[[01]\] sum 3.0$' <<<"$out") == 2 ]] || fail "2 ranks from the wheel's venv: $out"
echo "pip: the wheel installs into another venv; 2 ranks allreduce there"

uninstall "$area/venv2"
uninstall "$venv"
echo "pip: pip uninstall -y trainrun leaves both venvs as they were"
