#!/usr/bin/env bash
# The Debian packages installed, used and purged on this machine:
#   tests/packaging/apt.sh AREA        (root; AREA holds the .deb files of deb.sh)
# `apt-get install ./*.deb` (which may install nothing else), then through /usr/bin/trainrun
# a 2-rank job of python3-trainrun and the consumer program built against /usr
# (cxx.sh /), `python3 -m trainrun --version`; then `apt-get purge`: no package
# left, no file of theirs left, nothing new under /usr or /etc.
# Exit 77 when not root, or when trainrun packages are already installed (left alone).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
area=$(realpath "$1")
fail() { echo "apt: $*"; exit 1; }
[[ $(id -u) == 0 ]] || { echo "apt: needs root (apt-get install)"; exit 77; }
mapfile -t debs < <(ls "$area"/*.deb)
((${#debs[@]})) || fail "no .deb files in $area (tests/packaging/deb.sh first)"
packages=()
for deb in "${debs[@]}"; do packages+=("$(dpkg-deb -f "$deb" Package)"); done
if dpkg-query -W -f='${Status}\n' "${packages[@]}" 2>/dev/null | grep -q 'ok installed'; then
  echo "apt: some of ${packages[*]} already installed: not touching them"; exit 77
fi
version=$(dpkg-deb -f "${debs[0]}" Version)
snapshot() { find /usr /etc -xdev 2>/dev/null | LC_ALL=C sort; }
snapshot >"$area/files.before"

install=(apt-get install -y -q --no-install-recommends "${debs[@]}")
others=$("${install[@]}" -s | sed -n 's/^Inst \([^ ]*\) .*/\1/p' | grep -vxF -f <(printf '%s\n' "${packages[@]}") || true)
[[ -z $others ]] || fail "apt-get would install other packages too ($(echo $others)): run scripts/setup.sh"
start=$SECONDS
DEBIAN_FRONTEND=noninteractive "${install[@]}" \
  >"$area/apt-install.log" 2>&1 || { tail -20 "$area/apt-install.log"; fail "apt-get install ./*.deb failed"; }
echo "apt: apt-get install of ${packages[*]} took $((SECONDS - start)) s"
purge() { DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${packages[@]}" >"$area/apt-purge.log" 2>&1; }
trap 'purge || true' EXIT
dpkg -L "${packages[@]}" | LC_ALL=C sort -u >"$area/package-files"

out=$(cd / && env -u PYTHONPATH /usr/bin/python3 -m trainrun --version) || fail "python3 -m trainrun --version exited $?"
[[ $out == "trainrun ${version%%-*}" ]] || fail "python3 -m trainrun --version printed '$out', the package is $version"
[[ -f /usr/share/man/man1/trainrun.1.gz && -f /usr/share/man/man3/trainrun.3.gz ]] || fail "man pages missing"
out=$(cd / && env -u PYTHONPATH /usr/bin/trainrun --local -np 2 /usr/bin/python3 -c '
import torch, trainrun, trainrun.torch as hvd
hvd.init()
print("sum", hvd.allreduce(torch.tensor([hvd.rank() + 1.0]), op=hvd.Sum).item(), trainrun.__file__)' 2>&1) ||
  fail "2 ranks of python3-trainrun exited $?: $out"
[[ $(grep -c '^\[[01]\] sum 3.0 /usr/lib/python3/dist-packages/trainrun/__init__.py$' <<<"$out") == 2 ]] ||
  fail "2 ranks of python3-trainrun: $out"
echo "apt: 2 ranks of python3-trainrun through /usr/bin/trainrun: OK"
bash "$here/cxx.sh" / /usr "$area/cxx-system" | sed 's/^cxx:/apt: against \/usr:/'
((PIPESTATUS[0] == 0)) || fail "the consumer against /usr failed"

start=$SECONDS
purge || { tail -20 "$area/apt-purge.log"; fail "apt-get purge failed"; }
trap - EXIT
echo "apt: apt-get purge took $((SECONDS - start)) s"
left=$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null | grep -v 'not-installed$' || true)
[[ -z $left ]] || fail "packages left after purge: $left"
while read -r f; do
  [[ -e $f && ! -d $f ]] && fail "$f left after purge"
done <"$area/package-files"
snapshot >"$area/files.after"
new=$(comm -13 "$area/files.before" "$area/files.after")
[[ -z $new ]] || fail "new files under /usr or /etc after purge: $new"
echo "apt: apt-get purge leaves no package, no file of theirs, nothing new under /usr and /etc"
