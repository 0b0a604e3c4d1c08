#!/usr/bin/env bash
# Every descriptor has one owner and every child one way to start (issue 24):
# close(2) is called only by UniqueFd (os/unique_fd.h) and fork/exec
# only by the subprocess helper (cli/process/subprocess.cc). Lists each other
# call in os/, contract/, rendezvous/, backends/, lib/, integrations/ and
# cli/ and exits 1 if there is any.
# Usage: scripts/check_descriptors.sh [ROOT]   (default: this repository)
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 2
status=0
# close(2) takes the descriptor: a member's close() (a stream's, UniqueFd's
# own) has no argument. Comment lines do not count.
closes=$(grep -rnE '(^|[^A-Za-z0-9_.>])(::)?close\(\s*[^) ]' --include=*.cc --include=*.h os contract rendezvous backends lib integrations cli |
         grep -vE '^os/unique_fd\.h:|^[^:]+:[0-9]+:\s*//')
if [[ -n "$closes" ]]; then
  echo "close(2) outside UniqueFd (os/unique_fd.h); own the descriptor with a UniqueFd instead:"
  echo "$closes"
  status=1
fi
spawns=$(grep -rnE '(^|[^A-Za-z0-9_])(::)?(fork|vfork|posix_spawnp?|exec[lv]p?e?)\(' --include=*.cc --include=*.h \
           os contract rendezvous backends lib integrations cli | grep -vE '^cli/process/subprocess\.cc:|^[^:]+:[0-9]+:\s*//')
if [[ -n "$spawns" ]]; then
  echo "fork/exec outside cli/process/subprocess.cc; start the child with spawn() instead:"
  echo "$spawns"
  status=1
fi
exit $status
