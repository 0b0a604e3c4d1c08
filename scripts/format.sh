#!/usr/bin/env bash
# Formats every tracked C++ file (.h, .cc) with clang-format and the
# repository's .clang-format (docs/design.md §7).
#   scripts/format.sh            rewrite the files in place
#   scripts/format.sh --check    change nothing; list the files that are not
#                                formatted and exit 1 if there is any
# FILE... after the mode limits it to those files. Exit 2: bad usage or no
# clang-format (scripts/setup.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
if [[ ${1:-} == -* ]]; then echo "usage: scripts/format.sh [--check] [FILE...]" >&2; exit 2; fi
command -v clang-format >/dev/null || { echo "scripts/format.sh: clang-format not found (scripts/setup.sh installs it)" >&2; exit 2; }
if (($#)); then files=("$@"); else mapfile -t files < <(git ls-files -- '*.h' '*.cc'); fi
((${#files[@]})) || exit 0
if ((!check)); then
  printf '%s\0' "${files[@]}" | xargs -0 -n 50 clang-format -i --style=file
  exit 0
fi
# clang-format --dry-run names each file it would change in its warnings.
mapfile -t unformatted < <(printf '%s\0' "${files[@]}" |
  xargs -0 -n 50 clang-format --style=file --dry-run 2>&1 |
  sed -n 's/^\(.*\):[0-9]*:[0-9]*: [a-z]*: code should be clang-formatted.*/\1/p' | sort -u)
((${#unformatted[@]})) || exit 0
echo "not formatted (scripts/format.sh fixes them):" >&2
printf '  %s\n' "${unformatted[@]}" >&2
exit 1
