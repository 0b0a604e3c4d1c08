#!/usr/bin/env bash
# Every "docs/design.md §N" (or §N.M) cited in the tree names a section
# that docs/design.md has ("## N." or "### N.M" headings), and nothing
# cites the design by its old name, "DESIGN §N", a file that was never in
# the repository. Prints each bad citation as file:line: text and exits 1.
# Usage: scripts/check_design_refs.sh [SOURCE_ROOT]
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2
design=docs/design.md
[[ -f $design ]] || { echo "$design: missing" >&2; exit 1; }
mapfile -t sections < <(sed -n 's/^###\? \([0-9][0-9.]*\) .*/\1/p' "$design" | sed 's/\.$//')
has_section() {
  local s
  for s in "${sections[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}
files() { git ls-files 2>/dev/null || find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||'; }
bad=0
while IFS= read -r hit; do
  file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
  for ref in $(grep -o 'docs/design\.md §[0-9][0-9.]*[0-9]\|docs/design\.md §[0-9]' <<<"$text" | sed 's/.*§//'); do
    has_section "$ref" || { echo "$file:$line: §$ref is not a section of $design: $text"; bad=1; }
  done
done < <(files | grep -v "^$design$" | xargs -d '\n' grep -n 'docs/design\.md §' 2>/dev/null)
while IFS= read -r hit; do
  echo "$hit  (cite docs/design.md §N)"; bad=1
done < <(files | grep -v "^$design$\|^scripts/check_design_refs.sh$" | xargs -d '\n' grep -n 'DESIGN §' 2>/dev/null)
exit $bad
