#!/usr/bin/env bash
# Process sets (tests/conformance/process_sets.cc) under a real launcher:
#   process_sets.sh shm|tcp|mpi|death-shm|death-tcp NP PROGRAM TRAINRUN
# shm/tcp: trainrun --local on the tcp backend, ranks sharing memory or
#          (TRAINRUN_SHM=0) the TCP mesh; every rank must report "passed".
# mpi:     plain mpirun (exits 77 without mpirun).
# death-*: job rank 1 dies inside the odd ranks' set: rank 3, its peer
#          there, must fail naming rank 1 (no hang); ranks 0 and 2 (the even
#          set) go on; trainrun reports rank 1's exit 7; nothing is left.
set -euo pipefail
mode=$1 np=$2 program=$3 trainrun=$4
export TRAINRUN_COLLECTIVE_TIMEOUT=120
case $mode in
  shm) cmd=("$trainrun" --local -np "$np" --backend tcp "$program") ;;
  tcp) cmd=(env TRAINRUN_SHM=0 "$trainrun" --local -np "$np" --backend tcp "$program") ;;
  # The ranks that outlive rank 1 ignore SIGTERM: --grace gives them time to report.
  death-shm) cmd=("$trainrun" --local -np "$np" --grace 100 --backend tcp "$program") ;;
  death-tcp) cmd=(env TRAINRUN_SHM=0 "$trainrun" --local -np "$np" --grace 100 --backend tcp "$program") ;;
  mpi)
    command -v mpirun >/dev/null || { echo "SKIP: mpirun not found in PATH (Debian: apt-get install openmpi-bin)"; exit 77; }
    # Each set's engine calls MPI from its own thread.
    cmd=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 TRAINRUN_MPI_THREADS=multiple
         mpirun --oversubscribe -np "$np" "$program") ;;
  *) echo "usage: $0 shm|tcp|mpi|death-shm|death-tcp NP PROGRAM TRAINRUN"; exit 2 ;;
esac
[[ $mode == death-* ]] && export PROCESS_SETS_DEATH=1
echo "${cmd[*]}"
status=0
out=$(timeout 300 "${cmd[@]}" 2>&1) || status=$?
fail() { echo "$out" | tail -60; echo "FAIL: $*"; exit 1; }
[[ $status != 124 ]] || fail "the job hung (timeout 300 s)"
if [[ $mode == death-* ]]; then
  [[ $status == 7 ]] || fail "exit status $status, expected rank 1's 7"
  grep -q "process_sets: rank 3: failed: .*rank 1\b" <<<"$out" || fail "rank 3 did not fail naming rank 1"
  for r in 0 2; do grep -q "process_sets: rank $r: its set went on (2)" <<<"$out" || fail "rank $r's set did not go on"; done
  ! pgrep -f "^$program" >/dev/null || fail "a process of the job outlived it"
  echo "$out" | grep "process_sets: rank"
  echo "rank 1's death failed its set only, naming it"
  exit 0
fi
backend=tcp; [[ $mode == mpi ]] && backend=mpi
for ((rank = 0; rank < np; ++rank)); do
  grep -q "process_sets: rank $rank of $np ($backend): passed$" <<<"$out" ||
    fail "rank $rank of $np did not pass on $backend (exit status $status)"
done
[[ $status == 0 ]] || fail "exit status $status"
echo "all $np ranks passed ($mode)"
