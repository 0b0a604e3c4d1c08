#!/usr/bin/env bash
# The backend conformance suite on the MPI backend under a real launcher:
#   mpi_conformance.sh plain|trainrun NP CONFORMANCE TRAINRUN
# plain:    mpirun -np NP CONFORMANCE   (no trainrun: the library must find
#           Open MPI by itself and pick the mpi backend)
# trainrun: trainrun --launcher mpirun -np NP CONFORMANCE
# Passes when every rank reports "passed" on the mpi backend. Exits 77 when
# mpirun is missing.
set -euo pipefail
mode=$1 np=$2 conformance=$3 trainrun=$4
command -v mpirun >/dev/null || { echo "SKIP: mpirun not found in PATH (Debian: apt-get install openmpi-bin)"; exit 77; }

case $mode in
  # As root (CI), Open MPI wants both variables; more ranks than cores needs --oversubscribe.
  plain) cmd=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
              mpirun --oversubscribe -np "$np" "$conformance") ;;
  trainrun) cmd=("$trainrun" --launcher mpirun -np "$np" "$conformance") ;;
  *) echo "usage: $0 plain|trainrun NP CONFORMANCE TRAINRUN"; exit 2 ;;
esac
echo "${cmd[*]}"
status=0
out=$("${cmd[@]}" 2>&1) || status=$?
for ((rank = 0; rank < np; ++rank)); do
  if ! grep -q "conformance: rank $rank of $np (mpi): passed$" <<<"$out"; then
    echo "$out" | tail -60
    echo "FAIL: rank $rank of $np did not pass on the mpi backend (exit status $status)"
    exit 1
  fi
done
[[ $status == 0 ]] || { echo "$out" | tail -40; echo "FAIL: exit status $status"; exit 1; }
echo "all $np ranks passed on the mpi backend"
