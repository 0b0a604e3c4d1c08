#!/usr/bin/env bash
# CI's "package" phase (scripts/test.sh): each install path of
# docs/install.md, end to end, in build-package/ (outside git):
#   pip   tests/packaging/pip.sh: pip install --no-build-isolation . into a
#         venv, the MNIST example with 2 ranks, pip wheel, pip uninstall
#   deb   tests/packaging/deb.sh: dpkg-buildpackage -us -uc -b on a copy of the tree
#   cxx   tests/packaging/cxx.sh: a C++ program against the tree the Debian
#         build installed (pkg-config static and shared, Meson, CMake), 2 ranks each
#   apt   tests/packaging/apt.sh: apt-get install ./*.deb, 2-rank jobs, apt-get purge
# One line per test with its time; results in build-package/meson-logs/packagelog.json
# for scripts/test.sh's count; exits non-zero if any failed.
#   scripts/package.sh [pip] [deb] [cxx] [apt]        (all when none is named)
set -uo pipefail
cd "$(dirname "$0")/.."
area=$PWD/build-package
tests=("$@")
((${#tests[@]})) || tests=(pip deb cxx apt)
results=$area/meson-logs/packagelog.json
mkdir -p "$area/meson-logs" && : >"$results"
failed=0
deb_failed=0
for t in "${tests[@]}"; do
  if [[ $t == cxx || $t == apt ]] && ((deb_failed)); then
    echo "package: $t FAIL: it needs the deb build, which failed"
    printf '{"name": "package-%s", "result": "FAIL", "duration": 0}\n' "$t" >>"$results"
    failed=1
    continue
  fi
  case $t in
    pip) command=(bash tests/packaging/pip.sh "$area") ;;
    deb) command=(bash tests/packaging/deb.sh "$area") ;;
    cxx) command=(bash tests/packaging/cxx.sh "$area/src/debian/tmp" /usr "$area/cxx") ;;
    apt) command=(bash tests/packaging/apt.sh "$area") ;;
    *) echo "package.sh: unknown test $t (pip, deb, cxx, apt)"; failed=1; continue ;;
  esac
  start=$SECONDS
  "${command[@]}" 2>&1 | tee "$area/$t.log"
  rc=${PIPESTATUS[0]}
  elapsed=$((SECONDS - start))
  case $rc in
    0) result=OK ;;
    77) result=SKIP ;;
    *) result=FAIL; failed=1; [[ $t == deb ]] && deb_failed=1 ;;
  esac
  echo "package: $t $result in $elapsed s"
  printf '{"name": "package-%s", "result": "%s", "duration": %d}\n' "$t" "$result" "$elapsed" >>"$results"
done
exit $failed
