#!/usr/bin/env bash
# Builds the Debian packages from a copy of the tree, outside it:
#   tests/packaging/deb.sh AREA
# copies the files git knows (tracked and untracked, not ignored) into
# AREA/src, runs `dpkg-buildpackage -us -uc -b` there, and leaves the .deb
# files in AREA (dpkg writes them next to the source) and the installed tree
# in AREA/src/debian/tmp (cxx.sh builds against it). Prints each package's
# installed size. Exit 77 when dpkg-buildpackage is missing.
set -euo pipefail
area=$(realpath -m "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v dpkg-buildpackage >/dev/null || { echo "deb: dpkg-buildpackage missing (Debian: dpkg-dev debhelper)"; exit 77; }

rm -rf "$area/src" "$area"/*.deb "$area"/*.changes "$area"/*.buildinfo
mkdir -p "$area/src"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - 2>/dev/null) |
  tar -xf - -C "$area/src"
# debhelper gives the build its own HOME: name the compiler cache (scripts/setup.sh) explicitly.
if command -v ccache >/dev/null && [[ -z ${CCACHE_DIR:-} ]]; then
  export CCACHE_DIR=$(ccache -k cache_dir)
fi
cd "$area/src"
# -J: debhelper builds with one job unless DEB_BUILD_OPTIONS says parallel=N.
nice dpkg-buildpackage -us -uc -b -J"$(nproc)" >"$area/dpkg-buildpackage.log" 2>&1 ||
  { tail -40 "$area/dpkg-buildpackage.log"; echo "deb: dpkg-buildpackage failed, log $area/dpkg-buildpackage.log"; exit 1; }
cd "$area"
for deb in *.deb; do
  printf 'deb: %-50s %6s KiB installed, %6s KiB file\n' "$deb" "$(dpkg-deb -f "$deb" Installed-Size)" \
    "$(( $(stat -c %s "$deb") / 1024 ))"
done
