#!/usr/bin/env bash
# Keeps the documentation (docs/ and README.md) and the tree in step. Five
# checks:
#
# 1. Every "docs/design.md §N" (or §N.M) cited in the tree names a section
#    that docs/design.md has ("## N." or "### N.M" headings).
# 2. Nothing cites the design by its old name, "DESIGN §N", a file that was
#    never in the repository.
# 3. Every repository path that README.md or a file under docs/ names
#    exists. A path is
#    a token that starts with one of the repository's top-level folders and
#    a slash (`cli/job/job_state.h`, backends/tcp/, tests/conformance), in
#    backticks or plain text, and is not itself part of a longer path (the
#    "rendezvous/store.h" in "gloo/rendezvous/store.h" is Gloo's, not ours).
#    The token ends at the first character that cannot be in a path, and
#    trailing sentence punctuation is dropped; "tests/cli/<folder>" is read
#    as "tests/cli/". A name with braces, "lib/x/{a,b}.h", stands for each
#    of its expansions; one with * or ? for the tracked files it matches,
#    and needs at least one. A path exists when it is a tracked file, a
#    folder that holds one (with or without the trailing /), or a file
#    generated from a tracked "<path>.in" template.
# 4. Every bare file name that README.md or a file under docs/ writes alone
#    in backticks
#    (`cycle_status.h`, `meson.build`) is the name of a tracked file in some
#    folder, of a "<name>.in" template, or of a meson.build configure_file
#    output (`trainrun_config.h`). Name another project's file with its
#    project's folder (gloo/rendezvous/store.h) or without backticks.
# 5. README.md and docs/ speak to users, not to the project's tracker: no
#    "issue 30", "issues #12 and 14" or "the issue".
#
# Prints each failure as file:line: text and exits 1 if there is any.
# Usage: scripts/check_design_refs.sh [SOURCE_ROOT]
set -uo pipefail
cd "${1:-$(dirname "$0")/..}" || exit 2
design=docs/design.md
[[ -f $design ]] || { echo "$design: missing" >&2; exit 1; }

# The files of the tree: tracked ones, or (outside a git checkout, as in a
# release tarball) every file but build output.
files() { git ls-files 2>/dev/null || find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||'; }
mapfile -t tracked < <(files)
bad=0

# --- 1 and 2: section citations -------------------------------------------
mapfile -t sections < <(sed -n 's/^###\? \([0-9][0-9.]*\) .*/\1/p' "$design" | sed 's/\.$//')
has_section() {
  local s
  for s in "${sections[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}
while IFS= read -r hit; do
  file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
  for ref in $(grep -o 'docs/design\.md §[0-9][0-9.]*[0-9]\|docs/design\.md §[0-9]' <<<"$text" | sed 's/.*§//'); do
    has_section "$ref" || { echo "$file:$line: §$ref is not a section of $design: $text"; bad=1; }
  done
done < <(printf '%s\n' "${tracked[@]}" | grep -v "^$design$" | xargs -d '\n' grep -n 'docs/design\.md §' 2>/dev/null)
while IFS= read -r hit; do
  echo "$hit  (cite docs/design.md §N)"; bad=1
done < <(printf '%s\n' "${tracked[@]}" | grep -v "^$design$\|^scripts/check_design_refs.sh$" \
           | xargs -d '\n' grep -n 'DESIGN §' 2>/dev/null)

# --- 3: paths named in README.md and docs/ ----------------------------------
# The user documentation: README.md and every markdown file under docs/.
user_docs() { printf '%s\n' "${tracked[@]}" | grep '^docs/.*\.md$\|^README\.md$'; }
declare -A is_file=() is_dir=()
for f in "${tracked[@]}"; do
  is_file[$f]=1
  d=$f
  while [[ $d == */* ]]; do d=${d%/*}; is_dir[$d]=1; done
done
# Top-level folders, as an alternation for grep -E (dots escaped: .ci).
top=$(printf '%s\n' "${tracked[@]}" | grep / | cut -d/ -f1 | sort -u | sed 's/\./\\./g' | paste -sd'|')

# expand WORD: prints WORD with its first {a,b,...} group expanded, each
# expansion expanded again in turn, so "x/{a,b}.{h,cc}" gives four names.
expand() {
  local w=$1
  if [[ $w =~ ^([^{]*)\{([^{}]*)\}(.*)$ ]]; then
    local pre=${BASH_REMATCH[1]} alts=${BASH_REMATCH[2]} post=${BASH_REMATCH[3]} alt
    local IFS=,
    for alt in $alts; do expand "$pre$alt$post"; done
  else
    printf '%s\n' "$w"
  fi
}
# path_exists PATH: a tracked file, a folder of one, a generated file, or a
# glob that matches a tracked file.
path_exists() {
  local p=${1%/} f
  if [[ $p == *[*?]* ]]; then
    for f in "${tracked[@]}"; do
      # shellcheck disable=SC2053  # $p is a pattern on purpose
      [[ $f == $p || $f == $p/* ]] && return 0
    done
    return 1
  fi
  [[ $1 == */ ]] && { [[ -n ${is_dir[$p]:-} ]]; return; }
  [[ -n ${is_file[$p]:-} || -n ${is_dir[$p]:-} || -n ${is_file[$p.in]:-} ]]
}
while IFS= read -r doc; do
  while IFS= read -r hit; do
    line=${hit%%:*}; token=${hit#*:}
    token=${token#[^A-Za-z0-9_.]}                    # the character before the path
    while [[ $token == *[.,:\;] ]]; do token=${token%?}; done  # sentence punctuation after it
    if [[ $token == *'{'* ]]; then mapfile -t names < <(expand "$token"); else names=("$token"); fi
    for p in "${names[@]}"; do
      path_exists "$p" || { echo "$doc:$line: $p does not exist (named as $token)"; bad=1; }
    done
  done < <(grep -noE "(^|[^A-Za-z0-9_./-])($top)/[A-Za-z0-9_./{},*?-]*" "$doc")
done < <(user_docs)

# --- 4: bare file names in backticks in README.md and docs/ ------------------
declare -A is_name=()
for f in "${tracked[@]}"; do is_name[${f##*/}]=1; done
while IFS= read -r name; do is_name[$name]=1; done < <(printf '%s\n' "${tracked[@]}" | grep 'meson\.build$' \
  | xargs -d '\n' grep -ho "configure_file(.*output: *'[^']*'" 2>/dev/null | sed "s/.*output: *'\([^']*\)'/\1/")
# shellcheck disable=SC2016  # the backticks are literal
bare='`[A-Za-z0-9_.-]+\.(h|cc|cu|py|sh|json|in|build|txt|md)`'
while IFS= read -r doc; do
  while IFS=: read -r line name; do
    name=${name//\`/}
    [[ -n ${is_name[$name]:-} || -n ${is_name[$name.in]:-} ]] \
      || { echo "$doc:$line: no file is named $name"; bad=1; }
  done < <(grep -noE "$bare" "$doc")
done < <(user_docs)

# --- 5: no talk of the issue tracker in README.md and docs/ -------------------
while IFS= read -r doc; do
  while IFS= read -r hit; do
    echo "$doc:$hit  (say what the reader needs, not which issue asked for it)"; bad=1
  done < <(grep -niE '\bissues? *#?[0-9]+|\bthe issue\b' "$doc")
done < <(user_docs)
exit $bad
